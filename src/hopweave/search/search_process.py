"""The embedded vector shard served from a child process: searches off the caller's GIL.

qdrant-edge's Python binding holds the GIL for the whole of a query (measured: a pure-Python
thread ran at 40% of its speed while another thread ran queries on a one-thread search pool).
In one process, every search then stops every other request's Python work, so a burst of
concurrent retrievals runs on one core whatever the machine has. :class:`ProcessEdgeIndex` is an
:class:`~hopweave.search.edge_index.EdgeIndex` whose shard operations run in a child process
(``python -m hopweave.search.search_process``) that owns the shard: a calling thread sends a frame
and waits on a socket without the GIL, and the child's search runs on another core.

* **One owner.** The child is the only process that opens the shard (a qdrant-edge shard is
  locked by one process); every read and write of this index goes through it.
* **The search stage runs there whole.** :meth:`ProcessEdgeIndex.search` sends the request
  (tenant, query, profile, filter tree, query vector as raw bytes) and the child runs
  :meth:`VectorIndex.search` on its own :class:`EdgeIndex`: filter compilation, the two
  channels, fusion, ranking features and the tenant and filter checks on what comes back, with
  its caches (candidate payloads, filtered IDF, counts). Only the ``SearchResult`` crosses, as
  JSON. The tenant and the filter are also checked in the caller first, so a bad one is refused
  before anything is sent. The other operations (count, fetch, writes) cross hook by hook:
  filters are checked in the caller and sent as the JSON of their tree.
* **Same answers.** The child runs the same code on the same shard; floats cross exactly (JSON
  numbers are exact for Python floats; the query vector as raw bytes).
* **Wire.** :mod:`hopweave.wire` frames (JSON headers, raw bytes; never pickle) over Unix sockets in a private (0700) directory. A calling thread
  takes a connection of its own (kept for reuse), sends and waits on it: no hand-off to another
  thread, so an answer wakes its caller directly. The child answers each connection on a thread
  of its own. A HopweaveError raised in the child (an incomplete or corrupt index, a busy shard)
  is raised again in the caller with its class.
* **Deadlines and failures.** No call waits longer than ``timeout_s`` (30 s): then
  StoreUnavailableError. A child that dies fails the writes in flight with StoreUnavailableError
  at once and its reads are sent once more to a new child. The child exits when its stdin
  closes (the caller closed the index, or died), closing the shard (flush and completion marker)
  first; no write is cut in half. Indexes still open at interpreter exit are closed then, so
  the next process finds the shard released.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hopweave.errors import HopweaveError, StoreUnavailableError
from hopweave.models.filters import FilterTree, parse_filter
from hopweave.models.ranking import RankingProfile, SearchResult
from hopweave.models.schema import GraphSchema
from hopweave.search.edge_index import VECTORS_DIR, EdgeIndex
from hopweave.search.embedder import EmbeddingSpace
from hopweave.search.index_types import CollectionInfo, IndexPoint
from hopweave.search.lexical import SparseVec
from hopweave.search.qdrant_filter import to_edge
from hopweave.wire import error_from_json, error_json, frame, read_frame

__all__ = ["ProcessEdgeIndex", "StartedChild", "start_child", "stop_child"]

log = logging.getLogger("hopweave.search_process")

#: Longest wait for one answer from the child.
DEFAULT_TIMEOUT_S = 30.0
_SOCKET = "search.sock"


#: Operations that change nothing: sent again to a new child when the first one died.
_READS = frozenset({"search", "retrieve", "count", "scroll"})
#: Operations that change the shard's points (the child's caches start again).
_WRITES = frozenset({"create", "upsert", "set_payload", "delete_dense", "begin_ingest", "end_ingest"})


def _exit_status(proc: "subprocess.Popen[bytes] | None", wait_s: float = 2.0) -> int | None:
    """The exit status of a child whose connection broke (it may still be tearing down its
    threads: waited for up to ``wait_s``), or None when it still runs."""
    if proc is None:
        return None
    try:
        return proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return None


def _child_env() -> dict[str, str]:
    """This process's environment, with the directory hopweave was imported from first on the
    child's PYTHONPATH (a caller that put it on ``sys.path`` by hand still starts a child)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # .../hopweave/search/search_process.py
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


