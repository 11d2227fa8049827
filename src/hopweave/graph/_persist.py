"""On-disk format of the networkx store: a snapshot plus an append-only journal. Data, never code.

Layout of a graph directory::

    LOCK            flock target: exclusive while writing/compacting (readers take none: they
                    re-read when the snapshot was replaced mid-read)
    graph.snapshot  line 1: JSON header {magic, format, last_seq, nodes, edges, schema_version,
                    payload_len, payload_sha256[, json_ints][, sections]}; then the payload.
                    Format 4 (written): columns, see ``_columns`` (``sections``: where each
                    array lies in the payload). Format 3 (read): the same without the
                    ``by_id`` order. Format 2 (read): one JSON object {"node": {id:
                    {"label": L, prop: value, ...}}, "succ": {src: {dst: {rel: props}}}}
                    (``json_ints``: true when the payload holds integers beyond 64 bits,
                    which orjson would read as floats: the json module then reads it).
                    Formats 2 and 3 are rewritten as format 4 by the next compaction.
    journal.jsonl   one JSON object per committed write: {"seq", "t", "n", "e"}; fsync'd

Both files are parsed by orjson, with exactly the values the json module reads (see
:func:`_parse_record`, :func:`loads_json`), with the cyclic GC paused while a graph is decoded.
The store compacts the journal into the snapshot when it closes once the journal outgrew a
threshold (``networkx_store.AUTO_COMPACT_BYTES``): replaying a record costs more than decoding it
from the snapshot.

Nothing read from a store directory is executable: the snapshot is JSON and arrays of fixed
dtypes (formats 3 and 4, never unpickled) and the journal is JSON; the snapshot is checked against
its length (against the file's size, before anything is read) and sha256 and then against the schema (labels, tenant ids, relationship types and
endpoints; in formats 3 and 4 a node's own properties when it is first decoded); journal records are checked for
shape here and against the schema by the store when replayed. A pre-format-2 ``snapshot.pkl``
(a pickle) is refused, never read.

Crash safety: a snapshot is written to a temporary file, fsync'd, then ``os.replace``d over the
old one (and the directory fsync'd), so a reader sees the old or the new snapshot, never half of
one. A journal record is one ``write`` of one line; a process killed mid-write leaves at most a
torn last line without its newline, which replay ignores (and the next writer truncates). A
complete line that does not parse (or fails validation on replay) is quarantined by the store:
skipped, reported by ``hopweave doctor``, and kept in ``quarantine.jsonl`` by the next compaction
(:func:`keep_quarantined`); it never stops the store from opening. Replay applies only
records with ``seq`` greater than the snapshot's ``last_seq``, so a crash between replacing the
snapshot and truncating the journal is harmless.

Every OSError (disk full, I/O error, permissions) becomes a StoreIOError naming the file.
"""

from __future__ import annotations

import errno as _errno
import gc
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from hopweave.errors import StoreCorruptError, StoreError, StoreIOError
from hopweave.graph._columns import RELOAD, STORED_TYPE, Columns, dumps_json, encode
from hopweave.graph._locks import file_lock
from hopweave.models.common import _TENANT_RE
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema

try:  # a dependency, ~2-5x faster than json here; the format is plain JSON either way
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None  # type: ignore[assignment]

SNAPSHOT = "graph.snapshot"
LEGACY_SNAPSHOT = "snapshot.pkl"
JOURNAL = "journal.jsonl"
#: Journal records that failed validation, kept by compaction (one JSON object a line).
QUARANTINE = "quarantine.jsonl"
LOCK = "LOCK"
MAGIC = "hopweave-networkx-snapshot"
#: The snapshot format written: 4, columns with the ids' order (``_columns``). Formats 2 (one
#: JSON object) and 3 (columns without that order) are still read, and rewritten as format 4 by
#: the next compaction.
FORMAT = 4
COLUMNS_FORMATS = (3, FORMAT)
JSON_FORMAT = 2
READ_FORMATS = (JSON_FORMAT, *COLUMNS_FORMATS)
_HEADER_MAX = 4096
#: Header flag of a snapshot the json module wrote (it holds integers beyond 64 bits).
_EXACT_KEY = "json_ints"
_LABEL = "label"
_RECORD_KEYS = frozenset({"seq", "t", "n", "e"})

