"""One scope on every interface (hopweave.engine.scope.scope_for): Engine.retrieve, the agent
tool (every mode, in process and as a LangChain StructuredTool), the LangChain retriever. A US
Platinum session never receives another region's, tier's or product's document, nor one not in
force at its as_of; a caller's filter may only narrow (ScopeFilterError otherwise). HTTP and
LangGraph: test_serve.py, test_langgraph.py; the sweep over every session: tests/unit/bench."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from domains import AS_OF, MARIA

from hopweave.adapters.agent_tool import RetrieveTool
from hopweave.adapters.langchain import HopweaveRetriever
from hopweave.engine.scope import scope_for, scoped
from hopweave.errors import FilterError, ScopeFilterError
from hopweave.models.common import Session, to_datetime
from hopweave.models.filters import Eq, In, parse_filter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))
from scope_checks import foreign, out_of_scope  # noqa: E402

QUESTIONS = ["What is the Canadian late fee waiver policy for Platinum cardholders in Canada?",
             "waiver-policy-ca Platinum courtesy waiver CAD", "late fee waiver per calendar year",
             "Gold customers in good standing fee waiver", "checking account overdraft fee waiver"]


def _foreign(documents: list[str], region: str = "US") -> list[str]:
    return foreign("deltabank", documents, region)


def _bad(documents: list[str], session: dict = MARIA, as_of: str | None = AS_OF) -> list[str]:  # type: ignore[type-arg]
    return out_of_scope("deltabank", session, documents, as_of)


def test_scope_for_maria_is_her_record_then_the_always_on_clauses(engine) -> None:  # noqa: ANN001
    settings = engine.settings_for("deltabank")
    scope = scope_for(engine.graph, settings, Session(**MARIA))  # no as_of: today's documents
    assert scope.clauses[:2] == (Eq(field="tier", value="Platinum"), Eq(field="product", value="Platinum_Card"))
    assert {c.field: c.value for c in scope.clauses[2:]} == {  # type: ignore[union-attr]
        "status": "active", "region": "US", "tenant_id": "deltabank"}
    assert scope.authoritative == {"tier": ("Platinum",), "product": ("Platinum_Card",), "region": ("US",)}
    assert scope.origins["product"] == "CUST_4421 -HOLDS-> Account.product"
    assert {"tenant_id", "customer_id", "status", "valid_from", "valid_until"} <= scope.locked
    # at an as_of: exactly the clauses the engine's own filter carries (the in-force clause too)
    at = scope_for(engine.graph, settings, Session(**MARIA), to_datetime(AS_OF))
    r = engine.retrieve(QUESTIONS[0], session=MARIA, as_of=AS_OF, record=False)
    engine_clauses = [parse_filter(c) for c in r.filter["clauses"]]
    assert all(c in engine_clauses for c in at.clauses)


def test_a_customer_holding_two_products_is_scoped_to_both(engine) -> None:  # noqa: ANN001
    """The record is every account's product (HOLDS): a claim of one held product narrows to it."""
    from hopweave.understand.scope import read_record

    settings = engine.settings_for("deltabank")
    two = next(n for n in engine.graph.find_nodes("deltabank", "Customer")
               if len(read_record(engine.graph, settings, Session(tenant_id="deltabank", customer_id=n.id)).values
                      .get("Product", ())) == 2)
    session = {"tenant_id": "deltabank", "customer_id": two.id, "region": "US"}
    scope = scope_for(engine.graph, settings, Session(**session))
    products = scope.authoritative["product"]
    assert "Checking" in products and In(field="product", values=products) in scope.clauses
    r = engine.retrieve("There is a late fee on my checking account", session=session, as_of=AS_OF, record=False)
    assert r.filter_display["product"] == "Checking" and not [m for m in r.mentions if m.type == "Product"]


@pytest.mark.parametrize("claim", ["I hold the Gold_Card product. Late fee waiver?",
                                   "As a Gold card holder, can you waive my late fee?",
                                   "I'm a Silver customer with the Silver Card, late fee waiver please"])
def test_product_and_tier_claims_follow_the_record(engine, claim: str) -> None:  # noqa: ANN001
    r = engine.retrieve(claim, session=MARIA, as_of=AS_OF, record=False)
    assert r.filter_display["product"] == "Platinum_Card" and r.filter_display["tier"] == "Platinum"
    assert any(m.kind == "claim" and "record says Platinum" in m.reason for m in r.mentions)
    assert not _bad([c.document for c in r.chunks])