#: A child process begun by :func:`start_child` and the private directory of its socket.
StartedChild = tuple["subprocess.Popen[bytes]", str]


def start_child(store_dir: str | Path, root: str | Path | None = None) -> StartedChild:
    """Start a search process for the shard of ``store_dir`` (or ``root``): it begins loading the
    shard at once; :class:`ProcessEdgeIndex` (``started=``) gives it the schema and uses it.
    Raises StoreUnavailableError when it cannot start."""
    root = Path(root) if root is not None else Path(store_dir) / VECTORS_DIR
    tmp = tempfile.mkdtemp(prefix="hopweave-search-")  # mode 0700: no other user connects
    if len(os.path.join(tmp, _SOCKET)) > 100:  # AF_UNIX paths are at most 107 bytes
        os.rmdir(tmp)
        tmp = tempfile.mkdtemp(prefix="hw-", dir="/tmp")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(os.path.join(tmp, _SOCKET))
        listener.listen(128)
        proc = subprocess.Popen(
            [sys.executable, "-m", "hopweave.search.search_process", str(listener.fileno())],
            pass_fds=(listener.fileno(),), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, close_fds=True,
            env=_child_env())
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"store_dir": str(store_dir), "root": str(root)}).encode() + b"\n")
        proc.stdin.flush()
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreUnavailableError(f"cannot start the search process with {sys.executable} ({exc})") from exc
    finally:
        listener.close()
    return proc, tmp