_ERRNO_HINT = {
    _errno.ENOSPC: "the disk is full: free space and retry",
    _errno.EDQUOT: "the disk quota is exceeded: free space and retry",
    _errno.EIO: "an I/O error: check the disk",
    _errno.EACCES: "permission denied: check the store directory's permissions",
    _errno.EPERM: "permission denied: check the store directory's permissions",
    _errno.EROFS: "the file system is read-only: open the store read_only or move it",
}


# ---- helpers ---------------------------------------------------------------------------
def io_error(exc: OSError, path: Path, action: str) -> StoreIOError:
    """The StoreIOError for an OSError while ``action`` on ``path``."""
    hint = _ERRNO_HINT.get(exc.errno or 0, exc.strerror or str(exc))
    return StoreIOError(f"{action} {path} failed: {hint}", path=str(path), errno=exc.errno)


@contextmanager
def io_guard(path: Path, action: str) -> Iterator[None]:
    """Translate OSErrors raised in the block into StoreIOError (see :func:`io_error`)."""
    try:
        yield
    except StoreError:
        raise
    except OSError as exc:
        raise io_error(exc, path, action) from exc


def fsync_dir(directory: Path) -> None:
    from hopweave import fileio

    with io_guard(directory, "syncing"):
        fileio.fsync_dir(directory)


