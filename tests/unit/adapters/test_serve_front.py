"""The front layer of ``hopweave serve``: refusals before the body is read (401, 429, 503), the
cache of verified tokens, the budget of failed credentials per source, and limits shared among
``--workers N`` processes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from domains import AS_OF, MARIA, UTTERANCE
from serving import hold_retrievals

from hopweave.engine.engine import Engine

pytest.importorskip("fastapi", reason="the serve extra is not installed")
jwt = pytest.importorskip("jwt", reason="the serve extra (PyJWT) is not installed")
import httpx  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from hopweave.adapters.http import create_app  # noqa: E402
from hopweave.adapters.identity import (  # noqa: E402
    Caller,
    FailureBudget,
    IdentityConfig,
    RateLimiter,
    TokenCache,
    Verifier,
)
from hopweave.errors import AuthenticationError, RateLimitedError  # noqa: E402

SECRET = "f" * 40
AUD = "hopweave-front"
NORTHBANK = {"tenant_id": "northbank", "customer_id": "NB_CUST_4421", "region": "US", "channel": "phone"}
TOOL = {"query": "late fee waiver", "top_k": 3}


def token(session: dict[str, Any], *, key: str = SECRET, ttl: int = 300) -> str:
    now = int(time.time())
    return jwt.encode({"sub": session["customer_id"], "tenant_id": session["tenant_id"], "region": session["region"],
                       "channel": session["channel"], "aud": AUD, "iat": now, "exp": now + ttl}, key, algorithm="HS256")


def bearer(t: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {t}"}


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("front") / "secret"
    path.write_text(SECRET)
    return str(path)


@pytest.fixture()
def sib(engine: Engine) -> Iterator[Engine]:
    s = engine.sibling(index=engine.index, understander=None)
    yield s
    s.close_pools()


def test_a_repeated_token_is_verified_once_and_only_until_it_expires(secret_file: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    v = Verifier(IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD))
    calls = []
    real = jwt.decode
    monkeypatch.setattr(jwt, "decode", lambda *a, **k: calls.append(1) or real(*a, **k))
    t = token(MARIA)
    first, again = v.caller(bearer(t)), v.caller(bearer(t))
    assert first == again and first.tenant_id == "deltabank" and len(calls) == 1 and v.tokens.hits == 1
    with pytest.raises(AuthenticationError):  # a forged token is verified (and refused) every time
        v.caller(bearer(token(MARIA, key="x" * 40)))
    with pytest.raises(AuthenticationError):
        v.caller(bearer(token(MARIA, key="x" * 40)))
    assert len(calls) == 3 and len(v.tokens) == 1
    now = [1000.0]
    cache = TokenCache(size=2, max_age_s=60, clock=lambda: now[0])
    who = Caller(id="jwt:a", kind="jwt")
    cache.put("a", who, exp=1010.0)
    cache.put("b", who, exp=5000.0)
    cache.put("gone", who, exp=999.0)  # already expired: not kept
    assert cache.get("a") is who and cache.get("gone") is None
    now[0] = 1010.0
    assert cache.get("a") is None  # honours exp
    cache.put("c", who, exp=5000.0)
    cache.put("d", who, exp=5000.0)  # bounded: the least recently used ("b") goes
    assert cache.get("b") is None and cache.get("c") is who
    now[0] = 1071.0
    assert cache.get("c") is None  # and max_age_s


def test_failed_credentials_are_budgeted_per_source_and_a_verified_token_still_passes(secret_file: str) -> None:
    now = [0.0]
    budget = FailureBudget(rate=2, clock=lambda: now[0])
    for _ in range(4):  # burst: twice the rate
        budget.check("10.0.0.9")
        budget.spend("10.0.0.9")
    with pytest.raises(RateLimitedError):
        budget.check("10.0.0.9")
    budget.check("10.0.0.10")  # another source
    now[0] += 0.5
    budget.check("10.0.0.9")  # refilled
    v = Verifier(IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD))
    good = token(MARIA)
    v.caller(bearer(good), "10.1.1.1")
    for _ in range(int(v.failures.rate * 2)):
        with pytest.raises(AuthenticationError):
            v.caller(bearer(token(MARIA, key="y" * 40)), "10.1.1.1")
    with pytest.raises(RateLimitedError):  # no signature checked any more for this source
        v.caller(bearer(token(NORTHBANK)), "10.1.1.1")
    assert v.caller(bearer(good), "10.1.1.1").tenant_id == "deltabank"  # verified before: no check needed
    assert v.caller(bearer(token(NORTHBANK)), "10.1.1.2").tenant_id == "northbank"


def test_over_the_limit_is_refused_before_the_body_is_read(sib: Engine, secret_file: str) -> None:
    ident = IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD, rate_per_tenant=1)
    with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as c:
        maria = bearer(token(MARIA))
        assert c.post("/v1/tool/retrieve", json=TOOL, headers=maria).status_code == 200
        # not JSON at all: the app would answer 400; the front refuses first, without reading it
        res = c.post("/v1/tool/retrieve", content=b"{not json", headers={**maria, "content-type": "application/json"})
        assert res.status_code == 429 and res.json()["error"] == "RateLimitedError"
        assert int(res.headers["Retry-After"]) >= 1 and "total;dur=" in res.headers["server-timing"]
        # forged tokens naming northbank spend nothing of northbank's budget: 401, then its own call answers
        for _ in range(3):
            forged = c.post("/v1/tool/retrieve", json=TOOL, headers=bearer(token(NORTHBANK, key="z" * 40)))
            assert forged.status_code == 401 and forged.headers["WWW-Authenticate"].startswith("Bearer")
        assert c.post("/v1/tool/retrieve", json=TOOL, headers=bearer(token(NORTHBANK))).status_code == 200
        assert c.post("/v1/tool/retrieve", json=TOOL).status_code == 401  # no credential


def test_a_rate_limit_refusal_is_held_until_a_token_is_due(sib: Engine, secret_file: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import hopweave.adapters.http as http

    maria = bearer(token(MARIA))

    def refusals(hold_ms: int, seconds: float) -> list[float]:
        ident = IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD, rate_per_tenant=1,
                               refusal_hold_ms=hold_ms)
        took = []
        with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as c:
            assert c.post("/v1/tool/retrieve", json=TOOL, headers=maria).status_code == 200  # the burst of 1
            end = time.monotonic() + seconds
            while time.monotonic() < end:  # a client retrying at once
                t = time.monotonic()
                res = c.post("/v1/tool/retrieve", json=TOOL, headers=maria)
                assert res.status_code == 429 and int(res.headers["Retry-After"]) >= 1
                took.append(time.monotonic() - t)
        return took

    held = refusals(200, 0.5)  # the token is about 1 s away: each refusal held the 200 ms cap
    assert 2 <= len(held) <= 3 and min(held) >= 0.19
    at_once = refusals(0, 0.3)
    assert len(at_once) > 3 * len(held) and min(at_once) < 0.1
    monkeypatch.setattr(http, "MAX_HELD_REFUSALS", 0)  # every hold taken: answered at once
    assert min(refusals(200, 0.2)) < 0.1


def test_limits_are_shared_among_the_worker_processes() -> None:
    now = [0.0]
    rl = RateLimiter(per_tenant=4, clock=lambda: now[0], processes=2)
    rl.take("deltabank", "a")
    rl.take("deltabank", "a")
    with pytest.raises(RateLimitedError):  # 2 of the service's 4 per second in this process
        rl.take("deltabank", "a")
    assert RateLimiter(per_tenant=1, processes=4).per_tenant == 0.25


def test_a_retrieval_that_would_start_too_late_is_refused_at_once(sib: Engine) -> None:
    app = create_app(sib, warm=False, close=False)
    release = hold_retrievals(sib)
    n = sib.config.max_active
    for _ in range(4):
        sib.admission.hold_clock.add(600.0, busy=True)  # every slot held about 600 ms
    body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False}

    async def burst() -> tuple[list[httpx.Response], httpx.Response, httpx.Response, float]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hopweave",
                                     timeout=30) as c:
            held = [asyncio.create_task(c.post("/v1/retrieve", json={**body, "budget_ms": 30000})) for _ in range(n)]
            await asyncio.sleep(0.3)
            t = time.perf_counter()
            shed = await asyncio.wait_for(c.post("/v1/retrieve", json={**body, "budget_ms": 800}), 10)
            took = time.perf_counter() - t
            roomy = asyncio.create_task(c.post("/v1/retrieve", json={**body, "budget_ms": 30000}))
            await asyncio.sleep(0.2)
            release.set()
            return await asyncio.wait_for(asyncio.gather(*held), 20), shed, await asyncio.wait_for(roomy, 20), took

    held, shed, roomy, took = asyncio.run(burst())
    # 800 ms: 600 ms of wait and 600 of work do not fit
    assert shed.status_code == 503 and shed.json()["error"] == "OverloadedError" and shed.headers["Retry-After"]
    assert "could not finish within its budget" in shed.json()["message"] and took < 0.5
    assert [r.status_code for r in held] == [200] * n and roomy.status_code == 200, roomy.text
    assert json.loads(roomy.text)["tenant_id"] == "deltabank"


def test_the_front_layer_passes_a_body_it_read_on_to_the_app(tmp_path: Path) -> None:
    import hopweave.adapters.http as http_mod

    chunks = [{"type": "http.request", "body": b'{"budget_ms": ', "more_body": True},
              {"type": "http.request", "body": b"5000}", "more_body": False}]

    async def receive() -> Any:
        return chunks.pop(0)

    async def run() -> tuple[Any, list[Any]]:
        body, replay = await http_mod._read_body(receive, 1024)
        return body, [await replay(), await replay()]

    body, replayed = asyncio.run(run())
    assert body == b'{"budget_ms": 5000}' and http_mod._budget_of(body) == 5000
    assert [m["body"] for m in replayed] == [b'{"budget_ms": ', b"5000}"]
    assert http_mod._budget_of(b"[1]") is None and http_mod._budget_of(b'{"budget_ms": true}') is None


def test_an_app_of_several_workers_holds_its_share_of_the_limits(sib: Engine, secret_file: str) -> None:
    ident = IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD, rate_per_tenant=2)
    with TestClient(create_app(sib, warm=False, close=False, identity=ident, processes=2)) as c:
        maria = bearer(token(MARIA))
        codes = [c.post("/v1/tool/retrieve", json=TOOL, headers=maria).status_code for _ in range(2)]
    assert codes == [200, 429]  # 1 of the service's 2 per second in this worker (burst 1)


def test_a_known_key_passes_even_from_a_source_past_its_failures(secret_file: str, tmp_path: Path) -> None:
    from hopweave.adapters.identity import hash_key

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"id": "crm", "sha256": hash_key("hwk_front"), "tenant_id": "deltabank",
                                          "scope": "tool"}]}))
    v = Verifier(IdentityConfig(jwt_secret_file=secret_file, jwt_audience=AUD, api_keys_file=str(keys)))
    for _ in range(int(v.failures.rate * 2)):
        with pytest.raises(AuthenticationError):
            v.caller({"X-API-Key": "hwk_wrong"}, "10.2.2.2")
    assert v.caller({"X-API-Key": "hwk_front"}, "10.2.2.2").id == "key:crm"
    with pytest.raises(RateLimitedError):
        v.caller({"X-API-Key": "hwk_wrong"}, "10.2.2.2")