def stop_child(started: StartedChild, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """End a child of :func:`start_child` (it closes its shard first) and remove its directory."""
    proc, tmp = started
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


class ProcessEdgeIndex(EdgeIndex):
    """An EdgeIndex whose shard lives in a child process (see the module doc).

    The child starts with :meth:`start`, the first operation, or earlier (``started``: begun by
    :func:`start_child` before the schema was known), and loads the shard at once.
    """

    #: Idle connections kept for reuse (a busy caller opens another one).
    MAX_IDLE = 64

    def __init__(self, store_dir: str | Path, schema: GraphSchema, *, root: str | Path | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, started: "StartedChild | None" = None) -> None:
        """``started``: a child :func:`start_child` began for this index before its schema was
        known (it loads the shard meanwhile); it gets the schema now."""
        super().__init__(store_dir, schema, root=root)
        self.store_dir = Path(store_dir)
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None  # the private directory of the child's socket
        self._idle: list[socket.socket] = []
        self._plock = threading.Lock()  # the child's handle and the idle connections
        self._closed = False
        if started is not None:
            self._adopt(started)
        _LIVE.add(self)

    # ---- the child ---------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> None:
        """Start the child now (else on the first operation)."""
        with self._plock:
            self._start_locked()

    def _start_locked(self) -> str:
        """The child's socket address, starting the child when none runs."""
        if self._closed:
            raise StoreUnavailableError(f"the vector index at {self.root} is closed")
        if self._proc is not None and self._proc.poll() is None and self._dir is not None:
            return os.path.join(self._dir, _SOCKET)
        self._reap_locked()
        self._adopt(start_child(self.store_dir, self.root))
        assert self._dir is not None
        return os.path.join(self._dir, _SOCKET)

    def _adopt(self, started: "StartedChild") -> None:
        """Take ``started`` as this index's child and send it the schema."""
        proc, tmp = started
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"schema": self.schema.model_dump(mode="json")}).encode() + b"\n")
            proc.stdin.flush()  # then left open: the child exits at its EOF
        except OSError as exc:
            stop_child(started)
            raise StoreUnavailableError(f"the search process for {self.root} did not start ({exc})") from exc
        self._proc, self._dir = proc, tmp

    def _reap_locked(self) -> None:
        """Forget a child (ended, or to be ended): its connections, its stdin, its directory."""
        for conn in self._idle:
            conn.close()
        self._idle = []
        proc, tmp = self._proc, self._dir
        self._proc, self._dir = None, None
        if proc is not None and tmp is not None:
            stop_child((proc, tmp), self.timeout_s)

    def _connection(self) -> tuple[socket.socket, "subprocess.Popen[bytes] | None"]:
        with self._plock:
            addr = self._start_locked()
            proc = self._proc
            if self._idle:
                return self._idle.pop(), proc
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(self.timeout_s)
        try:
            conn.connect(addr)
        except OSError as exc:
            conn.close()
            raise StoreUnavailableError(f"cannot reach the search process for {self.root} ({exc})") from exc
        return conn, proc

    def _call(self, op: str, args: dict[str, Any], body: bytes = b"") -> tuple[Any, bytes]:
        """Send one operation on a connection of this thread's own and wait for its answer (the
        GIL is released while waiting), at most ``timeout_s``. A read that meets a child which
        has died (killed, crashed) is sent once more, to a new child."""
        data = frame({"op": op, **args}, body)
        for attempt in (1, 2):
            conn, proc = self._connection()
            try:
                conn.settimeout(self.timeout_s)  # the index's timeout now, also on a reused connection
                conn.sendall(data)
                head, out = read_frame(conn)
            except TimeoutError:
                conn.close()  # its answer may still come: the connection is not reused
                raise StoreUnavailableError(f"the search process for {self.root} did not answer {op!r} within "
                                            f"{self.timeout_s:.0f} s (timeout_s)") from None
            except (EOFError, OSError) as exc:
                conn.close()
                code = _exit_status(proc)
                with self._plock:
                    if code is not None and self._proc is proc:
                        self._reap_locked()  # the next call starts a new child
                if attempt == 1 and code is not None and op in _READS:
                    continue
                raise StoreUnavailableError(f"the search process for {self.root} exited (status {code}) with the "
                                            f"call {op!r} in flight; the next call starts a new one ({exc})") from None
            break
        with self._plock:
            if self._proc is proc and len(self._idle) < self.MAX_IDLE:
                self._idle.append(conn)
            else:
                conn.close()
        if "error" in head:
            raise error_from_json(head["error"], f"the search process for {self.root}")
        return head.get("result"), out

    def close(self) -> None:
        """Close the shard in the child (flush, completion marker), then end the child."""
        with self._plock:
            if self._closed:
                return
            running = self._proc is not None and self._proc.poll() is None
        if running:
            try:
                self._call("close", {})
            except HopweaveError as exc:
                log.warning("closing the search process for %s: %s", self.root, exc)
        with self._plock:
            self._closed = True
            self._reap_locked()

    # ---- EdgeIndex hooks, run in the child ------------------------------------------------
    def _open(self) -> Any:
        raise AssertionError("the shard of a ProcessEdgeIndex is opened by its child process only")

    def _compile(self, tree: FilterTree | None) -> Any:
        """The filter as the JSON of its tree (compiled for qdrant-edge in the child), checked
        here first: a FilterError is raised in the caller, as in-process."""
        if tree is None:
            return None
        to_edge(tree, self.field_types)
        return tree.model_dump_json()

    def search(
        self,
        tenant_id: str,
        query: str,
        profile: RankingProfile,
        where: FilterTree | Mapping[str, Any] | None = None,
        limit: int = 10,
        query_vector: np.ndarray | None = None,
        query_space: EmbeddingSpace | None = None,
        include_superseded: bool = False,
        scope: Mapping[str, Sequence[Any]] | None = None,
    ) -> SearchResult:
        """:meth:`VectorIndex.search` run whole in the child (filters, channels, fusion,
        features, the tenant and filter checks on what comes back): only its result crosses,
        as ``SearchResult`` JSON. Same arguments, result and errors as in-process; the tenant and
        the filter are checked here first, so a bad one is refused before anything is sent."""
        self.scoped_filter(tenant_id, where, not include_superseded)  # TenantError / FilterError here
        args: dict[str, Any] = {
            "tenant_id": tenant_id, "query": query, "profile": profile.model_dump(mode="json"),
            "where": None if where is None else parse_filter(where).model_dump(mode="json"), "limit": limit,
            "space": None if query_space is None else query_space.model_dump(mode="json"),
            "include_superseded": include_superseded,
            "scope": None if scope is None else {k: list(v) for k, v in scope.items()}}
        body = b""
        if query_vector is not None:
            vec = np.ascontiguousarray(query_vector)
            args["vector"] = {"dtype": vec.dtype.str, "shape": list(vec.shape)}
            body = vec.tobytes()
        _, data = self._call("search", args, body)
        return SearchResult.model_validate_json(data)

    def _retrieve(self, point_ids: Sequence[str], with_vector: bool = True
                  ) -> list[tuple[dict[str, Any], list[float] | None]]:
        if not point_ids:
            return []
        result, _ = self._call("retrieve", {"ids": list(point_ids), "with_vector": with_vector})
        return [(payload, vec) for payload, vec in result]

    def _count(self, flt: Any) -> int:
        return int(self._call("count", {"filter": flt})[0])

    def _scroll(self, flt: Any, limit: int | None) -> list[dict[str, Any]]:
        return list(self._call("scroll", {"filter": flt, "limit": limit})[0])

    def _create(self, info: CollectionInfo) -> None:
        self._call("create", {"info": info.model_dump(mode="json")})

    def _upsert(self, points: Sequence[IndexPoint]) -> None:
        rows = [{"chunk_id": p.chunk_id, "payload": p.payload, "indices": list(p.sparse.indices),
                 "values": list(p.sparse.values),
                 "dense": None if p.dense is None else [float(x) for x in p.dense]} for p in points]
        self._call("upsert", {"points": rows})

    def _set_payload(self, flt: Any, payload: dict[str, Any]) -> None:
        self._call("set_payload", {"filter": flt, "payload": payload})

    def _delete_dense(self, flt: Any) -> None:
        self._call("delete_dense", {"filter": flt})

    def flush(self) -> None:
        if self._proc is not None:
            self._call("flush", {})

    def optimize(self) -> None:
        self._call("optimize", {})

    def begin_ingest(self) -> None:
        self._call("begin_ingest", {})

    def end_ingest(self, marker: dict[str, Any] | None = None, failed: bool = False) -> None:
        self._call("end_ingest", {"marker": marker, "failed": failed})


