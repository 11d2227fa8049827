"""The lexical query plan: what the BM25 channel searches for.

Terms, in entity order: identifiers the session may use, the surface text and readable canonical
name of resolved vocabulary entities ("Platinum card", "Platinum Card"; not a CamelCase code like
"LateFeeCharged"), amounts, and for ``:Concept`` entities their aliases and the Concepts linked by
``SYNONYM_OF`` edges in the graph ("fee waiver" <-> "charge reversal"). When nothing is extracted,
the utterance's own content words are the plan (``fallback=True``), so the lexical channel is
never empty by accident. Mentions (ids the session may not use) never become terms.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Iterable

from hopweave.models.common import Bindings, Session
from hopweave.models.metagraph import Bind, EdgeStep, Seed, TraversalPattern
from hopweave.understand.models import Entity, LexicalPlan, LexicalTerm
from hopweave.understand.text import content_words

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore

#: Entity types whose values are identifiers (kept whole for the lexical channel).
IDENTIFIER_TYPES = frozenset({"Account", "DecisionTrace", "Customer"})
_CAMEL = re.compile(r"[a-z][A-Z]")
#: Entity types that are not search terms (scope, not content).
NON_TERMS = frozenset({"Tenant", "Channel", "Date"})

_SYNONYMS = TraversalPattern(
    name="_concept_synonyms",
    goal="_lexical_plan",
    sub_question="Which concepts are synonyms of this concept?",
    seed=Seed(type="Concept", key="id", value=Bind(ref="entity.Concept")),
    edge_sequence=(EdgeStep(type="SYNONYM_OF", direction="both"),),
    target_type="Concept",
    depth=1,
    budget_ms=200,
    limit=50,
    returns=("name", "aliases"),
    version=1,
    author="hopweave.lexical_plan",
    created_at=datetime(2026, 1, 1),
)


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def synonyms(store: "GraphStore", session: Session, concept_id: str, as_of: datetime) -> list[str]:
    """Names and aliases of the Concepts linked to ``concept_id`` by SYNONYM_OF (either
    direction), sorted by node id; read through the tenant-scoped GraphStore."""
    bindings = Bindings(session=session, as_of=as_of, entities={"Concept": concept_id})
    result = store.run_pattern(session.tenant_id, _SYNONYMS, bindings)
    out: list[str] = []
    for row in sorted(result.rows, key=lambda r: r.node_id):
        if row.node_id == concept_id:
            continue
        props = row.properties
        for t in [props.get("name"), *(props.get("aliases") or ())]:
            if isinstance(t, str) and t.strip():
                out.append(t.strip())
    return out


def build_lexical_plan(
    utterance: str,
    entities: Iterable[Entity],
    session: Session,
    as_of: datetime,
    store: "GraphStore | None" = None,
) -> LexicalPlan:
    """The lexical plan for one request. Deterministic (entity order, then node-id order).

    Returns:
        LexicalPlan with ``fallback`` True when the terms are the utterance's content words.
    """
    terms: list[LexicalTerm] = []
    seen: set[str] = set()

    def add(text: str, kind: str, origin: str) -> None:
        t = " ".join(str(text).split())
        if t and t.lower() not in seen:
            seen.add(t.lower())
            terms.append(LexicalTerm(text=t, kind=kind, origin=origin))  # type: ignore[arg-type]

    for e in entities:
        if e.type in NON_TERMS or e.source != "utterance":  # the plan searches for what was said
            continue
        origin = f"{e.type}:{e.value}"
        if e.type in IDENTIFIER_TYPES:
            add(str(e.value), "identifier", origin)
        elif e.type == "Money":
            add(e.text or f"${e.value}", "amount", origin)
        else:
            if e.text:
                add(e.text, "entity", origin)
            name = str(e.value)
            if "_" in name or " " in name or name.isalpha() and not _CAMEL.search(name):
                add(name.replace("_", " "), "entity", origin)  # "Platinum Card"; not "LateFeeCharged"
            node = store.get_node(session.tenant_id, e.node_id) if store is not None and e.node_id else None
            if node is not None and node.label == "Concept":
                for alias in node.props.get("aliases") or ():
                    if isinstance(alias, str):
                        add(alias, "alias", origin)
                for syn in synonyms(store, session, node.id, as_of):  # type: ignore[arg-type]
                    add(syn, "synonym", origin)
    if terms:
        return LexicalPlan(terms=tuple(terms), fallback=False)
    for w in content_words(utterance, _stop_words()):
        add(w, "content", "utterance")
    return LexicalPlan(terms=tuple(terms), fallback=True)
