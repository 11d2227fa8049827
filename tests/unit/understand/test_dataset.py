"""The labeled utterance set: sizes, split hygiene, examples == what is on the GoalType nodes."""

from __future__ import annotations

from collections import Counter

import yaml
from domains import GOALS_DIR, UTTERANCES_DIR, deltabank_classifier_config

from hopweave.graph.metagraph_io import load_goal_files
from hopweave.understand.datasets import load_examples, load_split
from hopweave.understand.text import normalize

GOALS = {"LateFeeDispute", "FraudClaim", "CreditLimitIncrease", "NameChange"}


def _norm(t: str) -> str:
    return normalize(t).lower().rstrip(".!?")


def test_at_least_40_per_goal_with_paraphrases_typos_mixed_and_out_of_scope() -> None:
    examples = load_examples(UTTERANCES_DIR / "examples.yaml")
    val, test = load_split(UTTERANCES_DIR / "validation.yaml"), load_split(UTTERANCES_DIR / "test.yaml")
    counts = Counter({g: len(v) for g, v in examples.items()})
    for item in (*val, *test):
        counts[item.goal] += 1
    assert set(examples) == GOALS
    assert all(counts[g] >= 40 for g in GOALS), counts
    assert counts[None] >= 60
    tags = Counter(t for item in (*val, *test) if item.goal for t in item.tags)
    assert tags["paraphrase"] >= 20 and tags["typo"] >= 20 and tags["mixed"] >= 8
    for split in (val, test):
        assert {i.goal for i in split} == GOALS | {None}


def test_splits_are_disjoint() -> None:
    ex = {_norm(t) for v in load_examples(UTTERANCES_DIR / "examples.yaml").values() for t in v}
    val = {_norm(i.text) for i in load_split(UTTERANCES_DIR / "validation.yaml")}
    test = {_norm(i.text) for i in load_split(UTTERANCES_DIR / "test.yaml")}
    bg = {_norm(t) for t in deltabank_classifier_config().background}
    assert not ex & test and not ex & val and not val & test
    assert not bg & (test | val)


def test_examples_split_is_what_the_goal_type_nodes_carry() -> None:
    goals, _ = load_goal_files(GOALS_DIR)
    assert {g.name: list(g.examples) for g in goals} == load_examples(UTTERANCES_DIR / "examples.yaml")


def test_readme_documents_the_splits() -> None:
    readme = (UTTERANCES_DIR / "README.md").read_text()
    for name in ("examples.yaml", "validation.yaml", "test.yaml"):
        assert name in readme
        if name != "examples.yaml":
            assert isinstance(yaml.safe_load((UTTERANCES_DIR / name).read_text()), list)