def loads_json(raw: bytes | str) -> Any:
    """Whether ``raw`` is JSON as the json module reads it, parsed by orjson when it can: orjson
    refuses NaN and lone surrogates, which json accepts (then json parses). Use the value only
    where an integer beyond 64 bits does not matter: orjson makes it a float (see
    :func:`loads_exact`). Raises ValueError for text that is not JSON."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


_HUGE = float(2 ** 63)


def _has_huge_float(v: Any) -> bool:
    """Whether ``v`` holds a float of magnitude 2**63 or more: where orjson read an integer
    beyond 64 bits (the json module reads an int)."""
    t = type(v)
    if t is float:
        return not -_HUGE < v < _HUGE  # NaN never comes from orjson
    if t is dict:
        return any(_has_huge_float(x) for x in v.values())
    if t is list:
        return any(_has_huge_float(x) for x in v)
    return False


def _huge_in_record(rec: dict[str, Any]) -> bool:
    """:func:`_has_huge_float` over a shape-checked journal record, touching each property
    value once (records carry floats such as confidences, rarely anything else numeric)."""
    if type(rec["seq"]) is float:
        return True
    for entries, at in ((rec.get("n", ()), 2), (rec.get("e", ()), 3)):
        for entry in entries:
            for v in entry[at].values():
                t = type(v)
                if (t is float and not -_HUGE < v < _HUGE) or ((t is dict or t is list) and _has_huge_float(v)):
                    return True
    return False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (restoring its state after). Decoding a
    large graph allocates millions of long-lived dicts and no cycles; left on, the collector
    would rescan all of them again and again while they are created."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def locked(directory: Path, exclusive: bool, timeout_s: float | None = None) -> Iterator[None]:
    """Hold the directory's flock (shared or exclusive) for the block, waiting at most
    ``timeout_s`` (None = the default). Creates the directory and LOCK file when taking an
    exclusive lock; a shared lock on a missing directory is a no-op. Raises StoreBusyError
    (timeout) or StoreIOError."""
    lock_path = directory / LOCK
    if not exclusive and not lock_path.exists():
        yield
        return
    with io_guard(directory, "creating"):
        directory.mkdir(parents=True, exist_ok=True)
    with file_lock(lock_path, exclusive, timeout_s):
        yield


# ---- snapshot ----------------------------------------------------------------------------
@dataclass
class Snapshot:
    """A decoded, validated snapshot: the networkx dicts plus the label index."""

    header: dict[str, Any]
    node: dict[str, dict[str, Any]]
    succ: dict[str, dict[str, dict[str, dict[str, Any]]]]
    pred: dict[str, dict[str, dict[str, dict[str, Any]]]]
    by_label: dict[str, set[str]]
    edge_count: int


def write_snapshot(directory: Path, node: dict[str, Any], succ: dict[str, Any], header: dict[str, Any],
                   fmt: int = FORMAT, base: Columns | None = None, edited: dict[int, Any] | None = None) -> None:
    """Atomically replace the snapshot with ``node``/``succ`` (the eager dicts; with ``base``,
    a columnar state: see ``_columns.encode``) under ``header``, in format ``fmt`` (4: columns;
    3 and 2, what older hopweave versions read: columns without the ids' order, and one JSON
    object of the eager dicts only).
    Raises StoreIOError (the old snapshot is then untouched)."""
    with io_guard(directory, "creating"):
        directory.mkdir(parents=True, exist_ok=True)
        for name in (SNAPSHOT, JOURNAL):  # temporaries left by a killed writer (we hold the lock)
            for stale in directory.glob(f".{name}.*.tmp"):
                stale.unlink(missing_ok=True)
    if fmt in COLUMNS_FORMATS:
        chunks, sections, digest = encode(node, succ, base, edited, by_id=fmt == FORMAT)
        head = dict(header, magic=MAGIC, format=fmt, payload_len=sum(map(len, chunks)),
                    payload_sha256=digest, sections=sections)
    elif fmt == JSON_FORMAT and base is None:
        payload, slow = dumps_json({"node": node, "succ": succ})
        chunks = [payload]
        head = dict(header, magic=MAGIC, format=JSON_FORMAT, payload_len=len(payload),
                    payload_sha256=hashlib.sha256(payload).hexdigest())
        if slow:
            head[_EXACT_KEY] = True  # integers beyond 64 bits: read with the json module
    else:
        raise StoreError(f"snapshot format {fmt!r} cannot be written (formats: {READ_FORMATS})")
    raw = json.dumps(head, sort_keys=True).encode() + b"\n"
    if len(raw) > _HEADER_MAX:
        raise StoreError("snapshot header too large")  # pragma: no cover
    tmp = directory / f".{SNAPSHOT}.{os.getpid()}.tmp"
    try:
        with io_guard(tmp, "writing the snapshot"):
            with open(tmp, "wb") as f:
                f.write(raw)
                for chunk in chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, directory / SNAPSHOT)
        fsync_dir(directory)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    (directory / LEGACY_SNAPSHOT).unlink(missing_ok=True)  # superseded by the new format


def files_summary(directory: Path) -> dict[str, Any]:
    """The snapshot's format (None when there is no snapshot or its header is unreadable) and
    size and the journal's size, in bytes (0 when absent): what ``hopweave compact`` and
    ``hopweave doctor`` report. Reads only the header line."""
    fmt = None
    try:
        with open(directory / SNAPSHOT, "rb") as f:
            fmt = json.loads(f.readline(_HEADER_MAX)).get("format")
    except (OSError, ValueError, AttributeError):
        fmt = None
    sig = snapshot_signature(directory)
    return {"snapshot_format": fmt, "snapshot_bytes": sig[1] if sig is not None else 0,
            "journal_bytes": journal_size(directory)}


def snapshot_signature(directory: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime_ns) of the snapshot file, or None when there is none."""
    path = directory / SNAPSHOT
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise io_error(exc, path, "reading") from exc
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_snapshot(directory: Path, schema: GraphSchema) -> Snapshot | Columns | None:
    """The validated snapshot (format 2: the decoded dicts; formats 3 and 4: the checked columns),
    None when there is none.

    Raises StoreCorruptError (bad header, length, checksum, JSON or content; a legacy pickle
    snapshot) naming the file and what to do, StoreIOError when it cannot be read."""
    path = directory / SNAPSHOT
    try:
        f = open(path, "rb")  # noqa: SIM115 - the `with f` below closes it
    except FileNotFoundError:
        legacy = directory / LEGACY_SNAPSHOT
        if legacy.exists():
            raise StoreCorruptError(
                f"{legacy}: a snapshot in the retired pickle format, which hopweave no longer reads "
                "(reading it could run code from the file); rebuild the store with `hopweave load`"
            ) from None
        return None
    except OSError as exc:
        raise io_error(exc, path, "opening") from exc
    with f, io_guard(path, "reading"):
        header = _read_header(f, path)
        left = os.fstat(f.fileno()).st_size - f.tell()
        if header["payload_len"] != left:  # checked before reading: a forged length never allocates
            raise StoreCorruptError(f"{path}: payload is {left} bytes, header says {header['payload_len']} "
                                    f"(truncated, appended to or forged); {RELOAD}")
        payload = f.read(left + 1)
    if len(payload) != header["payload_len"]:
        raise StoreCorruptError(f"{path}: payload is {len(payload)} bytes, header says "
                                f"{header['payload_len']} (truncated or appended to); {RELOAD}")
    mismatch = StoreCorruptError(f"{path}: payload checksum mismatch (the file was altered or damaged); {RELOAD}")
    if header["format"] in COLUMNS_FORMATS:
        # hashing (no GIL) runs beside the columns' checks (Python): about 0.2 s less per 300 MB;
        # the columns are returned only once the checksum has matched
        with ThreadPoolExecutor(1, thread_name_prefix="hopweave-snapshot-sha256") as pool:
            digest = pool.submit(hashlib.sha256, payload)
            try:
                with gc_paused():
                    cols = Columns(path, header, payload, schema)
            except Exception:
                if digest.result().hexdigest() != header["payload_sha256"]:
                    raise mismatch from None
                raise
            if digest.result().hexdigest() != header["payload_sha256"]:
                raise mismatch
            return cols
    if hashlib.sha256(payload).hexdigest() != header["payload_sha256"]:
        raise mismatch
    with gc_paused():
        try:
            data = json.loads(payload) if header.get(_EXACT_KEY) is True else loads_json(payload)
        except ValueError as exc:
            raise StoreCorruptError(f"{path}: payload is not valid JSON ({exc}); {RELOAD}") from exc
        del payload
        return _decode(path, header, data, schema)


