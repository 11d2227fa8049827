"""A domain pack's settings: everything the engine must know about an enterprise's domain that
is not in its graph schema, as data.

The core package names no domain: which label the session's subject has, how identifiers look
and how ownership of them is checked, which attributes of the subject are authoritative (owned
by the session and the graph, never by the utterance), the synonym label and relationship,
which entity types take a money amount, the trace's link to its subject, extra session
attributes and the HTML view's label colours all come from here. A pack declares them in its
manifest (``hopweave.yaml``, section ``domain:``); the store keeps them with the pack's tenants,
so ``Engine.open(DIR)`` and every command read them back with no flags.

See docs/packs.md ("Bring your own domain") for the file format.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hopweave.models.metagraph import EdgeStep
from hopweave.models.schema import check_identifier

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.common import Scalar, Session

SessionAttrType = Literal["str", "int", "float", "bool", "date"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: One hop of an ownership path from the session's subject node: the pattern model's edge step.
OwnerStep = EdgeStep


class IdentifierFormat(_Frozen):
    """An identifier that may appear in an utterance (``SUB_1001``, ``LINE-5550101``, ``LN-123456``).

    ``prefix`` followed by an optional ``_``/``-`` and ``min_digits`` or more digits (then
    optional ``_``-separated alphanumeric parts) is matched case-insensitively; an optional
    tenant prefix of 2-5 letters and ``_`` (``ZP_SUB_1001``) is accepted. The canonical form is
    ``PREFIX_DIGITS`` in capitals, which must be the node id. ``owner_path`` is the edge
    sequence from the session's subject to a node with this label; ``None`` means the
    identifier *is* a subject id (compared with the session's). An identifier the session's
    subject does not own is reported as a mention, never used."""

    label: str
    prefix: str
    owner_path: tuple[OwnerStep, ...] | None = None
    min_digits: int = Field(default=3, ge=1, le=12)

    @field_validator("label")
    @classmethod
    def _safe_label(cls, v: str) -> str:
        return check_identifier(v, "label")

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,15}", v):
            raise ValueError(f"identifier prefix {v!r} must be 1-16 letters/digits, starting with a letter")
        return v.upper()


class AuthoritativeAttribute(_Frozen):
    """An attribute of the authenticated subject that the session and the graph own.

    Its value comes from the session (``session``: an attribute name such as ``region`` or a
    pack-declared one) or from the graph (``subject_property``): a property of the subject's node,
    or, with ``via`` (an edge sequence from the subject) and ``via_label``, of every node of that
    label the walk reaches (the products of every account a customer holds: several values).
    Each value becomes an entity of type ``entity`` (a vocabulary label; the vocabulary node whose
    ``match`` property equals the value is linked). An entity of that type named in the
    utterance never overrides it: a conflicting claim is reported as a mention ("customer
    claims Unlimited Plus; record says Unlimited Basic"). With no authoritative value (an anonymous session),
    utterance claims of that type are mentions too, and ``anonymous`` says what the filter does:
    ``unscoped`` documents only (no segment-specific policy: the chunk field must be empty), or
    ``ignore`` (no clause)."""

    entity: str
    subject_property: str | None = None
    session: str | None = None
    match: str = "name"
    anonymous: Literal["unscoped", "ignore"] = "unscoped"
    #: Edges from the subject to the nodes carrying ``subject_property`` (empty: the subject's own).
    via: tuple[OwnerStep, ...] = ()
    #: The label of the nodes ``via`` reaches.
    via_label: str | None = None

    @field_validator("entity", "match")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "name")

    @field_validator("via_label")
    @classmethod
    def _safe_label(cls, v: str | None) -> str | None:
        return None if v is None else check_identifier(v, "label")

    @model_validator(mode="after")
    def _one_source(self) -> "AuthoritativeAttribute":
        if (self.subject_property is None) == (self.session is None):
            raise ValueError(f"authoritative {self.entity}: give exactly one of subject_property or session")
        if bool(self.via) != (self.via_label is not None):
            raise ValueError(f"authoritative {self.entity}: give via and via_label together (the edges from the "
                             "subject and the label of the nodes they reach)")
        if self.via and self.subject_property is None:
            raise ValueError(f"authoritative {self.entity}: via needs subject_property (the property read on "
                             f"the {self.via_label} nodes)")
        return self


class SubjectSpec(_Frozen):
    """Who the session is about: the label of the node whose id is the session's ``customer_id``,
    and the relationship a recorded DecisionTrace gets to it."""

    label: str
    trace_relationship: str = "FOR_SUBJECT"

    @field_validator("label", "trace_relationship")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "name")


class SynonymSpec(_Frozen):
    """The vocabulary label whose nodes carry lexical synonyms, and the relationship between them."""

    label: str
    relationship: str

    @field_validator("label", "relationship")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "name")


class SessionAttribute(_Frozen):
    """A session attribute beyond tenant_id / customer_id / region / channel (a US state, a
    contract number), usable in always-on filter clauses (``{field: state, session: state}``)."""

    name: str
    type: SessionAttrType = "str"
    required: bool = False
    #: The session may give a list of values of ``type`` (a customer in two programs): a set,
    #: matched as ``field in [...]``; without it a list is refused.
    many: bool = False
    description: str = ""

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        check_identifier(v, "session attribute")
        if v in {"tenant_id", "customer_id", "region", "channel", "agent_id", "locale", "attributes"}:
            raise ValueError(f"session attribute {v!r} is built in; declare only extra attributes")
        return v


class DomainSettings(_Frozen):
    """The domain settings of one pack (``domain:`` in ``hopweave.yaml``)."""

    name: str
    subject: SubjectSpec
    identifiers: tuple[IdentifierFormat, ...] = ()
    authoritative: tuple[AuthoritativeAttribute, ...] = ()
    synonyms: SynonymSpec | None = None
    #: Entity types that take the nearest money amount of the utterance ({"amount": 39}).
    amounts_attach_to: tuple[str, ...] = ()
    session_attributes: tuple[SessionAttribute, ...] = ()
    #: Labels whose ids are identifiers, kept whole by the lexical plan.
    identifier_labels: tuple[str, ...] = ()
    #: HTML view colours by label ("#4C8EDA").
    styles: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _safe(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", v):
            raise ValueError(f"domain name {v!r}: lower-case letters, digits, '_' or '-', starting with a letter")
        return v

    def authoritative_for(self, entity: str) -> AuthoritativeAttribute | None:
        return next((a for a in self.authoritative if a.entity == entity), None)


class DomainRegistry:
    """Which domain serves which tenant, in one store: ``for_tenant(t)`` gives the settings the
    engine, the resolver and the record stage use for a request of tenant ``t``.

    Built by the pack loader / ``Engine.open`` from the store's settings file; tests build it
    directly: ``DomainRegistry([(settings, ["acme", "zephyr"])])``."""

    def __init__(self, domains: "list[tuple[DomainSettings, list[str]]] | tuple[()]" = ()) -> None:
        self._by_name: dict[str, DomainSettings] = {}
        self._by_tenant: dict[str, str] = {}
        for settings, tenants in domains:
            self._by_name[settings.name] = settings
            for t in tenants:
                if self._by_tenant.get(t, settings.name) != settings.name:
                    from hopweave.errors import ConfigError

                    raise ConfigError(f"tenant {t!r} is served by two domains: {self._by_tenant[t]!r} and "
                                      f"{settings.name!r}; a tenant belongs to one domain")
                self._by_tenant[t] = settings.name

    def for_tenant(self, tenant_id: str) -> DomainSettings:
        """The settings of the domain serving ``tenant_id``; raises TenantError if none does."""
        name = self._by_tenant.get(tenant_id)
        if name is None:
            from hopweave.errors import TenantError

            # the other tenants are not named: this message reaches callers (HTTP, agent tools)
            raise TenantError(f"tenant {tenant_id!r} is not served by any domain in this store; load its pack "
                              "with `hopweave load PACK` (`hopweave doctor` lists the tenants a store serves)")
        return self._by_name[name]

    def domain_of(self, tenant_id: str) -> str:
        return self.for_tenant(tenant_id).name

    def tenants(self, domain: str | None = None) -> list[str]:
        return sorted(t for t, d in self._by_tenant.items() if domain is None or d == domain)

    def domains(self) -> list[DomainSettings]:
        return [self._by_name[n] for n in sorted(self._by_name)]


def check_session_attributes(session: Session, settings: DomainSettings) -> Session:
    """``session.attributes`` checked against the domain's ``session_attributes`` (declared
    names, types, required ones present; a list only for a ``many`` attribute). Returns the
    session. Raises InputError."""
    from hopweave.errors import InputError

    declared = {a.name: a for a in settings.session_attributes}
    unknown = sorted(set(session.attributes) - set(declared))
    if unknown:
        raise InputError(f"session attribute(s) {unknown} are not declared by domain {settings.name!r}; "
                         f"declared: {sorted(declared) or 'none'}")
    for name, attr in declared.items():
        value = session.attributes.get(name)
        if value is None:
            if attr.required:
                raise InputError(f"session attribute {name!r} is required by domain {settings.name!r}")
            continue
        if isinstance(value, tuple) and not attr.many:
            raise InputError(f"session attribute {name!r} is a list ({list(value)!r:.60}), but domain "
                             f"{settings.name!r} declares one {attr.type}: give one value, or declare it "
                             "`many: true` in session_attributes to match the list as a set")
        for item in value if isinstance(value, tuple) else (value,):
            if not _type_ok(item, attr.type):
                raise InputError(f"session attribute {name!r} must be a {attr.type}"
                                 f"{' (or a list of them)' if attr.many else ''}, not {type(item).__name__} "
                                 f"({item!r:.40})")
    return session


def _type_ok(value: Scalar, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int)
    if kind == "float":
        return isinstance(value, (int, float))
    if kind == "date":
        if not isinstance(value, str):
            return False
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
        return True
    return isinstance(value, str)
