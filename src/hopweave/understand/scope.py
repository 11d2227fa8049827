"""The session's scope: one pure function of (session, domain settings, graph record, as_of).

Every query hopweave runs for a session — the engine's own filter, each agentic round (planned
or written by an application's model), the agent tool in process or over HTTP, the LangChain
and LangGraph adapters — is ANDed with the clauses :func:`session_scope` returns:

- **authoritative clauses**: each of the domain's authoritative attributes (tier, plan,
  product, ...) mapped to its chunk field by the filter mapping, with the values *on record*
  (:class:`SubjectRecord`, read from the session and the graph by :func:`read_record`, never
  from the utterance): ``field = value`` (``in`` for several, e.g. the products of every account
  the customer holds); with no value on record, ``field is empty`` (``anonymous: unscoped``) or
  no clause (``anonymous: ignore``);
- **identity and always-on clauses**: the filter mapping's (tenant, documents in force at
  ``as_of``, session region, pack-declared session attributes;
  :func:`~hopweave.understand.filter_map.always_on_clauses`).

A caller's own filter may only narrow that scope (:meth:`Scope.check`): a clause on a field the
scope alone sets (tenant, customer, status, validity, a session attribute) or an authoritative
value the record does not have raises :class:`~hopweave.errors.ScopeFilterError`, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any, Mapping, TypeGuard

from hopweave.errors import ScopeFilterError
from hopweave.models.common import Bindings, Scalar, Session, set_values, to_datetime
from hopweave.models.domain import AuthoritativeAttribute, DomainSettings
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, Not, Or, Range, and_
from hopweave.models.internal_patterns import internal_pattern
from hopweave.models.metagraph import Bind, EdgeStep, Seed
from hopweave.understand.filter_map import FilterMapping, always_on_clauses, any_if_absent
from hopweave.understand.read_cache import cached, pattern_reads

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore, Node
    from hopweave.models.metagraph import TraversalPattern
    from hopweave.models.schema import GraphSchema

#: Chunk fields that carry identity: never a caller's to set, whatever the mapping says.
IDENTITY_FIELDS = frozenset({"tenant_id", "customer_id"})


@dataclass(frozen=True)
class SubjectRecord:
    """What the session and the graph say about the session's subject, per authoritative entity
    type: ``values`` in the attribute's ``match`` terms (what a claim is compared with), ``names``
    the vocabulary names they stand for (what a filter clause holds), ``origins`` where each came
    from (``<subject id>.tier``, ``session.region``, ``<subject id> -OWNS-> Item.product``). An
    entity type with no value on record is absent from all three."""

    subject_id: str | None = None
    values: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)
    names: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)


def read_record(graph: "GraphStore", settings: DomainSettings, session: Session,
                as_of: datetime | date | str | None = None,
                vocabulary: Mapping[str, "Node"] | None = None) -> SubjectRecord:
    """The authoritative attributes' values on record for ``session``: session attributes, the
    subject node's properties, and properties of the nodes reached ``via`` edges from the subject
    (a tenant-scoped walk through the store, so another tenant's nodes never count; it sees the
    nodes and edges in force at ``as_of``, default now). A list value (a session attribute
    declared ``many``, a ``list[str]`` property: a customer in two programs) is a set of values.
    Values are de-duplicated and sorted (deterministic). ``vocabulary`` (node id -> node; default: read the
    entity labels' nodes) maps a value to its vocabulary name. Reads only; raises what the store's
    reads raise.

    At a given ``as_of`` the record is kept per (tenant, session, settings, vocabulary) while
    the store's data is unchanged (:mod:`hopweave.understand.read_cache`: the turns of one
    conversation read it once); without one (now) it is read every time."""
    when = to_datetime(as_of) if as_of is not None else None
    if when is None:
        return _read_record(graph, settings, session, as_of, vocabulary)[0]
    key = ("record", session.tenant_id, session.model_dump_json(), id(settings), when,
           None if vocabulary is None else id(vocabulary))
    # the settings and vocabulary objects ride along, so their ids are not reused while kept
    return cached(graph, key, lambda: (*_read_record(graph, settings, session, when, vocabulary), settings,
                                       vocabulary), reads=record_reads(settings, graph.schema), keep=lambda v: v[1])[0]


def record_reads(settings: DomainSettings, schema: "GraphSchema") -> tuple[str, ...]:
    """What :func:`read_record` can read of the graph (:func:`~hopweave.understand.read_cache.cached`'s
    ``reads``): the subject's label, each authoritative entity's vocabulary label and what the
    walk of each ``via`` attribute reads."""
    names = {f"{kind}:{label}" for kind in ("n", "n+")
             for label in (settings.subject.label, *(a.entity for a in settings.authoritative))}
    for attr in settings.authoritative:
        if attr.session is None and attr.via and attr.via_label is not None:
            names.update(pattern_reads(_record_pattern(settings, attr), schema))
    return tuple(sorted(names))


def _record_pattern(settings: DomainSettings, attr: AuthoritativeAttribute) -> "TraversalPattern":
    """The walk from the subject along ``attr.via`` to its ``via_label`` nodes."""
    return internal_pattern(
        f"_record_{attr.entity}", owner="_scope",
        question=f"Which {attr.entity} values are on record for the session's subject?",
        seed=Seed(type=settings.subject.label, key="id", value=Bind(ref="session.customer_id")),
        edges=[EdgeStep(type=s.type, direction=s.direction) for s in attr.via], target=attr.via_label or "",
        returns=(attr.subject_property or "",), limit=1000, budget_ms=500)


def _read_record(graph: "GraphStore", settings: DomainSettings, session: Session,
                 as_of: datetime | date | str | None,
                 vocabulary: Mapping[str, "Node"] | None) -> tuple[SubjectRecord, bool]:
    """:func:`read_record` read from the store, and whether every walk it made was complete
    (none cut by its time budget)."""
    complete = [True]
    subject: dict[str, Any] | None = None
    if session.customer_id is not None and any(a.subject_property and not a.via for a in settings.authoritative):
        node = graph.get_node(session.tenant_id, session.customer_id)
        subject = dict(node.props) if node is not None and node.label == settings.subject.label else None
    values: dict[str, tuple[Scalar, ...]] = {}
    names: dict[str, tuple[Scalar, ...]] = {}
    origins: dict[str, str] = {}
    for attr in settings.authoritative:
        found = _values(graph, settings, attr, session, subject, as_of, complete)
        if not found:
            continue
        values[attr.entity] = found
        names[attr.entity] = tuple(dict.fromkeys(_name(graph, session, attr, v, vocabulary) for v in found))
        origins[attr.entity] = _origin(attr, session)
    return SubjectRecord(subject_id=session.customer_id, values=values, names=names, origins=origins), complete[0]


def _scalar(v: Any) -> TypeGuard[Scalar]:
    return isinstance(v, (str, int, float, bool)) and v != ""


def _values(graph: "GraphStore", settings: DomainSettings, attr: AuthoritativeAttribute, session: Session,
            subject: dict[str, Any] | None, as_of: datetime | date | str | None,
            complete: list[bool]) -> tuple[Scalar, ...]:
    if attr.session is not None:
        return session.attribute_values(attr.session)
    prop = attr.subject_property or ""
    if not attr.via:
        return set_values((subject or {}).get(prop))  # a list property (two programs) is a set
    if session.customer_id is None or attr.via_label is None:
        return ()
    pattern = _record_pattern(settings, attr)
    when = to_datetime(as_of) if as_of is not None else datetime.now(timezone.utc).replace(tzinfo=None)
    result = graph.run_pattern(session.tenant_id, pattern, Bindings(session=session, as_of=when))
    if result.truncated and result.truncated_reason != "limit":
        complete[0] = False
    rows = result.rows
    return set_values([v for r in rows if r.label == attr.via_label for v in set_values(r.properties.get(prop))])


def _name(graph: "GraphStore", session: Session, attr: AuthoritativeAttribute, value: Scalar,
          vocabulary: Mapping[str, "Node"] | None) -> Scalar:
    """The vocabulary name of ``value`` (the node of label ``attr.entity`` whose ``match``
    property equals it; the value itself when there is none or ``match`` is the name)."""
    if attr.match == "name":
        return value
    nodes = (list(vocabulary.values()) if vocabulary is not None
             else graph.find_nodes(session.tenant_id, attr.entity))
    node = next((n for n in sorted(nodes, key=lambda n: n.id)
                 if n.label == attr.entity and n.props.get(attr.match) == value), None)
    name = node.props.get("name") if node is not None else None
    return name if _scalar(name) else value


def _origin(attr: AuthoritativeAttribute, session: Session) -> str:
    if attr.session is not None:
        return f"session.{attr.session}"
    who = session.customer_id or "the subject"
    if attr.via:
        path = " ".join(f"-{s.type}->" if s.direction == "out" else f"<-{s.type}-" for s in attr.via)
        return f"{who} {path} {attr.via_label}.{attr.subject_property}"
    return f"{who}.{attr.subject_property}"


@dataclass(frozen=True)
class Scope:
    """The session's scope (:func:`session_scope`).

    ``clauses``: the authoritative clauses, then the identity and always-on ones. ``locked``:
    chunk fields a caller may not name at all (tenant, customer, status, validity, literal
    always-on values). ``always_on``: every field an always-on or identity clause owns (never
    relaxed by a later round). ``authoritative``: chunk field -> the values on record or in the
    session (region, tier, product...; empty: none on record, only documents not specific to one
    are in scope): a caller may name those values only. ``origins``: chunk field -> where its
    value came from."""

    clauses: tuple[FilterTree, ...]
    locked: frozenset[str]
    always_on: frozenset[str] = frozenset()
    authoritative: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)
    #: Chunk fields declared ``absent_means_any``: a document without one is in every scope, so
    #: a caller's ``field is empty`` narrows (never widens) the scope.
    absent_means_any: frozenset[str] = frozenset()

    @property
    def tree(self) -> FilterTree | None:
        """The scope as one conjunction (None when it has no clause)."""
        return and_(*self.clauses)

    def check(self, where: FilterTree | None) -> None:
        """Raise ScopeFilterError when ``where`` (a caller's filter) would widen the scope: a
        clause anywhere on a locked field, or, outside a ``not``, an authoritative field given
        a value (``eq``, ``in``), emptiness or a range the record does not have."""
        if where is not None:
            self._check(where, negated=False)

    def _check(self, t: FilterTree, negated: bool) -> None:
        if isinstance(t, (And, Or)):
            for c in t.clauses:
                self._check(c, negated)
            return
        if isinstance(t, Not):
            self._check(t.clause, not negated)
            return
        if t.field in self.locked:
            raise ScopeFilterError(
                f"filters may not name {t.field!r}: the session's scope sets it (tenant, customer, status and "
                "validity at as_of come from the authenticated session and the request); remove the clause")
        if negated or t.field not in self.authoritative:
            return
        allowed = self.authoritative[t.field]
        origin = self.origins.get(t.field, "the record")
        record = ", ".join(str(v) for v in allowed)
        if isinstance(t, (Eq, In)):
            asked = (t.value,) if isinstance(t, Eq) else t.values
            wrong = [v for v in asked if v not in allowed]
            if wrong:
                said = (f"the record says {record} ({origin})" if allowed
                        else "nothing is on record for this session, so only documents not specific to one are "
                             "in scope")
                raise ScopeFilterError(
                    f"filter {t.field} = {', '.join(str(v) for v in wrong)} widens the session's scope: {said}; "
                    f"a filter may only narrow it (drop the clause, or use a value on record)")
        elif isinstance(t, IsEmpty):
            if allowed and t.field not in self.absent_means_any:
                raise ScopeFilterError(f"filter {t.field} is empty widens the session's scope: the record says "
                                       f"{record} ({origin}); drop the clause")
        elif isinstance(t, Range):
            raise ScopeFilterError(f"filter on {t.field} by range: {t.field} is set from the record ({record or 'none'}"
                                   f", {origin}); use an eq / in clause with a value on record, or drop it")

    def narrow(self, where: FilterTree | None, *, check: bool = True) -> FilterTree:
        """The scope's clauses, then those of ``where`` it does not already have. With ``check``
        (a caller's filter), first :meth:`check`. Raises ScopeFilterError, or ConfigError when
        the scope has no clause at all (a mapping without its tenant clause)."""
        if check:
            self.check(where)
        tree = _merge(self.clauses, _top(where))
        return _require(tree)

    def complete(self, tree: FilterTree | None) -> FilterTree:
        """``tree`` (a filter the engine compiled for this session) with the scope's clauses it
        lacks appended: its own order is kept. Raises ConfigError as :meth:`narrow`."""
        return _require(_merge(_top(tree), self.clauses))


def _top(tree: FilterTree | None) -> tuple[FilterTree, ...]:
    if tree is None:
        return ()
    return tuple(tree.clauses) if isinstance(tree, And) else (tree,)


def _merge(first: tuple[FilterTree, ...], then: tuple[FilterTree, ...]) -> FilterTree | None:
    out: list[FilterTree] = []
    for c in (*first, *then):
        if c not in out:
            out.append(c)
    return and_(*out)


def _require(tree: FilterTree | None) -> FilterTree:
    if tree is None:
        from hopweave.errors import ConfigError

        raise ConfigError("the filter mapping has no always-on clauses; add "
                          "`{field: tenant_id, session: tenant_id, required: true}` to its filters.yaml")
    return tree


def session_scope(mapping: FilterMapping, settings: DomainSettings, record: SubjectRecord, session: Session,
                  as_of: datetime | date | str | None = None) -> Scope:
    """The scope of ``session`` at ``as_of`` (pure: no I/O). Authoritative clauses come first,
    in the order of the domain's ``authoritative`` list, one per chunk field the mapping gives
    the attribute's entity type (fields an always-on clause owns are left to it); then the
    mapping's always-on clauses (without ``as_of``: today's documents, ``status = active``).
    A session attribute's always-on field (region, market) accepts the session's value only; the
    in-force fields, the tenant and literal values are locked.

    Raises TenantError when a required session attribute (the tenant) is missing."""
    owned = {f for a in mapping.always_on for f in a.fields}
    locked = set(IDENTITY_FIELDS)
    clauses: list[FilterTree] = []
    allowed: dict[str, tuple[Scalar, ...]] = {}
    origins: dict[str, str] = {}
    for a in mapping.always_on:
        if a.in_force is not None or a.session is None or a.session in IDENTITY_FIELDS or a.field in IDENTITY_FIELDS:
            locked.update(a.fields)  # validity, status, tenant, literal values: the scope's alone
            continue
        given = session.attribute_values(a.session)
        if given and a.field is not None:
            allowed[a.field] = given
            origins[a.field] = f"session.{a.session}"
    for attr in settings.authoritative:
        names = record.names.get(attr.entity, ())
        for f in dict.fromkeys(r.field for r in mapping.entities if r.entity == attr.entity):
            if f in owned or f in allowed:
                continue
            if names:
                clauses.append(any_if_absent(mapping, Eq(field=f, value=names[0]) if len(names) == 1
                                             else In(field=f, values=names)))
            elif attr.anonymous == "unscoped":
                clauses.append(IsEmpty(field=f))
            else:
                continue
            allowed[f] = names
            origins[f] = record.origins.get(attr.entity, "no value on record")
    clauses.extend(always_on_clauses(mapping, session, as_of))
    # flat, as and_ flattens the in-force clause's conjunction (so a merge sees equal clauses)
    return Scope(clauses=_top(and_(*clauses)), locked=frozenset(locked), always_on=frozenset(owned | IDENTITY_FIELDS),
                 authoritative=allowed, origins=origins, absent_means_any=frozenset(mapping.absent_means_any))


__all__ = ["IDENTITY_FIELDS", "Scope", "SubjectRecord", "read_record", "session_scope"]