def _read_header(f: Any, path: Path) -> dict[str, Any]:
    line = f.readline(_HEADER_MAX)
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreCorruptError(f"{path}: unreadable snapshot header ({exc}); {RELOAD}") from exc
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise StoreCorruptError(f"{path}: not a hopweave networkx snapshot; {RELOAD}")
    if header.get("format") not in READ_FORMATS:
        raise StoreCorruptError(f"{path}: snapshot format {header.get('format')!r}, this hopweave reads "
                                f"formats {', '.join(map(str, READ_FORMATS))}; rebuild the store with `hopweave load` "
                                "(or open it with the hopweave version that wrote it)")
    plen, digest = header.get("payload_len"), header.get("payload_sha256")
    if not isinstance(plen, int) or plen < 0 or not isinstance(digest, str) or not isinstance(header.get("last_seq"), int):
        raise StoreCorruptError(f"{path}: snapshot header lacks payload_len/payload_sha256/last_seq; {RELOAD}")
    return header


def _decode(path: Path, header: dict[str, Any], data: Any, schema: GraphSchema) -> Snapshot:
    """Check the decoded payload against the schema and build the networkx dicts (pred shares
    the edge dicts of succ, as networkx does). Raises StoreCorruptError naming the first fault."""
    def fail(what: str) -> StoreCorruptError:
        return StoreCorruptError(f"{path}: {what}; {RELOAD}")

    if not isinstance(data, dict) or not isinstance(data.get("node"), dict) or not isinstance(data.get("succ"), dict):
        raise fail("payload lacks the node/succ objects")
    node: dict[str, dict[str, Any]] = data["node"]
    succ: dict[str, dict[str, dict[str, dict[str, Any]]]] = data["succ"]
    by_label = _check_nodes(node, schema, fail)
    if succ.keys() != node.keys():
        stray = next((x for x in succ if x not in node), None)
        if stray is not None:
            raise fail(f"edges leave node {stray!r}, which does not exist")
        for nid in node.keys() - succ.keys():
            succ[nid] = {}
    # (source label) -> {(type, target label)} the schema allows; one set probe per edge.
    allowed: dict[str, set[tuple[str, str]]] = {}
    for r in schema.relationships:
        for f in r.from_labels:
            allowed.setdefault(f, set()).update((r.name, t) for t in r.to_labels)
    no_edges: set[tuple[str, str]] = set()
    pred: dict[str, dict[str, dict[str, dict[str, Any]]]] = {nid: {} for nid in node}
    edges = 0
    for src, nbrs in succ.items():
        if type(nbrs) is not dict:
            raise fail(f"adjacency of {src!r} is not an object")
        if not nbrs:
            continue
        sl = node[src][_LABEL]
        ok = allowed.get(sl, no_edges)
        for dst, kd in nbrs.items():
            d = node.get(dst)
            if d is None or type(kd) is not dict or not kd:
                raise fail(f"edge {src!r} -> {dst!r} points to a missing node or has no types")
            dl = d[_LABEL]
            for rel, props in kd.items():
                if (rel, dl) not in ok or type(props) is not dict:
                    raise fail(f"relationship {rel!r} cannot go from {sl} to {dl} (or has no property object)")
            edges += len(kd)
            pred[dst][src] = kd
    if header.get("nodes", len(node)) != len(node) or header.get("edges", edges) != edges:
        raise fail(f"counts differ from the header ({len(node)} nodes, {edges} edges)")
    return Snapshot(header, node, succ, pred, by_label, edges)