#: Open indexes, closed at interpreter exit: a script that never closes its engine still leaves
#: the shard flushed, marked complete and released before its process ends (else the child
#: would do it just after, and a command run right after could find the shard still held).
_LIVE: "weakref.WeakSet[ProcessEdgeIndex]" = weakref.WeakSet()


@atexit.register
def _close_live() -> None:
    for index in list(_LIVE):
        try:
            index.close()
        except Exception:  # noqa: BLE001 - exiting: the child closes the shard itself at EOF
            pass


# ---- the child ------------------------------------------------------------------------------
class _Child:
    """The child's side: a plain EdgeIndex."""

    def __init__(self, index: EdgeIndex) -> None:
        self.index = index

    def preload(self) -> None:
        """Open the shard now, while the caller loads its graph (else at the first operation). A
        shard that cannot open raises again at the first operation, which reports it typed."""
        try:
            self.index._open()
        except Exception:  # noqa: BLE001 - reported by the first operation
            pass

    def filter(self, tree_json: str | None) -> Any:
        """A filter sent as the JSON of its tree, compiled for qdrant-edge."""
        return None if tree_json is None else self.index._compile(parse_filter(json.loads(tree_json)))

    def handle(self, head: dict[str, Any], body: bytes) -> tuple[Any, bytes]:
        """(the JSON result, the raw body) of one operation."""
        op, ix = head["op"], self.index
        if op == "search":
            vec = None
            if head.get("vector") is not None:
                vec = np.frombuffer(body, dtype=np.dtype(head["vector"]["dtype"])).reshape(head["vector"]["shape"])
            res = ix.search(head["tenant_id"], head["query"], RankingProfile.model_validate(head["profile"]),
                            where=None if head["where"] is None else parse_filter(head["where"]), limit=head["limit"],
                            query_vector=vec,
                            query_space=None if head["space"] is None else EmbeddingSpace.model_validate(head["space"]),
                            include_superseded=head["include_superseded"], scope=head["scope"])
            return None, res.model_dump_json().encode()
        return self._other(op, head), b""

    def _other(self, op: str, head: dict[str, Any]) -> Any:
        ix = self.index
        if op in _WRITES:
            # The parent sends the write hooks, so the child's own index never sees upsert() /
            # set_payload(): start its write generation here, or what it keeps per generation
            # (counts, filtered IDF, returned hits' payloads) would outlive the write.
            ix._bump()
        if op == "retrieve":
            return [[payload, vec] for payload, vec in ix._retrieve(head["ids"], head["with_vector"])]
        if op == "count":
            return ix._count(self.filter(head["filter"]))
        if op == "scroll":
            return ix._scroll(self.filter(head["filter"]), head["limit"])
        if op == "create":
            return ix._create(CollectionInfo.model_validate(head["info"]))
        if op == "upsert":
            ix._upsert([IndexPoint(p["chunk_id"], p["payload"], SparseVec(tuple(p["indices"]), tuple(p["values"])),
                                   None if p["dense"] is None else np.asarray(p["dense"], dtype=np.float32))
                        for p in head["points"]])
            return None
        if op == "set_payload":
            return ix._set_payload(self.filter(head["filter"]), head["payload"])
        if op == "delete_dense":
            return ix._delete_dense(self.filter(head["filter"]))
        if op == "flush":
            return ix.flush()
        if op == "optimize":
            return ix.optimize()
        if op == "begin_ingest":
            return ix.begin_ingest()
        if op == "end_ingest":
            return ix.end_ingest(head["marker"], head["failed"])
        if op == "close":
            return ix.close()
        raise ValueError(f"unknown operation {op!r}")


