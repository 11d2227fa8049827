"""The GraphStore interface.

Tenant scoping lives here, in one place callers cannot skip: every public read takes the tenant
id first, validates it, lets the backend run, then re-checks every returned node's ``tenant_id``
(a node is visible to tenant T iff its tenant_id is T or the shared ``_global``). Backends
implement the ``_``-prefixed methods and must also scope their own queries by tenant (the
post-check is a second wall, not the first).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Sequence

from hopweave.errors import TenantError
from hopweave.models.common import Bindings, PatternResult, Row, check_tenant
from hopweave.models.filters import FilterTree
from hopweave.models.metagraph import GoalType, TraversalPattern
from hopweave.models.schema import DOMAIN_PROPERTY, GLOBAL_TENANT, GraphSchema


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def tenant_id(self) -> str:
        return str(self.props.get("tenant_id", ""))


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    type: str
    props: dict[str, Any] = field(default_factory=dict)


def visible(tenant_id: str, node_tenant: Any, node_domain: Any = None, tenant_domain: str | None = None) -> bool:
    """A node is visible to a tenant when it is the tenant's own, or shared (``_global``) and of
    the tenant's domain (or of no domain; or the store knows no domain for the tenant)."""
    if node_tenant == tenant_id:
        return True
    if node_tenant != GLOBAL_TENANT:
        return False
    return node_domain is None or tenant_domain is None or node_domain == tenant_domain