def _check_nodes(node: dict[str, Any], schema: GraphSchema, fail: Any) -> dict[str, set[str]]:
    """Every node is a property object with a schema label, only declared properties of their
    stored types, and a tenant_id valid for the label (``_global`` for shared labels, a
    well-formed tenant id otherwise). Returns label -> ids."""
    shared = {lab.name: lab.shared for lab in schema.labels}
    stored = {lab.name: {**{n: STORED_TYPE[p.type] for n, p in lab.props.items() if n != "id"},
                         _LABEL: str, "tenant_id": str} for lab in schema.labels}
    by_label: dict[str, set[str]] = {name: set() for name in shared}
    tenants: set[Any] = set()
    for nid, attrs in node.items():
        if type(attrs) is not dict:
            raise fail(f"node {nid!r} is not a property object")
        label = attrs.get(_LABEL)
        ids = by_label.get(label)  # type: ignore[arg-type]
        if ids is None:
            raise fail(f"node {nid!r} has label {label!r}, which is not in the schema")
        ids.add(nid)
        types = stored[label]  # type: ignore[index]
        for k, v in attrs.items():
            t = type(v)
            if t is not types.get(k) or (t is list and any(type(x) is not str for x in v)):
                raise fail(f"node {nid!r} ({label}): property {k!r} is undeclared or not of its declared type")
        tenant = attrs.get("tenant_id")
        if shared[label]:  # type: ignore[index]
            if tenant != GLOBAL_TENANT:
                raise fail(f"node {nid!r} ({label}) has tenant_id {tenant!r}, not valid for its shared label")
        elif tenant not in tenants:
            if tenant == GLOBAL_TENANT or not isinstance(tenant, str) or not _TENANT_RE.match(tenant):
                raise fail(f"node {nid!r} ({label}) has tenant_id {tenant!r}, not valid for its label")
            tenants.add(tenant)
    return {k: v for k, v in by_label.items() if v}


# ---- journal -----------------------------------------------------------------------------
def journal_size(directory: Path) -> int:
    path = directory / JOURNAL
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise io_error(exc, path, "reading") from exc


def read_journal(directory: Path, offset: int, bad: list[tuple[int, str]] | None = None,
                 ) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """Complete records from byte ``offset`` on, as (byte offset, record), and the offset after
    the last complete one.

    A torn last line (no newline) is ignored. A complete line that is not a well-shaped record
    (see :func:`check_record`) raises StoreCorruptError, or, when ``bad`` is a list, is skipped
    and appended to it as (byte offset, what is wrong). Raises StoreIOError when unreadable."""
    path = directory / JOURNAL
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise io_error(exc, path, "reading") from exc
    records: list[tuple[int, dict[str, Any]]] = []
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # torn tail (or nothing left)
        line = data[pos:nl]
        if line.strip():
            at = offset + pos
            try:
                records.append((at, _parse_record(path, at, line)))
            except StoreCorruptError as exc:
                if bad is None:
                    raise
                bad.append((at, str(exc)))
        pos = nl + 1
    return records, offset + pos


def _parse_record(path: Path, at: int, line: bytes) -> dict[str, Any]:
    """The shape-checked record of one journal line, exactly as ``json.loads`` reads it: orjson
    parses, and where it reads an integer beyond 64 bits as a float (or its value fails the shape
    check) the json module parses again, so its verdict and value are the ones used."""
    try:
        try:
            return _exact(check_record(path, at, loads_json(line)))
        except StoreCorruptError:
            pass
        return check_record(path, at, json.loads(line))
    except ValueError as exc:
        raise StoreCorruptError(f"{path}: journal record at byte {at} is not JSON ({exc}); {RELOAD}") from exc


