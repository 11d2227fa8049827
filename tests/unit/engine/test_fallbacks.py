"""Every fallback path: search store down, pattern over budget, low-confidence goal, understanding
down, a stage timeout. Each is flagged in ``degraded``; nothing is dropped silently."""

from __future__ import annotations

from pathlib import Path

from domains import AS_OF, DELTABANK, DELTABANK_REGISTRY, MARIA, UTTERANCE, deltabank_schema

from hopweave.engine.engine import Engine, EngineConfig
from hopweave.engine.replay import REPLAY_CONFIG
from hopweave.search.edge_index import EdgeIndex


def _sibling(engine: Engine, index, **config) -> Engine:
    """Another engine on the same graph and models, with another index / config."""
    cfg = EngineConfig(**{**REPLAY_CONFIG.__dict__, **config})
    return Engine(engine.graph, index, embedder=engine.embedder, understander=engine.understander_for(DELTABANK),
                  domains=DELTABANK_REGISTRY, config=cfg)


def test_search_store_down_gives_graph_only_context(engine: Engine, tmp_path: Path) -> None:
    # A real qdrant-edge index whose collection does not exist: every search raises StoreError.
    down = EdgeIndex(tmp_path / "nowhere", deltabank_schema())
    r = _sibling(engine, down).retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal == "LateFeeDispute"
    d = [x for x in r.degraded if x.stage == "search"]
    assert d and d[0].what == "policy chunks" and d[0].fallback == "graph-only context"
    assert "vector collection" in d[0].reason
    assert r.chunks == ()
    text = r.context.text
    assert "[Applicable policy]\nnone found" in text
    assert "22/24 months on-time" in text and "TRACE_8514" in text  # facts and precedent survive


def test_no_index_at_all_is_flagged(engine: Engine) -> None:
    r = _sibling(engine, None).retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert any(x.stage == "search" and "no vector index" in x.reason for x in r.degraded)


def test_pattern_over_budget_is_truncated_and_flagged(engine: Engine) -> None:
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False,
                        pattern_overrides={"recent_transactions": {"max_visited": 5}})
    fact = next(f for f in r.facts if f.pattern == "recent_transactions")
    assert fact.truncated and fact.truncated_reason == "max_visited" and len(fact.rows) < 24
    assert any(x.stage == "traverse" and "recent_transactions" in x.what for x in r.degraded)
    assert "(incomplete: pattern recent_transactions truncated by max_visited)" in r.context.text
    assert "0 waivers used in 2026" in r.context.text  # the other patterns are intact


def test_pattern_time_budget_cut_is_flagged_never_silent(engine: Engine) -> None:
    eng = _sibling(engine, engine.index, pattern_budget_scale=0.00001)  # every pattern gets 1 ms
    r = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    cut = {f"pattern {f.pattern}@{f.version}" for f in r.facts
           if f.error or (f.truncated and f.truncated_reason != "limit")}
    flagged = {x.what for x in r.degraded if x.stage == "traverse"}
    assert cut == flagged  # exactly the walks that ran out of time are reported, no more, no less
    for f in r.facts:
        if f.truncated and f.truncated_reason == "budget_ms" and not f.error:
            assert f"pattern {f.pattern} truncated by budget_ms" in r.context.text


def test_low_confidence_goal_runs_the_fallback_plan(engine: Engine) -> None:
    r = engine.retrieve("What's the weather going to be like in Paris tomorrow?", session=MARIA, as_of=AS_OF,
                        record=False)
    assert r.goal is None and r.clarify and r.facts == ()
    assert any(x.stage == "understand" and x.what == "goal" for x in r.degraded)
    assert r.context.text.startswith("[Note]\nGoal unclear")
    assert "22/24 months" not in r.context.text


def test_confidence_threshold_is_the_engines(engine: Engine) -> None:
    strict = _sibling(engine, engine.index, min_confidence=1.01)  # nothing is confident enough
    r = strict.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.goal is None and r.clarify and r.facts == ()
    d = next(x for x in r.degraded if x.stage == "understand")
    assert "< 1.01" in d.reason and "Goal unclear (best guess LateFeeDispute" in r.context.text
    assert r.chunks  # generic retrieval still ran


class _Broken:
    def understand(self, *a, **k):
        raise RuntimeError("classifier crashed")

    def warmup(self) -> None:
        pass


def test_understanding_failure_is_a_fallback_not_an_error(engine: Engine) -> None:
    eng = Engine(engine.graph, engine.index, embedder=engine.embedder, understander=_Broken(),
                 domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    r = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert r.clarify and r.goal is None
    assert any(x.stage == "understand" and "classifier crashed" in x.reason for x in r.degraded)


def test_search_timeout_is_flagged(engine: Engine) -> None:
    class Slow:
        def __init__(self, inner):
            self.inner = inner

        def search(self, *a, **k):
            import time

            time.sleep(1.5)
            return self.inner.search(*a, **k)

        def require_info(self):
            return self.inner.require_info()

        def close(self):
            pass

    eng = _sibling(engine, Slow(engine.index), budget_ms=400)
    eng.warming.mark_warm()
    r = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert any(x.stage == "search" and "did not finish" in x.reason for x in r.degraded)
    assert "22/24 months on-time" in r.context.text
