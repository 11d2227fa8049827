"""The embedded default GraphStore: a networkx MultiDiGraph, persistent in a directory.

- Storage: ``<directory>/graph.snapshot`` + ``journal.jsonl``, columns / JSON + sha256 (see
  ``_persist``, ``_columns``): opening reads the snapshot's arrays and decodes a node's dict the first
  time it is read; the networkx graph (:attr:`graph`) is built when asked for. Each
  :meth:`write` appends one fsync'd journal line (a DecisionTrace per retrieval does not rewrite a
  million-node snapshot); :meth:`compact` rewrites the snapshot atomically and empties the
  journal; :meth:`bulk` loads millions of items in memory and commits them as one snapshot. A
  killed process leaves the previous committed state readable.
- Several processes may open one directory: writes take an exclusive flock (waiting at most
  ``lock_timeout_s``, then StoreBusyError) and first catch up with records other processes
  appended; :meth:`refresh` catches up explicitly. Reads take no file lock: a writer, even a long
  bulk load, never blocks a process opening the store (it reads the last committed state).
- Threads: reads (walks) run concurrently under a read lock; writes apply under the write lock.
- The networkx graph (:attr:`graph`) has nodes keyed by id with attributes = properties plus
  ``label``, and one edge per (src, type, dst) with key = the relationship type. Treat it as
  read-only; write through :meth:`write` / :meth:`bulk`.
"""

from __future__ import annotations

import gc
import hashlib
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Hashable, Iterable, Iterator, Sequence

from hopweave.errors import (
    HopweaveError,
    InputError,
    StoreBusyError,
    StoreError,
    StoreIOError,
)
from hopweave.graph import _persist as P
from hopweave.graph._locks import DEFAULT_LOCK_TIMEOUT_S, RWLock
from hopweave.graph._nx_state import State
from hopweave.graph.base import Edge, GraphStore, Node, visible
from hopweave.graph.walk import LABEL_KEY, walk
from hopweave.graph.write_rules import (
    METAGRAPH_LABELS,
    GatedNode,
    WriteValidator,
    check_metagraph_batch,
    goal_from_props,
)
from hopweave.models.common import Bindings, PatternResult
from hopweave.models.filters import And, Eq, FilterTree, matches
from hopweave.models.metagraph import GoalType, TraversalPattern, goal_node_id
from hopweave.models.schema import GLOBAL_TENANT, GraphSchema

if TYPE_CHECKING:
    import networkx as nx

_META_LABELS = frozenset({"GoalType", "TraversalPattern"})
#: Graphs at least this large are moved out of the cyclic GC's reach after loading (gc.freeze),
#: so full collections do not scan millions of long-lived dicts in the middle of a retrieval.
FREEZE_THRESHOLD = 100_000
#: :meth:`NetworkxGraphStore.close` folds the journal into a new snapshot (:meth:`compact`) when the
#: journal has grown past this many bytes and past a quarter of the snapshot: replaying a record
#: (parse, schema and gate checks) costs more than decoding the same bytes of snapshot, so
#: recorded traces would otherwise slow every later open (docs/BENCHMARKS.md, "Cold start").
AUTO_COMPACT_BYTES = 8 * 1024 * 1024
#: The longest :meth:`NetworkxGraphStore.close` waits for the directory's lock to compact; a store
#: another process is writing is left as it is (its journal stays valid) and compacted later.
AUTO_COMPACT_LOCK_WAIT_S = 1.0


