"""The lexical channel: an identifier-preserving tokenizer and a BM25 sparse encoder.

Scoring model (the same in both Qdrant adapters, because both index the vectors built here):

* document vector: for each distinct term ``t`` of a chunk, index ``term_index(t)`` (a stable
  32-bit hash) and weight ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avg_len))``;
* query vector: each distinct query term with weight = its count in the query;
* the sparse vector is declared with Qdrant's ``Modifier.IDF``, so at query time Qdrant multiplies
  each query weight by ``idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))`` computed over the
  points that pass the request filter (``IdfCorpusParams``) - BM25 over the filtered set.

The dot product is then exactly BM25 with Lucene's (always positive) idf; ``bm25_reference``
computes the same thing in Python and the tests compare it with ``rank_bm25``.

Tokenizer: NFKC, identifiers kept whole (``ORA-51805``, ``SUB_1001``, ``processUserPayload``,
``$39``, ``3.2``) and, for compounds, also split into their parts; lowercase; English stopwords;
Snowball (Porter2) stemming of plain alphabetic words. Its version string is part of the
ranking profile's component versions, so a tokenizer change is a new component version.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from hopweave.errors import ConfigError

TOKENIZER_VERSION = "hw_tok_v1"
BM25_VERSION = "bm25_idf_v1"

# Order matters: money, dotted/comma numbers, identifiers joined by - _ / . : (alnum both sides).
_TOKEN_RE = re.compile(
    r"\$\d+(?:[.,]\d+)*"
    r"|\d+(?:[.,]\d+)+%?"
    r"|[^\W_]+(?:[-_/.:'][^\W_]+)*(?:_[^\W_]+)*",
    re.UNICODE,
)
_NUMBER_RE = re.compile(r"\$?\d+(?:[.,]\d+)*%?")
_PART_RE = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_JOINERS = set("-_/.:'")

# A compact English stopword list (Lucene's English set plus frequent function words).
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with from has have had been were which who whom what when
    where why how its our we you your he she his her them those than so do does did can could
    would should may might also about over under between after before during through each all
    any both more most other some same own only very i me my am being having doing s t just""".split()
)


@dataclass(frozen=True)
class TokenizerConfig:
    """Knobs of the lexical tokenizer (tuned on SciFact train, see docs/benchmarks/search.md)."""

    stem: bool = True
    stopwords: bool = True
    split_compounds: bool = True
    min_len: int = 1
    max_len: int = 64


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    try:
        import Stemmer
    except ImportError as exc:  # pragma: no cover - PyStemmer is a core dependency
        from hopweave.errors import MissingDependencyError

        raise MissingDependencyError("PyStemmer", "all", "lexical stemming") from exc
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def _is_compound(tok: str) -> bool:
    return any(c in _JOINERS for c in tok) or (
        any(c.isupper() for c in tok[1:]) and any(c.islower() for c in tok)
    )


class Tokenizer:
    """Turns text into index terms. Deterministic; safe to share between threads."""

    def __init__(self, config: TokenizerConfig | None = None) -> None:
        self.config = config or TokenizerConfig()

    @property
    def version(self) -> str:
        c = self.config
        flags = f"s{int(c.stem)}w{int(c.stopwords)}c{int(c.split_compounds)}m{c.min_len}"
        return f"{TOKENIZER_VERSION}:{flags}"

    def _word(self, w: str) -> str | None:
        return _word(w, self.config)

    def tokenize(self, text: str) -> list[str]:
        """Index terms of ``text`` in order (compounds emit the whole term, then its parts)."""
        text = unicodedata.normalize("NFKC", text)
        out: list[str] = []
        for m in _TOKEN_RE.finditer(text):
            out.extend(_raw_terms(m.group(0), self.config))
        return out


def _word(w: str, c: TokenizerConfig) -> str | None:
    if len(w) < c.min_len or len(w) > c.max_len:
        return None
    if c.stopwords and w in STOPWORDS:
        return None
    if c.stem and w.isalpha():
        return _stem(w)
    return w


@lru_cache(maxsize=200_000)  # pure per raw token; ingest re-tokenizes the same words
def _raw_terms(raw: str, config: TokenizerConfig) -> tuple[str, ...]:
    """Index terms of one raw token match (a compound: the whole term, then its parts)."""
    if _NUMBER_RE.fullmatch(raw):
        return (raw.lower(),)
    if _is_compound(raw):
        out: list[str] = []
        whole = raw.lower().strip("'")
        if len(whole) <= config.max_len:
            out.append(whole)
        if config.split_compounds:
            for part in _PART_RE.findall(raw):
                pieces = _CAMEL_RE.findall(part) if not part.islower() else [part]
                for p in pieces or [part]:
                    t = _word(p.lower(), config)
                    if t:
                        out.append(t)
        return tuple(out)
    t = _word(raw.lower(), config)
    return (t,) if t else ()


