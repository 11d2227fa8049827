"""The LangGraph nodes and prebuilt graph (issue 15, item 8), with a real LangGraph graph and a
scripted chat model. Skipped when langgraph is not installed (extra `langgraph`)."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from domains import AS_OF, MARIA, UTTERANCE  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from scope_checks import foreign, out_of_scope  # noqa: E402

from hopweave.adapters.langgraph import build_retrieval_graph  # noqa: E402

UNMET = "Someone used my savings account without permission"  # still unmet after the engine's rounds


def test_simple_case_goes_straight_through(engine) -> None:  # noqa: ANN001
    chat = FakeListChatModel(responses=["should never be asked"])
    out = build_retrieval_graph(engine, MARIA, as_of=AS_OF, chat_model=chat).invoke({"utterance": UTTERANCE})
    assert out["goal"] == "LateFeeDispute" and out["escalation"] == "multi_round"
    assert len(out["rounds"]) == 1 and out["agent_round"] == 0 and out["passages"] == []
    direct = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert out["context"] == direct.context.text and out["trace_id"] == direct.trace_id


def test_agent_rounds_with_a_scripted_chat_model_stay_in_scope(engine) -> None:  # noqa: ANN001
    chat = FakeListChatModel(responses=["Canadian waiver policy for Platinum cardholders in Canada",
                                        "fraud claim provisional credit unauthorized transaction"])
    graph = build_retrieval_graph(engine, MARIA, as_of=AS_OF, chat_model=chat, max_agent_rounds=2,
                                  token_budget=2500)
    out = graph.invoke({"utterance": UNMET})
    assert out["unmet"] and out["agent_round"] == 2 and len(out["agent_queries"]) == 2
    assert out["passages"] and not foreign("deltabank", [p["document"] for p in out["passages"]], "US")  # a US session, scoped
    assert "[Additional passages — agent rounds]" in out["context"] and out["tokens"] <= 2500
    assert "waiver-policy-ca" not in out["context"]


def test_without_a_chat_model_the_graph_is_deterministic(engine) -> None:  # noqa: ANN001
    graph = build_retrieval_graph(engine, MARIA, as_of=AS_OF)
    a, b = graph.invoke({"utterance": UNMET}), graph.invoke({"utterance": UNMET})
    assert a["context"] == b["context"] and a["agent_round"] == 0 and len(a["rounds"]) == 2


def test_follow_up_rounds_keep_as_of_tier_and_product(engine) -> None:  # noqa: ANN001
    """The chat model asks for what the scope excludes (a revision in force only from
    2026-09-01, another tier's policy): the follow-up rounds run at the graph's as_of under the
    session's record scope, so neither comes back."""
    chat = FakeListChatModel(responses=["late fee waiver policy v4 effective September 2026",
                                        "Gold customers in good standing fee waiver"])
    graph = build_retrieval_graph(engine, MARIA, as_of=AS_OF, chat_model=chat, max_agent_rounds=2,
                                  token_budget=4000, top_k=20)
    out = graph.invoke({"utterance": UNMET})
    docs = [p["document"] for p in out["passages"]]
    assert out["agent_round"] == 2 and docs and not out_of_scope("deltabank", MARIA, docs, AS_OF)
    assert "waiver-policy-v4.pdf" not in docs and "gold-waiver-policy-v3.pdf" not in docs
