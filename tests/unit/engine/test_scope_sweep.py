"""The session's scope over both example packs, every session and every interface (slow suite).

1. Claims: generated phrasings ("I hold the Gold_Card product", "I'm on the Unlimited Plus plan",
   "as a Canadian customer" ...) for every authoritative attribute of each pack (DeltaBank: tier,
   product, region; telecom: plan, region), from every session with a subject, over the goals'
   own test utterances: the filter's clauses on that attribute's field hold only values on record
   (read from the pack's graph files by tests/shared/scope_checks.py, not by hopweave), and every
   scope clause is in the filter. ``HOPWEAVE_SCOPE_CLAIMS`` cases (default 1,000).
2. Interfaces: every session of both packs x ``HOPWEAVE_SCOPE_QUERIES`` queries (default 50:
   held-out utterances and scope traps) through Engine.retrieve (with its deterministic rounds),
   agentic rounds written by a scripted query writer, the agent tool in process and over HTTP
   (the app's test client), the LangChain tool and retriever, and the LangGraph graph with a
   scripted chat model: 0 passages of another tier / plan / product, region, market or tenant,
   or not in force at as_of; widening filters refused (ScopeFilterError, HTTP 400).

Each test takes well under 90 s at the default counts on the 2-core machine (measured figures in
docs/BENCHMARKS.md, "Scope sweep").
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from domains import AS_OF

from hopweave.adapters.agent_tool import RetrieveTool
from hopweave.engine.agentic import RoundQuery
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG
from hopweave.engine.scope import scope_for
from hopweave.errors import ScopeFilterError
from hopweave.models.common import Session
from hopweave.models.filters import And, Eq, In

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))
from scope_checks import PACKS, record, sessions, violations  # noqa: E402

pytestmark = pytest.mark.slow

CLAIMS = int(os.environ.get("HOPWEAVE_SCOPE_CLAIMS", "1000"))
QUERIES = int(os.environ.get("HOPWEAVE_SCOPE_QUERIES", "50"))
TEMPLATES = ("I hold the {v} product. {t}", "I'm a {v} customer, {t}", "As a {v} member: {t}",
             "My account is {v}. {t}", "I'm on the {v} plan and {t}", "{t} I have {v}.", "{v} here. {t}",
             "Treat me as {v}: {t}", "{t} (I'm {v})", "Since I have {v}, {t}", "I just upgraded to {v}. {t}",
             "I live in {v}; {t}")
TRAPS = {
    "deltabank": ["Gold customers in good standing fee waiver", "waiver policy v4 effective September 2026",
                  "Canadian late fee waiver CAD", "holiday waiver promo", "EU fee schedule euro",
                  "two waivers per year $35 superseded policy", "checking account overdraft fee waiver",
                  "Silver card credit limit increase", "Standard card waiver policy"],
    "telecom": ["Unlimited Plus roaming credit policy", "business market roaming rates", "Canada roaming credit",
                "EU roaming day pass", "prepaid plan change fee", "outage credit policy 2024",
                "Prepaid Go data overage", "zephyr roaming policy"],
}


def _vocabulary(pack: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for line in (PACKS[pack] / "graph" / "vocabulary.jsonl").read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if "node" in d:
                out.setdefault(d["label"], []).append(d.get("properties") or {})
    return out


def _utterances(pack: str) -> list[str]:
    items = yaml.safe_load((PACKS[pack] / "utterances" / "test.yaml").read_text(encoding="utf-8"))
    return [i["text"] for i in items if i.get("goal")]


def _settings(pack: str) -> Any:
    from hopweave.pack.manifest import read_manifest

    return read_manifest(PACKS[pack]).domain_settings()


def _fields(pack: str) -> dict[str, str]:
    mapping = yaml.safe_load((PACKS[pack] / "filters.yaml").read_text(encoding="utf-8"))
    return {r["entity"]: r["field"] for r in mapping["entities"]}


def claim_cases(n: int) -> list[tuple[str, dict[str, Any], str, str, str]]:
    """``n`` (pack, session, entity, claimed name, utterance), taken in turn from each (pack,
    entity) group so that every authoritative attribute is covered; deterministic."""
    rng = random.Random(28)
    groups: list[list[tuple[str, dict[str, Any], str, str, str]]] = []
    for pack in PACKS:
        vocab, tails = _vocabulary(pack), _utterances(pack)
        subjects = [s for s in sessions(pack).values() if s.get("customer_id")]
        for attr in _settings(pack).authoritative:
            group = []
            for node in vocab.get(attr.entity, []):
                surfaces = [str(node["name"]).replace("_", " ")] + [str(a) for a in node.get("aliases") or []]
                for s in subjects:
                    for v in surfaces:
                        for tpl in TEMPLATES:
                            group.append((pack, s, attr.entity, str(node["name"]), tpl.format(v=v, t=rng.choice(tails))))
            rng.shuffle(group)
            groups.append(group)
    out: list[tuple[str, dict[str, Any], str, str, str]] = []
    while len(out) < n and any(groups):
        for g in groups:
            if g and len(out) < n:
                out.append(g.pop())
    return out


def _allowed(pack: str, session: dict[str, Any], field: str) -> set[str]:
    allowed = record(pack, session).get(field, set())
    if field == "region" and session.get("region"):
        allowed = {session["region"]}
    return allowed


def _top(tree: Any) -> list[Any]:
    return list(tree.clauses) if isinstance(tree, And) else [tree]


@pytest.fixture(scope="module")
def telecom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from hopweave.pack.loader import load_pack

    d = tmp_path_factory.mktemp("scope_telecom") / "store"
    load_pack(PACKS["telecom"], d)
    eng = Engine.open(d, config=REPLAY_CONFIG)
    eng.warmup()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def engines(engine: Engine, telecom: Engine) -> dict[str, Engine]:
    return {"deltabank": engine, "telecom": telecom}


def test_claims_follow_the_record(engines: dict[str, Engine]) -> None:
    cases = claim_cases(CLAIMS)
    assert len(cases) == CLAIMS
    covered: dict[tuple[str, str], int] = {}
    followed = mentions = 0
    for pack, s, entity, claimed, text in cases:
        eng = engines[pack]
        session = Session(**s)
        settings = eng.settings_for(session.tenant_id)
        u = eng.understander_for(settings).understand(text, session, AS_OF)
        field = _fields(pack)[entity]
        allowed = _allowed(pack, s, field)
        for c in _top(u.filter):
            if isinstance(c, (Eq, In)) and c.field == field:
                vals = {c.value} if isinstance(c, Eq) else set(c.values)
                assert vals <= allowed, f"{pack} {s['customer_id']}: {text!r} -> {field} {vals}, record {allowed}"
        scope = scope_for(eng.graph, settings, session, AS_OF)
        assert all(c in _top(u.filter) for c in scope.clauses), text
        covered[(pack, entity)] = covered.get((pack, entity), 0) + 1
        followed += claimed not in allowed
        mentions += any(m.kind == "claim" for m in u.mentions)
    assert set(covered) == {(p, a.entity) for p in PACKS for a in _settings(p).authoritative}
    assert followed > CLAIMS // 3 and mentions > CLAIMS // 3  # most claims contradict the record; reported


def _queries(pack: str, n: int) -> list[str]:
    pool = TRAPS[pack] + _utterances(pack)
    return pool[:n]


def _all_sessions() -> list[tuple[str, str, dict[str, Any]]]:
    return [(pack, name, s) for pack in PACKS for name, s in sessions(pack).items()]


def _check(pack: str, session: dict[str, Any], docs: list[str], where: str) -> None:
    bad = [v for d in docs for v in violations(pack, session, d, AS_OF)]
    assert not bad, f"{where}: {bad[:5]}"


def test_engine_retrieve_and_its_rounds(engines: dict[str, Engine]) -> None:
    later = 0
    for pack, name, s in _all_sessions():
        for q in _queries(pack, QUERIES):
            r = engines[pack].retrieve(q, session=s, as_of=AS_OF, record=False)
            _check(pack, s, [c.document for c in r.chunks], f"{pack}/{name} retrieve {q!r}")
            later += len(r.rounds) > 1
    assert later > 0  # some queries did take later rounds


def test_rounds_written_by_a_query_writer(engines: dict[str, Engine]) -> None:
    """The writer asks for what the scope excludes and to relax every field: still in scope."""
    written = 0
    for pack, name, s in _all_sessions():
        eng = engines[pack]
        traps = TRAPS[pack]

        def writer(req: Any, traps: list[str] = traps) -> RoundQuery | None:
            if req.round > 3:
                return None
            trap = traps[req.round % len(traps)]
            return RoundQuery(lexical_query=trap, dense_query=trap, reason="scripted",
                              relax=(*req.relaxable, "tenant_id", "region", "tier", "plan", "product", "valid_until"))

        eng.query_writer = writer
        try:
            for q in _queries(pack, QUERIES):
                r = eng.retrieve(q, session=s, as_of=AS_OF, record=False)
                _check(pack, s, [c.document for c in r.chunks], f"{pack}/{name} writer {q!r}")
                written += sum(x.writer == "query_writer" for x in r.rounds)
        finally:
            eng.query_writer = None
    assert written > 0


def _widening(pack: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    other_tenant = {"deltabank": "northbank", "northbank": "deltabank", "acme": "zephyr", "zephyr": "acme"}
    out: list[dict[str, Any]] = [{"tenant_id": other_tenant[s["tenant_id"]]}, {"valid_until": "2030-01-01"},
                                 {"status": "retired"}, {"region": "EU" if s.get("region") != "EU" else "US"}]
    vocab = _vocabulary(pack)
    fields = _fields(pack)
    for attr in _settings(pack).authoritative:
        f = fields.get(attr.entity)
        allowed = _allowed(pack, s, f) if f else set()
        if f and (allowed or attr.anonymous == "unscoped"):
            other = next(str(n["name"]) for n in vocab[attr.entity] if str(n["name"]) not in allowed)
            out.append({f: other})
    return out


def test_agent_tool_in_process(engines: dict[str, Engine]) -> None:
    modes = ("hybrid", "semantic", "keyword")
    for pack, name, s in _all_sessions():
        tool = RetrieveTool(engines[pack], s, as_of=AS_OF, budget_ms=5000)
        for i, q in enumerate(_queries(pack, QUERIES)):
            hits = tool(q, mode=modes[i % 3], top_k=10)
            _check(pack, s, [h["document"] for h in hits], f"{pack}/{name} tool {q!r}")
        for filters in _widening(pack, s):
            with pytest.raises(ScopeFilterError):
                tool("late fee waiver roaming credit", filters=filters)


def test_langchain_tool(engines: dict[str, Engine]) -> None:
    for pack, name, s in _all_sessions():
        lc = RetrieveTool(engines[pack], s, as_of=AS_OF, budget_ms=5000).as_langchain_tool()
        for q in _queries(pack, QUERIES):
            out = lc.invoke({"query": q, "mode": "hybrid", "top_k": 10})
            _check(pack, s, [h["document"] for h in out], f"{pack}/{name} langchain tool {q!r}")
        for filters in _widening(pack, s):
            with pytest.raises(ScopeFilterError):
                lc.invoke({"query": "fee", "filters": filters})


def test_agent_tool_over_http(engines: dict[str, Engine]) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hopweave.adapters.http import create_app

    for pack in PACKS:
        eng = engines[pack]
        sib = eng.sibling(index=eng.index, understander=None,
                          config=dataclasses.replace(eng.config, tool_budget_ms=5000))  # a loaded machine
        with TestClient(create_app(sib, warm=False, close=False)) as client:
            for _, name, s in [x for x in _all_sessions() if x[0] == pack]:
                for q in _queries(pack, QUERIES):
                    res = client.post("/v1/tool/retrieve", json={"session": s, "query": q, "top_k": 10,
                                                                 "as_of": AS_OF})
                    if res.status_code == 503:  # shed under load: retried once, never answered late
                        res = client.post("/v1/tool/retrieve", json={"session": s, "query": q, "top_k": 10,
                                                                     "as_of": AS_OF})
                    assert res.status_code == 200, res.text
                    _check(pack, s, [h["document"] for h in res.json()["results"]], f"{pack}/{name} http {q!r}")
                for filters in _widening(pack, s):
                    res = client.post("/v1/tool/retrieve", json={"session": s, "query": "fee", "as_of": AS_OF,
                                                                 "filters": filters})
                    assert res.status_code == 400 and res.json()["error"] == "ScopeFilterError", res.text
        sib.close_pools()


def test_langchain_retriever(engines: dict[str, Engine]) -> None:
    from hopweave.adapters.langchain import HopweaveRetriever

    for pack, name, s in _all_sessions():
        retriever = HopweaveRetriever(engine=engines[pack], session=s, as_of=AS_OF, k=20)
        for q in _queries(pack, QUERIES):
            docs = retriever.invoke(q)
            _check(pack, s, [d.metadata["document"] for d in docs if d.metadata["kind"] == "policy"],
                   f"{pack}/{name} retriever {q!r}")


def test_langgraph_with_a_scripted_chat_model(engines: dict[str, Engine]) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from hopweave.adapters.langgraph import build_retrieval_graph

    asked = 0
    for pack, name, s in _all_sessions():
        chat = FakeListChatModel(responses=TRAPS[pack])
        graph = build_retrieval_graph(engines[pack], s, as_of=AS_OF, chat_model=chat, max_agent_rounds=2, top_k=10)
        for q in _queries(pack, QUERIES):
            out = graph.invoke({"utterance": q})
            _check(pack, s, [p["document"] for p in out.get("passages", [])], f"{pack}/{name} langgraph {q!r}")
            asked += out.get("agent_round", 0)
    assert asked > 0  # the scripted chat model did write follow-up rounds
