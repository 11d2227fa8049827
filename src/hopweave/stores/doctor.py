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
from hopweave.stores.checks import Severity, fix_for, load_fix
from hopweave.stores.kinds import graph_kind, vector_kind
from hopweave.stores.uri import (
    StoreURI,
    default_graph_uri,
    default_vectors_uri,
    parse_graph_uri,
    parse_vectors_uri,
)

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.search.embedder import Embedder
    from hopweave.stores.front import Stores



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
def _check_graph(uri: StoreURI, found: list[Finding], deep: bool = False) -> Any:
    """The graph checks; returns the store's schema (None when it did not open)."""
    from hopweave.stores.front import open_stores

    def add(check: str, severity: Severity, detail: str, fix: str = "") -> None:
        found.append(Finding(store="graph", check=check, severity=severity, detail=detail, fix=fix))

    try:
        stores = open_stores(uri.raw, graph_only=True, read_only=True)
    except HopweaveError as exc:
        add("open", "error", f"{type(exc).__name__}: {exc}", fix_for(exc, uri, local=graph_kind(uri).local))
        open_failed = graph_kind(uri).doctor_open_failed
        if open_failed is not None:
            open_failed(uri, add)
        return None
    with stores:
        add("open", "ok", f"{uri.kind} graph store {uri.display} opened")
        _check_settings(stores, add)
        if stores.settings is not None:
            _check_domains(stores, add)
        _check_indexes(stores, add)
        for check in graph_kind(uri).doctor_checks:
            check(stores.graph, uri, add, deep)
        return stores.graph.schema


def _check_settings(stores: "Stores", add: Any) -> None:
    from hopweave.models.store_settings import STORE_FORMAT

    s = stores.settings
    if s is None:
        add("settings", "error", f"{stores.graph_uri.display} holds no store settings: it was never loaded from a "
            "pack (or by a hopweave older than the store front), so no tenant is served", load_fix(stores.graph_uri))
        return
    add("settings", "ok", f"store format {s.format} (this hopweave reads {STORE_FORMAT}); domains "
        f"{sorted(s.domains) or '(none)'}")
    try:
        schema = s.schema()
    except HopweaveError as exc:
        add("schema", "error", f"the stored schema does not load: {exc}", load_fix(stores.graph_uri))
        return
    add("schema", "ok", f"schema version {schema.version}: {len(schema.labels)} labels, "
        f"{len(schema.relationships)} relationship types")


def _check_domains(stores: "Stores", add: Any) -> None:
    from hopweave.bounded import regex_problem

    assert stores.settings is not None
    graph = stores.graph
    if not stores.settings.domains:
        add("domains", "error", "the store settings name no pack domain", load_fix(stores.graph_uri))
        return
    try:
        goals = graph.goal_types()
        patterns = graph.patterns()
        problems = graph.pattern_problems()
    except HopweaveError as exc:
        add("domains", "error", f"cannot read the metagraph: {exc}", load_fix(stores.graph_uri))
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
        _check_calibration(name, rec, add)
        seps = (rec.classifier or {}).get("clause_separators")
        problem = regex_problem(seps) if seps is not None else None
        if problem:
            add(f"domain {name} classifier", "error", f"the stored clause_separators {seps!r:.80} are refused: "
                f"{problem}", f"fix the pack's classifier.yaml, then {load_fix(stores.graph_uri)}")
    if problems:
        add("patterns", "error", f"{len(problems)} stored goal/pattern definition(s) fail to decode or pass the "
            f"gates: {'; '.join(str(p) for p in problems[:3])}", "fix the pack's goal files, then " +
            load_fix(stores.graph_uri))
    from hopweave.graph.gates import validate_all

    failing = {name: errs for name, errs in validate_all(graph).items()
               if name not in {p.name for p in problems}}  # every gate, with each pattern's stored goal
    if failing:
        shown = "; ".join(f"{name}: {errs[0]}" for name, errs in sorted(failing.items())[:3])
        add("pattern gates", "error", f"{len(failing)} stored pattern(s) fail the gates of their goal: {shown}",
            "fix the pack's goal files, then " + load_fix(stores.graph_uri))


def _check_calibration(name: str, rec: Any, add: Any) -> None:
    """A warning when the pack's calibration file (as named at load) differs from the store's
    copy (the engine uses the copy: a refit has no effect until the pack is loaded again) or
    can no longer be read; nothing when the load read no calibration file."""
    import json

    path = Path(rec.calibration_file) if rec.calibration_file else None
    if path is None or rec.calibration is None:
        return
    fix = f"hopweave load <the {name} pack> (the engine uses the store's copy until then)"
    try:
        on_disk = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        add(f"domain {name} calibration", "warning", f"the calibration file read at load, {path}, cannot be read "
            f"now ({type(exc).__name__}): the store's copy is used", fix)
        return
    if on_disk != rec.calibration:
        add(f"domain {name} calibration", "warning", f"{path} differs from the store's copy (refitted after the "
            "load?): the engine still uses the copy loaded last", fix)
    else:
        add(f"domain {name} calibration", "ok", f"the store's calibration equals {path.name}")


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
            f"{load_fix(stores.graph_uri)} (creates them), or run the output of `hopweave cypher-schema PACK` in the server")
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
    for check in vector_kind(uri).doctor_checks:
        check(uri, schema if schema is not None else GraphSchema.base(), add)


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
