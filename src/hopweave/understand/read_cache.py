"""Values derived from a graph store's reads, kept while the store's data is unchanged.

The turns of one conversation read the same things again: the session subject's record (tier,
products...), the goal's pattern walks for the same customer, goal and entities at the same
``as_of``. :class:`ReadCache` keeps such values per store object, keyed by what they were
computed from, and serves one again only while the store's
:meth:`~hopweave.graph.base.GraphStore.change_token` is the one it was read under:

- **exact under writes**: every change of the data the store's reads see (a write through it,
  what it catches up with from other processes, e.g. ``serve`` workers sharing a directory, a
  re-read snapshot after a compaction or a load) changes the token of what it touches, per
  node label (created or changed) and edge type (:func:`pattern_reads`: a walk reads its hops'
  edge types, the existing nodes of the labels its positions allow and new nodes of its seed's
  label; a recorded retrieval trace does not touch the walks that do not reach it). An entry whose token is not the current one is
  dropped at its lookup; a value is kept only when the token is the same after it was
  computed as before (no write landed in between). A store without a token (the server
  stores, which other clients write to) is never cached: every lookup computes;
- **never across tenants or sessions**: every key starts with the tenant and holds the whole
  session (identity and attributes) and the exact ``as_of``; a request without a pinned
  ``as_of`` (now) is computed, never kept;
- **bounded**: at most :data:`CAPACITY` entries per store, least recently used first out;
- **only what is deterministic**: a pattern result cut by its time budget or failed is not
  kept (the next run may get further); rows cut by the pattern's own ``limit`` are.

Cached values are frozen models or tuples shared by the requests that read them; nothing
mutates them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Hashable, Sequence, TypeVar

from hopweave.errors import TenantError
from hopweave.models.common import Bindings, PatternResult, check_tenant

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.models.metagraph import TraversalPattern
    from hopweave.models.schema import GraphSchema

T = TypeVar("T")

#: Entries kept per store (least recently used first out).
CAPACITY = 2048
_ATTR = "_hopweave_read_cache"
_CREATE = threading.Lock()


class ReadCache:
    """A bounded LRU of values computed from one store's reads, each with the change token it
    was read under.

    Args:
        capacity: entries kept at most (least recently used first out).
    """

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, tuple[Hashable, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, token: Hashable) -> Any | None:
        """The value kept for ``key`` when it was read under ``token``, else None (an entry of
        another token is dropped: the data it was read from has changed)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != token:
                if entry is not None:
                    del self._entries[key]
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, token: Hashable, value: Any) -> None:
        """Keep ``value`` for ``key``, read under ``token``."""
        with self._lock:
            self._entries[key] = (token, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def cache_of(graph: "GraphStore") -> ReadCache:
    """The read cache of ``graph`` (made on first use, one per store object)."""
    found = graph.__dict__.get(_ATTR)
    if found is None:
        with _CREATE:
            found = graph.__dict__.setdefault(_ATTR, ReadCache())
    return found  # type: ignore[no-any-return]


def cached(graph: "GraphStore", key: Hashable, compute: Callable[[], T], reads: Sequence[str] | None = None,
           keep: Callable[[T], bool] = lambda _v: True) -> T:
    """``compute()``, or the value kept for ``key`` while what it reads of ``graph`` is unchanged.

    Args:
        graph: the store the value is read from.
        key: everything the value depends on besides the store's data (tenant first).
        compute: reads the value from ``graph``.
        reads: the node labels / edge types ``compute`` can read (``"n:<label>"``,
            ``"e:<type>"``; :func:`pattern_reads`); None: anything.
        keep: whether a computed value may be served again (deterministic).

    Returns:
        The value. Raises what ``compute`` raises (nothing is kept then).
    """
    token = graph.change_token(reads)
    if token is None:
        return compute()
    cache = cache_of(graph)
    value = cache.get(key, token)
    if value is not None:
        return value  # type: ignore[no-any-return]
    value = compute()
    if keep(value) and graph.change_token(reads) == token:
        cache.put(key, token, value)
    return value


def pattern_reads(pattern: "TraversalPattern", schema: "GraphSchema") -> tuple[str, ...]:
    """What a walk of ``pattern`` can read (the walk's semantics, :mod:`hopweave.graph.walk`):
    each hop's edge type (``"e:<type>"``), a change of an existing node of a label allowed at
    some position (``"n:<label>"``: the seed's, each intermediate node's via type or the labels
    the schema allows at that end of its edge, the target's: ``walk.allowed_labels``) and a new
    node of the seed's label (``"n+:<label>"``); sorted. A write touching none of them cannot
    change the walk's rows, order, truncation or visit count: a node's label never changes, a
    new node is reached only as a seed or along a new edge (edges need both ends), and a
    neighbour of another label is counted by its edge alone. A recorded retrieval trace (a new
    DecisionTrace linked to the customer) so leaves alone a precedent walk that reaches traces
    along other edges."""
    from hopweave.graph.walk import allowed_labels

    names = {"e:" + step.type for step in pattern.edge_sequence} | {"n+:" + pattern.seed.type}
    for labels in allowed_labels(schema, pattern):
        names.update("n:" + lab for lab in labels)
    return tuple(sorted(names))


#: id(pattern) -> (pattern, schema, its definition as JSON, :func:`pattern_reads`); the pattern
#: and schema objects ride along so an id is not reused while its entry is kept.
_PATTERN_KEYS: dict[int, tuple[Any, Any, str, tuple[str, ...]]] = {}
_PATTERN_KEYS_MAX = 4096


def _pattern_key(pattern: "TraversalPattern", schema: "GraphSchema") -> tuple[str, tuple[str, ...]]:
    """(the pattern's definition as JSON, what its walk reads), computed once per pattern object."""
    got = _PATTERN_KEYS.get(id(pattern))
    if got is not None and got[0] is pattern and got[1] is schema:
        return got[2], got[3]
    if len(_PATTERN_KEYS) >= _PATTERN_KEYS_MAX:
        _PATTERN_KEYS.clear()
    entry = (pattern, schema, pattern.model_dump_json(), pattern_reads(pattern, schema))
    _PATTERN_KEYS[id(pattern)] = entry
    return entry[2], entry[3]


def run_pattern(graph: "GraphStore", tenant_id: str, pattern: "TraversalPattern", bindings: Bindings) -> PatternResult:
    """``graph.run_pattern(tenant_id, pattern, bindings)`` (its own budget from now), its
    complete result kept per (tenant, pattern definition, bindings) while what the walk reads is
    unchanged (module docstring). Raises what ``run_pattern`` raises."""
    if graph.change_token() is None or bindings.timeless:
        return graph.run_pattern(tenant_id, pattern, bindings)
    check_tenant(tenant_id)
    if bindings.session.tenant_id != tenant_id:
        raise TenantError("bindings belong to another tenant than the one the pattern runs for")
    text, reads = _pattern_key(pattern, graph.schema)
    return cached(graph, ("pattern", tenant_id, text, bindings_key(bindings)),
                  lambda: graph.run_pattern(tenant_id, pattern, bindings), reads=reads, keep=_deterministic)


def _deterministic(r: PatternResult) -> bool:
    """A pattern result another run at the same data and bindings would return as it is."""
    return r.error is None and (not r.truncated or r.truncated_reason == "limit")


def bindings_key(bindings: Bindings) -> str:
    """Everything a pattern walk binds to, as one exact text (session, as_of, goal, entities)."""
    return bindings.model_dump_json()


def goal_patterns(graph: "GraphStore", tenant_id: str, patterns: Sequence["TraversalPattern"],
                  bindings: Bindings, max_workers: int = 8) -> list[PatternResult]:
    """:func:`hopweave.graph.traverse.run_goal_patterns`, with each pattern's complete result
    kept per (tenant, pattern definition, bindings) while the store's data is unchanged
    (module docstring); a kept result comes back with this lookup's ``elapsed_ms``.

    Returns:
        One PatternResult per pattern, by name (as run_goal_patterns).

    Raises:
        TenantError: a malformed tenant, bindings of another tenant, or a backend that leaked
            another tenant's rows.
    """
    from hopweave.graph.traverse import run_goal_patterns

    check_tenant(tenant_id)
    names = [p.name for p in patterns]
    if graph.change_token() is None or bindings.timeless or len(set(names)) != len(names):
        return run_goal_patterns(graph, tenant_id, patterns, bindings, max_workers=max_workers)
    if bindings.session.tenant_id != tenant_id:
        raise TenantError("bindings belong to another tenant than the one the pattern runs for")
    cache = cache_of(graph)
    bkey = bindings_key(bindings)
    found: dict[str, PatternResult] = {}
    todo: list[tuple["TraversalPattern", Hashable, Hashable, tuple[str, ...]]] = []
    for p in patterns:
        t = time.perf_counter()
        text, reads = _pattern_key(p, graph.schema)
        key = ("pattern", tenant_id, text, bkey)
        token = graph.change_token(reads)
        hit = cache.get(key, token)
        if hit is None:
            todo.append((p, key, token, reads))
        else:
            found[p.name] = hit.model_copy(update={"elapsed_ms": round((time.perf_counter() - t) * 1000, 3)})
    if todo:
        ran = run_goal_patterns(graph, tenant_id, [p for p, *_ in todo], bindings, max_workers=max_workers)
        by_name = {r.pattern: r for r in ran}
        for q, q_key, q_token, q_reads in todo:
            r = by_name[q.name]
            found[q.name] = r
            if _deterministic(r) and graph.change_token(q_reads) == q_token:
                cache.put(q_key, q_token, r)
    return [found[p.name] for p in sorted(patterns, key=lambda p: p.name)]


__all__ = ["CAPACITY", "ReadCache", "bindings_key", "cache_of", "cached", "goal_patterns", "pattern_reads",
           "run_pattern"]
