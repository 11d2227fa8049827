"""Every Cypher statement hopweave can send to Neo4j, collected without a server, and the runner
of Neo4j's own parser over them (``tools/cypher-lint``, the npm package
``@neo4j-cypher/language-support``). Used by ``test_neo4j_parser.py``.

Statements are captured where the Neo4j store would send them: a :class:`RecordingStore` is the
real :class:`~hopweave.graph.cypher_store.CypherGraphStore` with the Neo4j capability row whose
driver hook records ``(query, parameter names)`` instead of talking to a server (it answers id
lookups from the nodes it was given, so writes validate as on a server).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from hopweave.graph.base import Edge, Node
from hopweave.graph.capabilities import NEO4J
from hopweave.graph.cypher_schema import ddl_for, schema_cypher_path, schema_items
from hopweave.graph.cypher_store import SETTINGS_LABEL, CypherGraphStore, Record
from hopweave.graph.write_rules import LABEL_KEY
from hopweave.models.common import Bindings, Session
from hopweave.models.metagraph import TraversalPattern
from hopweave.models.schema import GraphSchema

ROOT = Path(__file__).resolve().parents[3]
LINT_DIR = ROOT / "tools" / "cypher-lint"
BROWSER_DIR = ROOT / "cypher" / "browser"
PACKS = ("deltabank", "telecom")
AS_OF = datetime(2026, 5, 12, 23, 59, 59)


@dataclass
class Statement:
    id: str
    query: str
    params: tuple[str, ...]


@dataclass
class Collection:
    """Statements by kind; ``distinct()`` folds repeats of the same text (the linter's input)."""

    items: list[Statement] = field(default_factory=list)

    def add(self, sid: str, query: str, params: Iterable[str] = ()) -> None:
        self.items.append(Statement(sid, query, tuple(sorted(params))))

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.items:
            k = s.id.split(":", 1)[0]
            out[k] = out.get(k, 0) + 1
        return out

    def distinct(self) -> list[Statement]:
        """One statement per distinct text (and parameter names)."""
        seen: dict[tuple[str, tuple[str, ...]], Statement] = {}
        for s in self.items:
            seen.setdefault((s.query, s.params), s)
        return list(seen.values())

    def shapes(self) -> list[Statement]:
        """One statement per shape: the text with every backtick-quoted identifier, parameter
        name and DDL object name replaced by a placeholder. Statements of one shape differ only
        in names the parser treats as opaque (identifiers reach Cypher backtick-escaped and
        validated against the schema, see ``cypher_identifier``), so Neo4j's parser says the
        same about all of them; linting one per shape keeps the check fast."""
        seen: dict[str, Statement] = {}
        for s in self.items:
            seen.setdefault(shape_of(s.query), s)
        return list(seen.values())


_SHAPE = (
    (re.compile(r"`[^`]*`"), "`_`"),
    (re.compile(r"\$\w+"), "$_"),
)
#: DDL as written in cypher/schema.cypher: object name, label and property unquoted (checked by
#: parse_schema_cypher against the schema).
_DDL_SHAPE = (
    (re.compile(r"^(CREATE (?:CONSTRAINT|INDEX)) \w+ (IF NOT EXISTS)"), r"\1 _ \2"),
    (re.compile(r"\(n:\w+\)"), "(n:_)"),
    (re.compile(r"\bn\.\w+"), "n._"),
)


def shape_of(query: str) -> str:
    """The placeholder form of ``query`` (see :meth:`Collection.shapes`)."""
    rules = _SHAPE + (_DDL_SHAPE if query.startswith("CREATE ") else ())
    for rx, sub in rules:
        query = rx.sub(sub, query)
    return query


class RecordingStore(CypherGraphStore):
    """The Neo4j store's statements, recorded instead of sent (see the module docstring)."""

    caps = NEO4J

    def __init__(self, schema: GraphSchema, out: Collection, kind: str) -> None:
        super().__init__(schema, workers=1)
        self.out, self.kind = out, kind
        self.known: dict[str, dict[str, Any]] = {}

    def remember(self, tenant: str, items: Iterable[Node | Edge]) -> None:
        for it in items:
            if isinstance(it, Node):
                self.known[it.id] = {**it.props, "tenant_id": tenant, "id": it.id, LABEL_KEY: it.label}

    def _execute(
        self, query: str, params: dict[str, Any], *, read_only: bool = True, timeout_ms: float | None = None
    ) -> list[Record]:
        self.out.add(f"{self.kind}:{len(self.out.items)}", query, params)
        if "ids" in params and "RETURN n.`id` AS id, labels(n)[0] AS label" in query:
            tenants = params.get("tenants")
            found = ((i, self.known.get(i)) for i in sorted(set(params["ids"])))
            return [
                {"id": i, "label": p[LABEL_KEY], "props": {k: v for k, v in p.items() if k != LABEL_KEY}}
                for i, p in found
                if p is not None and (tenants is None or p["tenant_id"] in tenants)
            ]
        if "count(" in query and " AS c" in query:
            return [{"c": 0}]
        return []

    def _execute_command(self, args: Sequence[str]) -> Any:  # pragma: no cover - Neo4j has none
        raise AssertionError(f"the Neo4j row issued a command {args}")

    def close(self) -> None:
        self._shutdown_pool()


# ---- collectors ---------------------------------------------------------------------------------
def pack_schemas() -> dict[str, Any]:
    """{pack name: LoadedPack} of the shipped example packs."""
    from hopweave.pack.loader import read_pack

    return {name: read_pack(ROOT / "examples" / name) for name in PACKS}


def _variants(tenant: str, customer: str, goal: str) -> list[Bindings]:
    """Bindings that take every branch of the seed clause: bound, unbound, entities absent."""
    full = Bindings(
        session=Session(tenant_id=tenant, customer_id=customer, region="US"),
        as_of=AS_OF,
        goal=goal,
        entities={"Tier": "Platinum", "Product": "Platinum_Card", "Plan": "Travel 20", "Region": "EU"},
    )
    bare = Bindings(session=Session(tenant_id=tenant), as_of=AS_OF, goal=goal)
    return [full, bare]


def collect_patterns(out: Collection, schema: GraphSchema, patterns: Iterable[TraversalPattern],
                     tenant: str, customer: str, kind: str) -> int:
    """Pattern and seed queries of each pattern for each binding variant; returns patterns seen."""
    store = RecordingStore(schema, out, kind)
    n = 0
    try:
        for p in patterns:
            n += 1
            for b in _variants(tenant, customer, p.goal):
                store.run_pattern(tenant, p, b, deadline=time.perf_counter() + 60)
    finally:
        store.close()
    return n


def collect_shipped(out: Collection, packs: dict[str, Any]) -> int:
    from hopweave.graph.metagraph_io import gated_items

    n = 0
    for name, p in packs.items():
        _, patterns = gated_items(p.schema, p.goals, p.raw_patterns, stored=(), domain=name)
        tenant = p.manifest.default_tenant or p.manifest.tenants[0]
        n += collect_patterns(out, p.schema, patterns, tenant, "CUST_4421", f"pattern[{name}]")
    return n


def collect_generated(out: Collection, schema: GraphSchema, *, graphs: int, patterns: int,
                      filters: int, seed: int = 16) -> tuple[int, int]:
    """Random patterns (run like a request) and random filters (find_nodes) over random graphs,
    from the congruence generators. Returns (patterns, filters)."""
    sys.path.insert(0, str(ROOT / "tests" / "shared"))
    from congruence import TENANTS, bindings_for, random_filter, random_graph, random_pattern

    store = RecordingStore(schema, out, "generated")
    np = nf = 0
    try:
        for gi in range(graphs):
            rng = random.Random(seed * 1000 + gi)
            graph = random_graph(schema, rng)
            for pi in range(patterns):
                pat = random_pattern(schema, rng, graph, pi)
                tenant = rng.choice(TENANTS)
                store.run_pattern(tenant, pat, bindings_for(rng, tenant, graph), deadline=time.perf_counter() + 60)
                np += 1
            store.kind = "filter"
            for _ in range(filters):
                label = rng.choice([lab.name for lab in schema.labels])
                store.find_nodes(rng.choice(TENANTS), label, random_filter(schema, rng, label),
                                 rng.choice((None, 3)))
                nf += 1
            store.kind = "generated"
    finally:
        store.close()
    return np, nf


def collect_ddl(out: Collection, schemas: dict[str, GraphSchema]) -> None:
    """cypher/schema.cypher as shipped, and what ensure_schema sends for each pack's schema."""
    for no, line in enumerate(schema_cypher_path().read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("//"):
            out.add(f"ddl:schema.cypher:{no}", line.strip().rstrip(";"))
    for name, schema in schemas.items():
        for item in schema_items(schema):
            for stmt in ddl_for(item, NEO4J, schema):
                assert len(stmt) == 1, "the Neo4j row creates everything with Cypher"
                out.add(f"ddl[{name}]:{item.name}", stmt[0])


def collect_store_front(out: Collection, schema: GraphSchema) -> None:
    """What the store front sends: the store settings node's read and write (``hopweave.open``,
    ``hopweave load``) and the index / constraint listing (``hopweave doctor``)."""
    store = RecordingStore(schema, out, "front")
    store.read_settings_json()
    store.write_settings_json("{}")
    store.missing_schema_items()


def pack_items(p: Any) -> list[tuple[str, list[Node | Edge]]]:
    """A pack's batches as ``hopweave load`` writes them: graph files, corpus documents (links
    resolved against the pack's vocabulary), metagraph."""
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.pack.loader import document_items, graph_items, metagraph_items

    batches = [(t, list(items)) for t, items in graph_items(p)]
    vocab = NetworkxGraphStore(None, p.schema)
    try:
        with vocab.bulk(replace=True) as b:
            for tenant, items in batches:
                if tenant == "_global":
                    b.write(tenant, items)
        docs, _ = document_items(p, vocab)
    finally:
        vocab.close()
    return batches + docs + [("_global", metagraph_items(p))]


def collect_loaders(out: Collection, packs: dict[str, Any]) -> int:
    """bulk_load (fresh CREATE, then MERGE re-load), write, reads, metagraph reads, count, clear
    and ensure_schema of each pack's real data. Returns items loaded."""
    total = 0
    for name, p in packs.items():
        store = RecordingStore(p.schema, out, f"load[{name}]")
        try:
            batches = pack_items(p)
            store.bulk_load(batches, replace=True, batch=500)
            for tenant, items in batches:
                store.remember(tenant, items)
                total += len(items)
            store.kind = f"reload[{name}]"
            store.bulk_load(batches[:2], replace=False, batch=500)  # MERGE path, ids known
            store.known.clear()
            store.bulk_load(batches[-1:], replace=False, batch=500)  # MERGE path, ids unknown
            for tenant, items in batches:
                store.remember(tenant, items)
            store.kind = f"write[{name}]"
            tenant, items = next((t, i) for t, i in batches if t != "_global")
            nodes = [i for i in items if isinstance(i, Node)][:20]
            edges = [i for i in items if isinstance(i, Edge)][:20]
            store.write(tenant, nodes, edges)
            store.kind = f"read[{name}]"
            store.get_node(tenant, nodes[0].id)
            store.find_nodes(tenant, nodes[0].label)
            store.goal_types(), store.patterns(), store.metagraph_revision(), store.pattern_problems()
            store.count()
            store.ensure_schema()
            store.clear()
        finally:
            store.close()
    return total


def collect_traces(out: Collection, packs: dict[str, Any]) -> None:
    """The trace write of ``engine.record`` for a retrieval that saw a pattern, a customer, a
    document, facts and precedent (the statement shape every recorded retrieval sends)."""
    from hopweave.engine import record
    from hopweave.engine.result import ContextBlock, ContextLine, RetrievalResult
    from hopweave.models.common import PatternResult, Row

    p = packs["deltabank"]
    store = RecordingStore(p.schema, out, "trace")
    try:
        for tenant, items in pack_items(p):
            store.remember(tenant, items)
        tenant = "deltabank"
        prec = sorted(i for i, v in store.known.items() if v[LABEL_KEY] == "DecisionTrace"
                      and v["tenant_id"] == tenant)[:2]
        facts = ["ACCT_99812", *prec]
        session = Session(tenant_id=tenant, customer_id="CUST_4421", region="US")
        result = RetrievalResult(
            trace_id="RT_00000000000000000000", tenant_id=tenant, utterance="why was I charged a late fee?",
            as_of=AS_OF, goal="LateFeeDispute", goal_version=1, confidence=0.9,
            facts=(PatternResult(pattern="customer_tier", version=1, sub_question="tier?", section="facts",
                                 rows=(Row(node_id="ACCT_99812", label="Account", properties={}, path=()),)),),
            context=ContextBlock(text="ctx", tokens=1, budget=100, tokenizer="t",
                                 lines=(ContextLine(section="facts", kind="fact", text="x", tokens=1,
                                                    sources=tuple(facts)),)),
        )
        record.record(store, result, session, p.settings.subject)
    finally:
        store.close()


class Shadowed:
    """An engine's graph store whose every statement-producing call is repeated on a Neo4j
    :class:`RecordingStore` (answers come from ``primary``; the shadow's are dropped): the Neo4j
    statements the same engine run sends. Shadow calls are serialised; their failures (a call
    the Neo4j store would have refused) are kept in ``failures``."""

    SHADOWED = ("run_pattern", "find_nodes", "get_node", "write", "goal_types", "patterns",
                "metagraph_revision", "pattern_problems")

    def __init__(self, primary: Any, shadow: RecordingStore) -> None:
        import threading

        self.primary, self.shadow = primary, shadow
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.primary, name)
        if name not in self.SHADOWED:
            return attr

        def both(*a: Any, **k: Any) -> Any:
            with self._lock:
                try:
                    getattr(self.shadow, name)(*a, **k)
                    if name == "write":  # later writes may link to what this one wrote
                        self.shadow.remember(a[0], [*a[1], *k.get("nodes", ())])
                except Exception as exc:  # noqa: BLE001 - reported by the caller
                    self.failures.append(f"{name}: {type(exc).__name__}: {exc}")
            return attr(*a, **k)

        return both

    def close(self) -> None:
        self.shadow.close()
        self.primary.close()


def collect_engine(out: Collection, packs: dict[str, Any], workdir: Path) -> tuple[int, list[str]]:
    """Every scenario of every pack through ``Engine.retrieve`` (the embedded store, replay
    budgets) with its graph calls shadowed on the Neo4j row (:class:`Shadowed`): the statements
    the whole-engine suite on Neo4j (tests/integration/test_neo4j_engine.py) sends. Returns
    (scenarios run, shadow failures)."""
    import hopweave
    from hopweave.engine.engine import Engine
    from hopweave.engine.replay import REPLAY_CONFIG, load_scenario, run_scenario, scenario_paths
    from hopweave.pack.loader import load_pack

    n, failures = 0, []
    for name, p in packs.items():
        store_dir = workdir / name
        load_pack(ROOT / "examples" / name, store_dir)
        shadow = RecordingStore(p.schema, out, f"engine[{name}]")
        for tenant, items in pack_items(p):
            shadow.remember(tenant, items)
        stores = hopweave.open(store_dir)
        graph = Shadowed(stores.graph, shadow)
        engine = Engine(graph, stores.index, domains=stores.domains(), config=REPLAY_CONFIG,  # type: ignore[arg-type]
                        store_dir=stores.store_dir, settings=stores.settings)
        try:
            for path in scenario_paths([ROOT / "examples" / name / "scenarios"]):
                run_scenario(engine, load_scenario(path))
                n += 1
        finally:
            engine.close()
        failures += [f"{name}: {f}" for f in graph.failures]
    return n, failures


def collect_browser(out: Collection) -> list[Path]:
    """The saved Browser queries; their parameters are the ``:param`` lines of each file."""
    sys.path.insert(0, str(ROOT / "tests" / "shared"))
    from deltabank_checks import parse_saved_query

    paths = sorted(BROWSER_DIR.glob("*.cypher"))
    for path in paths:
        query, params = parse_saved_query(path)
        out.add(f"browser:{path.name}", query, params)
    return paths


def schema_names(schemas: Iterable[GraphSchema]) -> dict[str, list[str]]:
    """Labels and relationship types of the schemas, for Neo4j's schema warnings (a label or type
    no schema declares). Property keys are left out: Neo4j would also flag the keys of the
    UNWIND row maps (``r.src``) as unknown properties."""
    labels: set[str] = {SETTINGS_LABEL}  # the store settings node (outside every schema, on purpose)
    rels: set[str] = set()
    for s in schemas:
        labels.update(lab.name for lab in s.labels)
        rels.update(rel.name for rel in s.relationships)
    return {"labels": sorted(labels), "relationshipTypes": sorted(rels)}


# ---- the linter ---------------------------------------------------------------------------------
class LinterUnavailable(RuntimeError):
    """node, or tools/cypher-lint's node_modules (``npm ci``), is missing."""


def linter_command() -> list[str]:
    """``node tools/cypher-lint/lint.js``; raises LinterUnavailable with the fix."""
    node = shutil.which("node")
    if node is None:
        raise LinterUnavailable("node is not installed (Node.js >= 20); .ci/run installs it")
    if not (LINT_DIR / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        raise LinterUnavailable(f"run `npm ci` in {LINT_DIR} (or `make cypher-lint`)")
    return [node, str(LINT_DIR / "lint.js")]


def about() -> dict[str, str]:
    res = subprocess.run([*linter_command(), "--about"], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(res.stdout)


def lint(
    statements: Sequence[Statement], names: dict[str, list[str]] | None = None, workers: int | None = None
) -> list[dict[str, Any]]:
    """Neo4j's diagnostics for each statement, in order (see tools/cypher-lint/lint.js).
    Neo4j's semantic analysis takes 0.1-0.5 s a statement, so with 4+ cores the statements are
    split over ``workers`` node processes (default: half the cores, at most 4)."""
    cmd = linter_command()
    if workers is None:
        workers = max(1, min(4, (os.cpu_count() or 1) // 2))
    chunks = [list(statements[i::workers]) for i in range(workers)]
    head = [json.dumps({"schema": names})] if names else []

    def run(chunk: list[Statement]) -> list[dict[str, Any]]:
        lines = head + [json.dumps({"id": s.id, "query": s.query, "params": list(s.params)}) for s in chunk]
        res = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=1800)
        if res.returncode != 0:
            raise RuntimeError(f"cypher-lint failed ({res.returncode}): {res.stderr[-2000:]}")
        return [json.loads(x) for x in res.stdout.splitlines() if x.strip()]

    by_id: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(run, [c for c in chunks if c]):
            by_id.update((o["id"], o) for o in part)
    assert len(by_id) == len(statements), "cypher-lint lost statements (ids must be unique)"
    return [by_id[s.id] for s in statements]
