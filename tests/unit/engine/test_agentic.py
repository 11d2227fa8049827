"""Escalation policy + multi-round retrieval (issue 15, items 1 and 2): the loop with a fake
search (every branch), then through the real engine on the DeltaBank store."""

from __future__ import annotations

import dataclasses

import pytest
from domains import AS_OF, MARIA, UTTERANCE

from hopweave.engine.agentic import LoopInputs, RoundQuery, assess, expansion_terms, run_rounds
from hopweave.engine.plan import Plan
from hopweave.engine.result import ChannelView, ChunkItem
from hopweave.models.escalation import EscalationPolicy
from hopweave.models.filters import Eq, FilterTree, and_
from hopweave.models.metagraph import GoalType, SectionTemplate

SCOPE = [Eq(field="status", value="active"), Eq(field="region", value="US"), Eq(field="tenant_id", value="deltabank")]
POLICY_SECTION = SectionTemplate(name="Applicable policy", title="Applicable policy", source="chunks", required=True)


def _chunk(cid: str, sem: float, text: str = "some policy text", title: str = "Waiver policy") -> ChunkItem:
    return ChunkItem(chunk_id=cid, document_id=cid, text=text, title=title, score=0.9, rank=1,
                     channels=(ChannelView(channel="semantic", rank=1, score=sem),))


def _plan(**kw: object) -> Plan:
    goal = GoalType(name="LateFeeDispute", description="late fee", examples=("x",), version=1)
    flt = and_(Eq(field="product", value="Savings"), Eq(field="tier", value="Platinum"), *SCOPE)
    base = Plan(goal=goal, confidence=1.0, clarify=False, entities=(), entity_values={"Tier": "Platinum"},
                filter=flt, lexical_query="late fee savings", dense_query="late fee", sections=(POLICY_SECTION,))
    return dataclasses.replace(base, **kw)


def _rescope(where: FilterTree | None) -> FilterTree:
    return and_(*SCOPE, where)  # type: ignore[return-value]


class FakeSearch:
    def __init__(self, answers: dict[str, list[ChunkItem]]) -> None:
        self.answers, self.calls = answers, []

    def __call__(self, plan: Plan, reuse: bool) -> list[ChunkItem]:
        fields = sorted(c.field for c in plan.filter.clauses)  # type: ignore[union-attr]
        self.calls.append((plan.lexical_query, fields, reuse))
        return self.answers.get("relaxed" if "product" not in fields else "same", [])


def _inputs(policy: EscalationPolicy, search: FakeSearch, **kw: object) -> LoopInputs:
    base = dict(policy=policy, plan=_plan(), utterance="There is a late fee on my savings account", facts=(),
                scope_fields=frozenset({"status", "region", "tenant_id"}), rescope=_rescope, search=search,
                count=lambda t: len(t.split()), stop_words=frozenset({"there", "is", "a", "on", "my", "the"}))
    base.update(kw)
    return LoopInputs(**base)  # type: ignore[arg-type]


MULTI = EscalationPolicy(mode="multi_round", max_rounds=3, min_score=0.7, steps=("relax:product", "expand"))


def test_single_pass_policy_never_searches_again() -> None:
    s = FakeSearch({})
    pool, rounds, notes = run_rounds(_inputs(EscalationPolicy(), s), [_chunk("a", 0.1)])
    assert len(rounds) == 1 and rounds[0].action == "first pass" and s.calls == [] and notes == []


def test_needs_met_is_one_round() -> None:
    s = FakeSearch({})
    pool, rounds, _ = run_rounds(_inputs(MULTI, s), [_chunk("a", 0.9)])
    assert len(rounds) == 1 and not rounds[0].unmet and s.calls == []


def test_relax_then_stop_when_met_and_scope_kept() -> None:
    s = FakeSearch({"relaxed": [_chunk("b", 0.85)]})
    pool, rounds, notes = run_rounds(_inputs(MULTI, s), [_chunk("a", 0.6)])
    assert [r.action for r in rounds] == ["first pass", "relaxed the filter clause on product"]
    assert rounds[1].why == ("no chunk above the score cliff (best 0.600 < 0.7)",) and rounds[1].added == ("b",)
    assert rounds[1].unmet == () and "product" not in rounds[1].filter_display
    assert {"region", "tenant_id", "status", "tier"} <= set(rounds[1].filter_display)
    assert s.calls[0][2] is True  # the request's query vector is reused
    assert notes[0].startswith("Retrieved in 2 rounds") and [c.chunk_id for c in pool] == ["a", "b"]
    assert pool[0].score == 0.6  # a multi-round pool is ranked by the comparable semantic score


