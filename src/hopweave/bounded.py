"""Bounded work: the deadline of the stage the current thread runs, and regular expressions
read from data (pack files, a store's settings) compiled so that no input can make one run long.

Stage deadlines. :func:`stage_deadline` sets, for the code it wraps (one stage on one thread),
the ``time.perf_counter()`` instant by which that stage must be done; long-running steps call
:func:`check_deadline` between their parts, which raises :class:`~hopweave.errors.DeadlineError`
once the instant has passed, so work whose answer nobody waits for any more stops at its next
check instead of running on (a Python thread cannot be stopped from outside).

Data regexes. :func:`compile_data_regex` checks a pattern with :func:`regex_problem` (it must
be a valid Python ``re`` pattern of at most :data:`MAX_PATTERN_CHARS` characters, without a
quantified group that itself holds a quantifier such as ``(\\w+\\s?)+``, and without
backreferences: the shapes whose backtracking grows exponentially with the input) and compiles
it with the ``regex`` module, whose matching takes a timeout: every call of a
:class:`DataRegex` stops after :data:`MATCH_TIMEOUT_S` seconds, or sooner when the current stage's
deadline comes first, and raises :class:`~hopweave.errors.RegexTimeoutError` naming the pattern's
source. The bound is wall-clock time; a call whose thread spent less than a quarter of it on the
CPU (other threads held the machine) runs again, at most twice more and within the stage's
deadline, so a burst of requests does not fail an ordinary pattern. A pattern that passes the check behaves exactly as under ``re`` (the ``regex`` module's
version-0 semantics are ``re``'s).
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Iterator

import regex as _regex

from hopweave.errors import DeadlineError, RegexTimeoutError, UnsafeRegexError

__all__ = ["MATCH_TIMEOUT_S", "MAX_PATTERN_CHARS", "DataRegex", "check_deadline", "compile_data_regex",
           "regex_problem", "stage_deadline", "stage_remaining_s"]

#: Longest time one call of a data regex may take, in seconds (a stage deadline can shorten it).
MATCH_TIMEOUT_S = 0.05
#: A call that timed out while its thread ran on the CPU for less than this share of the bound
#: was kept waiting by other threads: it runs again, at most :data:`STARVED_RETRIES` more times.
STARVED_SHARE = 0.25
STARVED_RETRIES = 2
#: Longest accepted data regex, in characters.
MAX_PATTERN_CHARS = 500

_DEADLINE: ContextVar[float | None] = ContextVar("hopweave_stage_deadline", default=None)


@contextmanager
def stage_deadline(deadline: float | None) -> Iterator[None]:
    """Within the block, :func:`check_deadline` and data regexes see ``deadline`` (a
    ``time.perf_counter()`` instant; None: no deadline). An enclosing earlier deadline stays in force."""
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else outer if deadline is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def stage_remaining_s() -> float | None:
    """Seconds left before the current stage's deadline (may be negative); None without one."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.perf_counter()


def check_deadline(what: str) -> None:
    """Return when the current stage still has time (or has no deadline).

    Raises:
        DeadlineError: the stage's deadline has passed; ``what`` names the step not started.
    """
    left = stage_remaining_s()
    if left is not None and left <= 0:
        raise DeadlineError(f"{what} not started: the stage's deadline passed {-left * 1000:.0f} ms ago")


def _repeats(tree: Any, inside: bool) -> str | None:
    """The first unsafe construct of a parsed ``re`` pattern, or None."""
    from re import _constants as c  # type: ignore[attr-defined]  # CPython's parser constants

    repeat_ops = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}
    for op, av in tree:
        if op in (c.GROUPREF, c.GROUPREF_EXISTS):
            return "a backreference"
        if op in repeat_ops:
            lo, hi, body = av
            unbounded = hi is c.MAXREPEAT or hi > 1
            if unbounded and inside:
                return "a quantified group that holds another quantifier (nested repetition, e.g. (\\w+\\s?)+)"
            found = _repeats(body, inside or unbounded)
        elif op == c.SUBPATTERN:
            found = _repeats(av[-1], inside)
        elif op == c.BRANCH:
            found = next((f for f in (_repeats(b, inside) for b in av[1]) if f), None)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            found = _repeats(av[1], inside)
        elif op == getattr(c, "ATOMIC_GROUP", None):
            found = _repeats(av, inside)
        else:
            found = None
        if found:
            return found
    return None


