"""The session's scope for the engine and the adapters: one function, :func:`scope_for`.

It reads the tenant's FilterMapping node and the subject's record (session attributes, the
subject node, the nodes reached from it: :func:`hopweave.understand.scope.read_record`) and
returns :func:`hopweave.understand.scope.session_scope` of them: the authoritative clauses (tier,
plan, product... with the values on record), then identity and always-on clauses (tenant,
documents in force at ``as_of``, region...). ``Engine.retrieve`` gets the same clauses through
its understanding (the same pure function over the record its resolver read); every other
query — an agentic round, a query an application's LLM wrote, the agent tool in process or over
HTTP, the LangChain tool, the LangGraph follow-up rounds — goes through :func:`scope_for` and
:meth:`~hopweave.understand.scope.Scope.narrow`. A caller can narrow the scope, never widen it: a
widening clause raises ScopeFilterError.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING

from hopweave.models.common import Session
from hopweave.models.domain import DomainSettings
from hopweave.models.filters import FilterTree
from hopweave.understand.filter_map import read_filter_mapping
from hopweave.understand.scope import Scope, read_record, session_scope

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore


def scope_for(graph: "GraphStore", settings: DomainSettings, session: Session,
              as_of: datetime | date | str | None = None) -> Scope:
    """The scope of ``session`` (of the domain ``settings``) at ``as_of`` (None: today's
    documents and record). Raises ConfigError (no FilterMapping for the tenant), TenantError (no
    tenant, or a required session attribute missing), or what the store's reads raise."""
    mapping = read_filter_mapping(graph, session.tenant_id)
    record = read_record(graph, settings, session, as_of)
    return session_scope(mapping, settings, record, session, as_of)


def scoped(graph: "GraphStore", settings: DomainSettings, session: Session, where: FilterTree | None,
           as_of: datetime | date | str | None = None) -> FilterTree:
    """A caller's filter ``where`` narrowed by the session's scope (the scope's clauses first).
    Raises ScopeFilterError when ``where`` would widen it, else as :func:`scope_for`."""
    return scope_for(graph, settings, session, as_of).narrow(where)


__all__ = ["Scope", "scope_for", "scoped"]
