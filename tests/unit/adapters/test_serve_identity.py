"""Who is calling: ``hopweave serve`` verifies bearer JWTs and service keys on every ``/v1`` route,
takes the session from the token, records the caller on the trace, rate-limits per tenant and
caller, and refuses to listen beyond loopback unverified."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from domains import AS_OF, DELTABANK_REGISTRY, MARIA, UTTERANCE
from serving import hold_retrievals

from hopweave.engine.engine import Engine, EngineConfig

pytest.importorskip("fastapi", reason="the serve extra is not installed")
jwt = pytest.importorskip("jwt", reason="the serve extra (PyJWT) is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from hopweave.adapters.http import create_app  # noqa: E402
from hopweave.adapters.identity import IdentityConfig, RateLimiter, Verifier, check_bind, hash_key  # noqa: E402
from hopweave.errors import AuthenticationError, CallerMismatchError, ConfigError, RateLimitedError  # noqa: E402

SECRET = "s" * 40
DANIEL = {"tenant_id": "deltabank", "customer_id": "CUST_5104", "region": "US", "channel": "phone"}
AUD = "hopweave-test"


def token(claims: dict[str, Any], *, key: Any = SECRET, alg: str = "HS256", headers: dict[str, Any] | None = None,
          ttl: int = 300) -> str:
    now = int(time.time())
    body = {"iat": now, "exp": now + ttl, "aud": AUD, "iss": "bank-idp", **claims}
    return jwt.encode(body, key, algorithm=alg, headers=headers)


def hs256_by_hand(secret: bytes, claims: dict[str, Any]) -> str:
    """A token signed HS256 with ``secret`` (PyJWT refuses to sign with a PEM key, as an attacker would not)."""
    import base64
    import hashlib
    import hmac

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    signing = b64(b'{"alg":"HS256","typ":"JWT"}') + "." + b64(json.dumps(claims).encode())
    return signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def maria_token(**kw: Any) -> str:
    return token({"sub": "CUST_4421", "tenant_id": "deltabank", "region": "US", "channel": "phone"}, **kw)


def _utc(text: str) -> datetime:
    """A stored instant (UTC; the store keeps instants without an offset) as an aware datetime."""
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def bearer(t: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {t}"}


@pytest.fixture(scope="module")
def keyfiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("identity")
    (d / "secret").write_text(SECRET)
    keys = {"keys": [
        {"id": "billing-bot", "sha256": hash_key("hwk_tool_key"), "tenant_id": "deltabank", "scope": "tool"},
        {"id": "crm", "sha256": hash_key("hwk_full_key"), "tenant_id": "deltabank", "scope": "full"},
    ]}
    (d / "keys.json").write_text(json.dumps(keys))
    return {"secret": str(d / "secret"), "keys": str(d / "keys.json"), "dir": str(d)}


@pytest.fixture(scope="module")
def client(engine: Engine, keyfiles: dict[str, str]) -> Iterator[TestClient]:
    sib = engine.sibling(index=engine.index, understander=None)
    ident = IdentityConfig(jwt_secret_file=keyfiles["secret"], jwt_issuer="bank-idp", jwt_audience=AUD,
                           api_keys_file=keyfiles["keys"])
    with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as c:
        yield c
    sib.close_pools()


RETRIEVE = {"utterance": UTTERANCE, "as_of": AS_OF, "record": False}
TOOL = {"query": "late fee waiver", "top_k": 3}


@pytest.mark.parametrize("path,body", [("/v1/retrieve", RETRIEVE), ("/v1/tool/retrieve", TOOL)])
def test_without_a_valid_token_every_route_is_401(client: TestClient, path: str, body: dict[str, Any]) -> None:
    other_key = "k" * 40
    cases = {
        "none": {},
        "not bearer": {"Authorization": "Basic abc"},
        "bad signature": bearer(maria_token(key=other_key)),
        "expired": bearer(maria_token(ttl=-120)),
        "wrong audience": bearer(token({"sub": "CUST_4421", "tenant_id": "deltabank", "aud": "someone-else"})),
        "wrong issuer": bearer(token({"sub": "CUST_4421", "tenant_id": "deltabank", "iss": "evil"})),
        "not yet valid": bearer(token({"sub": "CUST_4421", "tenant_id": "deltabank", "nbf": int(time.time()) + 600})),
        "alg none": bearer(jwt.encode({"sub": "CUST_4421", "tenant_id": "deltabank"}, None, algorithm="none")),
        "unknown key": {"X-API-Key": "hwk_nope"},
    }
    for why, headers in cases.items():
        res = client.post(path, json={**body, "session": MARIA}, headers=headers)
        assert res.status_code == 401, (why, res.text)
        assert res.json()["error"] == "AuthenticationError" and res.headers["WWW-Authenticate"].startswith("Bearer")


def test_every_v1_route_goes_through_the_verifier(client: TestClient) -> None:
    routes = [r.path for r in client.app.routes if getattr(r, "path", "").startswith("/v1/")]  # type: ignore[attr-defined]
    assert {"/v1/retrieve", "/v1/tool/retrieve"} <= set(routes)
    for path in routes:
        assert client.post(path, json={}).status_code == 401, path


def test_the_token_alone_answers_its_customer(client: TestClient, engine: Engine) -> None:
    res = client.post("/v1/retrieve", json=RETRIEVE, headers=bearer(maria_token()))
    assert res.status_code == 200, res.text
    direct = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    got = res.json()
    assert got["context"]["text"] == direct.context.text and got["goal"] == "LateFeeDispute"
    # a body that repeats the token is accepted and changes nothing
    same = client.post("/v1/retrieve", json={**RETRIEVE, "session": MARIA}, headers=bearer(maria_token()))
    assert same.status_code == 200 and same.json()["context"]["text"] == direct.context.text


@pytest.mark.parametrize("body_session", [
    DANIEL,
    {"customer_id": "CUST_5104"},
    {**MARIA, "tenant_id": "northbank"},
    {**MARIA, "region": "CA"},
    {"attributes": {"vip": True}},
])
def test_a_body_naming_anyone_else_is_403(client: TestClient, body_session: dict[str, Any]) -> None:
    for path, body in (("/v1/retrieve", RETRIEVE), ("/v1/tool/retrieve", TOOL)):
        res = client.post(path, json={**body, "session": body_session}, headers=bearer(maria_token()))
        assert res.status_code == 403, res.text
        assert res.json()["error"] == "CallerMismatchError"
        assert "Daniel" not in res.text and "not what the token" in res.json()["message"]


def test_service_keys_are_scoped_to_a_tenant_and_to_the_tool(client: TestClient) -> None:
    tool_key, full_key = {"X-API-Key": "hwk_tool_key"}, bearer("hwk_full_key")
    res = client.post("/v1/tool/retrieve", json={**TOOL, "session": MARIA}, headers=tool_key)
    assert res.status_code == 200 and res.json()["results"]
    assert client.post("/v1/retrieve", json={**RETRIEVE, "session": MARIA}, headers=tool_key).status_code == 403
    other = {"tenant_id": "northbank", "customer_id": "NB_1"}
    res = client.post("/v1/tool/retrieve", json={**TOOL, "session": other}, headers=tool_key)
    assert res.status_code == 403 and "acts for tenant" in res.json()["message"]
    assert client.post("/v1/retrieve", json={**RETRIEVE, "session": MARIA}, headers=full_key).status_code == 200
    assert client.post("/v1/retrieve", json=RETRIEVE, headers=full_key).status_code == 400  # the key names no one


def test_the_caller_is_recorded_on_the_trace_never_the_token(engine: Engine, keyfiles: dict[str, str]) -> None:
    from hopweave.engine import record as trace_record

    sib = engine.sibling(index=engine.index, understander=None)
    ident = IdentityConfig(jwt_secret_file=keyfiles["secret"], jwt_issuer="bank-idp", jwt_audience=AUD)
    t = maria_token()
    before = datetime.now(timezone.utc).replace(microsecond=0)  # the store keeps whole seconds
    try:
        with TestClient(create_app(sib, warm=False, close=False, identity=ident)) as c:
            res = c.post("/v1/retrieve", json={**RETRIEVE, "record": True, "utterance": UTTERANCE + " (caller test)"},
                         headers=bearer(t))
            assert res.status_code == 200, res.text
            trace_id = res.json()["trace_id"]
        deadline = time.monotonic() + 10
        while sib.graph.get_node("deltabank", trace_id) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        recorded = sib.graph.get_node("deltabank", trace_id)
        assert recorded is not None and recorded.props["caller"] == "jwt:CUST_4421"
        assert t not in json.dumps(dict(recorded.props), default=str)
        loaded = trace_record.load(sib.graph, "deltabank", trace_id)
        assert loaded.caller == "jwt:CUST_4421"
        # when it was asked: the request's arrival on the wall clock, not the as_of it asked about
        assert loaded.asked_at is not None and loaded.as_of is not None and loaded.as_of.startswith(AS_OF)
        assert before <= _utc(loaded.asked_at) <= datetime.now(timezone.utc)
        listed = trace_record.traces_by_caller(sib.graph, "deltabank", "jwt:CUST_4421")
        assert trace_id in [t.trace_id for t in listed]
        assert trace_record.traces_by_caller(sib.graph, "deltabank", "jwt:CUST_5104") == []
    finally:
        sib.close_pools()


def test_rs256_public_key_and_a_jwks_key_set(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "pub.pem").write_bytes(pem)
    v = Verifier(IdentityConfig(jwt_public_key=str(tmp_path / "pub.pem"), jwt_audience=AUD))
    caller = v.caller(bearer(maria_token(key=rsa_key, alg="RS256")))
    assert caller.id == "jwt:CUST_4421" and v.session_for(caller, None).customer_id == "CUST_4421"
    with pytest.raises(AuthenticationError):  # the classic confusion: HS256 signed with the public key
        v.caller(bearer(hs256_by_hand(pem, {"sub": "CUST_4421", "tenant_id": "deltabank", "aud": AUD,
                                            "exp": int(time.time()) + 300})))

    ec_key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec_key.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "ES256", "use": "sig"}]}))
    v = Verifier(IdentityConfig(jwks_file=str(tmp_path / "jwks.json"), jwt_audience=AUD))
    assert v.caller(bearer(maria_token(key=ec_key, alg="ES256", headers={"kid": "k1"}))).id == "jwt:CUST_4421"
    with pytest.raises(AuthenticationError, match="key id"):
        v.caller(bearer(maria_token(key=ec_key, alg="ES256", headers={"kid": "k2"})))


def test_claims_map_to_the_session_as_configured(keyfiles: dict[str, str]) -> None:
    v = Verifier(IdentityConfig(jwt_secret_file=keyfiles["secret"], jwt_audience=AUD,
                                claims={"tenant_id": "org", "customer_id": "cust"}))
    t = token({"sub": "user-17", "org": "deltabank", "cust": "CUST_4421", "region": "US"})
    caller = v.caller(bearer(t))
    session = v.session_for(caller, None)
    assert caller.id == "jwt:user-17" and session.customer_id == "CUST_4421" and session.region == "US"
    with pytest.raises(AuthenticationError, match="no tenant"):
        v.caller(bearer(token({"sub": "user-17", "cust": "CUST_4421"})))
    with pytest.raises(CallerMismatchError):
        v.session_for(caller, {"customer_id": "CUST_5104"})


def test_a_flat_claim_maps_to_one_session_attribute(keyfiles: dict[str, str]) -> None:
    v = Verifier(IdentityConfig(jwt_secret_file=keyfiles["secret"], jwt_audience=AUD,
                                claims={"attributes.market": "mkt"}))
    t = token({"sub": "SUB_1001", "tenant_id": "acme", "mkt": "consumer", "attributes": {"market": "x", "plan": "p"}})
    session = v.session_for(v.caller(bearer(t)), None)
    assert session.attributes == {"market": "consumer", "plan": "p"}  # the own claim over the attributes claim
    alone = v.session_for(v.caller(bearer(token({"sub": "SUB_1001", "tenant_id": "acme", "mkt": "business"}))), None)
    assert alone.attributes == {"market": "business"}
    for bad in ("attributes.", "attributes.not-a-name", "tier"):
        with pytest.raises(ConfigError, match="attributes.NAME"):
            Verifier(IdentityConfig(jwt_secret_file=keyfiles["secret"], claims={bad: "x"}))


def test_rate_limits_per_tenant_and_per_caller() -> None:
    now = [100.0]
    rl = RateLimiter(per_tenant=2, per_caller=0, clock=lambda: now[0])
    rl.take("deltabank", "a")
    rl.take("deltabank", "b")
    with pytest.raises(RateLimitedError) as err:
        rl.take("deltabank", "c")
    assert 0 < err.value.retry_after_s <= 0.5
    rl.take("northbank", "a")  # another tenant has its own bucket
    now[0] += 0.5
    rl.take("deltabank", "c")  # refilled at 2 per second
    per_caller = RateLimiter(per_caller=1, clock=lambda: now[0])
    per_caller.take("t", "a")
    per_caller.take("t", "b")
    with pytest.raises(RateLimitedError):
        per_caller.take("t", "a")


def test_http_429_with_retry_after(engine: Engine) -> None:
    sib = engine.sibling(index=engine.index, understander=None)
    try:
        with TestClient(create_app(sib, warm=False, close=False, identity=IdentityConfig(rate_per_tenant=1))) as c:
            codes = [c.post("/v1/tool/retrieve", json={**TOOL, "session": MARIA}) for _ in range(3)]
        assert [r.status_code for r in codes][:1] == [200] and 429 in [r.status_code for r in codes]
        limited = next(r for r in codes if r.status_code == 429)
        assert int(limited.headers["Retry-After"]) >= 1 and limited.json()["error"] == "RateLimitedError"
    finally:
        sib.close_pools()


def test_unverified_service_listens_on_loopback_only() -> None:
    for host in ("127.0.0.1", "::1", "localhost", "[::1]"):
        check_bind(host, IdentityConfig())
    for host in ("0.0.0.0", "192.168.1.4", "::"):
        with pytest.raises(ConfigError, match="--jwt-secret-file"):
            check_bind(host, IdentityConfig())
        check_bind(host, IdentityConfig(trust_body_session=True))
        check_bind(host, IdentityConfig(api_keys_file="keys.json"))
    with pytest.raises(ConfigError, match="do not combine"):
        Verifier(IdentityConfig(trust_body_session=True, api_keys_file="keys.json"))


def test_serve_cli_refuses_an_open_bind_and_api_key_writes_digests(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hopweave.cli import app

    res = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--graph", str(tmp_path)])
    assert res.exit_code == 2 and "--api-keys" in res.output and "--trust-body-session" in res.output
    keys = tmp_path / "keys.json"
    res = CliRunner().invoke(app, ["api-key", str(keys), "--id", "crm", "--tenant", "deltabank", "--scope", "full"])
    assert res.exit_code == 0, res.output
    key = res.output.strip().splitlines()[-1]
    assert key.startswith("hwk_") and key not in keys.read_text()
    caller = Verifier(IdentityConfig(api_keys_file=str(keys))).caller(bearer(key))
    assert caller.id == "key:crm" and caller.scope == "full" and caller.tenant_id == "deltabank"


def test_gateway_mode_names_the_gateway_and_its_caller() -> None:
    v = Verifier(IdentityConfig(trust_body_session=True))
    assert v.caller({}).id == "gateway"
    assert v.caller({"x-hopweave-caller": "agent-42"}).id == "gateway:agent-42"
    assert v.session_for(v.caller({}), MARIA).customer_id == "CUST_4421"


def test_audit_lists_a_callers_traces(cli_store: Path) -> None:
    from typer.testing import CliRunner

    from hopweave.cli import app

    eng = Engine.open(cli_store, domains=DELTABANK_REGISTRY, config=EngineConfig(record=True))
    try:
        r = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, caller="key:crm")
        eng.trace_writer.close()
    finally:
        eng.close()
    res = CliRunner().invoke(app, ["audit", "--caller", "key:crm", "--tenant", "deltabank", "--graph", str(cli_store),
                                   "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [row["trace_id"] for row in rows] == [r.trace_id] and rows[0]["customer_id"] == "CUST_4421"
    asked = _utc(rows[0]["asked_at"])
    assert timedelta(0) <= datetime.now(timezone.utc) - asked < timedelta(minutes=10)
    res = CliRunner().invoke(app, ["audit", "--caller", "key:crm", "--tenant", "deltabank", "--graph", str(cli_store)])
    assert res.exit_code == 0 and f"asked_at={rows[0]['asked_at']}" in res.output, res.output
    res = CliRunner().invoke(app, ["audit", "--caller", "key:crm", "--graph", str(cli_store)])
    assert res.exit_code == 2 and "--tenant" in res.output  # (HOPWEAVE_TENANT unset)


def test_a_tenant_concurrency_cap_keeps_slots_for_the_other_tenants(engine: Engine) -> None:
    import asyncio

    import httpx

    sib = engine.sibling(index=engine.index, understander=None)
    app = create_app(sib, warm=False, close=False, identity=IdentityConfig(tenant_concurrency=2))
    release = hold_retrievals(sib)
    northbank = {"tenant_id": "northbank", "customer_id": "NB_CUST_4421", "region": "US", "channel": "phone"}

    async def burst() -> tuple[list[httpx.Response], httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hopweave") as c:
            body = {"utterance": UTTERANCE, "session": MARIA, "as_of": AS_OF, "record": False}
            flood = [asyncio.create_task(c.post("/v1/retrieve", json=body)) for _ in range(5)]
            await asyncio.sleep(0.3)
            other = asyncio.create_task(c.post("/v1/retrieve", json={**body, "session": northbank}))
            await asyncio.sleep(0.2)
            release.set()
            return await asyncio.gather(*flood), await other

    try:
        flood, other = asyncio.run(burst())
    finally:
        sib.close_pools()
    assert sorted(r.status_code for r in flood) == [200, 200, 429, 429, 429]
    assert other.status_code == 200, other.text
    limited = next(r for r in flood if r.status_code == 429)
    assert limited.json()["error"] == "RateLimitedError" and limited.headers["Retry-After"] == "1"


def test_facts_with_a_full_service_key_default_to_the_keys_tenant(client: TestClient) -> None:
    key = {"X-API-Key": "hwk_full_key"}
    res = client.post("/v1/facts", json={"nodes": [], "edges": [], "source": "crm"}, headers=key)
    assert res.status_code == 200, res.text
    other = client.post("/v1/facts", json={"tenant_id": "northbank", "nodes": [], "edges": []}, headers=key)
    assert other.status_code == 403 and other.json()["error"] == "CallerMismatchError"
    tool_only = client.post("/v1/facts", json={"nodes": [], "edges": []}, headers={"X-API-Key": "hwk_tool_key"})
    assert tool_only.status_code == 403
