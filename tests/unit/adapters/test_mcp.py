"""hopweave over the Model Context Protocol, end to end with the official SDK's client: over
streamable HTTP under ``serve`` (identity from the verified token, never from tool arguments) and
over stdio (``hopweave mcp --session FILE``, slow suite)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from domains import AS_OF, MARIA, UTTERANCE

from hopweave.engine.engine import Engine

pytest.importorskip("mcp", reason="the mcp extra is not installed")
jwt = pytest.importorskip("jwt", reason="the serve extra (PyJWT) is not installed")
import httpx2  # noqa: E402
import uvicorn  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from hopweave.adapters.http import create_app  # noqa: E402
from hopweave.adapters.identity import IdentityConfig  # noqa: E402

SECRET = "m" * 40


def _token(sub: str, tenant: str = "deltabank", **extra: Any) -> str:
    now = int(time.time())
    return jwt.encode({"sub": sub, "tenant_id": tenant, "iat": now, "exp": now + 300, "region": "US",
                       "channel": "phone", **extra}, SECRET, algorithm="HS256")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    secret = tmp_path_factory.mktemp("mcp") / "secret"
    secret.write_text(SECRET)
    sib = engine.sibling(index=engine.index, understander=None)
    app = create_app(sib, warm=False, close=False, mcp=True, host="127.0.0.1",
                     identity=IdentityConfig(jwt_secret_file=str(secret)))
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}/mcp"
    srv.should_exit = True
    t.join(15)
    sib.close_pools()


async def _session_call(url: str, token: str | None, tool: str | None, args: dict[str, Any] | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            if tool is None:
                tools = await client.list_tools()
                templates = await client.list_resource_templates()
                goals = await client.read_resource("hopweave://deltabank/goals")
                return tools, (templates, goals)
            return await client.call_tool(tool, args or {})


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)


def test_an_mcp_client_lists_the_tools_over_http(server: str) -> None:
    tools, (templates, goals) = asyncio.run(_session_call(server, _token("CUST_4421"), None))
    assert {t.name for t in tools.tools} >= {"retrieve", "search", "record_outcome"}
    assert "hopweave://{tenant_id}/goals" in {t.uri_template for t in templates.resource_templates}
    names = {g["name"] for g in json.loads(goals.contents[0].text)}
    assert "LateFeeDispute" in names


def test_retrieve_over_http_answers_the_tokens_customer(server: str, engine: Engine) -> None:
    got = _payload(asyncio.run(_session_call(server, _token("CUST_4421"), "retrieve",
                                             {"utterance": UTTERANCE, "as_of": AS_OF})))
    direct = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert got["goal"] == "LateFeeDispute" and got["context"] == direct.context.text
    assert all(ln["sources"] for ln in got["lines"] if ln["kind"] in ("fact", "chunk"))
    # tool arguments cannot name another customer: there is no such argument, and extra ones are refused
    res = asyncio.run(_session_call(server, _token("CUST_4421"), "retrieve",
                                    {"utterance": UTTERANCE, "as_of": AS_OF, "session": {"customer_id": "CUST_5104"}}))
    assert res.is_error or _payload(res)["context"] == direct.context.text


def test_http_mcp_without_a_valid_token_is_refused(server: str) -> None:
    for token in (None, _token("CUST_4421").replace("a", "b", 1) + "x", jwt.encode({"sub": "x"}, "k" * 40)):
        try:
            res = asyncio.run(_session_call(server, token, "search", {"query": "late fee"}))
        except Exception:  # noqa: BLE001 - the SDK may surface the refusal as a transport error
            continue
        assert res.is_error and "AuthenticationError: " in res.content[0].text, res.content


def test_http_mcp_lists_nothing_without_a_verified_credential(server: str) -> None:
    """The front layer verifies every ``/mcp`` request: no tool list, no session set-up, 401."""
    import httpx

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "0"}}}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    forged = _token("CUST_4421")[:-4] + "AAAA"
    for auth in ({}, {"Authorization": f"Bearer {forged}"}, {"Authorization": "Basic eDp5"}):
        for msg in (init, listing):
            r = httpx.post(server, json=msg, headers={**accept, **auth}, timeout=30)
            assert r.status_code == 401, (auth, msg["method"], r.status_code, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert r.json()["error"] == "AuthenticationError" and "tools" not in r.text
        assert httpx.get(server, headers={"Accept": "text/event-stream", **auth}, timeout=30).status_code == 401
    ok = httpx.post(server, json=listing, headers={**accept, "Authorization": f"Bearer {_token('CUST_4421')}"},
                    timeout=30)
    assert ok.status_code == 200 and "retrieve" in ok.text


def test_search_over_http_is_scoped_like_the_agent_tool(server: str) -> None:
    got = _payload(asyncio.run(_session_call(server, _token("CUST_4421"), "search",
                                             {"query": "late fee waiver", "top_k": 5})))
    assert 0 < len(got["results"]) <= 5
    res = asyncio.run(_session_call(server, _token("CUST_4421"), "search",
                                    {"query": "late fee", "filters": {"no_such_field": 1}}))
    assert res.is_error
    # the session's scope at as_of: her tier and product only, in force then; a widening filter is refused
    at = _payload(asyncio.run(_session_call(server, _token("CUST_4421"), "search",
                                            {"query": "Gold waiver policy v4 September", "top_k": 20, "as_of": AS_OF})))
    docs = {h["document"] for h in at["results"]}
    assert docs and not docs & {"waiver-policy-v4.pdf", "gold-waiver-policy-v3.pdf", "checking-fee-waiver-v2.pdf"}
    res = asyncio.run(_session_call(server, _token("CUST_4421"), "search",
                                    {"query": "late fee", "filters": {"tier": "Gold"}}))
    assert res.is_error and "ScopeFilterError" in res.content[0].text, res.content


@pytest.mark.slow
def test_stdio_server_for_a_session_file(store_dir: Path, tmp_path: Path) -> None:
    """``hopweave mcp --session FILE`` as a subprocess, driven by the SDK's stdio client."""
    import shutil

    from mcp import StdioServerParameters

    store = tmp_path / "store"
    shutil.copytree(store_dir, store)
    session = tmp_path / "maria.json"
    session.write_text(json.dumps(MARIA))
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "hopweave"),
                                   args=["mcp", "--session", str(session), "--graph", str(store)],
                                   env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                                        "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")})

    async def run() -> tuple[Any, Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = await client.list_tools()
            return tools, await client.call_tool("retrieve", {"utterance": UTTERANCE, "as_of": AS_OF})

    tools, res = asyncio.run(run())
    assert {t.name for t in tools.tools} >= {"retrieve", "search"}
    got = _payload(res)
    assert got["goal"] == "LateFeeDispute" and "CUST_4421" in json.dumps(got["facts"])


def test_record_outcome_over_http_is_the_callers_customers_only(server: str, engine: Engine) -> None:
    got = _payload(asyncio.run(_session_call(server, _token("CUST_4421"), "retrieve",
                                             {"utterance": UTTERANCE + " (mcp outcome)", "as_of": AS_OF})))
    trace_id = got["trace_id"]
    deadline = time.monotonic() + 10
    while engine.graph.get_node("deltabank", trace_id) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    res = asyncio.run(_session_call(server, _token("CUST_5104"), "record_outcome",
                                    {"trace_id": trace_id, "outcome": "fee_waived", "as_of": "2026-05-13"}))
    assert res.is_error  # another customer's token cannot decide Maria's case
    rec = _payload(asyncio.run(_session_call(server, _token("CUST_4421"), "record_outcome",
                                             {"trace_id": trace_id, "outcome": "fee_waived", "as_of": "2026-05-13"})))
    assert rec["trace_id"] == trace_id and rec["outcome"] == "fee_waived"


def test_http_mcp_failed_credentials_count_against_the_client_address(tmp_path: Path) -> None:
    from hopweave.adapters.identity import FailureBudget, Verifier
    from hopweave.adapters.mcp_server import _Identity
    from hopweave.errors import AuthenticationError, RateLimitedError

    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    verifier = Verifier(IdentityConfig(jwt_secret_file=str(secret)))
    verifier.failures = FailureBudget(rate=1.0, clock=lambda: 0.0)  # a burst of 2, never refilled
    ident = _Identity(None, verifier, None, None)
    bad = {"authorization": "Bearer " + _token("CUST_4421").replace("a", "b", 1) + "x"}
    for _ in range(2):
        with pytest.raises(AuthenticationError):
            ident.resolve(bad, "tool", "10.0.0.9")
    with pytest.raises(RateLimitedError):
        ident.resolve(bad, "tool", "10.0.0.9")  # that address has spent its failures
    with pytest.raises(AuthenticationError):
        ident.resolve(bad, "tool", "10.0.0.10")  # another address has not
    good = {"authorization": f"Bearer {_token('CUST_4421')}"}
    assert ident.resolve(good, "tool", "10.0.0.10")[0].customer_id == "CUST_4421"