def _exact(rec: dict[str, Any]) -> dict[str, Any]:
    if _huge_in_record(rec):
        raise StoreCorruptError("an integer beyond 64 bits")  # caught: the json module parses
    return rec


def check_record(path: Path, at: int, rec: Any) -> dict[str, Any]:
    """A journal record's shape: {"seq": int, "t": tenant, "n": [[id, label, props, removed]],
    "e": [[src, type, dst, props]]}. Returns it; raises StoreCorruptError naming the byte."""
    def bad(what: str) -> StoreCorruptError:
        return StoreCorruptError(f"{path}: journal record at byte {at} {what}; {RELOAD}")

    if not isinstance(rec, dict) or not set(rec) <= _RECORD_KEYS:
        raise bad("is not a journal record object")
    if not isinstance(rec.get("seq"), int) or isinstance(rec.get("seq"), bool):
        raise bad("has no integer seq")
    t = rec.get("t")
    if not isinstance(t, str) or not (t == GLOBAL_TENANT or _TENANT_RE.match(t)):
        raise bad(f"has a malformed tenant id {t!r}")
    for n in rec.get("n", ()):
        if not (isinstance(n, list) and len(n) == 4 and isinstance(n[0], str) and isinstance(n[1], str)
                and isinstance(n[2], dict) and isinstance(n[3], list) and all(isinstance(k, str) for k in n[3])):
            raise bad("has a node entry that is not [id, label, properties, removed]")
    for e in rec.get("e", ()):
        if not (isinstance(e, list) and len(e) == 4 and all(isinstance(x, str) for x in e[:3])
                and isinstance(e[3], dict)):
            raise bad("has an edge entry that is not [src, type, dst, properties]")
    if not isinstance(rec.get("n", []), list) or not isinstance(rec.get("e", []), list):
        raise bad("has n/e that are not lists")
    return rec


def append_journal(directory: Path, good_offset: int, record: dict[str, Any]) -> int:
    """Append one record at ``good_offset`` (dropping any torn tail beyond it), fsync, and
    return the new end offset. The caller holds the exclusive lock. Raises StoreIOError (disk
    full, I/O error); the journal then ends at ``good_offset`` again as far as the OS allows."""
    line = (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    path = directory / JOURNAL
    created = not path.exists()
    with io_guard(path, "appending to the journal"):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != good_offset:
                os.ftruncate(fd, good_offset)
            os.lseek(fd, good_offset, os.SEEK_SET)
            try:
                view = memoryview(line)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            except OSError:
                _truncate_quietly(fd, good_offset)
                raise
        finally:
            os.close(fd)
    if created:
        fsync_dir(directory)
    return good_offset + len(line)


def _truncate_quietly(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass  # the torn tail is ignored by readers and cut by the next writer anyway


def reset_journal(directory: Path) -> None:
    """Atomically replace the journal with an empty one (after a snapshot that includes it)."""
    tmp = directory / f".{JOURNAL}.{os.getpid()}.tmp"
    with io_guard(tmp, "resetting the journal"):
        with open(tmp, "wb") as f:
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, directory / JOURNAL)
    fsync_dir(directory)


def keep_quarantined(directory: Path, entries: list[dict[str, Any]]) -> None:
    """Append ``entries`` (quarantined journal records) to the quarantine file, fsync'd.
    Raises StoreIOError."""
    path = directory / QUARANTINE
    with io_guard(path, "appending to the quarantine file"):
        with open(path, "ab") as f:
            for entry in entries:
                f.write((json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())


def read_quarantined(directory: Path) -> list[dict[str, Any]]:
    """The quarantine file's entries (lines that do not parse are reported as such), [] when
    there is none. Raises StoreIOError."""
    path = directory / QUARANTINE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise io_error(exc, path, "reading") from exc
    out: list[dict[str, Any]] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        out.append(entry if isinstance(entry, dict) else {"reason": "an unreadable quarantine line"})
    return out