@pytest.mark.parametrize("question", QUESTIONS)
def test_engine_retrieve_stays_in_scope(engine, question: str) -> None:  # noqa: ANN001
    r = engine.retrieve(question, session=MARIA, as_of=AS_OF, record=False)
    assert not _bad([c.document for c in r.chunks])


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
def test_agent_tool_stays_in_scope(engine, mode: str) -> None:  # noqa: ANN001
    tool = RetrieveTool(engine, MARIA, as_of=AS_OF)
    for question in QUESTIONS:
        hits = tool(question, mode=mode, top_k=20)
        assert hits and not _bad([h["document"] for h in hits])
    today = RetrieveTool(engine, MARIA)  # no as_of: today's active documents, still her tier and product
    assert not _bad([h["document"] for h in today(QUESTIONS[3], mode=mode, top_k=20)], as_of=None)


def test_agent_tool_narrowing_is_kept_and_widening_is_refused(engine) -> None:  # noqa: ANN001
    tool = RetrieveTool(engine, MARIA, as_of=AS_OF)
    narrowed = tool("late fee waiver", filters={"tier": "Platinum", "region": "US", "policy_type": "LateFeeWaiver"})
    assert narrowed and not _bad([h["document"] for h in narrowed])
    for filters, why in (({"tier": "Gold"}, "record says Platinum"), ({"product": ["Platinum_Card", "Checking"]},
                                                                       "record says Platinum_Card"),
                         ({"region": "CA"}, "record says US"), ({"tenant_id": "northbank"}, "may not name 'tenant_id'"),
                         ({"status": "retired"}, "may not name 'status'"),
                         ({"valid_until": "2030-01-01"}, "may not name 'valid_until'"),
                         ({"op": "or", "clauses": [{"op": "eq", "field": "tier", "value": "Platinum"},
                                                   {"op": "eq", "field": "tier", "value": "Gold"}]}, "Gold")):
        with pytest.raises(ScopeFilterError, match=why):
            tool("late fee waiver", filters=filters)
    assert issubclass(ScopeFilterError, FilterError)
    with pytest.raises(ScopeFilterError):
        scoped(engine.graph, engine.settings_for("deltabank"), Session(**MARIA), Eq(field="tier", value="Gold"))


def test_anonymous_session_sees_only_unsegmented_documents_and_cannot_pick_a_tier(engine) -> None:  # noqa: ANN001
    anon = {"tenant_id": "deltabank", "region": "US", "channel": "web"}
    tool = RetrieveTool(engine, anon, as_of=AS_OF)
    assert not _bad([h["document"] for h in tool("late fee waiver", top_k=20)], session=anon)
    with pytest.raises(ScopeFilterError, match="nothing is on record"):
        tool("late fee waiver", filters={"tier": "Platinum"})


def test_agent_tool_ca_session_gets_the_canadian_policy(engine) -> None:  # noqa: ANN001
    """The contrast that shows the check can fail: a Canadian session does get its document."""
    hits = RetrieveTool(engine, {**MARIA, "region": "CA"})(QUESTIONS[0], mode="hybrid", top_k=20)
    docs = [h["document"] for h in hits]
    assert "waiver-policy-ca-v3.pdf" in docs and not _foreign(docs, "CA")


def test_langchain_tool_and_retriever_stay_in_scope(engine) -> None:  # noqa: ANN001
    tool = RetrieveTool(engine, MARIA, as_of=AS_OF).as_langchain_tool()
    for q in QUESTIONS:
        out = tool.invoke({"query": q, "mode": "hybrid", "top_k": 20})
        assert out and not _bad([h["document"] for h in out])
    with pytest.raises(ScopeFilterError):
        tool.invoke({"query": QUESTIONS[2], "filters": {"tier": "Gold"}})
    retriever = HopweaveRetriever(engine=engine, session=MARIA, as_of=AS_OF, k=20)
    for q in QUESTIONS:
        docs = retriever.invoke(q)
        assert not _bad([d.metadata["document"] for d in docs if d.metadata["kind"] == "policy"])