def regex_problem(pattern: object) -> str | None:
    """Why ``pattern`` may not be used as a data regex, or None when it may (see the module
    docstring for the rules). A pure function of the text, so the verdict on a string is kept
    (:func:`_string_problem`, an LRU of 256): the stages check the same few pack patterns on
    every request."""
    if not isinstance(pattern, str):
        return f"it must be a string, not {type(pattern).__name__}"
    return _string_problem(pattern)


@lru_cache(maxsize=256)
def _string_problem(pattern: str) -> str | None:
    """:func:`regex_problem` of a string."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"it is {len(pattern):,} characters long; the limit is {MAX_PATTERN_CHARS}"
    try:
        from re import _parser  # type: ignore[attr-defined]  # CPython's own pattern parser

        tree = _parser.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"it is not a valid regular expression ({exc})"
    unsafe = _repeats(tree, False)
    return None if unsafe is None else (
        f"it has {unsafe}, whose matching time can grow exponentially with the input; "
        "rewrite it without repetition inside a repeated group")


class DataRegex:
    """A checked data regex whose every call is time-bounded (see the module docstring).

    Attributes: ``pattern`` (the source text) and ``where`` (the file and key, or setting, it
    came from; named in errors)."""

    def __init__(self, pattern: str, where: str, compiled: Any) -> None:
        self.pattern = pattern
        self.where = where
        self._compiled = compiled

    def _timeout(self) -> float:
        left = stage_remaining_s()
        return MATCH_TIMEOUT_S if left is None else max(0.001, min(MATCH_TIMEOUT_S, left))

    def _run(self, fn: str, text: str) -> Any:
        attempt = 0
        while True:
            timeout = self._timeout()
            cpu = time.thread_time()
            try:
                out = getattr(self._compiled, fn)(text, timeout=timeout)
                return list(out) if fn == "finditer" else out
            except TimeoutError:
                # the bound is wall-clock time: when this thread got under a quarter of it on the
                # CPU, other threads held the machine, not this pattern; run again (a few times,
                # within the stage's deadline)
                starved = time.thread_time() - cpu < timeout * STARVED_SHARE
                left = stage_remaining_s()
                if starved and attempt < STARVED_RETRIES and (left is None or left > 0.001):
                    attempt += 1
                    continue
                raise RegexTimeoutError(
                    f"the regular expression {self.pattern!r} ({self.where}) did not finish within "
                    f"{timeout * 1000:.0f} ms on a {len(text):,}-character text: simplify it") from None

    def finditer(self, text: str) -> list[Any]:
        """Every non-overlapping match in ``text``, as a list of match objects (``start()``,
        ``end()``, ``group()`` as in ``re``). Raises RegexTimeoutError past the time bound."""
        return list(self._run("finditer", text))

    def split(self, text: str) -> list[str | None]:
        """``text`` split at the matches (groups included, as ``re.split``). Raises RegexTimeoutError."""
        return list(self._run("split", text))

    def search(self, text: str) -> Any:
        """The first match in ``text`` or None. Raises RegexTimeoutError past the time bound."""
        return self._run("search", text)

    def __repr__(self) -> str:
        return f"DataRegex({self.pattern!r}, where={self.where!r})"


@lru_cache(maxsize=256)
def _compiled(pattern: str, ignore_case: bool) -> Any:
    return _regex.compile(pattern, _regex.IGNORECASE | _regex.VERSION0 if ignore_case else _regex.VERSION0)


def compile_data_regex(pattern: object, where: str, *, ignore_case: bool = True) -> DataRegex:
    """A :class:`DataRegex` for ``pattern`` (case-insensitive unless ``ignore_case`` is False).

    Raises:
        UnsafeRegexError: the pattern fails :func:`regex_problem`; the message names ``where``.
    """
    problem = regex_problem(pattern)
    if problem is not None or not isinstance(pattern, str):
        raise UnsafeRegexError(f"{where}: the regular expression {pattern!r} is refused: {problem}")
    return DataRegex(pattern, where, _compiled(pattern, ignore_case))