class GraphStore(ABC):
    """A property graph with a declared schema, a metagraph and tenant-scoped reads."""

    schema: GraphSchema
    #: Which domain serves which tenant (set by whoever opens the store from its settings);
    #: shared nodes of other domains are invisible to a tenant. Empty = no domain scoping.
    tenant_domains: dict[str, str] = {}
    #: True when ``run_pattern`` runs in this process, CPU-bound, and stops at its deadline
    #: itself (no I/O to wait on): a goal's patterns then run one after another on the calling
    #: thread (:func:`~hopweave.graph.traverse.run_goal_patterns`), since a thread pool would add
    #: only hand-offs under the GIL. False (server backends): in parallel, each abandonable.
    walks_in_process: bool = False

    def _visible(self, tenant_id: str, node: "Node") -> bool:
        return visible(tenant_id, node.tenant_id, node.props.get(DOMAIN_PROPERTY),
                       self.tenant_domains.get(tenant_id))

    def domain_goal_types(self, domain: str | None) -> list[GoalType]:
        """The goal types of one domain (and those of no domain); all when ``domain`` is None."""
        return [g for g in self.goal_types() if domain is None or g.domain in (None, domain)]

    def domain_patterns(self, domain: str | None, goal: str | None = None) -> list[TraversalPattern]:
        """The patterns of one domain's goals (of one goal if given)."""
        if domain is None:
            return self.patterns(goal)
        names = {g.name for g in self.domain_goal_types(domain)}
        return [p for p in self.patterns(goal) if p.goal in names]

    # ---- tenant-scoped reads (template methods: do not override) --------------------------
    def get_node(self, tenant_id: str, node_id: str) -> Node | None:
        check_tenant(tenant_id)
        node = self._get_node(tenant_id, node_id)
        if node is None or not self._visible(tenant_id, node):
            return None
        return node

    def find_nodes(
        self, tenant_id: str, label: str, where: FilterTree | None = None, limit: int | None = None
    ) -> list[Node]:
        """Nodes of ``label`` visible to the tenant matching ``where`` (property filter), by id."""
        check_tenant(tenant_id)
        self.schema.label(label)
        return [
            n for n in self._find_nodes(tenant_id, label, where, limit) if self._visible(tenant_id, n)
        ]

    def run_pattern(
        self, tenant_id: str, pattern: TraversalPattern, bindings: Bindings, deadline: float | None = None
    ) -> PatternResult:
        """Run one pattern for the tenant. ``deadline`` is a ``time.perf_counter()`` instant
        (defaults to now + pattern.budget_ms). Never raises for budget: returns truncated rows."""
        check_tenant(tenant_id)
        if bindings.session.tenant_id != tenant_id:
            raise TenantError("bindings belong to another tenant than the one the pattern runs for")
        result = self._run_pattern(tenant_id, pattern, bindings, deadline)
        return _enforce_rows(tenant_id, result)

    def get_edge(self, tenant_id: str, src: str, rel_type: str, dst: str) -> Edge | None:
        """The edge (src, rel_type, dst) when both endpoints are visible to the tenant and it
        exists, else None. Backends without an edge lookup return None (callers then treat the
        edge as new)."""
        check_tenant(tenant_id)
        if self.get_node(tenant_id, src) is None or self.get_node(tenant_id, dst) is None:
            return None
        props = self._edge_props(src, rel_type, dst)
        return None if props is None else Edge(src, dst, rel_type, props)

    def _edge_props(self, src: str, rel_type: str, dst: str) -> dict[str, Any] | None:
        """Backend hook for :meth:`get_edge` (None: no such edge, or no lookup)."""
        return None

    # ---- writes -------------------------------------------------------------------------
    def write(
        self,
        tenant_id: str,
        nodes: Sequence[Node] = (),
        edges: Sequence[Edge] = (),
        *,
        timeout_s: float | None = None,
    ) -> None:
        """Atomically upsert nodes (merged by id) and edges (merged by src, type, dst).

        Every node is written with ``tenant_id`` = this tenant (``_global`` for labels the schema
        marks shared, which only the ``_global`` tenant may write). Both endpoints of an edge
        must be visible to the tenant. Validates labels, types and properties against the schema.
        ``timeout_s`` bounds the wait for the store's write lock (None: the store's default);
        past it StoreBusyError is raised and nothing is written.
        """
        if tenant_id != GLOBAL_TENANT:  # the shared tenant is not a valid request tenant
            check_tenant(tenant_id)
        if timeout_s is None:
            self._write(tenant_id, list(nodes), list(edges))
        else:
            self._write_within(tenant_id, list(nodes), list(edges), timeout_s)
        gens = self.__dict__.setdefault("_label_writes", {})
        for label in {n.label for n in nodes}:
            gens[label] = gens.get(label, 0) + 1

    def change_token(self, reads: Iterable[str] | None = None) -> Hashable | None:
        """A value that changes whenever what this object's reads return can change: a write
        through it, a record of another process it caught up with, a snapshot it re-read. Two
        equal tokens mean the reads between them saw the same data, so a value derived from
        reads made under one token may be served again while the token is unchanged
        (:mod:`hopweave.understand.read_cache`).

        Args:
            reads: what the value reads, as ``"n+:<label>"`` (nodes of a label created),
                ``"n:<label>"`` (existing nodes of a label changed) and ``"e:<type>"`` (edges of
                a type written) names; the token then changes only with writes that touch one of
                them (or with a re-read snapshot or bulk load). None: any write.

        Returns:
            The token; None (the default, and server stores that other clients write to): the
            store cannot tell, and nothing read from it may be kept across reads.
        """
        return None

    def data_generation(self, labels: Iterable[str]) -> int:
        """How many writes through this object touched nodes of ``labels`` (caches of data derived
        from those labels, e.g. the vocabulary, key on it). The embedded store also counts the
        records of other processes it catches up with; server stores count this object's writes only."""
        gens = self.__dict__.get("_label_writes") or {}
        return sum(gens.get(label, 0) for label in set(labels))

    # ---- metagraph (shared across tenants) -----------------------------------------------
    @abstractmethod
    def goal_types(self) -> list[GoalType]: ...

    @abstractmethod
    def patterns(self, goal: str | None = None) -> list[TraversalPattern]:
        """Patterns read from the graph's TraversalPattern nodes (of one goal if given), by name."""

    def pattern_problems(self) -> list[Any]:
        """Stored GoalType / TraversalPattern nodes that :meth:`patterns` / :meth:`goal_types`
        skipped because their definition does not parse (``metagraph_io.MetagraphProblem``:
        node_id, name, reason), by node id. Empty when every stored definition parses."""
        return []

    @abstractmethod
    def metagraph_revision(self) -> str:
        """An opaque token that changes whenever a GoalType or TraversalPattern node changes."""

    # ---- backend hooks --------------------------------------------------------------------
    @abstractmethod
    def _get_node(self, tenant_id: str, node_id: str) -> Node | None: ...

    @abstractmethod
    def _find_nodes(
        self, tenant_id: str, label: str, where: FilterTree | None, limit: int | None
    ) -> Iterable[Node]: ...

    @abstractmethod
    def _run_pattern(
        self, tenant_id: str, pattern: TraversalPattern, bindings: Bindings, deadline: float | None
    ) -> PatternResult: ...

    @abstractmethod
    def _write(self, tenant_id: str, nodes: list[Node], edges: list[Edge]) -> None: ...

    def _write_within(self, tenant_id: str, nodes: list[Node], edges: list[Edge], timeout_s: float) -> None:
        """:meth:`_write` waiting at most ``timeout_s`` for locks. Backends that wait on a lock
        override it; the default relies on the backend's own timeouts."""
        self._write(tenant_id, nodes, edges)

    def warmup(self) -> None:  # noqa: B027 - a hook: most backends build nothing lazily
        """Build now what the first reads would build (none here; the embedded store's incoming
        edge index). Reads only."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _enforce_rows(tenant_id: str, result: PatternResult) -> PatternResult:
    rows: list[Row] = [r for r in result.rows if visible(tenant_id, r.properties.get("tenant_id"))]
    if len(rows) != len(result.rows):
        # A backend leaked another tenant's node: refuse loudly rather than filter silently.
        raise TenantError(
            f"pattern {result.pattern!r} returned nodes outside tenant {tenant_id!r}; "
            "the backend's tenant scoping is broken"
        )
    return result