def test_expand_and_round_budget() -> None:
    s = FakeSearch({})
    _, rounds, notes = run_rounds(_inputs(MULTI, s), [])
    assert len(rounds) == 3 and rounds[1].why == ("required policy section empty: no chunk passed the filter",)
    assert rounds[2].action.startswith("expanded the lexical query with:") and "late fee savings" in s.calls[1][0]
    assert rounds[2].unmet  # stopped at max_rounds, still unmet (and the result says so)


def test_always_on_clause_is_never_relaxed() -> None:
    policy = EscalationPolicy(mode="multi_round", min_score=0.7, steps=("relax:region", "relax:product"))
    s = FakeSearch({"relaxed": [_chunk("b", 0.9)]})
    _, rounds, notes = run_rounds(_inputs(policy, s), [_chunk("a", 0.1)])
    assert "Not relaxed: region is an always-on scope clause of the session" in notes
    assert all("region" in f for _, f, _ in s.calls)
    assert rounds[1].action == "relaxed the filter clause on product"


def test_token_budget_caps_what_later_rounds_add() -> None:
    policy = EscalationPolicy(mode="multi_round", min_score=0.95, token_budget=5, steps=("relax:product",))
    big = [_chunk("b", 0.9, "one two three four"), _chunk("c", 0.8, "five six seven eight")]
    _, rounds, notes = run_rounds(_inputs(policy, FakeSearch({"relaxed": big})), [_chunk("a", 0.1)])
    assert rounds[1].added == ("b",) and rounds[1].tokens == 4
    assert any("token budget" in n for n in notes)


def test_latency_budget_stops_the_loop() -> None:
    policy = EscalationPolicy(mode="multi_round", min_score=0.99, latency_ms=1, steps=("relax:product", "expand"))

    class Slow(FakeSearch):
        def __call__(self, plan: Plan, reuse: bool) -> list[ChunkItem]:
            import time
            time.sleep(0.01)
            return super().__call__(plan, reuse)

    _, rounds, notes = run_rounds(_inputs(policy, Slow({})), [_chunk("a", 0.1)])
    assert len(rounds) == 2 and any("latency budget" in n for n in notes)
    # the replay budgets scale it (EngineConfig.round_latency_scale): a slow store stops no round
    from hopweave.engine.replay import REPLAY_CONFIG

    _, rounds, notes = run_rounds(_inputs(policy, Slow({}), latency_scale=REPLAY_CONFIG.round_latency_scale * 1000),
                                  [_chunk("a", 0.1)])
    assert len(rounds) == 3 and not any("latency budget" in n for n in notes)


def test_query_writer_is_held_to_declared_fields_and_scope() -> None:
    seen = []

    def writer(req):  # noqa: ANN001, ANN202
        seen.append(req)
        if req.round > 2:
            return None
        return RoundQuery(lexical_query="courtesy waiver", relax=("tenant_id", "product"), reason="llm")

    s = FakeSearch({"relaxed": [_chunk("b", 0.5)]})
    _, rounds, notes = run_rounds(_inputs(MULTI, s, writer=writer), [_chunk("a", 0.1)])
    assert seen[0].relaxable == ("product",) and seen[0].unmet
    assert rounds[1].writer == "query_writer" and rounds[1].lexical_query == "courtesy waiver"
    assert "relaxed the filter clause on product" in rounds[1].action and "(llm)" in rounds[1].action
    assert any("tenant_id, which the goal does not declare relaxable" in n for n in notes)
    assert all({"tenant_id", "region", "status"} <= set(f) for _, f, _ in s.calls)
    assert len(rounds) == 2  # the writer stopped


def test_assess_lists_every_kind_of_unmet_need() -> None:
    from hopweave.models.common import PatternResult

    policy = EscalationPolicy(mode="multi_round", min_score=0.5, needs_entities=("Product",))
    facts = [PatternResult(pattern="p", version=1, sub_question="?", truncated=True, truncated_reason="budget_ms")]
    unmet = assess(policy, _plan(), [_chunk("a", 0.2)], facts)
    assert unmet == ["no chunk above the score cliff (best 0.200 < 0.5)", "pattern p truncated (budget_ms)",
                     "entity Product unbound"]


def test_expansion_terms_are_new_words_never_names() -> None:
    from hopweave.models.common import PatternResult, Row

    facts = [PatternResult(pattern="c", version=1, sub_question="?", rows=(
        Row(node_id="C1", label="Customer", properties={"name": "Maria Lopez", "type": "LateFeeCharged"}),))]
    terms = expansion_terms([_chunk("a", 0.9, title="Courtesy waiver policy")], facts, "late fee please",
                            "late fee", {"please"})
    assert terms[:3] == ["courtesy", "waiver", "policy"] and "maria" not in terms and "late" not in terms


def test_bad_steps_are_rejected() -> None:
    with pytest.raises(ValueError):
        EscalationPolicy(steps=("drop table",))


