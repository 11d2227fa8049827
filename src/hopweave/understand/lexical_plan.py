"""The lexical query plan: what the BM25 channel searches for.

Terms, in entity order: identifiers the session may use (the domain's ``identifier_labels``),
the surface text and readable canonical name of resolved vocabulary entities ("unlimited plus",
"Unlimited Plus"; not a CamelCase code like "RoamingCharge"), amounts, and for entities of the
domain's synonym label (``synonyms.label``) their aliases and the nodes linked by the synonym
relationship in the graph ("fee waiver" <-> "charge reversal"). When nothing is extracted,
the utterance's own content words are the plan (``fallback=True``), so the lexical channel is
never empty by accident. Mentions (ids the session may not use) never become terms.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

from hopweave.models.common import Bindings, Session
from hopweave.models.domain import DomainSettings, SynonymSpec
from hopweave.models.internal_patterns import internal_pattern
from hopweave.models.metagraph import Bind, EdgeStep, Seed, TraversalPattern
from hopweave.understand.models import Entity, LexicalPlan, LexicalTerm
from hopweave.understand.read_cache import run_pattern
from hopweave.understand.text import content_words

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore

_CAMEL = re.compile(r"[a-z][A-Z]")
#: Entity types that are not search terms (scope, not content).
NON_TERMS = frozenset({"Tenant", "Channel", "Date"})


def _synonym_pattern(spec: SynonymSpec) -> TraversalPattern:
    return _synonym_walk(spec.label, spec.relationship)


@lru_cache(maxsize=64)
def _synonym_walk(label: str, relationship: str) -> TraversalPattern:
    """The synonym walk of :func:`synonyms` (one object per label and relationship, so the read
    cache computes its key once)."""
    spec = SynonymSpec(label=label, relationship=relationship)
    return internal_pattern(
        "_synonyms", owner="_lexical_plan", question=f"Which {spec.label} nodes are synonyms of this one?",
        seed=Seed(type=spec.label, key="id", value=Bind(ref=f"entity.{spec.label}")),
        edges=[EdgeStep(type=spec.relationship, direction="both")], target=spec.label,
        returns=("name", "aliases"), limit=50, budget_ms=200,
    )


def _stop_words() -> frozenset[str]:
    from hopweave.understand.text import import_spacy

    import_spacy()
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def synonyms(store: "GraphStore", session: Session, node_id: str, as_of: datetime, spec: SynonymSpec) -> list[str]:
    """Names and aliases of the ``spec.label`` nodes linked to ``node_id`` by
    ``spec.relationship`` (either direction), sorted by node id; read through the tenant-scoped
    GraphStore."""
    bindings = Bindings(session=session, as_of=as_of, entities={spec.label: node_id})
    result = run_pattern(store, session.tenant_id, _synonym_pattern(spec), bindings)  # kept per turn
    out: list[str] = []
    for row in sorted(result.rows, key=lambda r: r.node_id):
        if row.node_id == node_id:
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
    settings: DomainSettings | None = None,
) -> LexicalPlan:
    """The lexical plan for one request. Deterministic (entity order, then node-id order).

    Returns:
        LexicalPlan with ``fallback`` True when the terms are the utterance's content words.
    """
    terms: list[LexicalTerm] = []
    seen: set[str] = set()
    id_labels = set(settings.identifier_labels) if settings is not None else set()
    spec = settings.synonyms if settings is not None else None

    def add(text: str, kind: str, origin: str) -> None:
        t = " ".join(str(text).split())
        if t and t.lower() not in seen:
            seen.add(t.lower())
            terms.append(LexicalTerm(text=t, kind=kind, origin=origin))  # type: ignore[arg-type]

    for e in entities:
        if e.type in NON_TERMS or e.source != "utterance":  # the plan searches for what was said
            continue
        origin = f"{e.type}:{e.value}"
        if e.type in id_labels:
            add(str(e.value), "identifier", origin)
        elif e.type == "Money":
            add(e.text or f"${e.value}", "amount", origin)
        else:
            if e.text:
                add(e.text, "entity", origin)
            name = str(e.value)
            if "_" in name or " " in name or name.isalpha() and not _CAMEL.search(name):
                add(name.replace("_", " "), "entity", origin)  # "Unlimited Plus"; not "RoamingCharge"
            node = store.get_node(session.tenant_id, e.node_id) if store is not None and e.node_id else None
            if node is not None and store is not None and spec is not None and node.label == spec.label:
                for alias in node.props.get("aliases") or ():
                    if isinstance(alias, str):
                        add(alias, "alias", origin)
                for syn in synonyms(store, session, node.id, as_of, spec):
                    add(syn, "synonym", origin)
    if terms:
        return LexicalPlan(terms=tuple(terms), fallback=False)
    for w in content_words(utterance, _stop_words()):
        add(w, "content", "utterance")
    return LexicalPlan(terms=tuple(terms), fallback=True)
