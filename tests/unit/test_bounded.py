"""hopweave.bounded: stage deadlines that stop work which overruns, and data regexes that are
checked for explosive shapes and matched with a time bound (the regex module's timeout)."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hopweave.bounded import (
    MAX_PATTERN_CHARS,
    DataRegex,
    _compiled,
    check_deadline,
    compile_data_regex,
    regex_problem,
    stage_deadline,
    stage_remaining_s,
)
from hopweave.engine.result import Degradation
from hopweave.engine.stages import run_stage
from hopweave.errors import ConfigError, DeadlineError, RegexTimeoutError, UnsafeRegexError
from hopweave.understand.classifier import ClassifierConfig, classifier_settings, load_classifier_config

#: The separators of a probe that hung one retrieval for minutes (nested repetition).
CATASTROPHIC = r"(\w+\s?)+$|[.?!;]+"


@pytest.mark.parametrize("pattern", [r"[.?!;]+|,", r"[.?!;]+|,|\bbut\b", r"\s+(?:and|or)\s+", r"(?:ab)+|x{2,3}"])
def test_ordinary_separators_pass(pattern: str) -> None:
    assert regex_problem(pattern) is None
    assert compile_data_regex(pattern, "here").split("a. b, c") == __import__("re").split(pattern, "a. b, c",
                                                                                          flags=2)


@pytest.mark.parametrize(("pattern", "why"), [
    (CATASTROPHIC, "nested repetition"),
    (r"(a+)+b", "nested repetition"),
    (r"(?:x*y?)*", "nested repetition"),
    (r"((a|b)+c)+", "nested repetition"),
    (r"(?=(a+)+)", "nested repetition"),
    (r"(a)\1", "backreference"),
    (r"(", "not a valid regular expression"),
    ("a" * (MAX_PATTERN_CHARS + 1), "characters long"),
    (5, "must be a string"),
])
def test_explosive_or_invalid_patterns_are_refused(pattern: object, why: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None and why in problem
    with pytest.raises(UnsafeRegexError, match="classifier.yaml, key clause_separators"):
        compile_data_regex(pattern, "classifier.yaml, key clause_separators")


def test_matching_is_time_bounded_even_for_an_unchecked_pattern() -> None:
    unchecked = DataRegex(CATASTROPHIC, "a forged setting", _compiled(CATASTROPHIC, True))
    t = time.perf_counter()
    with pytest.raises(RegexTimeoutError, match="a forged setting"):
        unchecked.finditer("a" * 3000 + "!")
    assert time.perf_counter() - t < 5.0  # the bound is 50 ms; minutes without it


def test_a_stage_deadline_shortens_the_match_bound() -> None:
    unchecked = DataRegex(CATASTROPHIC, "x", _compiled(CATASTROPHIC, True))
    with stage_deadline(time.perf_counter() - 1.0):
        with pytest.raises(RegexTimeoutError, match="within 1 ms"):
            unchecked.split("a" * 3000 + "!")


def test_stage_deadline_nests_to_the_earlier_instant() -> None:
    assert stage_remaining_s() is None
    check_deadline("anything")  # no deadline: no error
    now = time.perf_counter()
    with stage_deadline(now + 100.0):
        with stage_deadline(now - 1.0):
            with pytest.raises(DeadlineError, match="entity matching not started"):
                check_deadline("entity matching")
        with stage_deadline(now + 1000.0):
            left = stage_remaining_s()
            assert left is not None and left < 101.0
    assert stage_remaining_s() is None


def test_work_past_its_stage_deadline_stops_instead_of_running_on() -> None:
    stopped = threading.Event()

    def endless() -> None:
        try:
            while True:
                check_deadline("the next step")
                time.sleep(0.002)
        finally:
            stopped.set()

    degraded: list[Degradation] = []
    with ThreadPoolExecutor(1) as pool:
        out = run_stage(degraded, "understand", endless, default="fallback", what="goal", fallback="none",
                        timeout=0.05, pool=pool)
        assert out == "fallback" and len(degraded) == 1  # the wait timed out, or the work stopped first
        assert degraded[0].reason.startswith(("understand did not finish", "DeadlineError: the next step not started"))
        assert stopped.wait(5.0), "the stage's work went on past its deadline"


def test_classifier_settings_refuse_explosive_separators(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="clause_separators"):
        ClassifierConfig(clause_separators=CATASTROPHIC)
    f = tmp_path / "classifier.yaml"
    f.write_text(f"clause_separators: {CATASTROPHIC!r}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"(?s)classifier\.yaml.*clause_separators.*nested repetition"):
        load_classifier_config(f)
    with pytest.raises(ConfigError, match="reload the pack"):  # the same text forged into a store's settings
        classifier_settings({"clause_separators": CATASTROPHIC}, None)
    assert ClassifierConfig().separators().split("a. b") == ["a", " b"]


def test_validate_and_load_read_the_separators_through_the_same_check(tmp_path: Path) -> None:
    from hopweave.pack.readers import classifier_files

    (tmp_path / "classifier.yaml").write_text(f"clause_separators: {CATASTROPHIC!r}\n", encoding="utf-8")
    with pytest.raises(UnsafeRegexError, match=r"classifier\.yaml, key clause_separators"):
        classifier_files(tmp_path, "classifier.yaml")
    (tmp_path / "classifier.yaml").write_text("clause_separators: '[.?!;]+|,'\n", encoding="utf-8")
    assert classifier_files(tmp_path, "classifier.yaml")[0] == {"clause_separators": "[.?!;]+|,"}


def test_a_pattern_kept_waiting_by_busy_threads_is_not_timed_out() -> None:
    """The bound is wall-clock time: a call whose thread barely ran (other threads held the CPU)
    runs again instead of failing an ordinary pattern, as under a burst of requests (without the
    second run, 27 of 400 such calls failed here with 16 busy threads)."""
    rx = compile_data_regex(r"[.?!;]+|,|\b(?:and also|also|but|then|while you're at it|by the way|besides)\b",
                            "classifier settings, key clause_separators")
    text = "I want to dispute this $39 late fee on my Platinum card."
    stop = threading.Event()

    def hog() -> None:
        x = 0
        while not stop.is_set():
            for i in range(10_000):
                x += i * i

    failures: list[Exception] = []

    def caller() -> None:
        for _ in range(50):
            try:
                assert rx.split(text) == re.split(rx.pattern, text, flags=re.IGNORECASE)
            except Exception as exc:  # noqa: BLE001 - counted
                failures.append(exc)

    hogs = [threading.Thread(target=hog) for _ in range(12)]
    callers = [threading.Thread(target=caller) for _ in range(4)]
    for t in hogs + callers:
        t.start()
    for t in callers:
        t.join(120)
    stop.set()
    for t in hogs:
        t.join(10)
    assert failures == [], failures[:3]