def _connection(conn: socket.socket, child: _Child) -> None:
    """Answer one connection's operations in order until it closes."""
    with conn:
        while True:
            try:
                head, body = read_frame(conn)
            except (EOFError, OSError):
                return
            try:
                result, data = child.handle(head, body)
                reply = frame({"result": result}, data)
            except BaseException as exc:  # every error goes back to the caller, typed
                reply = frame({"error": error_json(exc)})
            try:
                conn.sendall(reply)
            except OSError:
                return


def _serve(fd: int) -> None:
    """Accept the caller's connections (a thread each) until the caller closes stdin or dies;
    then close the shard (flush, completion marker) and exit."""
    where = json.loads(sys.stdin.buffer.readline())
    # The shard loads while the caller reads its graph; the schema (the filters' field types,
    # the payload indexes of a new collection) comes next, before any operation is read.
    index = EdgeIndex(where["store_dir"], GraphSchema.base(), root=where["root"])
    child = _Child(index)
    threading.Thread(target=child.preload, name="preload", daemon=True).start()
    line = sys.stdin.buffer.readline()
    if not line:
        return
    index.schema = GraphSchema.model_validate(json.loads(line)["schema"])
    listener = socket.socket(fileno=fd)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_connection, args=(conn, child), daemon=True).start()

    threading.Thread(target=accept, name="accept", daemon=True).start()
    sys.stdin.buffer.read()  # EOF: the caller closed the index, or died
    with child.index._lock:  # no write is cut in half
        child.index.close()
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover - run as the child by ProcessEdgeIndex
    _serve(int(sys.argv[1]))
