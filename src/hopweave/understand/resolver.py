"""Entity resolution: the utterance's vocabulary, identifiers, money and dates, merged with the
authenticated session.

- **Vocabulary from the graph.** A spaCy pipeline (``spacy.blank("en")`` + the rule-based
  ``span_ruler``, spaCy's overlap-capable EntityRuler) whose patterns are generated from the
  names, codes and aliases of the schema's vocabulary labels (Tier, Product, EventType,
  PolicyType, Region, Concept, ...). A node added to the graph is recognised on the next call:
  the compiled pipeline is cached per vocabulary fingerprint (a hash of those nodes).
  Matching rules: multi-word surfaces and identifier-like names (``Platinum_Card``) match
  case-insensitively (plus a one-edit typo-tolerant variant of their long words); a plain
  single word (``Platinum``, ``Checking``) matches as written, Title-cased or UPPER-cased, so
  the verb "checking" is not the product; an all-caps code (``US``) matches only in capitals, so
  the pronoun "us" is not a region. Overlaps between labels are kept ("Platinum card" is Product
  Platinum_Card and contains Tier Platinum); within one label the longest match wins.
- **Identifiers, money, dates** by regular expressions (``IDENTIFIERS``, ``find_money``,
  ``temporal.find_dates``; relative dates use the request's ``as_of``).
- **Session identity wins.** The customer, tenant, region and channel come from the session.
  A customer id in the utterance that differs from the session's, or an account/trace id the
  session's customer does not own (checked by a tenant-scoped walk from the session customer),
  is reported as a :class:`Mention` and never becomes an entity, a seed binding or a filter.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from hopweave.errors import InputError
from hopweave.models.common import Bindings, Session, to_datetime
from hopweave.models.metagraph import Bind, EdgeStep, Literal_, Predicate, Seed, TraversalPattern
from hopweave.understand.models import Entity, Mention
from hopweave.understand.temporal import find_dates
from hopweave.understand.text import check_utterance

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore, Node

SPANS_KEY = "hopweave_vocab"
_FUZZY = "|fuzzy"


@dataclass(frozen=True)
class IdentifierSpec:
    """An identifier format and how ownership by the session's customer is checked.

    ``owner_path`` is the edge sequence from the session's Customer node to a node with this
    label; ``None`` means the identifier IS a customer id (compared with the session's).
    """

    label: str
    prefix: str
    owner_path: tuple[tuple[str, str], ...] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        """``CUST_4421``, ``cust-4421``, ``CUST4421``, ``ACCT_100000_0`` and tenant-prefixed
        ``NB_CUST_4421``."""
        return re.compile(
            rf"(?<![A-Za-z0-9_])((?:[A-Za-z]{{2,5}}_)?){re.escape(self.prefix)}[_-]?(\d{{3,}}(?:_[A-Za-z0-9]+)*)"
            r"(?![A-Za-z0-9_])",
            re.IGNORECASE,
        )

    def canonical(self, m: "re.Match[str]") -> str:
        """The canonical id of a match: upper-case prefix, underscore, digits."""
        return f"{m.group(1).upper()}{self.prefix}_{m.group(2).upper()}"


#: Identifier formats of the DeltaBank example graph (data; pass your own to the resolver).
IDENTIFIERS: tuple[IdentifierSpec, ...] = (
    IdentifierSpec("Customer", "CUST", None),
    IdentifierSpec("Account", "ACCT", (("HOLDS", "out"),)),
    IdentifierSpec("DecisionTrace", "TRACE", (("FOR_CUSTOMER", "in"),)),
)

_MONEY = re.compile(
    r"(?P<sym>[$€£])\s?(?P<a1>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(?P<c1>\d{1,2}))?(?!\d)"
    r"|\b(?P<a2>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(?P<c2>\d{1,2}))?\s?"
    r"(?P<word>dollars?|bucks|usd|euros?|eur|pounds?|gbp)\b",
    re.IGNORECASE,
)
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "dollar": "USD", "dollars": "USD", "bucks": "USD",
             "usd": "USD", "euro": "EUR", "euros": "EUR", "eur": "EUR", "pound": "GBP", "pounds": "GBP",
             "gbp": "GBP"}


@dataclass(frozen=True)
class MoneyMatch:
    start_char: int
    end_char: int
    text: str
    amount: int | float
    currency: str


def find_money(text: str) -> list[MoneyMatch]:
    """Money amounts ("$39", "$1,250.50", "39 dollars", "€20") with their spans."""
    out = []
    for m in _MONEY.finditer(text):
        if m["sym"]:
            whole, cents, cur = m["a1"], m["c1"], _CURRENCY[m["sym"]]
        else:
            whole, cents, cur = m["a2"], m["c2"], _CURRENCY[m["word"].lower()]
        value = float(f"{whole.replace(',', '')}.{cents or 0}")
        amount: int | float = int(value) if value.is_integer() else value
        out.append(MoneyMatch(m.start(), m.end(), m.group(0), amount, cur))
    return out


@dataclass
class Resolution:
    """What :meth:`EntityResolver.resolve` found."""

    entities: list[Entity] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    vocabulary_revision: str = ""
    notes: list[str] = field(default_factory=list)


def _surfaces(node: "Node") -> list[str]:
    """Names a vocabulary node is called by: name, name with spaces, code, aliases (deduped)."""
    p = node.props
    raw: list[Any] = [p.get("name"), p.get("code")]
    if isinstance(p.get("name"), str) and "_" in p["name"]:
        raw.append(p["name"].replace("_", " "))
    raw.extend(p.get("aliases") or ())
    out: dict[str, None] = {}
    for r in raw:
        if isinstance(r, str) and r.strip():
            out.setdefault(" ".join(r.split()), None)
    return list(out)


def _patterns(label: str, node: "Node", make_doc: Any) -> list[dict[str, Any]]:
    pats: list[dict[str, Any]] = []
    for surface in _surfaces(node):
        toks = [t.text for t in make_doc(surface)]
        if len(toks) == 1 and surface.isupper() and len(surface) <= 4:
            pats.append({"label": label, "id": node.id, "pattern": [{"ORTH": surface}]})
        elif len(toks) == 1 and surface.isalpha():
            forms = sorted({surface, surface.title(), surface.upper()})
            pats.append({"label": label, "id": node.id, "pattern": [{"ORTH": {"IN": forms}}]})
        else:
            pats.append({"label": label, "id": node.id, "pattern": surface})
            if len(toks) > 1 and any(len(t) >= 6 and t.isalpha() for t in toks):
                fuzzy = [
                    {"LOWER": {"FUZZY1": t.lower()}} if len(t) >= 6 and t.isalpha() else {"LOWER": t.lower()}
                    for t in toks
                ]
                pats.append({"label": label, "id": node.id + _FUZZY, "pattern": fuzzy})
    return pats


class EntityResolver:
    """Resolve the entities of an utterance against the graph vocabulary and the session.

    Args:
        store: the GraphStore holding the vocabulary nodes (tenant ``_global``) and the tenant's data.
        identifiers: identifier formats (default :data:`IDENTIFIERS`).
        enrich_from_graph: add the session customer's Tier from the graph (source "graph") when
            the utterance names no tier.

    No I/O in the constructor. Thread-safe.
    """

    def __init__(
        self,
        store: "GraphStore",
        identifiers: Iterable[IdentifierSpec] = IDENTIFIERS,
        enrich_from_graph: bool = True,
    ) -> None:
        self.store = store
        self.identifiers = tuple(identifiers)
        self.enrich_from_graph = enrich_from_graph
        self._lock = threading.Lock()
        self._nlp_lock = threading.Lock()
        self._cached: tuple[str, Any, dict[str, "Node"]] | None = None

    # ---- vocabulary ----------------------------------------------------------------------
    def vocabulary(self, tenant_id: str) -> tuple[str, dict[str, list["Node"]]]:
        """``(fingerprint, {label: nodes})`` of the vocabulary visible to the tenant."""
        by_label: dict[str, list[Node]] = {}
        h = hashlib.sha256()
        for label in sorted(self.store.schema.vocabulary_labels()):
            nodes = self.store.find_nodes(tenant_id, label)
            by_label[label] = nodes
            for n in nodes:
                h.update(f"{label}\0{n.id}\0".encode())
                h.update(json.dumps(n.props, sort_keys=True, default=str).encode())
        return h.hexdigest()[:16], by_label

    def pipeline(self, tenant_id: str) -> tuple[str, Any, dict[str, "Node"]]:
        """``(fingerprint, nlp, nodes by id)``: the compiled spaCy pipeline for the current
        vocabulary (rebuilt only when the fingerprint changes)."""
        fp, by_label = self.vocabulary(tenant_id)
        cached = self._cached
        if cached is not None and cached[0] == fp:
            return cached
        with self._lock:
            if self._cached is not None and self._cached[0] == fp:
                return self._cached
            import spacy

            nlp = spacy.blank("en")
            ruler = nlp.add_pipe(
                "span_ruler",
                config={"spans_key": SPANS_KEY, "annotate_ents": False, "phrase_matcher_attr": "LOWER",
                        "validate": True, "overwrite": True},
            )
            pats: list[dict[str, Any]] = []
            nodes: dict[str, Node] = {}
            for label in sorted(by_label):
                for n in by_label[label]:
                    nodes[n.id] = n
                    pats.extend(_patterns(label, n, nlp.make_doc))
            if pats:
                ruler.add_patterns(pats)
            self._cached = (fp, nlp, nodes)
            return self._cached

    # ---- resolution ----------------------------------------------------------------------
    def resolve(self, utterance: str, session: Session, as_of: datetime | str) -> Resolution:
        """Entities and mentions of ``utterance`` for ``session`` at ``as_of``.

        Entity order: session entities (Customer, Tenant, Region, Channel), then utterance
        entities left to right, then graph-derived ones.

        Raises:
            InputError: empty, whitespace-only or over-long utterance; malformed as_of.
            TenantError: malformed session tenant.
        """
        text = check_utterance(utterance)
        when = to_datetime(as_of)
        if when is None:
            raise InputError("as_of is required: relative dates are evaluated against the request's as_of")
        tenant = session.tenant_id
        fp, nlp, nodes = self.pipeline(tenant)
        res = Resolution(vocabulary_revision=fp)
        res.entities.extend(_session_entities(session))
        utter: list[Entity] = []
        utter.extend(self._vocabulary_entities(nlp, nodes, text))
        utter.extend(self._identifier_entities(text, session, when, res.mentions))
        money = find_money(text)
        for m in money:
            utter.append(Entity(type="Money", value=m.amount, text=m.text, source="utterance",
                                span=(m.start_char, m.end_char), properties={"currency": m.currency}))
        for d in find_dates(text, when):
            utter.append(Entity(type="Date", value=d.value, text=d.text, source="utterance",
                                span=(d.start_char, d.end_char),
                                properties={"start": d.start.isoformat(), "end": d.end.isoformat(), "kind": d.kind}))
        utter = _attach_amounts(utter, money)
        utter.sort(key=lambda e: (e.span or (0, 0), e.type, str(e.value)))
        res.entities.extend(utter)
        if self.enrich_from_graph:
            res.entities.extend(self._graph_entities(session, res.entities, nodes))
        res.mentions.sort(key=lambda m: (m.span, m.type))
        return res

    def _vocabulary_entities(self, nlp: Any, nodes: dict[str, "Node"], text: str) -> list[Entity]:
        with self._nlp_lock:  # spaCy's shared StringStore is not safe to grow from several threads
            doc = nlp(text)
        found: dict[tuple[str, str, int, int], bool] = {}  # (label, node id, start, end) -> fuzzy
        for span in doc.spans.get(SPANS_KEY, ()):
            nid, fuzzy = (span.id_[: -len(_FUZZY)], True) if span.id_.endswith(_FUZZY) else (span.id_, False)
            key = (span.label_, nid, span.start_char, span.end_char)
            found[key] = found.get(key, True) and fuzzy
        # within a label: longest first, then leftmost, then node id; drop overlaps
        chosen: list[tuple[str, str, int, int]] = []
        for key in sorted(found, key=lambda k: (k[0], -(k[3] - k[2]), k[2], k[1])):
            if any(c[0] == key[0] and not (key[3] <= c[2] or key[2] >= c[3]) for c in chosen):
                continue
            chosen.append(key)
        out = []
        for label, nid, s, e in chosen:
            node = nodes[nid]
            props: dict[str, Any] = {"match": "fuzzy"} if found[(label, nid, s, e)] else {}
            out.append(Entity(type=label, value=str(node.props.get("name") or nid), text=text[s:e],
                              source="utterance", span=(s, e), node_id=nid, properties=props))
        return out

    def _identifier_entities(
        self, text: str, session: Session, when: datetime, mentions: list[Mention]
    ) -> list[Entity]:
        out: list[Entity] = []
        for spec in self.identifiers:
            for m in spec.regex.finditer(text):
                value = spec.canonical(m)
                span = (m.start(), m.end())
                if spec.owner_path is None:
                    if session.customer_id is not None and value == session.customer_id:
                        continue  # the session's own id: already the session's Customer entity
                    who = session.customer_id or "no authenticated customer"
                    mentions.append(Mention(type=spec.label, value=value, text=m.group(0), span=span,
                                            reason=f"differs from the authenticated session's customer ({who}); "
                                                   "not used for retrieval"))
                    continue
                if self._owned(spec, value, session, when):
                    out.append(Entity(type=spec.label, value=value, text=m.group(0), source="utterance",
                                      span=span, node_id=value))
                else:
                    mentions.append(Mention(type=spec.label, value=value, text=m.group(0), span=span,
                                            reason="not linked to the authenticated session's customer; "
                                                   "not used for retrieval"))
        return out

    def _owned(self, spec: IdentifierSpec, node_id: str, session: Session, when: datetime) -> bool:
        """Whether ``node_id`` is reachable from the session's customer along ``spec.owner_path``
        (a tenant-scoped walk through the GraphStore, so other tenants' nodes never count)."""
        if session.customer_id is None or not spec.owner_path:
            return False
        pattern = TraversalPattern(
            name="_owns_" + spec.label,
            goal="_resolver",
            sub_question=f"Does the session customer own this {spec.label}?",
            seed=Seed(type="Customer", key="id", value=Bind(ref="session.customer_id")),
            edge_sequence=tuple(EdgeStep(type=t, direction=d) for t, d in spec.owner_path),  # type: ignore[arg-type]
            target_type=spec.label,
            predicates=(Predicate(on="target", property="id", op="eq", value=Literal_(value=node_id)),),
            depth=len(spec.owner_path),
            budget_ms=200,
            limit=1,
            version=1,
            author="hopweave.resolver",
            created_at=datetime(2026, 1, 1),
        )
        bindings = Bindings(session=session, as_of=when)
        result = self.store.run_pattern(session.tenant_id, pattern, bindings)
        return any(r.node_id == node_id for r in result.rows)

    def _graph_entities(self, session: Session, have: list[Entity], nodes: dict[str, "Node"]) -> list[Entity]:
        """The session customer's Tier from the graph, when the utterance named none."""
        if session.customer_id is None or any(e.type == "Tier" for e in have):
            return []
        customer = self.store.get_node(session.tenant_id, session.customer_id)
        tier = customer.props.get("tier") if customer is not None else None
        if not isinstance(tier, str) or not tier:
            return []
        node_id = next((n.id for n in nodes.values() if n.label == "Tier" and n.props.get("name") == tier), None)
        return [Entity(type="Tier", value=tier, source="graph", node_id=node_id,
                       properties={"from": f"{session.customer_id}.tier"})]


def _session_entities(session: Session) -> list[Entity]:
    out = []
    if session.customer_id:
        out.append(Entity(type="Customer", value=session.customer_id, source="session", node_id=session.customer_id))
    out.append(Entity(type="Tenant", value=session.tenant_id, source="session"))
    if session.region:
        out.append(Entity(type="Region", value=session.region, source="session"))
    if session.channel:
        out.append(Entity(type="Channel", value=session.channel, source="session"))
    return out


def _attach_amounts(entities: list[Entity], money: list[MoneyMatch]) -> list[Entity]:
    """Give each EventType entity the amount of the nearest money mention (each amount used once)."""
    events = [e for e in entities if e.type == "EventType" and e.span is not None]
    if not events or not money:
        return entities
    free = list(money)
    updated: dict[int, Entity] = {}
    for e in sorted(events, key=lambda x: x.span or (0, 0)):
        if not free:
            break
        s, t = e.span or (0, 0)
        m = min(free, key=lambda m: (max(m.start_char - t, s - m.end_char, 0), m.start_char))
        free.remove(m)
        updated[id(e)] = e.model_copy(update={"properties": {**e.properties, "amount": m.amount, "currency": m.currency}})
    return [updated.get(id(e), e) for e in entities]
