"""``hopweave serve`` (issue 13): the HTTP service on loopback through fastapi's TestClient."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterator

import pytest
from domains import AS_OF, MARIA, UTTERANCE
from serving import hold_retrievals

from hopweave.engine.engine import Engine
from hopweave.engine.result import RetrievalResult

pytest.importorskip("fastapi", reason="the serve extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from hopweave.adapters.http import create_app  # noqa: E402


@pytest.fixture()
def client(engine: Engine) -> Iterator[TestClient]:
    sib = engine.sibling(index=engine.index, understander=None)
    with TestClient(create_app(sib, warm=False, close=False)) as c:
        yield c
    sib.close_pools()


def test_retrieve_returns_the_typed_result(client: TestClient, engine: Engine) -> None:
    body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False}
    res = client.post("/v1/retrieve", json=body)
    assert res.status_code == 200, res.text
    got = RetrievalResult.model_validate(res.json())
    direct = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert got.trace_id == direct.trace_id and got.context.text == direct.context.text
    assert got.goal == "LateFeeDispute" and got.chunks


def test_openapi_health_and_readiness(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert {"/v1/retrieve", "/v1/tool/retrieve", "/healthz", "/readyz"} <= set(schema["paths"])
    assert "RetrieveBody" in schema["components"]["schemas"]
    assert client.get("/healthz").json()["status"] == "ok"
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True


def test_typed_errors_are_json_with_status(client: TestClient) -> None:
    res = client.post("/v1/retrieve", json={"utterance": "x" * 5000, "session": MARIA, "record": False})
    assert res.status_code == 400 and res.json()["error"] == "InputError"
    res = client.post("/v1/retrieve", json={"utterance": UTTERANCE, "session": {"customer_id": "CUST_4421"}})
    assert res.status_code in (400, 403) and res.json()["error"] in ("TenantError", "InputError")
    res = client.post("/v1/retrieve", json={"utterance": UTTERANCE, "session": {**MARIA, "tenant_id": "nobody"}})
    assert res.status_code == 403 and res.json()["error"] == "TenantError"


def test_agent_tool_call_is_scoped_by_the_session(client: TestClient) -> None:
    res = client.post("/v1/tool/retrieve", json={"session": MARIA, "query": "late fee waiver", "mode": "hybrid",
                                                 "filters": {"tier": "Platinum", "region": "US"}, "top_k": 5})
    assert res.status_code == 200, res.text
    rows = res.json()["results"]
    assert 0 < len(rows) <= 5
    res = client.post("/v1/tool/retrieve", json={"session": MARIA, "query": "x", "filters": {"no_such": 1}})
    assert res.status_code == 400


def test_agent_tool_call_takes_as_of_and_refuses_a_widening_filter(client: TestClient) -> None:
    """The endpoint searches the documents in force at ``as_of`` under the session's record scope;
    a filter on another tier or on validity is a 400 ScopeFilterError saying why."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))
    from scope_checks import violations

    body = {"session": MARIA, "query": "Platinum late fee waiver policy calendar year", "top_k": 20, "as_of": AS_OF}
    res = client.post("/v1/tool/retrieve", json=body)
    assert res.status_code == 200, res.text
    docs = [h["document"] for h in res.json()["results"]]
    assert docs and not [v for d in docs for v in violations("deltabank", MARIA, d, AS_OF)]
    later = client.post("/v1/tool/retrieve", json={**body, "as_of": "2026-10-01"}).json()["results"]
    assert "waiver-policy-v4.pdf" in {h["document"] for h in later} and "waiver-policy-v4.pdf" not in docs
    for filters, why in (({"tier": "Gold"}, "record says Platinum"), ({"valid_from": "2020-01-01"}, "valid_from")):
        res = client.post("/v1/tool/retrieve", json={**body, "filters": filters})
        assert res.status_code == 400 and res.json()["error"] == "ScopeFilterError" and why in res.json()["message"]
    assert client.post("/v1/tool/retrieve", json={**body, "as_of": "not a date"}).status_code == 400


def test_a_full_service_sheds_load_with_503_and_retry_after(engine: Engine) -> None:
    import httpx

    sib = engine.sibling(index=engine.index, understander=None)
    app = create_app(sib, warm=False, close=False, max_inflight=2, retry_after_s=3)
    release = hold_retrievals(sib)

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hopweave") as c:
            body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False}
            tasks = [asyncio.create_task(c.post("/v1/retrieve", json=body)) for _ in range(5)]
            await asyncio.sleep(0.3)
            release.set()
            return await asyncio.gather(*tasks)

    try:
        out = asyncio.run(burst())
    finally:
        sib.close_pools()
    codes = sorted(r.status_code for r in out)
    assert codes == [200, 200, 503, 503, 503], codes
    shed = [r for r in out if r.status_code == 503]
    assert all(r.headers["Retry-After"] == "3" and r.json()["error"] == "OverloadedError" for r in shed)


