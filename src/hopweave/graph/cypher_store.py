"""Shared base of the Cypher-backed GraphStores (Neo4j, FalkorDB).

Everything here is engine-neutral: queries come from :mod:`hopweave.graph.cypher` (patterns,
filters) or are built below from schema-validated identifiers; engine differences come from the
capability table (:mod:`hopweave.graph.capabilities`). A driver subclass implements only
:meth:`CypherGraphStore._execute` (run one statement, return records as dicts, translate driver
errors into hopweave errors), :meth:`_execute_command` and :meth:`close`.

Budgets: a pattern runs with a server-side time bound (the remaining budget) and a client-side
deadline (the caller stops waiting ``client_grace_ms`` after the budget, see
``Capabilities.client_deadline_thread``). Either one firing gives a
truncated result with ``truncated_reason="budget_ms"`` and no rows, never an exception. The
compiled query counts visits like the walker and stops after the hop that passes
``max_visited``: a truncated result with ``truncated_reason="max_visited"``, no rows and
``visited = max_visited + 1`` (see :mod:`hopweave.graph.cypher`).
"""

from __future__ import annotations

import hashlib
import time
from abc import abstractmethod
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Iterable, Sequence

from hopweave.errors import InputError, QueryTimeoutError, StoreError
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.graph.capabilities import Capabilities
from hopweave.graph.cypher import ParamStore, compile_filter, compile_pattern
from hopweave.graph.cypher_schema import SchemaItem, ddl_for, schema_items
from hopweave.graph.write_rules import LABEL_KEY, WriteValidator, check_metagraph_batch, goal_from_props
from hopweave.models.common import Bindings, PatternResult, Row
from hopweave.models.filters import FilterTree
from hopweave.models.metagraph import GoalType, TraversalPattern, goal_node_id
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema, cypher_identifier

Record = dict[str, Any]

#: Markers of "this index/constraint already exists" in DDL errors (harmless on re-runs).
_EXISTS_MARKERS = ("already indexed", "already exists", "equivalent", "constraint already")


#: The label and id of the node holding the store's settings (a constant, never user input).
SETTINGS_LABEL = "HopweaveStore"
SETTINGS_ID = "settings"


