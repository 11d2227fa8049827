"""Entity resolution: the utterance's vocabulary, identifiers, money and dates, merged with the
authenticated session.

- **Vocabulary from the graph.** A spaCy pipeline (``spacy.blank("en")`` + the rule-based
  ``span_ruler``, spaCy's overlap-capable EntityRuler) whose patterns are generated from the
  names, codes and aliases of the schema's vocabulary labels (a tier, a product, a
  plan, a charge type, a region, ...). A node added to the graph is recognised on the next call:
  the compiled pipeline is cached per vocabulary fingerprint (a hash of those nodes).
  Matching rules: multi-word surfaces and identifier-like names (``Unlimited_Plus``) match
  case-insensitively (plus a one-edit typo-tolerant variant of their long words); a plain
  single word (``Basic``, ``Checking``) matches as written, Title-cased or UPPER-cased, so
  the verb "checking" is not a product; an all-caps code (``US``) matches only in capitals, so
  the pronoun "us" is not a region. Overlaps between labels are kept ("Unlimited Plus plan" is
  the plan Unlimited_Plus and contains the word Plus of another label); within one label the longest match wins.
- **Identifiers, money, dates** by regular expressions (the domain's ``identifiers``,
  ``find_money``, ``temporal.find_dates``; relative dates use the request's ``as_of``).
- **Session identity wins.** The subject, tenant, region and channel come from the session.
  A subject id in the utterance that differs from the session's, or an identifier the session's
  subject does not own (checked by a tenant-scoped walk along the domain's ``owner_path``), is
  reported as a :class:`Mention` and never becomes an entity, a seed binding or a filter.
- **Authoritative attributes** (the domain's ``authoritative``: tier, plan, product, region, ...)
  come from the session, the subject's graph node or the nodes it reaches (the products of the
  accounts a customer holds; :func:`~hopweave.understand.scope.read_record`), never from the
  utterance. A claim that differs
  from the record ("I'm on Unlimited Plus" from an Unlimited Basic subscriber) is a ``claim`` Mention ("customer
  claims Unlimited Plus; record says Unlimited Basic"), and so is any entity whose words contain it ("my Plus
  line"). With no record (an anonymous session) claims are mentions too, and ``anonymous:
  unscoped`` attributes are listed in ``Resolution.unscoped`` (the filter then keeps only
  documents with the field empty: no segment-specific policy).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from hopweave.bounded import check_deadline
from hopweave.errors import InputError
from hopweave.models.common import Bindings, Scalar, Session, to_datetime
from hopweave.models.domain import AuthoritativeAttribute, DomainSettings, IdentifierFormat
from hopweave.models.internal_patterns import internal_pattern
from hopweave.models.metagraph import Bind, EdgeStep, Literal_, Predicate, Seed
from hopweave.understand.models import Entity, Mention
from hopweave.understand.read_cache import run_pattern
from hopweave.understand.scope import SubjectRecord, read_record
from hopweave.understand.temporal import find_dates
from hopweave.understand.text import check_utterance, import_spacy, tokenizer_text

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore, Node

SPANS_KEY = "hopweave_vocab"
_FUZZY = "|fuzzy"


def identifier_regex(fmt: IdentifierFormat) -> re.Pattern[str]:
    """``SUB_1001``, ``sub-1001``, ``SUB1001``, ``LINE_100000_0`` and tenant-prefixed
    ``ZP_SUB_1001`` for prefix ``SUB`` (``min_digits`` or more digits)."""
    return re.compile(
        rf"(?<![A-Za-z0-9_])((?:[A-Za-z]{{2,5}}_)?){re.escape(fmt.prefix)}[_-]?"
        rf"(\d{{{fmt.min_digits},}}(?:_[A-Za-z0-9]+)*)(?![A-Za-z0-9_])",
        re.IGNORECASE,
    )


def canonical_identifier(fmt: IdentifierFormat, m: "re.Match[str]") -> str:
    """The canonical id of a match: upper-case (tenant prefix,) prefix, underscore, digits."""
    return f"{m.group(1).upper()}{fmt.prefix}_{m.group(2).upper()}"


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
    #: Authoritative entity types with no value on record (an anonymous session) whose
    #: ``anonymous`` policy is ``unscoped``: their filter field must be empty.
    unscoped: list[str] = field(default_factory=list)
    #: The authoritative attributes' values on record (session and graph), as read for this request.
    record: SubjectRecord = field(default_factory=SubjectRecord)


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


def _single_token_forms(pattern: Any) -> tuple[str, ...] | None:
    """The exact token texts of a one-token ``ORTH`` pattern (``[{"ORTH": s}]`` or
    ``[{"ORTH": {"IN": forms}}]``), else None."""
    if not isinstance(pattern, list) or len(pattern) != 1 or set(pattern[0]) != {"ORTH"}:
        return None
    orth = pattern[0]["ORTH"]
    if isinstance(orth, str):
        return (orth,)
    if isinstance(orth, dict) and set(orth) == {"IN"}:
        return tuple(orth["IN"])
    return None


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
        store: the GraphStore holding the vocabulary nodes and the tenant's data.
        settings: the domain's settings (subject label, identifier formats, authoritative
            attributes, entity types that take amounts).
        enrich_from_graph: add the authoritative attributes' values on record (source "graph"
            or "session"); without it, conflicting claims are still reported as mentions.

    No I/O in the constructor. Thread-safe.
    """

    def __init__(self, store: "GraphStore", settings: DomainSettings, enrich_from_graph: bool = True) -> None:
        self.store = store
        self.settings = settings
        self.identifiers = tuple((fmt, identifier_regex(fmt)) for fmt in settings.identifiers)
        self.enrich_from_graph = enrich_from_graph
        self._lock = threading.Lock()
        self._nlp_lock = threading.Lock()
        self._cached: tuple[str, Any, dict[str, "Node"], dict[str, tuple[tuple[str, str], ...]]] | None = None
        self._vocab: dict[str, tuple[tuple[str, int], tuple[str, dict[str, list["Node"]]]]] = {}

    # ---- vocabulary ----------------------------------------------------------------------
    def vocabulary(self, tenant_id: str) -> tuple[str, dict[str, list["Node"]]]:
        """``(fingerprint, {label: nodes})`` of the vocabulary visible to the tenant, read once per
        (metagraph revision, writes of vocabulary labels through this store)."""
        labels = self.store.schema.vocabulary_labels()
        key = (self.store.metagraph_revision(), self.store.data_generation(labels))
        hit = self._vocab.get(tenant_id)
        if hit is not None and hit[0] == key:
            return hit[1]
        out = self._read_vocabulary(tenant_id)
        self._vocab[tenant_id] = (key, out)
        return out

    def _read_vocabulary(self, tenant_id: str) -> tuple[str, dict[str, list["Node"]]]:
        """The vocabulary read from the store, with its content fingerprint."""
        by_label: dict[str, list[Node]] = {}
        h = hashlib.sha256()
        for label in sorted(self.store.schema.vocabulary_labels()):
            nodes = self.store.find_nodes(tenant_id, label)
            by_label[label] = nodes
            for n in nodes:
                h.update(f"{label}\0{n.id}\0".encode())
                h.update(json.dumps(n.props, sort_keys=True, default=str).encode())
        return h.hexdigest()[:16], by_label

    def pipeline(self, tenant_id: str) -> tuple[str, Any, dict[str, "Node"], dict[str, tuple[tuple[str, str], ...]]]:
        """``(fingerprint, nlp, nodes by id, single tokens)``: the compiled spaCy pipeline for the
        current vocabulary (rebuilt only when the fingerprint changes). Surfaces matched as one
        exact token (``ORTH``) are looked up in ``single tokens`` (token text -> (label, node
        id)) instead of spaCy's Matcher: the same matches, without a pattern check per token and
        per surface (0.4 of the Matcher's 0.5 ms per utterance of the example pack)."""
        fp, by_label = self.vocabulary(tenant_id)
        cached = self._cached
        if cached is not None and cached[0] == fp:
            return cached
        with self._lock:
            if self._cached is not None and self._cached[0] == fp:
                return self._cached
            nlp = import_spacy().blank("en")
            ruler = nlp.add_pipe(
                "span_ruler",
                config={"spans_key": SPANS_KEY, "annotate_ents": False, "phrase_matcher_attr": "LOWER",
                        "validate": True, "overwrite": True},
            )
            pats: list[dict[str, Any]] = []
            single: dict[str, dict[tuple[str, str], None]] = {}
            nodes: dict[str, Node] = {}
            for label in sorted(by_label):
                for n in by_label[label]:
                    nodes[n.id] = n
                    for pat in _patterns(label, n, nlp.make_doc):
                        forms = _single_token_forms(pat["pattern"])
                        if forms is None:
                            pats.append(pat)
                        for form in forms or ():
                            single.setdefault(form, {})[(label, pat["id"])] = None
            if pats:
                ruler.add_patterns(pats)  # type: ignore[attr-defined]  # spaCy's SpanRuler
            self._cached = (fp, nlp, nodes, {k: tuple(v) for k, v in single.items()})
            return self._cached

    # ---- resolution ----------------------------------------------------------------------
    def resolve(self, utterance: str, session: Session, as_of: datetime | str) -> Resolution:
        """Entities and mentions of ``utterance`` for ``session`` at ``as_of``.

        Entity order: session entities (the subject, Tenant, Region, Channel), then utterance
        entities left to right, then the authoritative values on record.

        Raises:
            InputError: empty, whitespace-only or over-long utterance; malformed as_of.
            TenantError: malformed session tenant.
        """
        text = check_utterance(utterance)
        when = to_datetime(as_of)
        if when is None:
            raise InputError("as_of is required: relative dates are evaluated against the request's as_of")
        tenant = session.tenant_id
        fp, nlp, nodes, single = self.pipeline(tenant)
        res = Resolution(vocabulary_revision=fp)
        res.entities.extend(_session_entities(session, self.settings.subject.label))
        utter: list[Entity] = []
        utter.extend(self._vocabulary_entities(nlp, nodes, single, text))
        utter.extend(self._identifier_entities(text, session, when, res.mentions))
        money = find_money(text)
        for m in money:
            utter.append(Entity(type="Money", value=m.amount, text=m.text, source="utterance",
                                span=(m.start_char, m.end_char), properties={"currency": m.currency}))
        for d in find_dates(text, when):
            utter.append(Entity(type="Date", value=d.value, text=d.text, source="utterance",
                                span=(d.start_char, d.end_char),
                                properties={"start": d.start.isoformat(), "end": d.end.isoformat(), "kind": d.kind}))
        utter = _attach_amounts(utter, money, self.settings.amounts_attach_to)
        utter.sort(key=lambda e: (e.span or (0, 0), e.type, str(e.value)))
        kept, on_record = self._authority(session, when, utter, res.entities, nodes, res)
        res.entities.extend(kept)
        if self.enrich_from_graph:
            res.entities.extend(on_record)
        res.mentions.sort(key=lambda m: (m.span, m.type))
        return res

    def _vocabulary_entities(self, nlp: Any, nodes: dict[str, "Node"],
                             single: dict[str, tuple[tuple[str, str], ...]], text: str) -> list[Entity]:
        with self._nlp_lock:  # spaCy's shared StringStore is not safe to grow from several threads
            check_deadline("the entity ruler")  # the lock may have been waited for
            doc = nlp(tokenizer_text(text))
        check_deadline("entity matching")
        found: dict[tuple[str, str, int, int], bool] = {}  # (label, node id, start, end) -> fuzzy
        for span in doc.spans.get(SPANS_KEY, ()):
            nid, fuzzy = (span.id_[: -len(_FUZZY)], True) if span.id_.endswith(_FUZZY) else (span.id_, False)
            key = (span.label_, nid, span.start_char, span.end_char)
            found[key] = found.get(key, True) and fuzzy
        for token in doc:  # the one-token surfaces: an exact ORTH match, never fuzzy
            for label, nid in single.get(token.text, ()):
                found[(label, nid, token.idx, token.idx + len(token.text))] = False
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
        for fmt, regex in self.identifiers:
            for m in regex.finditer(text):
                value = canonical_identifier(fmt, m)
                span = (m.start(), m.end())
                if fmt.owner_path is None:
                    if session.customer_id is not None and value == session.customer_id:
                        continue  # the session's own id: already the session's subject entity
                    who = session.customer_id or f"no authenticated {self.settings.subject.label.lower()}"
                    mentions.append(Mention(type=fmt.label, value=value, text=m.group(0), span=span,
                                            reason=f"{value} is not the authenticated "
                                                   f"{self.settings.subject.label.lower()} ({who}); not used"))
                    continue
                if self._owned(fmt, value, session, when):
                    out.append(Entity(type=fmt.label, value=value, text=m.group(0), source="utterance",
                                      span=span, node_id=value))
                else:
                    mentions.append(Mention(type=fmt.label, value=value, text=m.group(0), span=span,
                                            reason=f"{value} is not linked to the authenticated "
                                                   f"{self.settings.subject.label.lower()}; not used"))
        return out

    def _owned(self, fmt: IdentifierFormat, node_id: str, session: Session, when: datetime) -> bool:
        """Whether ``node_id`` is reachable from the session's subject along ``fmt.owner_path``
        (a tenant-scoped walk through the GraphStore, so other tenants' nodes never count)."""
        if session.customer_id is None or not fmt.owner_path:
            return False
        pattern = internal_pattern(
            "_owns_" + fmt.label, owner="_resolver",
            question=f"Does the session's subject own this {fmt.label}?",
            seed=Seed(type=self.settings.subject.label, key="id", value=Bind(ref="session.customer_id")),
            edges=[EdgeStep(type=step.type, direction=step.direction) for step in fmt.owner_path],
            target=fmt.label,
            predicates=(Predicate(on="target", property="id", op="eq", value=Literal_(value=node_id)),),
            limit=1, budget_ms=200,
        )
        result = run_pattern(self.store, session.tenant_id, pattern, Bindings(session=session, as_of=when))
        return any(r.node_id == node_id for r in result.rows)

    # ---- authoritative attributes -----------------------------------------------------------
    def _authority(
        self, session: Session, when: datetime, utter: list[Entity], have: list[Entity], nodes: dict[str, "Node"],
        res: Resolution,
    ) -> tuple[list[Entity], list[Entity]]:
        """Apply the domain's authoritative attributes to the utterance's entities, against the
        values on record (:func:`~hopweave.understand.scope.read_record`, kept in ``res.record``).

        Returns (utterance entities kept, entities on record to add). Claims the record does not
        hold, and utterance entities whose words contain one, go to ``res.mentions``; attributes
        with no record and ``anonymous: unscoped`` go to ``res.unscoped``.
        """
        record = read_record(self.store, self.settings, session, when, nodes)
        res.record = record
        dropped: list[Entity] = []
        on_record: list[Entity] = []
        for attr in self.settings.authoritative:
            values = record.values.get(attr.entity, ())
            claims = [e for e in utter if e.type == attr.entity]
            agreeing = [c for c in claims if _claim_value(c, attr, nodes) in values]
            for c in claims:
                if c in agreeing:
                    continue
                dropped.append(c)
                res.mentions.append(_claim_mention(c, values, self.settings.subject.label))
            if not values:
                if attr.anonymous == "unscoped":
                    res.unscoped.append(attr.entity)
                continue
            if not agreeing and not any(e.type == attr.entity and e.source == "session" for e in have):
                origin = record.origins.get(attr.entity, "")
                on_record.extend(_record_entity(attr, v, origin, nodes) for v in values)
        kept = [e for e in utter if e not in dropped]
        for e in list(kept):  # "my Plus line": the entity's words carry a conflicting claim
            inside = next((d for d in dropped if d.span and e.span and d.span[0] >= e.span[0]
                           and d.span[1] <= e.span[1]), None)
            if inside is not None:
                kept.remove(e)
                res.mentions.append(Mention(
                    type=e.type, value=e.value, text=e.text or str(e.value), span=e.span or (0, 0), kind="claim",
                    reason=f"{e.type} {e.value} contains the claim {inside.type} {inside.value}, which is not "
                           "on record for this session; not used"))
        return kept, on_record