def test_the_uvicorn_factory_needs_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    from hopweave.adapters.http import SERVE_ENV, app_from_env
    from hopweave.errors import InputError

    monkeypatch.delenv(SERVE_ENV["store"], raising=False)
    with pytest.raises(InputError, match=SERVE_ENV["store"]):
        app_from_env()


def test_a_request_whose_budget_was_spent_queued_in_the_server_is_shed_with_503(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import hopweave.adapters.http as http_mod

    # the budget runs from arrival: a request that arrived 10 s ago cannot start in time
    monkeypatch.setattr(http_mod, "_arrived", lambda: time.perf_counter() - 10.0)
    body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False, "budget_ms": 800}
    for path, b in (("/v1/retrieve", body), ("/v1/tool/retrieve", {"session": MARIA, "query": "late fee"})):
        res = client.post(path, json=b)
        assert res.status_code == 503, res.text
        assert res.headers["Retry-After"] == "1" and "waited" in res.json()["message"]
    assert client.get("/readyz").json()["shed_late"] == 2


def test_answers_carry_server_timing_from_arrival(client: TestClient) -> None:
    body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False}
    res = client.post("/v1/retrieve", json=body)
    assert res.status_code == 200
    names = [p.strip().split(";")[0] for p in res.headers["Server-Timing"].split(",")]
    assert names[:4] == ["queue", "engine", "serialise", "total"]


def test_no_slot_before_the_deadline_sheds_or_degrades(engine: Engine) -> None:
    import time

    from hopweave.engine.boundary import check_request
    from hopweave.errors import OverloadedError

    sib = engine.sibling(index=engine.index, understander=None)
    sib.warmup()
    # an 800 ms budget (the fixture's engine gives 60 s) that ran out while it queued
    req = check_request(UTTERANCE, session=MARIA, as_of=AS_OF, record=False, budget_ms=800)
    held = 0
    while sib.admission.slots.acquire(0):  # every request slot taken
        held += 1
    try:
        spent = time.perf_counter() - 10.0
        t = time.perf_counter()
        with pytest.raises(OverloadedError):
            sib.retrieve_request(req, spent, shed=True)
        out = sib.retrieve_request(req, spent)  # in-process: answered, degraded and flagged
        assert time.perf_counter() - t < 5.0  # at once: neither waits for a slot
        assert any(d.what == "request capacity" for d in out.degraded)
    finally:
        for _ in range(held):
            sib.admission.slots.release()
        sib.close_pools()


def test_the_uvicorn_factory_passes_the_search_process_setting(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """`hopweave serve --no-search-process` sets HOPWEAVE_SERVE_SEARCH_PROCESS=0: each engine it
    opens keeps its vector shard in process (the wiring only: the engines are not opened here)."""
    import hopweave.adapters.http as http_mod
    from hopweave.adapters.http import SERVE_ENV

    seen: dict[str, Any] = {}

    def fake_open(cls: Any, store: Any, vectors: Any = None, config: Any = None) -> Any:
        seen["config"] = config
        return "engine"

    monkeypatch.setattr(Engine, "open", classmethod(fake_open))
    monkeypatch.setattr(http_mod, "create_app", lambda engine, **kw: engine)
    monkeypatch.setenv(SERVE_ENV["store"], str(tmp_path))
    monkeypatch.setenv(SERVE_ENV["workers"], "1")
    monkeypatch.delenv(SERVE_ENV["engine_processes"], raising=False)
    for raw, want in (("0", False), ("1", True)):
        monkeypatch.setenv(SERVE_ENV["search_process"], raw)
        assert http_mod.app_from_env() == "engine"
        assert seen["config"].search_process is want
    monkeypatch.delenv(SERVE_ENV["search_process"])
    http_mod.app_from_env()
    assert seen["config"] is None or seen["config"].search_process is True  # the default: on


@pytest.mark.parametrize("extra", ['"budget_ms": NaN', '"budget_ms": Infinity', '"token_budget": 1e400',
                                   '"budget_ms": "soon"'])
def test_a_nan_or_malformed_number_is_a_400_json_input_error(client: TestClient, extra: str) -> None:
    body = f'{{"utterance": {json.dumps(UTTERANCE)}, "session": {json.dumps(MARIA)}, "record": false, {extra}}}'
    res = client.post("/v1/retrieve", content=body, headers={"content-type": "application/json"})
    assert res.status_code == 400 and res.headers["content-type"].startswith("application/json")
    assert res.json()["error"] == "InputError" and extra.split(":")[0].strip('"') in res.json()["message"]


def test_a_10_mb_customer_id_is_refused_with_its_limit(client: TestClient) -> None:
    res = client.post("/v1/retrieve", json={"utterance": UTTERANCE, "session": {**MARIA, "customer_id": "C" * 10_000_000},
                                            "record": False})
    assert res.status_code == 400 and res.json()["error"] == "LimitError" and "at most 256" in res.json()["message"]
