"""Small text utilities of the understanding stage: input checks, clause splitting, content
words, and a character n-gram TF-IDF index (the classifier's typo-tolerant lexical cue).

Everything here is pure and deterministic.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import math
import re
import sys
import threading
import unicodedata
from collections import Counter
from types import ModuleType
from typing import Any, Iterable, Sequence

from hopweave.bounded import DataRegex
from hopweave.errors import InputError

#: Longest accepted utterance, in characters (longer input raises InputError). A customer's
#: request, not a transcript: 4,000 characters is about 700 words. Documented in docs/engine.md.
MAX_CHARS = 4_000

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")


def check_utterance(utterance: object, max_chars: int = MAX_CHARS) -> str:
    """Validate an utterance and return it with control characters replaced by spaces.

    The returned string has the same length as the input (so spans stay valid).

    Raises:
        InputError: not a string; empty, whitespace-only or control-characters-only (NUL...);
            longer than ``max_chars``; or holding a lone UTF-16 surrogate (not valid Unicode text).
    """
    if not isinstance(utterance, str):
        raise InputError(f"the utterance must be a string, got {type(utterance).__name__}")
    if len(utterance) > max_chars:
        raise InputError(
            f"the utterance is {len(utterance):,} characters long; the limit is {max_chars:,} "
            "(send the customer's request, not a whole transcript)"
        )
    bad = _SURROGATE.search(utterance)
    if bad is not None:
        raise InputError(f"the utterance holds a lone surrogate at character {bad.start()} "
                         f"(U+{ord(bad.group(0)):04X}): send valid Unicode text (UTF-8 decodable)")
    cleaned = _CONTROL.sub(" ", utterance)
    if not cleaned.strip():
        raise InputError("the utterance is empty, whitespace or control characters only: send what the customer said")
    return cleaned


#: The tokenizer's input bound: in a run of more than this many characters that are neither word
#: characters nor whitespace (punctuation, symbols, emoji), the tokenizer sees the first this many
#: and spaces for the rest (see :func:`tokenizer_text`).
MAX_SYMBOL_RUN = 16
_SYMBOL_RUN = re.compile(rf"[^\w\s]{{{MAX_SYMBOL_RUN + 1},}}")


def tokenizer_text(text: str) -> str:
    """``text`` as the entity tokenizer (spaCy) sees it: the same length, so every span stays
    valid, with each run of more than :data:`MAX_SYMBOL_RUN` non-word, non-space characters cut
    to its first :data:`MAX_SYMBOL_RUN` and spaces for the rest. spaCy's suffix search takes time
    quadratic in such a run (seconds for a few thousand ``!``); a run of at most
    :data:`MAX_SYMBOL_RUN` is returned unchanged, so text without a longer run is unchanged."""
    return _SYMBOL_RUN.sub(lambda m: m.group(0)[:MAX_SYMBOL_RUN] + " " * (len(m.group(0)) - MAX_SYMBOL_RUN), text)


def normalize(text: str) -> str:
    """NFKC, collapsed whitespace, stripped (used for comparing utterances, not for spans)."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def split_clauses(
    text: str, separators: "re.Pattern[str] | DataRegex", min_words: int = 2, max_clauses: int = 8
) -> list[str]:
    """The clauses of a (possibly mixed) request: split at ``separators``; clauses shorter than
    ``min_words`` words and repeats are dropped; at most the first ``max_clauses`` are kept.
    Returns [] when there is at most one clause."""
    parts = [p.strip() for p in separators.split(text) if p and p.strip()]
    parts = list(dict.fromkeys(p for p in parts if len(p.split()) >= min_words))[:max_clauses]
    return parts if len(parts) > 1 else []


def words(text: str) -> list[tuple[str, int, int]]:
    """Alphabetic words with their spans: ``[(word, start, end), ...]``."""
    return [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]


def content_words(text: str, stop_words: Iterable[str]) -> list[str]:
    """Lower-cased non-stop words of length >= 2, in order, de-duplicated. Falls back to every
    word when all are stop words (so the result is empty only for text without letters)."""
    stops = {s.lower() for s in stop_words}
    seen: dict[str, None] = {}
    all_words: dict[str, None] = {}
    for w, _, _ in words(text):
        lw = w.lower()
        all_words.setdefault(lw, None)
        if len(lw) >= 2 and lw not in stops:
            seen.setdefault(lw, None)
    return list(seen or all_words)


def looks_non_english(text: str, stop_words: Iterable[str]) -> bool:
    """Heuristic: mostly non-Latin letters, or >= 4 words and not one English stop word."""
    letters = [c for c in text if c.isalpha()]
    if letters:
        latin = sum(1 for c in letters if c.isascii())
        if latin / len(letters) < 0.5:
            return True
    ws = [w.lower() for w, _, _ in words(text)]
    if len(ws) >= 4:
        stops = {s.lower() for s in stop_words}
        return not any(w in stops for w in ws)
    return False


# ---- character n-gram TF-IDF ------------------------------------------------------------
def char_ngrams(text: str, n_min: int = 3, n_max: int = 5) -> Counter[str]:
    """Counts of character n-grams inside word boundaries (each word padded with a space),
    lower-cased; a padded word shorter than n yields itself once (like scikit-learn char_wb)."""
    grams: Counter[str] = Counter()
    for w in normalize(text).lower().split():
        padded = f" {w} "
        for n in range(n_min, n_max + 1):
            if len(padded) < n:
                grams[padded] += 1
                break
            for i in range(len(padded) - n + 1):
                grams[padded[i : i + n]] += 1
    return grams