def _session_entities(session: Session, subject_label: str) -> list[Entity]:
    out = []
    if session.customer_id:
        out.append(Entity(type=subject_label, value=session.customer_id, source="session", node_id=session.customer_id))
    out.append(Entity(type="Tenant", value=session.tenant_id, source="session"))
    if session.region:
        out.append(Entity(type="Region", value=session.region, source="session"))
    if session.channel:
        out.append(Entity(type="Channel", value=session.channel, source="session"))
    return out


def _claim_value(e: Entity, attr: AuthoritativeAttribute, nodes: dict[str, "Node"]) -> Any:
    """What an utterance entity claims, in the attribute's ``match`` property (default name)."""
    node = nodes.get(e.node_id or "")
    return node.props.get(attr.match, e.value) if node is not None else e.value


def _claim_mention(c: Entity, values: tuple[Scalar, ...], subject_label: str) -> Mention:
    """The mention of a claim the record does not hold (``values``: what it holds; the record
    field is the value, or the values joined by ", " when there are several)."""
    who = subject_label.lower()
    record: Scalar | None = (values[0] if len(values) == 1 else ", ".join(str(v) for v in values)) if values else None
    reason = (f"{who} claims {c.value}; record says {record}; not used" if record is not None
              else f"{who} claims {c.value}; no {c.type} on record for this session; not used")
    return Mention(type=c.type, value=c.value, text=c.text or str(c.value), span=c.span or (0, 0),
                   kind="claim", record=record, reason=reason)


def _record_entity(attr: AuthoritativeAttribute, value: Scalar, origin: str, nodes: dict[str, "Node"]) -> Entity:
    node = next((n for n in sorted(nodes.values(), key=lambda n: n.id)
                 if n.label == attr.entity and n.props.get(attr.match) == value), None)
    return Entity(type=attr.entity, value=str(node.props.get("name") or value) if node is not None else value,
                  source="session" if attr.session else "graph", node_id=node.id if node is not None else None,
                  properties={"from": origin})


def _attach_amounts(entities: list[Entity], money: list[MoneyMatch], types: Iterable[str]) -> list[Entity]:
    """Give each entity of ``types`` (the domain's ``amounts_attach_to``) the amount of the
    nearest money mention (each amount used once)."""
    wanted = set(types)
    events = [e for e in entities if e.type in wanted and e.span is not None]
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