# ---- through the engine ---------------------------------------------------------------------
def test_engine_simple_case_is_one_round(engine) -> None:  # noqa: ANN001
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.escalation == "multi_round" and len(r.rounds) == 1 and r.rounds[0].action == "first pass"
    assert "Retrieved in" not in r.context.text


def test_engine_product_claim_is_a_mention_and_the_first_pass_suffices(engine) -> None:  # noqa: ANN001
    r = engine.retrieve("There is a late fee on my savings account, please remove it", session=MARIA, as_of=AS_OF,
                        record=False)
    assert [x.action for x in r.rounds] == ["first pass"] and r.filter_display["product"] == "Platinum_Card"
    assert any(m.kind == "claim" and m.value == "Savings" for m in r.mentions)
    assert any(c.document == "waiver-policy-v3.pdf" and c.in_context for c in r.chunks)


def test_engine_later_rounds_keep_the_record_scope(engine) -> None:  # noqa: ANN001
    """relax:product drops only the utterance's narrowing: the record's product clause stays, so
    relaxing it here would change nothing and the planner expands instead."""
    r = engine.retrieve("Someone used my savings account without permission", session=MARIA, as_of=AS_OF,
                        record=False)
    assert len(r.rounds) >= 2 and r.rounds[1].action.startswith("expanded the lexical query")
    for x in r.rounds:
        assert (x.filter_display["region"], x.filter_display["tier"], x.filter_display["product"]) == \
            ("US", "Platinum", "Platinum_Card")
    assert "Retrieved in" in r.context.text
    assert all(c.metadata.get("region") in ("US", None) for c in r.chunks)


def test_engine_query_writer_hook(engine) -> None:  # noqa: ANN001
    def writer(req):  # noqa: ANN001, ANN202
        return None if req.round > 2 else RoundQuery(lexical_query="courtesy waiver calendar year",
                                                     relax=("product", "region"), reason="scripted")

    engine.query_writer = writer
    try:
        r = engine.retrieve("Someone used my savings account without permission", session=MARIA,
                            as_of=AS_OF, record=False)
    finally:
        engine.query_writer = None
    assert r.rounds[1].writer == "query_writer" and r.rounds[1].filter_display["region"] == "US"
    assert r.rounds[1].filter_display["product"] == "Platinum_Card" and r.rounds[1].filter_display["tier"] == "Platinum"
    assert "Not relaxed: region is an always-on scope clause of the session" in r.context.text or \
        "does not declare relaxable" in r.context.text
    assert all(c.metadata.get("region") in ("US", None) for c in r.chunks)


def test_rerank_stage_is_off_by_default_and_degrades_safely(engine, monkeypatch) -> None:  # noqa: ANN001
    base = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert not any(ch.channel == "rerank" for c in base.chunks for ch in c.channels)
    engine.rerank = "bi_encoder"
    try:
        r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
        assert all(any(ch.channel == "rerank" for ch in c.channels) for c in r.chunks[:5])
        from hopweave.search import rerank as rr

        def boom(self, query, hits, query_vector=None):  # noqa: ANN001, ANN202
            raise RuntimeError("reranker down")

        monkeypatch.setattr(rr.BiEncoderReranker, "score", boom)
        d = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
        assert any("reranking" in x.what for x in d.degraded)
        assert [c.chunk_id for c in d.chunks] == [c.chunk_id for c in base.chunks]
    finally:
        engine.rerank = None


def test_distinct_passages_collapses_copies_of_a_better_ranked_hit() -> None:
    """A later round's hits: restatements quoting a better-ranked passage (with a greeting or a
    reworded verb) do not take the round's hit budget; a passage that merely shares words does."""
    from hopweave.engine.agentic import distinct_passages

    src = ("Customers report an unauthorized charge within 60 days of the statement that shows it. "
           "Zero liability applies to card charges reported on time.")
    faq = "Short answer: Customers report an unauthorized charge within 60 days of the statement that shows it."
    note = "Agent note: Zero liability applies to card charges reported on time, always."
    other = "A replacement card ships within 5 days; recurring payments are moved to the new card by the customer."
    chunks = [_chunk("src", 0.9, src), _chunk("faq", 0.8, faq), _chunk("note", 0.8, note), _chunk("other", 0.7, other),
              _chunk("more", 0.6, "Provisional credit is posted within 10 business days of the claim.")]
    assert [c.chunk_id for c in distinct_passages(chunks, 10)] == ["src", "other", "more"]
    assert [c.chunk_id for c in distinct_passages(chunks, 2)] == ["src", "other"]
    # a longer passage ranked below its own restatement is not a copy of it (most of it is new)
    assert [c.chunk_id for c in distinct_passages([chunks[1], chunks[0]], 10)] == ["faq", "src"]
