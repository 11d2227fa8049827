"""The embedded store kind: a directory holding the networkx graph (``DIR/graph``), its settings
(``DIR/hopweave-store.json``) and the qdrant-edge vector index (``DIR/vectors``).

What :data:`~hopweave.stores.kinds.GRAPH_KINDS` and :data:`~hopweave.stores.kinds.VECTOR_KINDS`
list for the ``embedded`` kind: opening the graph and the index, the store settings file, the
search process started before the graph loads, and the checks ``hopweave doctor`` runs on the
directory's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopweave.errors import HopweaveError, InputError, StoreCorruptError, StoreUnavailableError
from hopweave.stores.checks import AddFinding, fix_for, load_fix
from hopweave.stores.uri import StoreURI

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import StoreSettings
    from hopweave.search.index_base import VectorIndex


def _dir(uri: StoreURI) -> Path:
    assert uri.path is not None
    return uri.path


# ---- graph ------------------------------------------------------------------------------------
def check_store_dir(store_dir: str | Path) -> None:
    """Refuse a directory that holds no store, and a store whose settings name loaded packs but
    whose graph snapshot is gone (it would open as an empty graph: silently lost data).
    Raises InputError or StoreCorruptError naming the path."""
    from hopweave.graph import GRAPH_SUBDIR
    from hopweave.graph._persist import JOURNAL, SNAPSHOT
    from hopweave.models.store_settings import read_store_settings, settings_path

    root = Path(store_dir)
    graph = root / GRAPH_SUBDIR
    if not root.is_dir() or not (graph.is_dir() or settings_path(root).exists()):
        raise InputError(f"no hopweave store at {root}: run `hopweave load PACK --graph {root}` first "
                         "(or pass --graph URI / set HOPWEAVE_GRAPH to the store you mean)")
    stored = read_store_settings(root)  # StoreCorruptError names the settings file
    if stored is not None and stored.domains and not (graph / SNAPSHOT).exists():
        missing = graph / SNAPSHOT
        also = f" (only {graph / JOURNAL} is left)" if (graph / JOURNAL).exists() else ""
        raise StoreCorruptError(f"{missing} is missing{also}, but {settings_path(root)} says packs "
                                f"{sorted(stored.domains)} were loaded: restore a backup of the store directory or "
                                "re-run `hopweave load PACK --graph DIR`")


def open_graph(
    uri: StoreURI, schema: "GraphSchema | None", *, create: bool, read_only: bool
) -> "tuple[GraphStore, StoreSettings | None]":
    """The embedded graph of ``uri``'s directory and its settings (None: never loaded). Without
    ``create``, raises what :func:`check_store_dir` raises; ``read_only``: no write lock."""
    from hopweave.graph import open_graph_store
    from hopweave.models.store_settings import read_store_settings

    if not create:
        check_store_dir(_dir(uri))
    settings = read_store_settings(_dir(uri))
    return open_graph_store(_dir(uri), schema, read_only=read_only), settings


def read_settings(uri: StoreURI, store: "GraphStore") -> "StoreSettings | None":
    """The settings file of the store directory (None: there is none). Raises StoreCorruptError."""
    from hopweave.models.store_settings import read_store_settings

    return read_store_settings(_dir(uri))


def write_settings(uri: StoreURI, store: "GraphStore", settings: "StoreSettings") -> None:
    """Write the settings file of the store directory atomically. Raises StoreError."""
    from hopweave.models.store_settings import write_store_settings

    write_store_settings(_dir(uri), settings)


def doctor_open_failed(uri: StoreURI, add: AddFinding) -> None:
    """After the graph failed to open: an error when the directory lacks its settings file."""
    from hopweave.models.store_settings import settings_path

    if uri.path is None or not uri.path.is_dir():
        return
    if not settings_path(uri.path).exists():
        add("settings", "error", f"{settings_path(uri.path)} (the store settings `hopweave load` writes: "
            "the packs, their schema) is missing, so the graph cannot be read with its schema",
            f"restore it from a backup, or reload: {load_fix(uri)}")


def doctor_files(graph: "GraphStore", uri: StoreURI, add: AddFinding, deep: bool) -> None:
    """The embedded graph's files: an older snapshot format or a long journal slow every open
    (warnings: ``hopweave compact``); journal records held in quarantine (an error); with
    ``deep``, every snapshot node decoded and checked."""
    from hopweave.graph._persist import FORMAT, JSON_FORMAT, files_summary
    from hopweave.graph.networkx_store import AUTO_COMPACT_BYTES, NetworkxGraphStore

    if not isinstance(graph, NetworkxGraphStore) or graph.directory is None:
        return
    files = files_summary(graph.directory)
    fmt, snap_bytes, journal_bytes = files["snapshot_format"], files["snapshot_bytes"], files["journal_bytes"]
    fix = f"hopweave compact --graph {uri.display}"
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
    _doctor_quarantine(graph, add, uri)
    if deep:
        try:
            n = graph.verify()
            nodes, edges, problems = graph.value_problems()
        except HopweaveError as exc:
            add("nodes", "error", f"{type(exc).__name__}: {exc}", fix_for(exc, uri, local=True))
            return
        add("nodes", "ok", f"all {n:,} snapshot nodes decoded and checked against the schema")
        if problems:
            add("values", "error", f"{len(problems)}{'+' if len(problems) >= 20 else ''} stored value(s) fail the "
                "write rules (what the journal's replay checks), first: " + "; ".join(problems[:3]),
                "rewrite those nodes with valid values (or remove them), or reload: " + load_fix(uri))
        else:
            add("values", "ok", f"all {nodes:,} nodes and {edges:,} edges pass the write rules")


def _doctor_quarantine(graph: Any, add: AddFinding, uri: StoreURI) -> None:
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
        f"quarantine, compact and remove quarantine.jsonl, or reload: {load_fix(uri)}")


# ---- vectors ----------------------------------------------------------------------------------
def start_search_process(uri: StoreURI) -> Any:
    """For an embedded index that exists: its search process, started before the graph loads
    (the shard loads meanwhile); else None."""
    from hopweave.search.edge_index import VECTORS_DIR
    from hopweave.search.search_process import start_child
    from hopweave.search.staging import recover

    if uri.path is None:
        return None
    recover(uri.path)
    return start_child(uri.path) if (uri.path / VECTORS_DIR).is_dir() else None


def open_vectors(uri: StoreURI, schema: "GraphSchema", *, process: bool, started: Any) -> "VectorIndex | None":
    """The qdrant-edge index in the directory (None: none built yet); ``process``: served from a
    child process (``started``: one begun by :func:`start_search_process`)."""
    from hopweave.search.edge_index import VECTORS_DIR, EdgeIndex
    from hopweave.search.staging import recover

    path = _dir(uri)
    recover(path)  # a crash between the staged index's two renames: put it back
    if not (path / VECTORS_DIR).is_dir():
        return None  # none yet (`hopweave load` builds it through hopweave.search.staging)
    if process:
        from hopweave.search.search_process import ProcessEdgeIndex

        index = ProcessEdgeIndex(path, schema, started=started)
        index.start()
        return index
    return EdgeIndex(path, schema)


def doctor_search_process(uri: StoreURI, schema: "GraphSchema", add: AddFinding) -> None:
    """An engine serves an embedded shard from a child process (docs/engine.md, "The search
    process"): start one, have it open the shard and count its points, and stop it."""
    import time

    from hopweave.search.search_process import ProcessEdgeIndex

    if uri.path is None:
        return
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
