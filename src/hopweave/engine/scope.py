"""The session's scope: one code path for the always-on filter clauses of every query.

``Engine.retrieve`` gets them through the understanding's filter
(:func:`hopweave.understand.filter_map.compile_filter`); every other query — the agent tool, the
LangChain tool, an agentic round, a query an application's LLM wrote — goes through
:func:`scoped`, which ANDs the same clauses (:func:`~hopweave.understand.filter_map.
always_on_clauses`, from the tenant's FilterMapping node) to whatever narrowing the caller asked
for. A caller can narrow the scope, never widen it: a clause on an always-on field that differs
from the session's value simply matches nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from hopweave.errors import ConfigError
from hopweave.models.common import Session
from hopweave.models.filters import FilterTree, and_
from hopweave.understand.filter_map import always_on_clauses, read_filter_mapping

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore


def scope_filter(graph: "GraphStore", session: Session, as_of: datetime | None = None) -> FilterTree | None:
    """The session's always-on clauses (tenant, documents in force at ``as_of`` or today's
    current ones, region, ...) as one tree. Raises ConfigError (no FilterMapping for the
    tenant) or TenantError (no tenant)."""
    return and_(*always_on_clauses(read_filter_mapping(graph, session.tenant_id), session, as_of))


def scoped(graph: "GraphStore", session: Session, where: FilterTree | None,
           as_of: datetime | None = None) -> FilterTree:
    """``where`` narrowed by the session's scope (the scope's clauses first). Raises as
    :func:`scope_filter`."""
    tree = and_(scope_filter(graph, session, as_of), where)
    if tree is None:
        raise ConfigError(f"the filter mapping of tenant {session.tenant_id!r} has no always-on clauses; "
                          "add `{field: tenant_id, session: tenant_id, required: true}` to its filters.yaml")
    return tree


__all__ = ["scope_filter", "scoped"]
