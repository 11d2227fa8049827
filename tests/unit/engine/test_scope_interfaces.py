"""A US session never receives another region's document, through any interface (issue 15,
item 7): Engine.retrieve, the agent tool (every mode, with and without filters), its LangChain
StructuredTool, and the LangChain retriever. One code path: hopweave.engine.scope."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import AS_OF, EXAMPLE, MARIA

from hopweave.adapters.agent_tool import RetrieveTool
from hopweave.adapters.langchain import HopweaveRetriever
from hopweave.engine.scope import scope_filter, scoped
from hopweave.models.common import Session
from hopweave.models.filters import Eq

QUESTIONS = ["What is the Canadian late fee waiver policy for Platinum cardholders in Canada?",
             "waiver-policy-ca Platinum courtesy waiver CAD", "late fee waiver per calendar year"]


def _regions() -> dict[str, str]:
    """document file name -> region, from the corpus front matter."""
    out = {}
    for p in sorted(Path(EXAMPLE, "corpus").glob("*-v*.md")):
        front = yaml.safe_load(p.read_text().split("---")[1])
        if not isinstance(front, dict):
            continue
        if front.get("region"):
            out[front["document"]] = front["region"]
    return out


REGIONS = _regions()


def _foreign(documents: list[str], region: str = "US") -> list[str]:
    return [d for d in documents if REGIONS.get(d, region) != region]


def test_scope_filter_is_the_engines_always_on_clauses(engine) -> None:  # noqa: ANN001
    # without an as_of: today's documents (status active; the index adds version = current)
    tree = scope_filter(engine.graph, Session(**MARIA))
    clauses = {c.field: c.value for c in tree.clauses}  # type: ignore[union-attr]
    assert clauses == {"status": "active", "region": "US", "tenant_id": "deltabank"}
    # at an as_of: exactly the engine's always-on clauses, the in-force clause included (issue 14)
    from hopweave.models.common import to_datetime

    at = scope_filter(engine.graph, Session(**MARIA), to_datetime(AS_OF))
    r = engine.retrieve(QUESTIONS[0], session=MARIA, as_of=AS_OF, record=False)
    from hopweave.models.filters import Or, parse_filter

    engine_clauses = [parse_filter(c) for c in r.filter["clauses"]]
    assert all(c in engine_clauses for c in at.clauses) and any(isinstance(c, Or) for c in at.clauses)  # type: ignore[union-attr]
    narrowed = scoped(engine.graph, Session(**MARIA), Eq(field="tier", value="Gold"))
    assert narrowed.clauses[-1] == Eq(field="tier", value="Gold") and len(narrowed.clauses) == 4  # type: ignore[union-attr]


@pytest.mark.parametrize("question", QUESTIONS)
def test_engine_retrieve_us_session(engine, question: str) -> None:  # noqa: ANN001
    r = engine.retrieve(question, session=MARIA, as_of=AS_OF, record=False)
    assert not _foreign([c.document for c in r.chunks])


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_agent_tool_us_session(engine, mode: str, question: str) -> None:  # noqa: ANN001
    tool = RetrieveTool(engine, MARIA)
    hits = tool(question, mode=mode, top_k=20)
    assert hits and not _foreign([h["document"] for h in hits])
    assert tool(question, mode=mode, filters={"region": "CA"}) == []  # narrowing cannot widen


def test_agent_tool_ca_session_gets_the_canadian_policy(engine) -> None:  # noqa: ANN001
    """The contrast that shows the check can fail: a Canadian session does get its document."""
    hits = RetrieveTool(engine, {**MARIA, "region": "CA"})(QUESTIONS[0], mode="hybrid", top_k=20)
    docs = [h["document"] for h in hits]
    assert "waiver-policy-ca-v3.pdf" in docs and not _foreign(docs, "CA")


def test_langchain_tool_and_retriever_us_session(engine) -> None:  # noqa: ANN001
    tool = RetrieveTool(engine, MARIA).as_langchain_tool()
    for q in QUESTIONS:
        out = tool.invoke({"query": q, "mode": "hybrid", "top_k": 20})
        assert out and not _foreign([h["document"] for h in out])
    retriever = HopweaveRetriever(engine=engine, session=MARIA, as_of=AS_OF, k=20)
    for q in QUESTIONS:
        docs = retriever.invoke(q)
        assert not _foreign([d.metadata["document"] for d in docs if d.metadata["kind"] == "policy"])
