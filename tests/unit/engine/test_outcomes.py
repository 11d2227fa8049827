"""Recorded outcomes (engine/outcomes.py): what was decided on a retrieval, through the memory
gates, on every write path (Python, HTTP, agent tool, CLI). The engine here is this module's own,
on a copy of the session store, so its writes never reach other tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from domains import AS_OF, DELTABANK_REGISTRY, MARIA, UTTERANCE
from typer.testing import CliRunner

from hopweave.adapters.agent_tool import RecordDecisionTool
from hopweave.cli import app
from hopweave.engine.engine import Engine
from hopweave.engine.outcomes import decided_id
from hopweave.engine.replay import REPLAY_CONFIG
from hopweave.errors import (
    HopweaveError,
    IdentityError,
    NotFoundError,
    OutcomeError,
    OutcomeTimeError,
    UnknownOutcomeError,
)

NORTHBANK_MARIA = {**MARIA, "tenant_id": "northbank"}
OTHER_CUSTOMER = {**MARIA, "customer_id": "CUST_5104"}


@pytest.fixture(scope="module")
def mem_store(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("outcomes") / "store"
    shutil.copytree(cli_store, d)
    return d


@pytest.fixture(scope="module")
def eng(mem_store: Path) -> Iterator[Engine]:
    e = Engine.open(mem_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    yield e
    e.close()


@pytest.fixture(scope="module")
def trace(eng: Engine) -> str:
    res = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)
    assert res.recorded
    return res.trace_id


def _seq(eng: Engine) -> int:
    return int(eng.graph.stats()["last_seq"])  # type: ignore[attr-defined]


def test_an_outcome_is_recorded_idempotent_and_amendable(eng: Engine, trace: str) -> None:
    first = eng.record_outcome(trace, session=MARIA, outcome="fee_waived", decided_by="Janet",
                               rationale="courtesy waiver, first this year", cited=["EVT_4421_LATEFEE_20260510"],
                               as_of="2026-05-13T10:00:00")
    assert first.created and first.version == 1 and first.decided_id == decided_id("deltabank", trace)
    assert first.kept == {"amount": 39.0, "on_time_percent": 92, "tier": "Platinum", "waivers_this_year": 0}
    seq = _seq(eng)
    again = eng.record_outcome(trace, session=MARIA, outcome="fee_waived", decided_by="Janet",
                               rationale="courtesy waiver, first this year", cited=["EVT_4421_LATEFEE_20260510"],
                               as_of="2026-05-13T12:00:00")
    assert not again.created and again.version == 1 and _seq(eng) == seq  # the same outcome twice is one
    fixed = eng.record_outcome(trace, session=MARIA, outcome="escalated", decided_by="Janet",
                               rationale="correction: a supervisor decides", as_of="2026-05-13T11:00:00")
    assert fixed.created and fixed.version == 2
    history = eng.outcomes.history(trace, session=MARIA)
    assert [(h.version, h.outcome) for h in history] == [(1, "fee_waived"), (2, "escalated")]
    assert history[0].cited == ("EVT_4421_LATEFEE_20260510",) and history[1].cited == ()
    node = eng.graph.get_node("deltabank", first.decided_id)
    assert node is not None
    p = node.props
    assert (p["kind"], p["outcome"], p["outcome_version"], p["retrieval_id"]) == ("precedent", "escalated", 2, trace)
    assert p["timestamp"] == p["recorded_at"] == "2026-05-13T10:00:00"  # visible from the first decision on
    assert "cited" not in p and p["summary"].startswith("Platinum, 0/year, 92% on-time, $39 fee → escalated")
    with pytest.raises(OutcomeTimeError):  # an amendment dated before what it amends
        eng.record_outcome(trace, session=MARIA, outcome="declined", as_of="2026-05-13T10:30:00")


def test_the_retrieval_trace_keeps_its_case_facts(eng: Engine, trace: str) -> None:
    node = eng.graph.get_node("deltabank", trace)
    assert node is not None
    case = json.loads(node.props["case_json"])
    assert case["tier"] == "Platinum" and case["waivers_this_year"] == 0 and case["amount"] == 39.0


DANIEL = {"tenant_id": "deltabank", "customer_id": "CUST_5104", "region": "US"}


def test_a_decided_case_is_precedent_for_a_similar_profile_from_its_decision_on(eng: Engine) -> None:
    from hopweave.engine.replay import as_recorded

    maria_before = eng.retrieve(UTTERANCE, session=MARIA, as_of="2026-06-05T09:00:00")
    daniel = eng.retrieve(UTTERANCE, session=DANIEL, as_of="2026-06-01T09:00:00")
    rec = eng.record_outcome(daniel.trace_id, session=DANIEL, outcome="fee_waived", decided_by="Janet",
                             rationale="courtesy waiver for a long-standing Platinum customer",
                             as_of="2026-06-02T10:00:00")

    def precedent(as_of: str) -> list[str]:
        res = eng.retrieve(UTTERANCE, session=MARIA, as_of=as_of, record=False)
        return [p.trace_id for p in res.precedent]

    assert rec.decided_id in precedent("2026-06-05T09:00:00")  # Maria's profile is SIMILAR_TO Daniel's
    assert rec.decided_id not in precedent("2026-06-02T09:59:59")  # not before the decision
    again = as_recorded(eng, "deltabank", maria_before.trace_id)  # recorded before it: as recorded
    assert again.identical and rec.decided_id not in again.text


BAD: list[tuple[str, dict[str, Any], type[HopweaveError]]] = [
    ("another tenant's trace", {"session": NORTHBANK_MARIA}, NotFoundError),
    ("another customer's trace", {"session": OTHER_CUSTOMER}, IdentityError),
    ("an unknown outcome", {"outcome": "refunded_twice"}, UnknownOutcomeError),
    ("an outcome before its trace", {"as_of": "2026-05-01T00:00:00"}, OutcomeTimeError),
    ("a cited id nobody has", {"cited": ["NO_SUCH_NODE"]}, OutcomeError),
    ("a rationale that is not text", {"rationale": 42}, OutcomeError),
    ("a rationale quoting the customer's name", {"rationale": "Maria Lopez asked nicely"}, OutcomeError),
    ("an unknown trace", {"trace_id": "RT_00000000000000000000"}, NotFoundError),
]


def _python(eng: Engine) -> Callable[[dict[str, Any]], Any]:
    def call(args: dict[str, Any]) -> Any:
        a = dict(args)
        return eng.record_outcome(a.pop("trace_id"), **a)
    return call


def _tool(eng: Engine) -> Callable[[dict[str, Any]], Any]:
    def call(args: dict[str, Any]) -> Any:
        a = dict(args)
        tool = RecordDecisionTool(eng, a.pop("session"), decided_by="agent")
        return tool(a.pop("trace_id"), a.pop("outcome"), **a)
    return call


@pytest.mark.parametrize("path", ["python", "agent_tool"])
@pytest.mark.parametrize("what,change,error", BAD, ids=[b[0] for b in BAD])
def test_every_write_path_rejects_with_a_typed_error_and_writes_nothing(
        eng: Engine, trace: str, path: str, what: str, change: dict[str, Any], error: type[HopweaveError]) -> None:
    call = {"python": _python, "agent_tool": _tool}[path](eng)
    args = {"trace_id": trace, "session": MARIA, "outcome": "declined", "as_of": "2026-06-01T00:00:00", **change}
    seq = _seq(eng)
    with pytest.raises(error):
        call(args)
    assert _seq(eng) == seq, f"{what}: something was written"


def test_http_outcomes_status_codes_and_nothing_written(eng: Engine, trace: str) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hopweave.adapters.http import create_app

    sib = eng.sibling(index=eng.index, understander=None)
    expected = {NotFoundError: 404, IdentityError: 403}
    with TestClient(create_app(sib, warm=False, close=False)) as client:
        for what, change, error in BAD:
            body = {"trace_id": trace, "session": MARIA, "outcome": "declined", "as_of": "2026-06-01T00:00:00",
                    **change}
            seq = _seq(eng)
            res = client.post("/v1/outcomes", json=body)
            assert res.status_code == expected.get(error, 400), (what, res.text)
            assert _seq(eng) == seq, what
            if what != "a rationale that is not text":  # that one the body model refuses (InputError)
                assert res.json()["error"] == error.__name__
        ok = client.post("/v1/outcomes", json={"trace_id": trace, "session": MARIA, "outcome": "declined",
                                               "as_of": "2026-06-02T00:00:00", "rationale": "over http"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["outcome"] == "declined" and ok.json()["created"] is True
    sib.close_pools()


def test_a_decision_scope_keeps_outcomes_to_tokens_that_grant_it(eng: Engine, tmp_path: Path) -> None:
    """``serve --jwt-decision-scope``: a verified token of the trace's own customer records an
    outcome only when its ``scope`` / ``scp`` claim grants the scope; otherwise 403, nothing written."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    jwt = pytest.importorskip("jwt", reason="the serve extra (PyJWT) is not installed")
    import time

    from fastapi.testclient import TestClient

    from hopweave.adapters.http import create_app
    from hopweave.adapters.identity import IdentityConfig

    secret = "d" * 40
    (tmp_path / "secret").write_text(secret)
    ident = IdentityConfig(jwt_secret_file=str(tmp_path / "secret"), decision_scope="hopweave:decide")

    def auth(**claims: Any) -> dict[str, str]:
        now = int(time.time())
        tok = jwt.encode({"sub": "CUST_4421", "tenant_id": "deltabank", "region": "US", "channel": "phone",
                          "iat": now, "exp": now + 300, **claims}, secret, algorithm="HS256")
        return {"Authorization": f"Bearer {tok}"}

    res = eng.retrieve(UTTERANCE + " (decision scope)", session=MARIA, as_of=AS_OF)  # a trace of its own
    assert res.recorded
    body = {"trace_id": res.trace_id, "outcome": "declined", "as_of": "2026-06-04T00:00:00", "rationale": "scoped"}
    sib = eng.sibling(index=eng.index, understander=None)
    try:
        with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as client:
            for claims in ({}, {"scope": "openid profile"}, {"scp": ["read"]}, {"scope": "hopweave:decide-all"},
                           {"scp": 7}):
                seq = _seq(eng)
                res = client.post("/v1/outcomes", json=body, headers=auth(**claims))
                assert res.status_code == 403, (claims, res.text)
                assert res.json()["error"] == "CallerMismatchError" and "'hopweave:decide'" in res.json()["message"]
                assert _seq(eng) == seq, claims
            first = client.post("/v1/outcomes", json=body, headers=auth(scope="openid hopweave:decide"))
            assert first.status_code == 200, first.text
            again = client.post("/v1/outcomes", json=body, headers=auth(scp=["hopweave:decide"]))
            assert again.status_code == 200 and again.json()["created"] is False, again.text
            assert first.json()["decided_by"] == "jwt:CUST_4421"
    finally:
        sib.close_pools()


def test_cli_outcome_records_and_rejects(mem_store: Path, tmp_path: Path, eng: Engine, trace: str) -> None:
    d = mem_store  # the CLI opens the graph alone: another process may hold the store's vectors
    session = tmp_path / "maria.json"
    session.write_text(json.dumps(MARIA))
    run = CliRunner()
    args = ["outcome", trace, "--session", str(session), "--store", str(d), "--as-of", "2026-06-03T00:00:00"]
    bad = run.invoke(app, [*args, "--outcome", "refunded_twice"])
    assert bad.exit_code == 2 and "UnknownOutcomeError" in bad.output + str(bad.stderr_bytes or b"")
    ok = run.invoke(app, [*args, "--outcome", "fee_waived", "--rationale", "from the CLI", "--json"])
    assert ok.exit_code == 0, ok.output
    got = json.loads(ok.stdout)
    assert got["outcome"] == "fee_waived" and got["created"]
    eng.graph.refresh()  # type: ignore[attr-defined]  # written by the CLI's store object
    assert eng.outcomes.history(trace, session=MARIA)[-1].rationale == "from the CLI"
