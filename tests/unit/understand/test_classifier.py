"""GoalClassifier: labels from GoalType nodes, calibrated confidence, abstention, runtime goals."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MARIA_UTTERANCE
from domains import DELTABANK_CALIBRATION, DELTABANK_CONFIG, UTTERANCES_DIR

from hopweave.errors import ConfigError, InputError
from hopweave.graph.metagraph_io import write_metagraph
from hopweave.models.metagraph import GoalType
from hopweave.understand.calibration import Calibration, fit_logistic, load_calibration
from hopweave.understand.classifier import GoalClassifier, load_classifier_config

CARD_REPLACEMENT = GoalType(
    name="CardReplacement",
    description="The customer's card is damaged or worn out and they want a replacement card.",
    version=1,
    examples=(
        "My card is damaged, please send me a replacement",
        "The magnetic strip on my card stopped working",
        "I need a new card, mine is cracked",
        "Can you reissue my card? It's bent and won't go in the reader",
        "My card is worn out and the numbers are fading",
    ),
)


@pytest.fixture(scope="module")
def clf(bank, embedder) -> GoalClassifier:  # type: ignore[no-untyped-def]
    return GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION)


def test_maria_is_a_confident_late_fee_dispute(clf: GoalClassifier) -> None:
    c = clf.classify(MARIA_UTTERANCE)
    assert c.goal == "LateFeeDispute" and not c.abstained
    assert c.confidence >= 0.9
    assert [k.goal for k in c.candidates][0] == "LateFeeDispute"
    assert all(0.0 <= k.confidence <= 1.0 for k in c.candidates)
    assert c.metagraph_revision == clf.store.metagraph_revision()


def test_labels_come_from_the_graph(clf: GoalClassifier) -> None:
    names = sorted(g.name for g in clf.store.goal_types())
    assert sorted(k.goal for k in clf.classify("please raise my credit limit").candidates) == names


@pytest.mark.parametrize(
    "text,goal",
    [
        ("Someone used my card to buy things I never ordered", "FraudClaim"),
        ("Could you increase the limit on my credit card?", "CreditLimitIncrease"),
        ("I got divorced and want my maiden name back on the account", "NameChange"),
        ("There's a charge I didn't make, and while you're at it what's my balance?", "FraudClaim"),
    ],
)
def test_in_scope_paraphrases_and_mixed_requests(clf: GoalClassifier, text: str, goal: str) -> None:
    assert clf.classify(text).goal == goal


@pytest.mark.parametrize(
    "text", ["What's the weather like in Paris?", "I have a question about my card.", "How do I reset my PIN?"]
)
def test_out_of_scope_abstains_but_reports_the_best_candidate(clf: GoalClassifier, text: str) -> None:
    c = clf.classify(text)
    assert c.abstained and c.goal is None
    assert c.best is not None and c.confidence < c.threshold


def test_threshold_is_configurable(bank, embedder) -> None:  # type: ignore[no-untyped-def]
    strict = GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                            threshold=0.999999)
    c = strict.classify("Can you waive the late fee, my payment was two days late?")
    assert c.abstained and c.best == "LateFeeDispute"
    with pytest.raises(InputError):
        GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       threshold=1.5)


def test_a_goal_type_added_at_runtime_is_classifiable_at_once(fresh_store, embedder) -> None:  # type: ignore[no-untyped-def]
    clf = GoalClassifier(fresh_store, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION)
    text = "The chip on my card is broken, I need another card"
    before = clf.classify(text)
    assert before.goal != "CardReplacement" and "CardReplacement" not in [k.goal for k in before.candidates]
    rev = fresh_store.metagraph_revision()
    write_metagraph(fresh_store, [CARD_REPLACEMENT], [])  # a graph write: no retrain, no refresh call
    assert fresh_store.metagraph_revision() != rev
    after = clf.classify(text)
    assert after.goal == "CardReplacement" and after.confidence >= after.threshold
    assert after.metagraph_revision == fresh_store.metagraph_revision()
    # the shipped goals still work next to the new one
    assert clf.classify(MARIA_UTTERANCE).goal == "LateFeeDispute"


def test_empty_metagraph_abstains(embedder) -> None:  # type: ignore[no-untyped-def]
    from hopweave.graph.networkx_store import NetworkxGraphStore

    c = GoalClassifier(NetworkxGraphStore(None), embedder).classify("dispute my late fee")
    assert c.abstained and c.goal is None and c.best is None and c.confidence == 0.0


def test_bad_input_is_a_typed_error(clf: GoalClassifier) -> None:
    for bad in ("", "   \n\t", "x" * 100_000):
        with pytest.raises(InputError):
            clf.classify(bad)


def test_deterministic(clf: GoalClassifier) -> None:
    a = clf.classify("pls waive the lat fee on my acount").model_dump_json()
    assert clf.classify("pls waive the lat fee on my acount").model_dump_json() == a


def test_calibration_file_has_provenance_for_the_shipped_data(clf: GoalClassifier) -> None:
    from hopweave.understand.datasets import file_sha256

    prov = DELTABANK_CALIBRATION.provenance
    assert prov["validation_sha256"] == file_sha256(UTTERANCES_DIR / "validation.yaml")
    # calibrated against exactly the goal examples, descriptions and background in use now
    fp = clf.fingerprint()
    assert prov["examples_sha256"] == fp.examples_sha256 == clf.index().content_hash
    assert prov["embedding_space"] == fp.embedding_space == clf.embedder.space.key
    assert prov["settings"] == fp.settings and prov["goals"] == list(fp.goals)
    assert prov["n"] >= 90 and prov["n_out_of_scope"] >= 30


def test_classifier_settings_file_errors_are_typed(tmp_path) -> None:
    with pytest.raises(InputError, match="classifier settings"):
        load_classifier_config(tmp_path / "missing.yaml")
    bad = tmp_path / "classifier.yaml"
    bad.write_text("threshold: [\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid YAML"):
        load_classifier_config(bad)
    bad.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="mapping"):
        load_classifier_config(bad)
    bad.write_text("threshold: high\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid"):
        load_classifier_config(bad)


def test_fit_logistic_is_deterministic_and_monotone() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = (x @ np.array([2.0, 1.0, 0.5]) + rng.normal(scale=0.5, size=200)) > 0
    c1, b1 = fit_logistic(x, y)
    c2, b2 = fit_logistic(x, y)
    assert np.array_equal(c1, c2) and b1 == b2
    assert c1[0] > c1[1] > c1[2] > 0
    cal = Calibration(coef=tuple(c1), intercept=b1)
    assert cal.probability([3, 0, 0]) > cal.probability([0, 0, 0]) > cal.probability([-3, 0, 0])
    with pytest.raises(InputError):
        fit_logistic(x, np.ones(200, dtype=bool))


def test_missing_calibration_is_a_config_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="understand-calibrate"):
        load_calibration(tmp_path / "nope.json")


class _Counting:
    """An embedder that counts the texts it is asked to encode (per call)."""

    def __init__(self, base) -> None:  # type: ignore[no-untyped-def]
        self.base, self.calls = base, []  # type: list[list[str]]

    @property
    def space(self):  # type: ignore[no-untyped-def]
        return self.base.space

    def embed(self, texts, batch_size=64):  # type: ignore[no-untyped-def]
        self.calls.append(list(texts))
        return self.base.embed(texts, batch_size)


def test_clauses_are_scored_only_when_the_whole_is_not_decisive(bank, embedder) -> None:  # type: ignore[no-untyped-def]
    counting = _Counting(embedder)
    c = GoalClassifier(bank, counting, config=DELTABANK_CONFIG,  # type: ignore[arg-type]
                       calibration=DELTABANK_CALIBRATION)
    c.index()
    counting.calls.clear()
    decisive = "I want to dispute this $39 late fee on my Platinum card. I have been a customer for years."
    got = c.classify(decisive)
    assert got.goal == "LateFeeDispute" and got.confidence >= c.config.decisive_confidence
    assert counting.calls == [[decisive]]  # one encoder text: the whole utterance
    assert len(c.clause_scores(decisive)) == 3  # the clauses are still there on request
    counting.calls.clear()
    mixed = "There's a charge I didn't make, and while you're at it what's my balance?"
    assert c.classify(mixed).goal == "FraudClaim"
    assert len(counting.calls) == 2 and len(counting.calls[1]) >= 2  # whole not decisive: its clauses too
    always = GoalClassifier(bank, embedder, calibration=DELTABANK_CALIBRATION,
                            config=c.config.model_copy(update={"decisive_confidence": 1.0}))
    assert len(always._score([decisive])[1][0]) == 3


def test_a_view_scored_once_is_read_back_with_the_same_scores(bank, embedder) -> None:  # type: ignore[no-untyped-def]
    """The intent split and understanding score the same whole utterance: the second time
    comes from the index's view cache, equal to a fresh classifier's scores, and read-only."""
    text = "There's a charge I didn't make, and while you're at it what's my balance?"
    c = GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION)
    assert not c.decisive(text)
    idx = c.index()
    assert [k[0] for k in idx.views] == [text]
    cached = idx.views[next(iter(idx.views))]
    got = c.classify(text)
    assert c.index().views[(text, c.config.top_k, c.config.lexical_weight)] is cached
    fresh = GoalClassifier(bank, embedder, config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION)
    assert fresh.classify(text) == got
    for a, b in zip(c.clause_scores(text), fresh.clause_scores(text)):
        assert a.clause == b.clause and a.goal_example == b.goal_example and a.background == b.background
        assert np.array_equal(a.goal_scores, b.goal_scores) and np.array_equal(a.goal_lexical, b.goal_lexical)
    with pytest.raises(ValueError):
        cached.goal_scores[0] = 1.0
