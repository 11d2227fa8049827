"""BM25 IDF over a filtered population, cached per (write generation, filter, term).

The lexical channel scores BM25 with IDF computed over the points that pass the request filter
(``lexical.py``). Qdrant computes those statistics on every query by walking each query term's
posting list against the filter: at 50,000 points (8,000 eligible) that is half the channel's
CPU, and it grows with the collection. For the only writer of an index the statistics cannot
change between writes, so this module keeps them:

* the first time a term is seen under a filter, two single-term probes (one query batch) ask the
  engine for the term's best-scoring eligible point, once with IDF over the filter and once over
  the *unit corpus* (a filter no point passes: ``idf = ln(1 + 0.5 / 0.5) = ln 2`` for every
  term); their ratio is the term's filtered IDF. It is snapped to the exact document frequency
  ``n`` of ``idf = ln((N + 1) / (n + 0.5))`` (N = the filtered count) and kept as
  ``ln((N + 1) / (n + 0.5))``, so the cached value does not depend on float noise;
* a query is then sent with each term weight multiplied by ``idf / ln 2`` and its IDF computed
  over the unit corpus: the engine's score is the filtered BM25 (equal within float rounding,
  ~1e-7 relative).

Before a filter's statistics are first used, one filtered-IDF query checks that the cached
scoring reproduces the engine's scores; a disagreement (another engine version, a population
the count does not describe) turns the cache off for that filter and the engine computes IDF
itself, as without the cache. A write through the index (``VectorIndex._bump``) drops
everything. Scores depend only on (query, store state, filter), never on what was cached before.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from hopweave.search.index_types import Candidate, ChannelRequest
from hopweave.search.lexical import SparseVec

#: The IDF of every term over the unit corpus (N = 0, n = 0): ``ln(1 + 0.5 / 0.5)``.
UNIT_IDF = math.log(2.0)
#: Relative score difference still taken as "the same score" by the first-use check (f32 sums).
_CHECK_TOLERANCE = 1e-4
#: Most filters kept per write generation (least recently added dropped first).
MAX_FILTERS = 256


def exact_idf(n_docs: int, df: int) -> float:
    """Lucene / Qdrant BM25 idf ``ln(1 + (N - n + 0.5) / (n + 0.5)) = ln((N + 1) / (n + 0.5))``."""
    return math.log((n_docs + 1) / (df + 0.5))


def snap_df(idf: float, n_docs: int) -> int | None:
    """The document frequency whose exact idf is ``idf`` over ``n_docs`` points, or None when
    ``idf`` is no such value (the population is not the one counted)."""
    est = (n_docs + 1) * math.exp(-idf) - 0.5
    n = round(est)
    if n < 1 or n > n_docs or abs(est - n) > 0.05:
        return None
    return n


@dataclass
class _FilterStats:
    n_docs: int
    idf: dict[int, float] = field(default_factory=dict)
    checked: bool = False
    usable: bool = True


#: Runs channel requests (the adapter's ``_query``): one candidate list per request.
QueryFn = Callable[[Sequence[ChannelRequest]], list[list[Candidate]]]


class IdfCache:
    """Filtered BM25 IDF per (filter key, term) for one index and one write generation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = -1
        self._filters: dict[str, _FilterStats] = {}

    def clear(self) -> None:
        with self._lock:
            self._filters = {}

    def _stats(self, generation: int, key: str, count: Callable[[], int]) -> _FilterStats:
        with self._lock:
            if generation != self._generation:
                self._generation, self._filters = generation, {}
            st = self._filters.get(key)
        if st is None:
            st = _FilterStats(count())
            with self._lock:
                if len(self._filters) >= MAX_FILTERS:
                    self._filters.pop(next(iter(self._filters)))
                st = self._filters.setdefault(key, st)
        return st

    def rewrite(
        self,
        request: ChannelRequest,
        generation: int,
        key: str,
        count: Callable[[], int],
        unit_corpus: Any,
        query: QueryFn,
    ) -> ChannelRequest:
        """``request`` (a lexical request with IDF over its ``idf_filter``) as a request whose
        IDF comes from the cache: weights pre-multiplied by ``idf / ln 2``, IDF over
        ``unit_corpus``. Returns ``request`` unchanged when the cache is off for this filter."""
        st = self._stats(generation, key, count)
        if not st.usable or st.n_docs == 0:
            return request
        vec: SparseVec = request.vector
        missing = [t for t in vec.indices if t not in st.idf]
        if missing:
            found = self._probe(request, missing, st.n_docs, unit_corpus, query)
            if found is None:
                st.usable = False
                return request
            with self._lock:
                st.idf.update(found)
        weights = tuple(w * st.idf[t] / UNIT_IDF for t, w in zip(vec.indices, vec.values))
        cached = replace(request, vector=SparseVec(tuple(vec.indices), weights), idf_filter=unit_corpus)
        if not st.checked:
            if not _same_scores(query([request, replace(cached, limit=request.limit)])):
                st.usable = False
                return request
            st.checked = True
        return cached

    @staticmethod
    def _probe(
        request: ChannelRequest, terms: Sequence[int], n_docs: int, unit_corpus: Any, query: QueryFn
    ) -> dict[int, float] | None:
        """Filtered IDF of each term (two single-term probes per term, one batch), or None when a
        probe does not match an exact document frequency."""
        reqs: list[ChannelRequest] = []
        for t in terms:
            one = replace(request, vector=SparseVec((t,), (1.0,)), filter=request.idf_filter, limit=1, fields=())
            reqs += [one, replace(one, idf_filter=unit_corpus)]
        res = query(reqs)
        out: dict[int, float] = {}
        for i, t in enumerate(terms):
            filtered, unit = res[2 * i], res[2 * i + 1]
            if not filtered or not unit or unit[0].score <= 0.0:
                out[t] = exact_idf(n_docs, 0)  # no eligible point holds the term: it scores nothing
                continue
            df = snap_df(UNIT_IDF * filtered[0].score / unit[0].score, n_docs)
            if df is None:
                return None
            out[t] = exact_idf(n_docs, df)
        return out


def _same_scores(pair: list[list[Candidate]]) -> bool:
    """The engine's filtered-IDF candidates and the cached ones agree (ids at equal scores may
    swap order; scores must match position by position)."""
    a, b = pair
    if len(a) != len(b):
        return False
    return all(abs(x.score - y.score) <= _CHECK_TOLERANCE * max(1.0, abs(x.score)) for x, y in zip(a, b))
