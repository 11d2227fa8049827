"""Decision traces (deterministic ids, diff) and scenario replay (all scenarios, byte-identical)."""

from __future__ import annotations

from domains import AS_OF, MARIA, UTTERANCE
from engine_store import SCENARIOS

from hopweave.engine import record as rec
from hopweave.engine.replay import check, load_scenario, replay, run_scenario, scenario_paths


def test_at_least_25_scenarios_cover_every_goal_and_path(engine) -> None:
    paths = scenario_paths([SCENARIOS])
    assert len(paths) >= 25
    scs = [load_scenario(p) for p in paths]
    tags = {t for s in scs for t in s.tags}
    goals = {g.name for g in engine.graph.goal_types()}
    assert goals <= tags  # every shipped goal has a scenario
    assert {"traps", "out_of_scope", "degraded", "tenant"} <= tags


def test_every_scenario_passes_and_replays_byte_identically(engine) -> None:
    first = replay(engine, [SCENARIOS], record=False)
    failed = {o.scenario: o.failures for o in first if not o.passed}
    assert not failed, failed
    second = replay(engine, [SCENARIOS], record=False)
    assert [(o.scenario, o.context_hash, o.trace_id) for o in first] == \
        [(o.scenario, o.context_hash, o.trace_id) for o in second]


def test_a_failing_expectation_is_reported(engine) -> None:
    sc = load_scenario(SCENARIOS / "01_maria_late_fee.yaml")
    wrong = sc.model_copy(update={"expect": sc.expect.model_copy(update={
        "goal": "FraudClaim", "chunks": ["gold-waiver-policy-v3.pdf#3.2"], "forbidden_metadata": {"tier": ["Platinum"]}})})
    fails = check(wrong, run_scenario(engine, sc, record=False))
    assert any(f.startswith("goal: expected 'FraudClaim'") for f in fails)
    assert any("gold-waiver-policy-v3.pdf#3.2 not in the context" in f for f in fails)
    assert any("forbidden tier" in f for f in fails)


def test_time_expectations_fail_on_the_wrong_revision(engine) -> None:
    sc = load_scenario(SCENARIOS / "44_waiver_policy_after_v3.yaml")
    r = run_scenario(engine, sc, record=False)
    assert check(sc, r) == []
    wrong = sc.model_copy(update={"expect": sc.expect.model_copy(update={"revisions": {"waiver-policy": "v4"}})})
    assert any("expected revision v4 only, the context cites ['v3']" in f for f in check(wrong, r))
    # a chunk from outside its interval is named, with its validity
    stale = r.model_copy(update={"chunks": tuple(c.model_copy(update={"metadata": {**c.metadata, "valid_until": "2026-02-01"}})
                                                 for c in r.chunks)})
    assert any("was not in force at" in f and "2026-02-01" in f for f in check(sc, stale))
    lexical_only = r.model_copy(update={"chunks": tuple(c.model_copy(update={"channels": tuple(
        ch for ch in c.channels if ch.channel == "lexical")}) for c in r.chunks)})
    assert any("not ranked by the semantic channel" in f for f in check(sc, lexical_only))


def test_trace_diff_shows_what_changed(engine, maria) -> None:
    cut = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF,
                          pattern_overrides={"recent_transactions": {"max_visited": 5}})
    assert cut.trace_id != maria.trace_id
    d = rec.diff(rec.load(engine.graph, "deltabank", maria.trace_id), rec.load(engine.graph, "deltabank", cut.trace_id))
    assert not d.same_context
    removed = d.changes["fact_ids"]["removed"]
    assert "EVT_4421_PAY_202409" in removed
    assert any(ln.startswith("-22/24 months on-time") for ln in d.context_diff)
    assert any("truncated by max_visited" in ln for ln in d.context_diff if ln.startswith("+"))
    assert "22/24" in d.render()
    same = rec.diff(rec.load(engine.graph, "deltabank", maria.trace_id), rec.load(engine.graph, "deltabank", maria.trace_id))
    assert same.same_context and not same.changes and "identical" in same.render()


def test_trace_id_is_deterministic_function_of_inputs() -> None:
    from datetime import datetime

    from hopweave.models.common import Session

    kw = dict(tenant_id="deltabank", utterance="u", session=Session(tenant_id="deltabank"),
              as_of=datetime(2026, 5, 12), store_revision="r", goal="G", patterns=[("p", 1)], chunk_ids=["c"],
              context_hash="h")
    a = rec.trace_id_for(**kw)
    assert a == rec.trace_id_for(**kw) and a.startswith("RT_")
    assert a != rec.trace_id_for(**{**kw, "patterns": [("p", 2)]})
    assert a != rec.trace_id_for(**{**kw, "tenant_id": "northbank", "session": Session(tenant_id="northbank")})


def test_trace_diff_names_the_filter_clauses_that_changed() -> None:
    """A filter change is shown clause by clause in infix form, not as two JSON dumps."""
    from hopweave.models.filters import And, Eq, IsEmpty, Or, Range

    def tree(at: str) -> dict:
        return And(clauses=(Eq(field="tier", value="Platinum"),
                            Or(clauses=(IsEmpty(field="valid_from"), Range(field="valid_from", lte=at))))
                   ).model_dump(mode="json")

    d = rec.TraceDiff(a="RT_a", b="RT_b", same_context=False,
                      changes={"filter": (tree("2026-05-12T23:59:59Z"), tree("2026-10-05T23:59:59Z"))})
    assert d.render().split("\n")[2:] == [
        "filter: - (valid_from is empty or valid_from <= 2026-05-12T23:59:59Z)",
        "filter: + (valid_from is empty or valid_from <= 2026-10-05T23:59:59Z)",
    ]
