"""The LangChain retriever and the agent tool (seed 003) over the real engine."""

from __future__ import annotations

import asyncio

import pytest
from domains import AS_OF, MARIA, UTTERANCE

from hopweave.adapters.agent_tool import RetrieveTool, filters_to_tree
from hopweave.adapters.langchain import HopweaveRetriever
from hopweave.errors import FilterError, InputError, OverloadedError


def test_langchain_retriever_returns_the_working_set(engine, maria) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    r = HopweaveRetriever(engine=engine, session=MARIA, as_of=AS_OF, include_context=True)
    assert isinstance(r, BaseRetriever)
    docs = r.invoke(UTTERANCE)
    assert all(isinstance(d, Document) for d in docs)
    assert docs[0].metadata["kind"] == "context" and docs[0].page_content == maria.context.text
    assert docs[0].metadata["trace_id"] == maria.trace_id
    policy = [d for d in docs if d.metadata["kind"] == "policy"]
    assert any(d.metadata["document"] == "waiver-policy-v3.pdf" and d.metadata["section"] == "3.2" for d in policy)
    assert all(d.metadata["version"] == "current" and d.metadata["revision"] for d in policy)
    sections = {d.metadata["section"]: d for d in docs if d.metadata["kind"] in ("facts", "precedent")}
    assert "22/24 months on-time" in sections["Payment history"].page_content
    assert sections["Precedent"].metadata["sources"] == ["TRACE_8108", "TRACE_8514", "TRACE_8702"]


def test_langchain_retriever_async_and_k(engine) -> None:
    r = HopweaveRetriever(engine=engine, session=MARIA, as_of=AS_OF, k=1, include_sections=False)
    docs = asyncio.run(r.ainvoke(UTTERANCE))
    assert len(docs) == 1 and docs[0].metadata["kind"] == "policy"


def test_agent_tool_modes(engine) -> None:
    tool = RetrieveTool(engine, MARIA)
    flt = {"tier": "Platinum", "product": "Platinum_Card", "region": "US"}
    kw = tool("late fee waiver per calendar year", mode="keyword", filters=flt, top_k=5)
    sem = tool("late fee waiver per calendar year", mode="semantic", filters=flt, top_k=5)
    hyb = tool("late fee waiver per calendar year", mode="hybrid", filters=flt, top_k=5)
    assert set(kw[0]["channels"]) == {"lexical"} and set(sem[0]["channels"]) == {"semantic"}
    assert {"semantic", "lexical"} & set(hyb[0]["channels"])
    for hits in (kw, sem, hyb):
        assert 0 < len(hits) <= 5
        assert all(h["version"] == "current" for h in hits)  # the tool cannot widen the scope
    exact = tool("3.2 Annual courtesy waiver $50", mode="keyword", filters={**flt, "document_id": "waiver-policy"})
    assert exact and all(h["document"] == "waiver-policy-v4.pdf" for h in exact)  # the revision loaded last
    then = RetrieveTool(engine, MARIA, as_of="2026-05-12")  # the revision in force then
    exact = then("3.2 Annual courtesy waiver $50", mode="keyword", filters={**flt, "document_id": "waiver-policy"})
    assert exact and all(h["document"] == "waiver-policy-v3.pdf" for h in exact)
    old = RetrieveTool(engine, MARIA, as_of="2025-03-01")("courtesy waiver", mode="hybrid", filters=flt)
    assert old and {h["revision"] for h in old if h["document_id"] == "waiver-policy"} == {"v2"}


def test_agent_tool_rejects_bad_input(engine) -> None:
    tool = RetrieveTool(engine, MARIA)
    with pytest.raises(InputError):
        tool("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        tool("x", top_k=0)
    with pytest.raises(FilterError):
        tool("x", filters={"password": "hunter2"})
    assert filters_to_tree({"tier": ["Gold", "Platinum"]}).op == "in"


def test_agent_tool_takes_the_engines_tool_slots_not_its_request_slots(engine) -> None:
    """With every request slot taken a tool call is still answered (its own slots); with every
    tool slot taken it waits within its budget, then sheds."""
    import time

    tool = RetrieveTool(engine, MARIA, budget_ms=60)
    held = [engine.admission.slots.acquire(5) for _ in range(engine.config.max_active)]
    try:
        assert all(held) and tool("courtesy waiver")
    finally:
        for _ in held:
            engine.admission.slots.release()
    lane = engine.admission.tool_slots
    held = [lane.acquire(5) for _ in range(engine.config.tool_max_active)]
    try:
        assert all(held)
        t = time.perf_counter()
        with pytest.raises(OverloadedError, match="agent-tool calls"):
            tool("courtesy waiver")
        assert time.perf_counter() - t < 5  # shed within about its budget, not queued forever
    finally:
        for _ in held:
            lane.release()
    assert tool("courtesy waiver")  # a slot is free again
    with pytest.raises(InputError, match="budget_ms"):
        RetrieveTool(engine, MARIA, budget_ms=0)


def test_agent_tool_as_langchain_tool(engine) -> None:
    t = RetrieveTool(engine, MARIA).as_langchain_tool()
    out = t.invoke({"query": "late fee", "mode": "keyword", "filters": {"tier": "Platinum"}, "top_k": 3})
    assert len(out) == 3 and t.name == "retrieve" and "keyword" in t.description


def test_missing_langchain_gives_the_install_hint(monkeypatch, maria) -> None:
    import hopweave.adapters.langchain as lc
    from hopweave.errors import MissingDependencyError

    monkeypatch.setattr(lc, "_HAVE_LANGCHAIN", False)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hopweave\[langchain\]'"):
        lc.to_documents(maria)