class NetworkxGraphStore(GraphStore):
    """GraphStore on networkx, persistent in ``directory`` (None = in memory only).

    The constructor does no I/O; the directory is read on first use (or :meth:`load`).
    """

    walks_in_process = True  # the walk is in memory and checks its deadline (graph/walk.py)

    def __init__(
        self,
        directory: str | Path | None,
        schema: GraphSchema | None = None,
        *,
        read_only: bool = False,
        lock_timeout_s: float | None = None,
        auto_compact_bytes: int | None = AUTO_COMPACT_BYTES,
    ) -> None:
        if schema is None:  # no schema and no store settings: the domain-free base schema
            schema = GraphSchema.base()
        self.schema = schema
        self.directory = Path(directory) if directory is not None else None
        self.read_only = read_only
        #: Longest wait for the directory's lock (load, write, compact, bulk); past it, StoreBusyError.
        self.lock_timeout_s = DEFAULT_LOCK_TIMEOUT_S if lock_timeout_s is None else float(lock_timeout_s)
        #: Journal size past which :meth:`close` compacts (also past a quarter of the snapshot);
        #: None never compacts at close.
        self.auto_compact_bytes = auto_compact_bytes
        self._validator = WriteValidator(schema)
        self._rw = RWLock()
        self._wlock = threading.RLock()
        self._loaded = False
        self._closed = False
        self._st = State()
        self._seq = 0
        self._journal_offset = 0
        self._snap_sig: tuple[int, int, int] | None = None
        self._meta_version = 0
        #: Bumped with every change of the state readers see (see :meth:`change_token`).
        self._data_version = 0
        self._epoch = 0  # bumped when the whole state may have changed (a re-read snapshot, a bulk load)
        self._name_writes: dict[str, int] = {}  # writes per "n:<label>" / "e:<type>"
        self._meta_cache: tuple[int, list[GoalType], list[TraversalPattern], str] | None = None
        self._meta_problems: list[Any] = []
        self._index_lock = threading.Lock()
        self._quarantined: list[Quarantined] = []
        #: (mtime_ns, size) of the store settings file when its schema was last compared.
        self._settings_sig: tuple[int, int] | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: str | Path | None, schema: GraphSchema | None = None, **kw: Any) -> "NetworkxGraphStore":
        """Construct and load now (raises StoreCorruptError for an unreadable directory)."""
        store = cls(directory, schema, **kw)
        store.load()
        return store

    def load(self) -> None:
        """(Re)read the snapshot and journal from disk. Raises StoreCorruptError (a file fails
        its checksum or the schema), StoreIOError, StoreBusyError (lock timeout)."""
        with self._wlock, self._rw.write():
            self._load_locked()

    def _ensure(self) -> None:
        if self._closed:
            raise StoreError("the graph store is closed; open it again")
        if not self._loaded:
            with self._wlock:
                if not self._loaded:
                    with self._rw.write():
                        self._load_locked()

    def _load_locked(self) -> None:
        with P.gc_paused():  # the snapshot, the journal replay and the freeze: no collection
            if self.directory is None:
                self._st, self._seq, self._journal_offset, self._snap_sig = State(), 0, 0, None
                self._quarantined = []
            else:
                self._read_consistent()
            self._loaded = True
            if self._st.node_count >= FREEZE_THRESHOLD:
                # No gc.collect() first: decoding makes no reference cycles, and a full collection
                # would walk the millions of dicts just created (about 1 s at a million nodes).
                gc.freeze()

    def _read_consistent(self) -> None:
        """Read the directory without its lock, so a writer (even a long bulk load) never blocks
        a reader: retry while a compaction replaced the snapshot mid-read (the old snapshot +
        the new, emptied journal would miss records). Raises StoreBusyError when the snapshot
        keeps changing for ``lock_timeout_s``."""
        deadline = time.monotonic() + self.lock_timeout_s
        while not self._read_directory():
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"{self.directory}: the snapshot kept being replaced while it was read "
                    f"(for {self.lock_timeout_s:g}s); retry when the compactions stop"
                )
            time.sleep(0.01)

    def _read_directory(self) -> bool:
        """Replace the state with the directory's snapshot + journal. Returns False (state
        unchanged) when the snapshot was replaced during the read."""
        got = self._scan_directory()
        if got is None:
            return False
        self._adopt(got)
        return True

    def _scan_directory(self) -> tuple[State, int, int, Any] | None:
        """A new state read from the directory's snapshot + journal, with its last seq, journal
        end offset and snapshot signature; None when the snapshot was replaced during the read.
        Touches nothing of this store's current state (readers go on meanwhile)."""
        assert self.directory is not None
        st, seq = State(), 0
        sig = P.snapshot_signature(self.directory)
        snap = P.read_snapshot(self.directory, self.schema)
        if snap is not None:
            st, seq = State(snap), int(snap.header["last_seq"])
        bad: list[tuple[int, str]] = []
        records, off = P.read_journal(self.directory, 0, bad)
        if P.snapshot_signature(self.directory) != sig:
            return None
        held = [Quarantined.unreadable(at, why) for at, why in bad]
        seq = self._replay(st, records, seq, held)
        held.sort(key=lambda q: q.at)
        return st, seq, off, (sig, held)

    def _adopt(self, got: tuple[State, int, int, Any]) -> None:
        self._st, self._seq, self._journal_offset, (self._snap_sig, self._quarantined) = got
        self._meta_version += 1
        self._epoch += 1

    def _replay(self, st: State, records: list[tuple[int, dict[str, Any]]], seq: int,
                quarantine: list[Quarantined] | None = None) -> int:
        """Apply journal records after ``seq``, each validated against the schema and the tenant
        rules like a write. A record that fails is not applied (none of its items): it is
        quarantined, appended to ``quarantine`` (default: this store's :attr:`quarantined`),
        and the replay goes on. Returns the last seq."""
        held = self._quarantined if quarantine is None else quarantine
        for at, rec in records:
            if rec["seq"] <= seq:
                continue
            try:
                nrec, erec = self._validate_on(st, rec["t"], *_record_items(rec))
            except HopweaveError as exc:
                held.append(Quarantined(at, rec["seq"], rec["t"], f"{type(exc).__name__}: {exc}", rec))
                seq = rec["seq"]
                continue
            gens = self.__dict__.setdefault("_label_writes", {})  # caches keyed on data_generation see it
            self._count_writes(st, nrec, erec)
            for nid, label, props, removed in nrec:
                st.upsert_node(nid, label, props, removed)
                gens[label] = gens.get(label, 0) + 1
            for src, rel, dst, props in erec:
                st.upsert_edge(src, rel, dst, props)
            seq = rec["seq"]
        return seq

    def _catch_up_locked(self) -> None:
        """Apply what other processes committed since we read the directory (exclusive lock held)."""
        if self.directory is None:
            return
        self._follow_schema()
        sig = P.snapshot_signature(self.directory)
        size = P.journal_size(self.directory)
        if sig != self._snap_sig or size < self._journal_offset:
            # Another process compacted: read the new snapshot while this state keeps answering
            # readers (seconds at a million nodes), then swap under the write lock. Under the
            # exclusive file lock nobody can replace the snapshot meanwhile.
            with P.gc_paused():
                got = self._scan_directory()
            with self._rw.write():
                if got is not None:
                    self._adopt(got)
                else:  # pragma: no cover - only a writer ignoring the lock replaces it now
                    self._read_consistent()
        elif size > self._journal_offset:
            bad: list[tuple[int, str]] = []
            records, off = P.read_journal(self.directory, self._journal_offset, bad)
            self._quarantined.extend(Quarantined.unreadable(at, why) for at, why in bad)
            if records:
                with self._rw.write():
                    self._seq = self._replay(self._st, records, self._seq)
                    self._meta_version += 1
            self._journal_offset = off

    def _follow_schema(self) -> None:
        """Adopt the store settings' schema when another process (``hopweave load`` of another
        pack) extended it: that process writes the merged schema to the settings before its
        first graph write, so what it commits is read and replayed with the labels and
        relationship types it declares instead of failing as corrupt (a snapshot) or being held
        in quarantine (journal records). Only an extension is adopted (every label and
        relationship type of the current schema is kept); anything else leaves the schema as it
        is; tenants the new pack added get their domain (a served tenant's never changes). One
        ``stat`` when the settings file has not changed."""
        from hopweave.models.store_settings import read_store_settings, settings_path

        assert self.directory is not None
        path = settings_path(self.directory.parent)  # a store directory: <store>/graph and its settings
        try:
            st = path.stat()
        except OSError:
            return
        sig = (st.st_mtime_ns, st.st_size)
        if sig == self._settings_sig:
            return
        self._settings_sig = sig
        try:
            stored = read_store_settings(path.parent)
            schema = stored.schema() if stored is not None and stored.store_schema else None
        except HopweaveError:
            return  # an unreadable settings file: the current schema stays (doctor reports the file)
        if schema is None or schema.version == self.schema.version:
            return
        if not (set(self.schema.label_map) <= set(schema.label_map)
                and set(self.schema.rel_map) <= set(schema.rel_map)):
            return
        added = {t: d for t, d in stored.tenant_domains().items() if t not in self.tenant_domains} if stored else {}
        with self._rw.write():
            self.schema = schema
            self._validator = WriteValidator(schema)
            if added and self.tenant_domains:  # new tenants only: a served tenant's domain never changes here
                self.tenant_domains = {**self.tenant_domains, **added}
            self._meta_version += 1

    def warmup(self) -> None:
        """Build the snapshot's incoming-edge index now (else the first walk along an edge
        backwards builds it: at 1M nodes about 0.15 s, mostly numpy's sort, which releases the
        GIL). Reads only."""
        self._ensure()
        cols = self._st.cols
        if cols is not None:
            cols.incoming()

    def change_token(self, reads: Iterable[str] | None = None) -> Hashable:
        """See :meth:`GraphStore.change_token`. Every change of the in-memory state counts, under
        the state's write lock: a write and each record caught up from other processes count
        per node label and edge type they touch, a re-read snapshot or a bulk load changes every
        token (a created node counts as ``"n+:<label>"``, a changed one as ``"n:<label>"``).
        Reads never catch up by themselves, so two equal tokens mean the same visible data of
        ``reads``."""
        if reads is None:
            return (self._data_version, self._epoch)
        counts = self._name_writes
        return (self._epoch, tuple(counts.get(n, 0) for n in reads))

    def _count_writes(self, st: State, nrec: Iterable[Sequence[Any]], erec: Iterable[Sequence[Any]]) -> None:
        """Count a write about to be applied to ``st`` (held: the state's write lock) for
        :meth:`change_token`: per node label, apart for nodes it creates (``"n+:<label>"``) and
        nodes it changes (``"n:<label>"``), and per edge type (``"e:<type>"``)."""
        counts = self._name_writes
        for r in nrec:
            key = ("n+:" if st.get(r[0]) is None else "n:") + r[1]
            counts[key] = counts.get(key, 0) + 1
        for r in erec:
            key = "e:" + r[1]
            counts[key] = counts.get(key, 0) + 1
        self._data_version += 1

    def refresh(self) -> None:
        """Catch up with writes other processes committed to the directory."""
        self._ensure()
        if self.directory is None or not (self.directory / P.LOCK).exists():
            return
        if (P.snapshot_signature(self.directory) == self._snap_sig
                and P.journal_size(self.directory) == self._journal_offset):
            return  # nothing committed since: no lock taken (a refresher polls this often)
        with self._wlock, P.locked(self.directory, exclusive=True, timeout_s=self.lock_timeout_s):
            self._catch_up_locked()

    def close(self) -> None:
        """Close the store. A writable store whose journal outgrew :attr:`auto_compact_bytes` and a
        quarter of the snapshot is compacted first, so the next open reads one snapshot instead
        of replaying the journal. That is best effort: when another process holds the directory's
        lock (longer than AUTO_COMPACT_LOCK_WAIT_S) or the disk refuses the new snapshot, the
        journal is left as it is, still valid, and the store closes all the same. As after
        :meth:`compact`, other processes that have the directory open re-read the new snapshot
        on their next write or :meth:`refresh`, holding the directory's lock meanwhile (seconds at
        a million nodes) while their old state keeps answering readers (pass
        ``auto_compact_bytes=None`` to leave compaction to an explicit :meth:`compact`)."""
        if self._closed:
            return
        try:
            if self._wants_compaction():
                self._compact(min(self.lock_timeout_s, AUTO_COMPACT_LOCK_WAIT_S))
        except (StoreBusyError, StoreIOError):
            pass  # the committed state is on disk either way; a later close compacts
        finally:
            self._closed = True

    def _wants_compaction(self) -> bool:
        if self.read_only or self.directory is None or not self._loaded or self.auto_compact_bytes is None:
            return False
        journal = P.journal_size(self.directory)
        snap = P.snapshot_signature(self.directory)
        return journal >= max(self.auto_compact_bytes, (snap[1] if snap is not None else 0) // 4)

    # ---- introspection -------------------------------------------------------------------
    @property
    def quarantined(self) -> list[Quarantined]:
        """The journal records of the current state that failed validation when replayed and
        were not applied (in journal order); ``hopweave doctor`` reports them. Compaction
        keeps them in ``quarantine.jsonl`` beside the journal (see :func:`held_back`)."""
        self._ensure()
        return list(self._quarantined)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The underlying networkx graph (read-only use). A store opened from a format-3
        snapshot builds it on first use (every node and edge as networkx dicts: seconds at a
        million nodes); writes keep it current from then on."""
        self._ensure()
        if self._st.cols is None:
            return self._st.g
        with self._wlock, self._rw.write():
            return self._st.g

    def stats(self) -> dict[str, Any]:
        """Node and edge counts, counts by label, journal size."""
        self._ensure()
        with self._rw.read():
            return {
                "nodes": self._st.node_count,
                "edges": self._st.edge_count,
                "labels": dict(sorted(self._st.label_counts().items())),
                "journal_bytes": self._journal_offset,
                "last_seq": self._seq,
            }

    # ---- reads ---------------------------------------------------------------------------
    def _get_node(self, tenant_id: str, node_id: str) -> Node | None:
        self._ensure()
        with self._rw.read():
            attrs = self._st.get(node_id)
            if attrs is None or not visible(tenant_id, attrs.get("tenant_id")):
                return None
            return _to_node(node_id, attrs)

    def _edge_props(self, src: str, rel_type: str, dst: str) -> dict[str, Any] | None:
        self._ensure()
        with self._rw.read():
            return self._st.edge_props(src, rel_type, dst)

    def _find_nodes(
        self, tenant_id: str, label: str, where: FilterTree | None, limit: int | None
    ) -> list[Node]:
        self._ensure()
        with self._rw.read():
            st = self._st
            ids: Iterable[str] = st.ids_of(label)
            eqs = [c for c in (where.clauses if isinstance(where, And) else (where,)) if isinstance(c, Eq)]
            for eq in eqs[:1]:
                if eq.field == "id":
                    ids = [eq.value] if isinstance(eq.value, str) and eq.value in ids else []
                else:
                    with self._index_lock:
                        idx = st.index(label, eq.field)
                    try:
                        ids = idx.get(eq.value, set())
                    except TypeError:
                        ids = []
            out: list[Node] = []
            for nid in sorted(ids):
                attrs = st.get(nid)
                assert attrs is not None
                if not visible(tenant_id, attrs.get("tenant_id")):
                    continue
                if where is not None and not matches(where, {**attrs, "id": nid}):
                    continue
                out.append(_to_node(nid, attrs))
                if limit is not None and len(out) >= limit:
                    break
            return out

    def _run_pattern(
        self, tenant_id: str, pattern: TraversalPattern, bindings: Bindings, deadline: float | None
    ) -> PatternResult:
        self._ensure()
        with self._rw.read():
            if pattern.seed.key != "id":
                with self._index_lock:
                    self._st.index(pattern.seed.type, pattern.seed.key)
            return walk(self._st, self.schema, tenant_id, pattern, bindings, deadline)

    # ---- writes --------------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError("this graph store was opened read_only; open it without read_only to write")

    def _validate(
        self, tenant_id: str, nodes: list[Node], edges: list[Edge]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        return self._validate_on(self._st, tenant_id, nodes, edges)

    def _validate_on(
        self, st: State, tenant_id: str, nodes: list[Node], edges: list[Edge]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        """Journal entries ([id, label, props, removed], [src, type, dst, props]) for a write
        by ``tenant_id`` against state ``st``. Raises SchemaError/InputError/TenantError."""
        check_metagraph_batch(self.schema, nodes, lambda name: goal_from_props(st.get(goal_node_id(name))))
        pending: dict[str, dict[str, Any]] = {}
        nrec: list[list[Any]] = []
        for n in nodes:
            existing = pending.get(n.id) or st.get(n.id)
            props, removed = self._validator.node(tenant_id, n, existing)
            merged = dict(existing or {LABEL_KEY: n.label})
            merged.update(props)
            pending[n.id] = merged
            nrec.append([n.id, n.label, props, removed])
        erec: list[list[Any]] = []
        for e in edges:
            src = pending.get(e.src) or st.get(e.src)
            dst = pending.get(e.dst) or st.get(e.dst)
            props = self._validator.edge(tenant_id, e, src, dst)
            erec.append([e.src, e.type, e.dst, props])
        return nrec, erec

    def _write(
        self, tenant_id: str, nodes: list[Node], edges: list[Edge], timeout_s: float | None = None
    ) -> None:
        """Validate, append one journal record, apply. ``timeout_s`` bounds every lock wait
        (None = ``lock_timeout_s``). Raises StoreBusyError (lock not taken in time: nothing is
        written), StoreIOError (disk full, I/O error: nothing is written), validation errors."""
        self._ensure()
        self._check_writable()
        if not nodes and not edges:
            return
        timeout = self.lock_timeout_s if timeout_s is None else max(0.0, float(timeout_s))
        deadline = time.monotonic() + timeout
        if not self._wlock.acquire(timeout=timeout):
            raise StoreBusyError(
                f"another thread of this process is writing the graph store (waited {timeout:g}s); retry"
            )
        try:
            if self.directory is None:
                nrec, erec = self._validate(tenant_id, nodes, edges)
                self._apply(nrec, erec, self._seq + 1, _left(deadline))
                return
            with P.locked(self.directory, exclusive=True, timeout_s=_left(deadline)):
                self._catch_up_locked()
                nrec, erec = self._validate(tenant_id, nodes, edges)
                seq = self._seq + 1
                record = {"seq": seq, "t": tenant_id, "n": nrec, "e": erec}
                self._journal_offset = P.append_journal(self.directory, self._journal_offset, record)
                # committed on disk: applying in memory must not time out now
                self._apply(nrec, erec, seq, None)
        finally:
            self._wlock.release()

    def _write_within(self, tenant_id: str, nodes: list[Node], edges: list[Edge], timeout_s: float) -> None:
        self._write(tenant_id, nodes, edges, timeout_s)

    def _apply(self, nrec: list[list[Any]], erec: list[list[Any]], seq: int, timeout_s: float | None) -> None:
        with self._rw.write(timeout_s):
            self._count_writes(self._st, nrec, erec)
            for nid, label, props, removed in nrec:
                self._st.upsert_node(nid, label, props, removed)
            for src, rel, dst, props in erec:
                self._st.upsert_edge(src, rel, dst, props)
            self._seq = seq
            if any(r[1] in _META_LABELS for r in nrec) or any(r[1] == "HAS_PATTERN" for r in erec):
                self._meta_version += 1

    def verify(self) -> int:
        """Decode and check every node of the snapshot now (format 3 checks a node's properties
        when it is first read; format 2 checked them all at open). Returns the number of
        snapshot nodes checked. Raises StoreCorruptError naming the first bad node."""
        self._ensure()
        with self._rw.read():
            cols = self._st.cols
            if cols is None:
                return self._st.node_count
            for i in range(cols.n):
                cols.attrs(i)
            return cols.n

    def value_problems(self, limit: int = 20) -> tuple[int, int, list[str]]:
        """Every node and edge checked by the write rules (what a journal record is checked by
        when replayed: labels, tenant rule, each property declared and in its stored form, a
        date a real day in 0001-9999 ...), wherever it is held (snapshot or journal). Returns
        (nodes checked, edges checked, the first ``limit`` problems). Raises StoreCorruptError
        when a snapshot node cannot be decoded."""
        self._ensure()
        problems: list[str] = []
        nodes = edges = 0
        with self._rw.read():
            for nid, attrs in self._st.all_nodes():
                nodes += 1
                why = self._validator.stored_node_problem(nid, attrs)
                if why and len(problems) < limit:
                    problems.append(why)
            for src, rel, dst, props in self._st.all_edges():
                edges += 1
                if props:
                    why = self._validator.stored_edge_problem(src, rel, dst, props)
                    if why and len(problems) < limit:
                        problems.append(why)
        return nodes, edges, problems

    def compact(self) -> None:
        """Rewrite the snapshot with everything committed and empty the journal (atomic)."""
        self._ensure()
        self._check_writable()
        self._compact(self.lock_timeout_s)

    def _compact(self, timeout_s: float) -> None:
        if self.directory is None:
            return
        with self._wlock, P.locked(self.directory, exclusive=True, timeout_s=timeout_s):
            self._catch_up_locked()
            self._commit_snapshot()

    def _commit_snapshot(self) -> None:
        assert self.directory is not None
        with self._rw.read():
            st = self._st
            header = {"last_seq": self._seq, "nodes": st.node_count, "edges": st.edge_count,
                      "schema_version": self.schema.version}
            with P.gc_paused():  # a columnar state: from its columns plus what was written since
                P.write_snapshot(self.directory, st.node, st.succ, header, base=st.cols, edited=st.edited)
        if self._quarantined:  # kept before the journal that holds them is emptied
            P.keep_quarantined(self.directory, [q.as_json() for q in self._quarantined])
            self._quarantined = []
        P.reset_journal(self.directory)
        self._journal_offset = 0
        self._snap_sig = P.snapshot_signature(self.directory)

    @contextmanager
    def bulk(self, *, replace: bool = False) -> Iterator["BulkWriter"]:
        """Bulk load: ``with store.bulk() as b: b.write(tenant, items)``.

        Items are validated and applied in memory as they stream in; on leaving the block the
        whole state is committed as one snapshot (all or nothing on disk). ``replace=True``
        starts from an empty graph (the old one stays on disk until the commit). Readers wait
        while a bulk load runs. On an exception the in-memory state is restored."""
        self._ensure()
        self._check_writable()
        with self._wlock:
            flock = (P.locked(self.directory, exclusive=True, timeout_s=self.lock_timeout_s)
                     if self.directory is not None else _null())
            with flock:
                self._catch_up_locked()
                old = self._st
                with self._rw.write():
                    if replace:
                        self._st = State()
                    else:
                        self._st.thaw()
                    writer = BulkWriter(self)
                    with P.gc_paused():
                        try:
                            yield writer
                            self._seq += 1
                            self._meta_version += 1
                            self._epoch += 1
                            if self.directory is not None:
                                self._commit_snapshot()
                        except BaseException:
                            # Roll back: the old state (replace), else what is on disk. An in-memory
                            # store without replace cannot roll back and keeps the applied prefix.
                            if replace:
                                self._st = old
                            elif self.directory is not None:
                                self._read_directory()
                            self._meta_version += 1
                            self._epoch += 1
                            raise
        if self._st.node_count >= FREEZE_THRESHOLD:
            gc.collect()
            gc.freeze()

    def bulk_write(self, tenant_id: str, items: Iterable[Node | Edge], *, replace: bool = False) -> int:
        """One-batch :meth:`bulk`. Returns the number of items written."""
        with self.bulk(replace=replace) as b:
            return b.write(tenant_id, items)

    # ---- metagraph -----------------------------------------------------------------------
    def _meta(self) -> tuple[list[GoalType], list[TraversalPattern], str]:
        self._ensure()
        cache = self._meta_cache
        if cache is not None and cache[0] == self._meta_version:
            return cache[1], cache[2], cache[3]
        from hopweave.graph.metagraph_io import decode_definitions

        with self._rw.read():
            version, st, h = self._meta_version, self._st, hashlib.sha256()
            rows: dict[str, list[tuple[str, Any, Any]]] = {}
            for label in ("GoalType", "TraversalPattern"):
                rows[label] = []
                for nid in sorted(st.ids_of(label)):
                    attrs = st.get(nid)
                    assert attrs is not None
                    if attrs.get("tenant_id") != GLOBAL_TENANT or not attrs.get("definition"):
                        continue
                    rows[label].append((nid, attrs.get("name"), attrs["definition"]))
                    h.update(f"{nid}\0{attrs['definition']}\0".encode())
            rev = h.hexdigest()[:16]
        goals, bad_goals = decode_definitions(GoalType, rows["GoalType"])
        patterns, bad_patterns = decode_definitions(TraversalPattern, rows["TraversalPattern"])
        goals.sort(key=lambda g: g.name)
        patterns.sort(key=lambda p: p.name)
        self._meta_problems = bad_goals + bad_patterns
        self._meta_cache = (version, goals, patterns, rev)
        return goals, patterns, rev

    def pattern_problems(self) -> list[Any]:
        self._meta()
        return list(self._meta_problems)

    def goal_types(self) -> list[GoalType]:
        return list(self._meta()[0])

    def patterns(self, goal: str | None = None) -> list[TraversalPattern]:
        return [p for p in self._meta()[1] if goal is None or p.goal == goal]

    def metagraph_revision(self) -> str:
        return self._meta()[2]


class BulkWriter:
    """Streams validated items into a store during :meth:`NetworkxGraphStore.bulk`."""

    def __init__(self, store: NetworkxGraphStore) -> None:
        self._store = store
        self.count = 0

    def write(self, tenant_id: str, items: Iterable[Node | Edge]) -> int:
        """Validate and apply items in order (an edge after both its endpoints). Returns the count.
        Raises like :meth:`GraphStore.write`; the whole bulk block is then rolled back."""
        from hopweave.models.common import check_tenant

        if tenant_id != GLOBAL_TENANT:
            check_tenant(tenant_id)
        st, val = self._store._st, self._store._validator
        n = 0
        for item in items:
            if isinstance(item, Node):
                if item.label == "TraversalPattern":  # its goal was bulk-written before it, or is stored
                    check_metagraph_batch(self._store.schema, [item],
                                          lambda name: goal_from_props(st.get(goal_node_id(name))))
                props, removed = val.node(tenant_id, item, st.get(item.id))
                st.upsert_node(item.id, item.label, props, removed)
            elif isinstance(item, Edge):
                props = val.edge(tenant_id, item, st.get(item.src), st.get(item.dst))
                st.upsert_edge(item.src, item.type, item.dst, props)
            else:
                raise InputError(f"bulk items must be Node or Edge, got {type(item).__name__}")
            n += 1
        self.count += n
        return n


@contextmanager
def _null() -> Iterator[None]:
    yield


@dataclass(frozen=True)
class Quarantined:
    """A journal record that failed validation on replay: its byte offset in the journal, seq,
    tenant, why it failed, and the record itself (never applied)."""

    at: int
    seq: int
    tenant: str
    reason: str
    record: dict[str, Any]

    @classmethod
    def unreadable(cls, at: int, why: str) -> "Quarantined":
        """A journal line that is not a well-shaped record (seq -1, no tenant)."""
        return cls(at, -1, "", why, {})

    def as_json(self) -> dict[str, Any]:
        return {"at": self.at, "seq": self.seq, "tenant": self.tenant, "reason": self.reason, "record": self.record}


def held_back(directory: str | Path) -> list[dict[str, Any]]:
    """The records earlier compactions moved out of the journal of ``directory`` because they
    failed validation (``quarantine.jsonl``; the :meth:`Quarantined.as_json` objects). Raises
    StoreIOError when it cannot be read."""
    return P.read_quarantined(Path(directory))


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _record_items(rec: dict[str, Any]) -> tuple[list[Node], list[Edge]]:
    """The writes a journal record (already shape-checked) stands for: removed properties
    become None values, as a writer passes them. Metagraph nodes were gated when written; on
    replay they are GatedNodes, so the validator re-runs the definition gates (a forged record
    cannot smuggle a pattern past the bounds)."""
    nodes = [(GatedNode if label in METAGRAPH_LABELS else Node)(nid, label, {**props, **dict.fromkeys(removed)})
             for nid, label, props, removed in rec.get("n", ())]
    edges = [Edge(src, dst, rel, props) for src, rel, dst, props in rec.get("e", ())]
    return nodes, edges


def _to_node(nid: str, attrs: dict[str, Any]) -> Node:
    props = {k: (list(v) if isinstance(v, list) else v) for k, v in attrs.items() if k != LABEL_KEY}
    return Node(id=nid, label=attrs[LABEL_KEY], props=props)