@lru_cache(maxsize=500_000)
def term_index(term: str) -> int:
    """Stable 32-bit sparse-vector index of a term (blake2b, so identical in every process)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "little")


@dataclass(frozen=True)
class SparseVec:
    """A sparse vector: strictly increasing indices and their weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.indices)


def _to_sparse(weights: dict[int, float]) -> SparseVec:
    items = sorted(weights.items())
    return SparseVec(tuple(i for i, _ in items), tuple(float(v) for _, v in items))


@dataclass(frozen=True)
class Bm25Params:
    """BM25 document-side parameters recorded on the collection."""

    k1: float = 1.2
    b: float = 0.75
    avg_len: float = 256.0

    def __post_init__(self) -> None:
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0 or self.avg_len <= 0:
            raise ConfigError(
                f"invalid BM25 parameters k1={self.k1}, b={self.b}, avg_len={self.avg_len}: "
                "need k1 >= 0, 0 <= b <= 1, avg_len > 0"
            )


class Bm25Encoder:
    """Builds BM25 document and query sparse vectors for the Qdrant IDF modifier.

    Args:
        params: k1, b and the collection's average document length (in terms).
        tokenizer: the tokenizer; default ``Tokenizer()``.
        title_weight: how many times title terms are counted (0 ignores the title).
    """

    def __init__(
        self,
        params: Bm25Params | None = None,
        tokenizer: Tokenizer | None = None,
        title_weight: int = 1,
    ) -> None:
        self.params = params or Bm25Params()
        self.tokenizer = tokenizer or Tokenizer()
        if title_weight < 0:
            raise ConfigError("title_weight must be >= 0")
        self.title_weight = title_weight

    @property
    def version(self) -> str:
        p = self.params
        return f"{BM25_VERSION}:k1={p.k1:g},b={p.b:g},t={self.title_weight}|{self.tokenizer.version}"

    def doc_terms(self, text: str, title: str = "") -> list[str]:
        """Terms of a chunk as indexed (title terms repeated ``title_weight`` times)."""
        terms = self.tokenizer.tokenize(text)
        if title and self.title_weight:
            terms = self.tokenizer.tokenize(title) * self.title_weight + terms
        return terms

    def doc_length(self, text: str, title: str = "") -> int:
        return len(self.doc_terms(text, title))

    def encode_terms(self, terms: Sequence[str]) -> SparseVec:
        """Document vector from already-tokenized terms."""
        p = self.params
        dl = len(terms)
        norm = p.k1 * (1.0 - p.b + p.b * dl / p.avg_len)
        weights: dict[int, float] = {}
        for term, tf in Counter(terms).items():
            idx = term_index(term)
            w = tf * (p.k1 + 1.0) / (tf + norm)
            weights[idx] = weights.get(idx, 0.0) + w  # a 32-bit collision merges terms
        return _to_sparse(weights)

    def encode_document(self, text: str, title: str = "") -> SparseVec:
        """BM25 document vector (TF saturation and length normalisation; idf comes from Qdrant)."""
        return self.encode_terms(self.doc_terms(text, title))

    def encode_query(self, text: str) -> SparseVec:
        """Query vector: each distinct term weighted by its count; empty when nothing survives."""
        weights: dict[int, float] = {}
        for term, n in Counter(self.tokenizer.tokenize(text)).items():
            idx = term_index(term)
            weights[idx] = weights.get(idx, 0.0) + float(n)
        return _to_sparse(weights)


def lucene_idf(n_docs: int, df: int) -> float:
    """The idf Qdrant's IDF modifier applies: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_reference(
    encoder: Bm25Encoder, docs: Sequence[SparseVec], query: SparseVec
) -> list[float]:
    """Score ``docs`` for ``query`` exactly as Qdrant does (idf over ``docs``). For tests."""
    df: Counter[int] = Counter()
    for d in docs:
        df.update(d.indices)
    n = len(docs)
    idf = {i: lucene_idf(n, df[i]) for i in query.indices}
    qw = dict(zip(query.indices, query.values))
    out = []
    for d in docs:
        s = 0.0
        for i, v in zip(d.indices, d.values):
            if i in qw:
                s += qw[i] * idf[i] * v
        out.append(s)
    return out


def average_length(encoder: Bm25Encoder, items: Iterable[tuple[str, str]]) -> float:
    """Mean term count of (text, title) pairs; 1.0 for an empty input."""
    total = count = 0
    for text, title in items:
        total += encoder.doc_length(text, title)
        count += 1
    return max(1.0, total / count) if count else 1.0