class CypherGraphStore(GraphStore):
    """A GraphStore over a Cypher engine. Connect in the subclass constructor, lazily if possible."""

    caps: Capabilities
    graph_name: str = "hopweave"

    def __init__(self, schema: GraphSchema, *, client_grace_ms: float | None = None, workers: int = 16) -> None:
        self.schema = schema
        self.validator = WriteValidator(schema)
        self.client_grace_ms = self.caps.client_grace_ms if client_grace_ms is None else client_grace_ms
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"hopweave-{self.caps.name}")
        self._label_idents = {lab.name: cypher_identifier(schema, "label", lab.name) for lab in schema.labels}

    def use_schema(self, schema: GraphSchema) -> None:
        """Switch to ``schema`` (e.g. the one the store's settings keep, read after connecting)."""
        self.schema = schema
        self.validator = WriteValidator(schema)
        self._label_idents = {lab.name: cypher_identifier(schema, "label", lab.name) for lab in schema.labels}

    # ---- the store's settings (hopweave-store.json of an embedded store) ---------------------
    def read_settings_json(self) -> str | None:
        """The store's settings document (JSON text) that ``hopweave load`` keeps in the one
        ``HopweaveStore`` node, or None when the store was never loaded from a pack."""
        rows = self._execute(f"MATCH (s:{SETTINGS_LABEL} {{id: $id}}) RETURN s.json AS json", {"id": SETTINGS_ID})
        return str(rows[0]["json"]) if rows and rows[0]["json"] is not None else None

    def write_settings_json(self, text: str) -> None:
        """Replace the store's settings document (one node, outside the schema's labels: no
        pattern or tenant read ever sees it)."""
        self._execute(f"MERGE (s:{SETTINGS_LABEL} {{id: $id}}) SET s.json = $json", {"id": SETTINGS_ID, "json": text},
                      read_only=False)

    # ---- driver hooks -----------------------------------------------------------------------
    @abstractmethod
    def _execute(
        self, query: str, params: dict[str, Any], *, read_only: bool = True, timeout_ms: float | None = None
    ) -> list[Record]:
        """Run one statement; return its records as dicts keyed by column name. Raises
        QueryTimeoutError when the server time bound fired, StoreUnavailableError when the
        engine cannot be reached, StoreError for anything else (all with what to fix)."""

    @abstractmethod
    def _execute_command(self, args: Sequence[str]) -> Any:
        """Run a non-Cypher engine command (FalkorDB ``GRAPH.CONSTRAINT``)."""

    # ---- schema -----------------------------------------------------------------------------
    def ensure_schema(self) -> int:
        """Create the unique-id constraints and the indexes of the store's schema (idempotent):
        the items of :func:`~hopweave.graph.cypher_schema.schema_items`, which for the default
        schema are exactly ``cypher/schema.cypher`` (a unit test keeps them in sync); a store of
        another pack's schema gets that schema's items. Returns the number of statements that
        created something."""
        created = 0
        for item in schema_items(self.schema):
            for stmt in ddl_for(item, self.caps, self.schema, self.graph_name):
                try:
                    if len(stmt) == 1:
                        self._execute(stmt[0], {}, read_only=False)
                    else:
                        self._execute_command(stmt)
                    created += 1
                except StoreError as exc:
                    if not any(m in str(exc).lower() for m in _EXISTS_MARKERS):
                        raise
        return created

    def missing_schema_items(self) -> list[SchemaItem]:
        """The constraints and indexes of the store's schema (:func:`schema_items`) that the
        engine does not hold (``hopweave doctor``; :meth:`ensure_schema` creates them)."""
        present = self._present_schema_items()
        return [it for it in schema_items(self.schema) if (it.kind, it.label, it.prop) not in present]

    def _present_schema_items(self) -> set[tuple[str, str, str]]:
        """(kind, label, property) of the single-property node indexes ("index") and unique
        constraints ("unique") the engine holds, through the capability row's listing queries."""
        found: set[tuple[str, str, str]] = set()
        for kind, query in (("index", self.caps.index_list_query), ("unique", self.caps.unique_list_query)):
            for row in self._execute(query, {}):
                labels, props = row["labels"] or [], row["props"] or []
                label = labels if isinstance(labels, str) else (labels[0] if len(labels) == 1 else None)
                if label is None:
                    continue
                if kind == "unique" and len(props) != 1:
                    continue
                found.update((kind, str(label), str(p)) for p in props)
        return found

    # ---- reads ------------------------------------------------------------------------------
    def _union_by_label(self, where: str, returns: str) -> str:
        return "\nUNION ALL\n".join(
            f"MATCH (n:{ident}) WHERE {where} RETURN {returns}" for ident in self._label_idents.values()
        )

    def _lookup(self, ids: Iterable[str], tenant_id: str | None = None) -> dict[str, dict[str, Any]]:
        """Stored properties (plus ``label``) of the nodes with these ids: visible to
        ``tenant_id`` (it or ``_global``), or of any tenant when None (write validation only)."""
        id_list = sorted(set(ids))
        if not id_list:
            return {}
        where, params = "n.`id` IN $ids", {"ids": id_list}
        if tenant_id is not None:
            where += " AND n.`tenant_id` IN $tenants"
            params["tenants"] = [tenant_id, GLOBAL_TENANT]
        q = self._union_by_label(where, "n.`id` AS id, labels(n)[0] AS label, properties(n) AS props")
        out: dict[str, dict[str, Any]] = {}
        for rec in self._execute(q, params):
            props = dict(rec["props"])
            props[LABEL_KEY] = rec["label"]
            out[rec["id"]] = props
        return out

    def _stored_goal(self, name: str) -> Any:
        """The stored GoalType ``name`` (None: not stored or not parseable), for the write gates."""
        nid = goal_node_id(name)
        return goal_from_props(self._lookup([nid]).get(nid))

    def _get_node(self, tenant_id: str, node_id: str) -> Node | None:
        found = self._lookup([node_id], tenant_id).get(node_id)
        if found is None:
            return None
        label = found.pop(LABEL_KEY)
        found.pop("id", None)
        return Node(id=node_id, label=label, props=found)

    def _find_nodes(
        self, tenant_id: str, label: str, where: FilterTree | None, limit: int | None
    ) -> list[Node]:
        params = ParamStore({"tenants": [tenant_id, GLOBAL_TENANT]})
        conds = ["n.`tenant_id` IN $tenants"]
        if where is not None:
            conds.append(compile_filter(where, "n", self.schema, (label,), params, self.caps))
        q = f"MATCH (n:{cypher_identifier(self.schema, 'label', label)}) WHERE {' AND '.join(conds)}\n"
        q += "RETURN n.`id` AS id, properties(n) AS props ORDER BY n.`id` ASC"
        if limit is not None:
            q += " LIMIT " + params.add(int(limit), "limit")
        return [
            Node(id=r["id"], label=label, props=_props(r["props"])) for r in self._execute(q, params.params)
        ]

    # ---- patterns ---------------------------------------------------------------------------
    def _timed(self, query: str, params: dict[str, Any], deadline: float) -> list[Record]:
        remaining_ms = (deadline - time.perf_counter()) * 1000.0
        if remaining_ms <= 0:
            raise QueryTimeoutError("the pattern's budget was spent before the query started")
        server_ms = max(float(self.caps.min_timeout_ms), remaining_ms)
        if not self.caps.client_deadline_thread:
            return self._execute(query, params, read_only=True, timeout_ms=server_ms)
        fut = self._pool.submit(self._execute, query, params, read_only=True, timeout_ms=server_ms)
        try:
            return fut.result(timeout=(remaining_ms + self.client_grace_ms) / 1000.0)
        except FutureTimeout:
            raise QueryTimeoutError(
                f"no answer within the budget plus {self.client_grace_ms:.0f} ms (client-side deadline)"
            ) from None

    def _run_pattern(
        self, tenant_id: str, pattern: TraversalPattern, bindings: Bindings, deadline: float | None
    ) -> PatternResult:
        start = time.perf_counter()
        if deadline is None:
            deadline = start + pattern.budget_ms / 1000.0
        query, params = compile_pattern(pattern, bindings, self.schema, self.caps)
        base = dict(
            pattern=pattern.name,
            version=pattern.version,
            sub_question=pattern.sub_question,
            section=pattern.section,
        )
        try:
            records = self._timed(query, params, deadline)
        except QueryTimeoutError:
            return PatternResult(
                **base,
                truncated=True,
                truncated_reason="budget_ms",
                elapsed_ms=(time.perf_counter() - start) * 1000.0,
            )
        visited = int(records[0]["visited"]) if records else 0
        seed_id = records[0]["seed_id"] if records else None
        if visited > pattern.max_visited:  # cut between hops: no rows (capability max_visited_rows_on_cut)
            return PatternResult(
                **base,
                truncated=True,
                truncated_reason="max_visited",
                elapsed_ms=(time.perf_counter() - start) * 1000.0,
                visited=pattern.max_visited + 1,  # where the walker stops counting
                seed_id=seed_id,
            )
        targets = [r for r in records if r["id"] is not None]  # no target: one record with a null id
        rows = tuple(
            Row(
                node_id=r["id"],
                label=r["label"],
                properties={k: v for k, v in dict(r["props"]).items() if v is not None},
                path=tuple(r["path"]),
            )
            for r in targets[: pattern.limit]
        )
        truncated = len(targets) > pattern.limit
        return PatternResult(
            **base,
            rows=rows,
            truncated=truncated,
            truncated_reason="limit" if truncated else None,
            elapsed_ms=(time.perf_counter() - start) * 1000.0,
            visited=visited,
            seed_id=seed_id,
        )

    # ---- writes -----------------------------------------------------------------------------
    def _write(self, tenant_id: str, nodes: list[Node], edges: list[Edge]) -> None:
        """Validate everything first (nothing is written on error), then one atomic statement."""
        check_metagraph_batch(self.schema, nodes, self._stored_goal)
        known = self._lookup([n.id for n in nodes] + [e.src for e in edges] + [e.dst for e in edges])
        node_rows: dict[str, list[Record]] = defaultdict(list)
        for node in nodes:
            props, removed = self.validator.node(tenant_id, node, known.get(node.id))
            node_rows[node.label].append({"id": node.id, "props": {**props, **dict.fromkeys(removed)}})
            merged = {**known.get(node.id, {}), **props, LABEL_KEY: node.label}
            known[node.id] = {k: v for k, v in merged.items() if k not in removed}
        edge_rows: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
        for edge in edges:
            src, dst = known.get(edge.src), known.get(edge.dst)
            props = self.validator.edge(tenant_id, edge, src, dst)
            key = (edge.type, src[LABEL_KEY], dst[LABEL_KEY])  # type: ignore[index]
            edge_rows[key].append({"src": edge.src, "dst": edge.dst, "props": props})
        params = ParamStore()
        clauses = []
        for label in sorted(node_rows):
            p = params.add(node_rows[label], "nodes")
            clauses.append(
                f"FOREACH (r IN {p} | MERGE (n:{self._label_idents[label]} {{`id`: r.id}}) SET n += r.props)"
            )
        for rtype, sl, dl in sorted(edge_rows):
            p = params.add(edge_rows[(rtype, sl, dl)], "edges")
            rel = cypher_identifier(self.schema, "rel", rtype)
            clauses.append(
                f"FOREACH (r IN {p} | MERGE (a:{self._label_idents[sl]} {{`id`: r.src}}) "
                f"MERGE (b:{self._label_idents[dl]} {{`id`: r.dst}}) MERGE (a)-[e:{rel}]->(b) SET e += r.props)"
            )
        if clauses:
            self._execute("\n".join(clauses), params.params, read_only=False)

    def bulk_load(
        self,
        batches: Iterable[tuple[str, Iterable[Node | Edge]]],
        *,
        replace: bool = False,
        batch: int | None = None,
    ) -> tuple[int, int]:
        """Load ``(tenant_id, items)`` batches (nodes before the edges that use them) with
        ``UNWIND`` statements of ``batch`` rows. Every item is validated like :meth:`write` for its
        tenant. ``replace=True`` empties the graph first and CREATEs (fastest); otherwise nodes
        and edges are MERGEd into what is stored. Creates the schema first. Not atomic as a
        whole (a failure leaves the batches before it). Returns (nodes, edges) written."""
        from hopweave.models.common import check_tenant

        if replace:
            self.clear()
        self.ensure_schema()
        loader = _BulkLoader(self, fresh=replace, size=batch or self.caps.bulk_batch)
        for tenant, items in batches:
            if tenant != GLOBAL_TENANT:
                check_tenant(tenant)
            for item in items:
                if isinstance(item, Node):
                    loader.node(tenant, item)
                elif isinstance(item, Edge):
                    loader.edge(tenant, item)
                else:
                    raise InputError(f"bulk items must be Node or Edge, got {type(item).__name__}")
        loader.flush()
        return loader.n_nodes, loader.n_edges

    def count(self) -> tuple[int, int]:
        """(nodes, relationships) in the store."""
        n = self._execute("MATCH (n) RETURN count(n) AS c", {})[0]["c"]
        r = self._execute("MATCH ()-[e]->() RETURN count(e) AS c", {})[0]["c"]
        return int(n), int(r)

    def clear(self) -> None:
        """Delete every node and relationship (tests and reloads)."""
        self._execute(self.caps.clear_query, {}, read_only=False)

    # ---- metagraph --------------------------------------------------------------------------
    def _definitions(self, label: str) -> list[tuple[str, str]]:
        """(id, definition JSON) of the shared ``label`` nodes, by id."""
        return [(nid, d) for nid, _, d in self._definition_rows(label)]

    def _definition_rows(self, label: str) -> list[tuple[str, Any, Any]]:
        """(id, name, definition JSON) of the shared ``label`` nodes, by id."""
        q = (
            f"MATCH (n:{self._label_idents[label]}) WHERE n.`tenant_id` = $g AND n.`definition` IS NOT NULL "
            "RETURN n.`id` AS id, n.`name` AS name, n.`definition` AS definition ORDER BY n.`id` ASC"
        )
        return [(r["id"], r["name"], r["definition"]) for r in self._execute(q, {"g": GLOBAL_TENANT})]

    def _decoded(self, model: Any) -> tuple[list[Any], list[Any]]:
        from hopweave.graph.metagraph_io import decode_definitions

        return decode_definitions(model, self._definition_rows(model.__name__))

    def goal_types(self) -> list[GoalType]:
        return sorted(self._decoded(GoalType)[0], key=lambda g: g.name)

    def patterns(self, goal: str | None = None) -> list[TraversalPattern]:
        pats = self._decoded(TraversalPattern)[0]
        return sorted((p for p in pats if goal is None or p.goal == goal), key=lambda p: p.name)

    def pattern_problems(self) -> list[Any]:
        return self._decoded(GoalType)[1] + self._decoded(TraversalPattern)[1]

    def metagraph_revision(self) -> str:
        """Same token as the networkx store for the same metagraph (hash of id + definition)."""
        h = hashlib.sha256()
        for label in ("GoalType", "TraversalPattern"):
            for nid, definition in self._definitions(label):
                h.update(f"{nid}\0{definition}\0".encode())
        return h.hexdigest()[:16]

    # ---- lifecycle --------------------------------------------------------------------------
    def _shutdown_pool(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _props(raw: Any) -> dict[str, Any]:
    """A node's stored properties as Node.props (without ``id``, which is Node.id)."""
    props = dict(raw)
    props.pop("id", None)
    return props


class _BulkLoader:
    """Buffers validated rows per label / (type, source label, target label) and flushes them
    as UNWIND batches; node buffers are always flushed before edge buffers."""

    def __init__(self, store: CypherGraphStore, *, fresh: bool, size: int) -> None:
        self.store, self.fresh, self.size = store, fresh, size
        self.known: dict[str, dict[str, Any]] = {}  # id -> {label, tenant_id} of loaded nodes
        self.nodes: dict[str, list[Record]] = defaultdict(list)  # CREATE (fresh loads)
        self.merge_nodes: dict[str, list[Record]] = defaultdict(list)
        self.edges: dict[tuple[str, str, str], list[Record]] = defaultdict(list)  # CREATE
        self.merge_edges: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
        self.seen: set[tuple[str, str, str]] = set()
        self.pending_nodes: list[tuple[str, Node]] = []
        self.pending_edges: list[tuple[str, Edge]] = []
        self.goals: dict[str, Any] = {}  # GoalTypes written by this bulk load, by name
        self.n_nodes = self.n_edges = 0

    def node(self, tenant: str, node: Node) -> None:
        self.pending_nodes.append((tenant, node))
        if len(self.pending_nodes) >= self.size:
            self._resolve_nodes()

    def _resolve_nodes(self) -> None:
        pending, self.pending_nodes = self.pending_nodes, []
        batch = [n for _, n in pending if n.label in ("GoalType", "TraversalPattern")]
        if batch:  # a pattern's goal: in this batch, bulk-written before it, or stored
            check_metagraph_batch(self.store.schema, batch,
                                  lambda name: self.goals.get(name) or self.store._stored_goal(name))
            self.goals.update({g.name: g for g in map(goal_from_props, ({**n.props, LABEL_KEY: n.label}
                                                                          for n in batch)) if g is not None})
        if not self.fresh:  # one lookup per batch for what is already stored
            missing = {n.id for _, n in pending if n.id not in self.known}
            for nid, props in self.store._lookup(missing).items():
                self.known[nid] = {LABEL_KEY: props[LABEL_KEY], "tenant_id": props.get("tenant_id")}
        for tenant, node in pending:
            existing = self.known.get(node.id)
            props, removed = self.store.validator.node(tenant, node, existing)
            if self.fresh and existing is None:
                self.nodes[node.label].append({"id": node.id, **props})
            else:  # an update (or a node seen twice in a fresh load): MERGE it after the CREATEs
                self.merge_nodes[node.label].append(
                    {"id": node.id, "props": {**props, **dict.fromkeys(removed)}}
                )
            self.known[node.id] = {LABEL_KEY: node.label, "tenant_id": props["tenant_id"]}
            self.n_nodes += 1
        for label in [lab for lab in self.nodes if len(self.nodes[lab]) >= self.size]:
            self._flush_nodes(label)
        for label in [lab for lab in self.merge_nodes if len(self.merge_nodes[lab]) >= self.size]:
            self._flush_nodes(label)

    def edge(self, tenant: str, edge: Edge) -> None:
        self.pending_edges.append((tenant, edge))
        if len(self.pending_edges) >= self.size:
            self._resolve_edges()

    def _resolve_edges(self) -> None:
        self._resolve_nodes()
        pending, self.pending_edges = self.pending_edges, []
        missing = {x for _, e in pending for x in (e.src, e.dst) if x not in self.known}
        if missing:
            self.known.update(
                {
                    k: {LABEL_KEY: v[LABEL_KEY], "tenant_id": v.get("tenant_id")}
                    for k, v in self.store._lookup(missing).items()
                }
            )
        for tenant, e in pending:
            src, dst = self.known.get(e.src), self.known.get(e.dst)
            props = self.store.validator.edge(tenant, e, src, dst)
            key = (e.type, src[LABEL_KEY], dst[LABEL_KEY])  # type: ignore[index]
            row = {"src": e.src, "dst": e.dst, "props": props}
            if self.fresh and (e.src, e.type, e.dst) not in self.seen:
                self.seen.add((e.src, e.type, e.dst))
                self.edges[key].append(row)
            else:  # merged: an update of an edge already loaded or stored
                self.merge_edges[key].append(row)
            self.n_edges += 1
        for key in [k for k, rows in self.edges.items() if len(rows) >= self.size]:
            self._flush_all_nodes()
            self._flush_edges(key, self.edges, "CREATE")
        for key in [k for k, rows in self.merge_edges.items() if len(rows) >= self.size]:
            self._flush_all_nodes()
            self._flush_edges(key, self.merge_edges, "MERGE")

    def _flush_nodes(self, label: str) -> None:
        ident = self.store._label_idents[label]
        rows, self.nodes[label] = self.nodes[label], []
        if rows:
            self.store._execute(
                f"UNWIND $rows AS r CREATE (n:{ident}) SET n = r", {"rows": rows}, read_only=False
            )
        rows, self.merge_nodes[label] = self.merge_nodes[label], []
        if rows:
            q = f"UNWIND $rows AS r MERGE (n:{ident} {{`id`: r.id}}) SET n += r.props"
            self.store._execute(q, {"rows": rows}, read_only=False)

    def _flush_all_nodes(self) -> None:
        for label in sorted(set(self.nodes) | set(self.merge_nodes)):
            self._flush_nodes(label)

    def _flush_edges(
        self, key: tuple[str, str, str], buffers: dict[tuple[str, str, str], list[Record]], verb: str
    ) -> None:
        rows, buffers[key] = buffers[key], []
        if not rows:
            return
        rtype, sl, dl = key
        rel = cypher_identifier(self.store.schema, "rel", rtype)
        q = (
            f"UNWIND $rows AS r MATCH (a:{self.store._label_idents[sl]} {{`id`: r.src}}) "
            f"MATCH (b:{self.store._label_idents[dl]} {{`id`: r.dst}}) {verb} (a)-[e:{rel}]->(b) SET e += r.props"
        )
        self.store._execute(q, {"rows": rows}, read_only=False)

    def flush(self) -> None:
        self._resolve_edges()
        self._flush_all_nodes()
        for key in sorted(self.edges):
            self._flush_edges(key, self.edges, "CREATE")
        for key in sorted(self.merge_edges):
            self._flush_edges(key, self.merge_edges, "MERGE")