class CharNgramIndex:
    """Sublinear-TF, smoothed-IDF, L2-normalised character n-gram vectors over a fixed set of
    documents; :meth:`scores` returns the cosine of a query with every document."""

    def __init__(self, documents: Sequence[str], n_min: int = 3, n_max: int = 5) -> None:
        self.n_min, self.n_max = n_min, n_max
        counts = [char_ngrams(d, n_min, n_max) for d in documents]
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        n = len(documents)
        self.idf = {g: math.log((1 + n) / (1 + k)) + 1.0 for g, k in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, c in enumerate(counts):
            for g, w in self._weights(c).items():
                self.postings.setdefault(g, []).append((i, w))
        self.size = n

    def _weights(self, counts: Counter[str]) -> dict[str, float]:
        w = {g: (1.0 + math.log(tf)) * self.idf[g] for g, tf in counts.items() if g in self.idf}
        norm = math.sqrt(sum(v * v for v in w.values()))
        return {g: v / norm for g, v in w.items()} if norm > 0 else {}

    def scores(self, query: str) -> list[float]:
        """Cosine similarity of ``query`` with each document (0 for no shared n-gram)."""
        out = [0.0] * self.size
        for g, qw in self._weights(char_ngrams(query, self.n_min, self.n_max)).items():
            for i, dw in self.postings.get(g, ()):
                out[i] += qw * dw
        return out


#: Array backends thinc (under spaCy) imports if it can; the rule-based pipeline uses none of
#: them, and importing torch alone takes seconds of a cold start.
_SPACY_UNUSED_BACKENDS = ("torch", "cupy", "cupyx", "tensorflow", "mxnet")
#: spaCy's command line, which ``spacy/__init__`` imports only to export ``spacy.info``. With
#: what it imports (typer, weasel, requests, httpx, jinja2) it is about 0.45 s of CPU under the
#: GIL, a seventh of a cold start (docs/BENCHMARKS.md, "Cold start").
_SPACY_CLI = ("spacy.cli", "spacy.cli.info")
_SPACY_LOCK = threading.Lock()


def _spacy_info(*args: Any, **kwargs: Any) -> Any:
    """``spacy.info``: spaCy's own, imported when first called."""
    from spacy.cli.info import info

    return info(*args, **kwargs)


class _LeanImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """For the importing thread only: reports the unused backends as not installed, and stands
    in for spaCy's command line (``spacy.info`` then imports the real one when called)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if threading.get_ident() != self.thread:
            return None
        if name in _SPACY_CLI:
            return importlib.machinery.ModuleSpec(name, self, is_package=name == _SPACY_CLI[0])
        if name.split(".")[0] in _SPACY_UNUSED_BACKENDS:
            raise ModuleNotFoundError(f"{name} is not used by the rule-based spaCy pipeline", name=name)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ == _SPACY_CLI[1]:
            module.info = _spacy_info  # type: ignore[attr-defined]

    def forget_stand_ins(self) -> None:
        """Drop the stand-ins, so that a later ``import spacy.cli`` imports the real one."""
        for name in _SPACY_CLI:
            if self._ours(sys.modules.get(name)):
                del sys.modules[name]
        spacy = sys.modules.get("spacy")
        if self._ours(getattr(spacy, "cli", None)):
            del spacy.cli  # type: ignore[union-attr]

    def _ours(self, module: object) -> bool:
        return getattr(getattr(module, "__spec__", None), "loader", None) is self


def prefetch_spacy() -> None:
    """Start importing spaCy in a background thread (once per process), so that its import
    overlaps other start-up work; :func:`import_spacy` then waits for it (the import lock)."""
    global _PREFETCHED
    with _SPACY_LOCK:
        if _PREFETCHED or _SPACY is not None:
            return
        _PREFETCHED = True
    threading.Thread(target=_prefetch, name="hopweave-spacy-import", daemon=True).start()


def _prefetch() -> None:
    try:
        import_spacy()
    except Exception:  # noqa: BLE001 - reported by the caller's own import_spacy()
        pass


_PREFETCHED = False
_SPACY: ModuleType | None = None


def import_spacy() -> ModuleType:
    """``spacy``, imported without torch (or another array backend) when none is loaded yet:
    thinc treats a missing backend as absent, and the blank English pipeline with span rulers
    never needs one (cold start: about 5 s less). Its command line is not imported either
    (``spacy.info`` imports it when called). Another thread importing torch meanwhile is
    not affected; one importing ``spacy.cli`` in that same half second would get the
    stand-in. Waits for an import under way in another thread (:func:`prefetch_spacy`)."""
    global _SPACY
    if _SPACY is not None:
        return _SPACY
    with _SPACY_LOCK:
        if _SPACY is None:
            if "spacy" in sys.modules or any(b in sys.modules for b in _SPACY_UNUSED_BACKENDS):
                import spacy
            else:
                blocker = _LeanImport()
                sys.meta_path.insert(0, blocker)
                try:
                    import spacy
                finally:
                    sys.meta_path.remove(blocker)
                    blocker.forget_stand_ins()
            _SPACY = spacy
        return _SPACY

