"""The lexical plan: identifiers, entity names, graph synonyms, content-word fallback."""

from __future__ import annotations

from datetime import datetime

from conftest import AS_OF, MARIA_UTTERANCE
from domains import DELTABANK
from generator.vocabulary import concept_id  # the pack's generator (conftest puts it on sys.path)

from hopweave.graph.base import Edge, Node
from hopweave.models.common import Session
from hopweave.models.schema import GLOBAL_TENANT
from hopweave.understand.lexical_plan import build_lexical_plan
from hopweave.understand.resolver import EntityResolver

WHEN = datetime(2026, 5, 12, 23, 59, 59)


def _plan(store, text, session):  # type: ignore[no-untyped-def]
    ents = EntityResolver(store, DELTABANK).resolve(text, session, AS_OF).entities
    return build_lexical_plan(text, ents, session, WHEN, store, DELTABANK)


def test_maria_plan(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(bank, MARIA_UTTERANCE, maria)
    texts = [t.text for t in plan.terms]
    assert not plan.fallback
    assert {"$39", "late fee", "Platinum", "Platinum card"} <= set(texts)
    assert "late charge" in texts and "contest" in texts  # SYNONYM_OF expansions from the graph
    assert "CUST_4421" not in texts and "deltabank" not in texts  # scope, not content
    assert plan.query == " ".join(texts)


def test_fee_waiver_expands_to_charge_reversal(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(bank, "is a fee waiver possible?", maria)
    kinds = {t.text: t.kind for t in plan.terms}
    assert kinds["fee waiver"] == "entity" and kinds["charge reversal"] == "synonym"
    plan = _plan(bank, "can you do a charge reversal?", maria)
    assert "fee waiver" in [t.text for t in plan.terms]


def test_synonyms_added_to_the_graph_are_used_at_once(fresh_store, maria: Session) -> None:  # type: ignore[no-untyped-def]
    text = "how does Letta handle memory eviction?"
    assert "context pruning" not in _plan(fresh_store, text, maria).query
    fresh_store.write(GLOBAL_TENANT, [
        Node(concept_id("memory eviction"), "Concept", {"name": "memory eviction", "aliases": ["message eviction"]}),
        Node(concept_id("context pruning"), "Concept", {"name": "context pruning", "aliases": ["recursive summarization"]}),
    ], [Edge(concept_id("memory eviction"), concept_id("context pruning"), "SYNONYM_OF")])
    plan = _plan(fresh_store, text, maria)
    kinds = {t.text: t.kind for t in plan.terms}
    assert kinds["memory eviction"] == "entity" and kinds["message eviction"] == "alias"
    assert kinds["context pruning"] == "synonym" and kinds["recursive summarization"] == "synonym"


def test_fallback_to_content_words_never_empty(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(bank, "Where do models attend least within a long context?", maria)
    assert plan.fallback and [t.text for t in plan.terms] == ["models", "attend", "long", "context"]
    assert all(t.kind == "content" for t in plan.terms)
    plan = _plan(bank, "what is it?", maria)  # only stop words: still not empty
    assert plan.fallback and plan.query


def test_ids_the_session_may_not_use_are_not_terms(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(bank, "late fee on ACCT_99812, not CUST_4412", maria)
    texts = [t.text for t in plan.terms]
    assert "ACCT_99812" in texts and "CUST_4412" not in texts
