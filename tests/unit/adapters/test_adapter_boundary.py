"""The agent tool and the LangChain retriever use the engine's one boundary: a bad session,
query, as_of or budget is a typed InputError / TenantError, never a raw pydantic or TypeError."""

from __future__ import annotations

import asyncio

import pytest

from conftest import MARIA
from hopweave.adapters.agent_tool import RetrieveTool
from hopweave.errors import InputError, TenantError


@pytest.mark.parametrize("session", [
    "deltabank", 42, ["tenant_id", "deltabank"], {"tenant_id": "deltabank", "customer_id": 4421},
    {"tenant_id": "deltabank", "unknown_field": "x"}, {"tenant_id": "deltabank", "attributes": "state=CA"},
])
def test_agent_tool_bad_session_is_an_input_error(bare_engine, session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="session"):
        RetrieveTool(bare_engine, session)


@pytest.mark.parametrize("session", [{}, {"tenant_id": ""}, {"tenant_id": "bad tenant!"}, {"customer_id": "CUST_1"}])
def test_agent_tool_missing_tenant_is_a_tenant_error(bare_engine, session) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TenantError):
        RetrieveTool(bare_engine, session)


@pytest.mark.parametrize("query", ["\x00\x00\x00", "", "   ", "x" * 4001, "fee \ud800 waiver", None, 7])
def test_agent_tool_bad_query_is_an_input_error(bare_engine, query) -> None:  # type: ignore[no-untyped-def]
    tool = RetrieveTool(bare_engine, MARIA)
    with pytest.raises(InputError):
        tool(query)


@pytest.mark.parametrize("top_k", [0, 101, True, "5"])
def test_agent_tool_bad_top_k(bare_engine, top_k) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="top_k"):
        RetrieveTool(bare_engine, MARIA)("late fee", top_k=top_k)


def test_langchain_retriever_bad_session_and_args() -> None:
    pytest.importorskip("langchain_core")
    from hopweave.adapters.langchain import HopweaveRetriever

    with pytest.raises(InputError, match="session"):
        HopweaveRetriever(engine=None, session={"tenant_id": "deltabank", "customer_id": 7})
    with pytest.raises(InputError, match="session"):
        HopweaveRetriever(engine=None, session="deltabank")
    with pytest.raises(TenantError):
        HopweaveRetriever(engine=None, session={"customer_id": "CUST_4421"})
    with pytest.raises(InputError, match="as_of"):
        HopweaveRetriever(engine=None, session=MARIA, as_of=20260512)
    with pytest.raises(InputError, match="token_budget"):
        HopweaveRetriever(engine=None, session=MARIA, token_budget=0)


def test_langchain_retriever_bad_query(bare_engine) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("langchain_core")
    from hopweave.adapters.langchain import HopweaveRetriever

    r = HopweaveRetriever(engine=bare_engine, session=MARIA, as_of="2026-05-12")
    with pytest.raises(InputError):
        r.invoke("\x00" * 5)
    with pytest.raises(InputError):
        asyncio.run(r.ainvoke("y" * 5000))
