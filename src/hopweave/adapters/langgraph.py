"""LangGraph integration: nodes for understand, retrieve, assess and budget,
and a prebuilt graph with the multi-round loop (the whole pipeline as a LangGraph graph).

Optional extra: ``pip install 'hopweave[langgraph]'``. Importing this module without
``langgraph`` works; :func:`build_retrieval_graph` then raises MissingDependencyError.

.. code-block:: python

    from hopweave.adapters.langgraph import build_retrieval_graph

    graph = build_retrieval_graph(engine, session, as_of="2026-05-12", chat_model=llm)   # llm optional
    state = graph.invoke({"utterance": "Someone used my savings account without permission"})
    print(state["context"])

The graph: ``understand`` (goal, confidence, the goal's escalation mode) -> ``retrieve`` (one
``Engine.retrieve``: the engine's own deterministic rounds) -> ``assess`` (the last round's unmet
needs; while some remain, a chat model is given and the graph's round budget allows, the model
writes a follow-up query and the agent tool runs it — at the same ``as_of`` and scoped exactly
like ``retrieve`` (tier, plan, tenant, region, in force at ``as_of``), see
:mod:`hopweave.engine.scope`) -> ``budget`` (the context block plus the follow-up passages that
fit the token budget). Without a chat model the graph is deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypedDict

from hopweave.adapters.agent_tool import RetrieveTool
from hopweave.engine.boundary import check_as_of, check_session
from hopweave.errors import MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine


class RetrievalState(TypedDict, total=False):
    utterance: str
    goal: Optional[str]
    confidence: float
    escalation: str
    context: str
    trace_id: str
    rounds: list[dict[str, Any]]
    unmet: list[str]
    agent_round: int
    agent_queries: list[str]
    passages: list[dict[str, Any]]
    tokens: int


class HopweaveNodes:
    """The graph's nodes, bound to an engine and an authenticated session (each returns the
    state update it makes)."""

    def __init__(self, engine: Engine, session: Any, *, as_of: Any = None, token_budget: int | None = None,
                 chat_model: Any = None, max_agent_rounds: int = 2, top_k: int = 5) -> None:
        self.engine = engine
        self.session = check_session(session, "the LangGraph nodes' session")
        self.as_of, self.token_budget = as_of, token_budget
        self.chat_model, self.max_agent_rounds, self.top_k = chat_model, max_agent_rounds, top_k
        # the follow-up rounds search at the request's as_of, under the same scope as retrieve
        self.tool = RetrieveTool(engine, self.session, as_of=as_of)

    def understand(self, state: RetrievalState) -> RetrievalState:
        settings = self.engine.settings_for(self.session.tenant_id)
        when, _ = check_as_of(self.as_of)
        u = self.engine.understander_for(settings).understand(state["utterance"], self.session, when)
        goal = self.engine.goals().goal(u.goal)
        return {"goal": u.goal, "confidence": u.confidence,
                "escalation": goal.escalation.mode if goal is not None and goal.escalation else "single"}

    def retrieve(self, state: RetrievalState) -> RetrievalState:
        r = self.engine.retrieve(state["utterance"], session=self.session, as_of=self.as_of,
                                 token_budget=self.token_budget, record=False)
        return {"goal": r.goal, "context": r.context.text, "trace_id": r.trace_id, "tokens": r.context.tokens,
                "rounds": [x.model_dump(mode="json") for x in r.rounds],
                "unmet": list(r.rounds[-1].unmet) if r.rounds else [], "agent_round": 0, "agent_queries": [],
                "passages": []}

    def assess(self, state: RetrievalState) -> RetrievalState:
        """One agent round when needs are unmet: the chat model writes the query, the scoped
        agent tool runs it."""
        if self.route(state) != "more":
            return {}
        from langchain_core.messages import HumanMessage

        ask = (f"A customer said: {state['utterance']!r}. Retrieval is missing: {'; '.join(state['unmet'])}. "
               "Reply with one short search query for the policy passages, nothing else.")
        query = str(self.chat_model.invoke([HumanMessage(content=ask)]).content).strip()
        seen = {p["chunk_id"] for p in state.get("passages", [])}
        hits = [h for h in self.tool(query, mode="hybrid", top_k=self.top_k) if h["chunk_id"] not in seen]
        return {"agent_round": state.get("agent_round", 0) + 1,
                "agent_queries": [*state.get("agent_queries", []), query],
                "passages": [*state.get("passages", []), *hits]}

    def route(self, state: RetrievalState) -> str:
        """"more" while needs are unmet, a chat model is given and the round budget allows."""
        more = bool(state.get("unmet")) and self.chat_model is not None and \
            state.get("agent_round", 0) < self.max_agent_rounds
        return "more" if more else "done"

    def budget(self, state: RetrievalState) -> RetrievalState:
        """The context block plus the agent rounds' passages that fit the token budget."""
        budget = self.token_budget or self.engine.config.token_budget
        count = self.engine.counter.count
        text, used = state.get("context", ""), count(state.get("context", ""))
        header = "[Additional passages — agent rounds]"
        lines: list[str] = []
        for p in state.get("passages", []):
            line = f'"{p["text"]}"  (src: {p["chunk_id"]}, {p["document"]}, section {p["section"]})'
            cost = count(line) + (count(header) if not lines else 0)
            if used + cost <= budget:
                lines.append(line)
                used += cost
        if lines:
            text = f"{text}\n\n{header}\n" + "\n".join(lines)
        return {"context": text, "tokens": count(text)}


def build_retrieval_graph(engine: Engine, session: Any, **kwargs: Any) -> Any:
    """The prebuilt graph (compiled): understand -> retrieve -> assess (loop while "more") ->
    budget. ``kwargs`` go to :class:`HopweaveNodes`. Raises MissingDependencyError without
    langgraph."""
    try:
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        raise MissingDependencyError("langgraph", "langgraph", "The LangGraph retrieval graph") from None
    nodes = HopweaveNodes(engine, session, **kwargs)
    g = StateGraph(RetrievalState)
    g.add_node("understand", nodes.understand)
    g.add_node("retrieve", nodes.retrieve)
    g.add_node("assess", nodes.assess)
    g.add_node("budget", nodes.budget)
    g.add_edge(START, "understand")
    g.add_edge("understand", "retrieve")
    g.add_edge("retrieve", "assess")
    g.add_conditional_edges("assess", nodes.route, {"more": "assess", "done": "budget"})
    g.add_edge("budget", END)
    return g.compile()


__all__ = ["HopweaveNodes", "RetrievalState", "build_retrieval_graph"]
