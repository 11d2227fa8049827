"""The agent's retrieval tool: ``retrieve(query, mode, filters, top_k)``.

The agent chooses the mode (``keyword`` for exact identifiers, ``semantic`` for concepts,
``hybrid`` when unsure) and may narrow the scope with filters in the shared vocabulary; it can
never widen it: the tenant comes from the bound session, and every query carries the session's
scope exactly as ``Engine.retrieve`` applies it (:func:`hopweave.engine.scope.scope_for`, one
function): the authoritative attributes on record (the customer's tier and products, the
subscriber's plan...), tenant, the session's region, ``status = active`` or, bound to an
``as_of``, the documents in force then (the domain's ``in_force`` clause). Filter field names are
checked against the schema's chunk fields (an unknown field is an error the agent can read and
fix); a filter that would widen the scope (another tier, a tenant or validity clause) raises
ScopeFilterError saying why.

``record_decision(trace_id, outcome, rationale, cited)`` (:class:`RecordDecisionTool`) records
what the agent decided on a retrieval, for the bound session's customer only.

Use :class:`RetrieveTool` directly (a plain callable returning JSON-ready dicts) or
:meth:`RetrieveTool.as_langchain_tool` for a LangChain ``StructuredTool`` (optional extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import ValidationError

from hopweave.engine.boundary import check_session, check_session_attributes, check_utterance_input
from hopweave.engine.scope import scoped
from hopweave.errors import FilterError, HopweaveError, InputError, MissingDependencyError
from hopweave.models.common import Session
from hopweave.models.filters import And, Eq, FilterTree, In, check_fields, parse_filter

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.engine import Engine

Mode = Literal["semantic", "keyword", "hybrid"]

#: Mode -> published ranking profile (None = the default hybrid profile).
MODE_PROFILES: dict[str, str | None] = {"semantic": "dense_only", "keyword": "lexical_only", "hybrid": None}

DESCRIPTION = (
    "Retrieve policy passages. Use mode='keyword' for exact matches (policy ids, amounts, section "
    "numbers), 'semantic' for concept-level questions, 'hybrid' when unsure. filters narrows the "
    "scope with metadata fields (tier, product, policy_type, region, document_id, section, ...): "
    "a value or a list of values per field."
)


def filters_to_tree(filters: Mapping[str, Any] | None) -> FilterTree | None:
    """``{field: value | [values]}`` (or a FilterTree dict with ``op``) -> FilterTree, or None
    for no filters. Raises InputError (not a mapping, a non-scalar value) or FilterError (a
    malformed field name, value or tree)."""
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise InputError("filters must map field names to a value or a list of values, "
                          f"not {type(filters).__name__}")
    if not filters:
        return None
    if "op" in filters:
        return parse_filter(dict(filters))  # FilterError
    try:
        return _flat_tree(filters)
    except ValidationError as exc:
        raise FilterError(f"malformed filter: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    e = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
    return f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', '')}".strip(": ")


def _flat_tree(filters: Mapping[str, Any]) -> FilterTree:
    bad = [k for k in filters if not isinstance(k, str)]
    if bad:
        raise InputError(f"filter names must be strings, not {type(bad[0]).__name__}")
    clauses: list[FilterTree] = []
    for k in sorted(filters):
        v = filters[k]
        if isinstance(v, (list, tuple)):
            if not v:
                raise InputError(f"filter {k!r} has an empty list of values")
            clauses.append(In(field=k, values=tuple(v)))
        elif isinstance(v, (str, int, float, bool)):
            clauses.append(Eq(field=k, value=v))
        else:
            raise InputError(f"filter {k!r}: use a value or a list of values, not {type(v).__name__}")
    return And(clauses=tuple(clauses)) if len(clauses) > 1 else clauses[0]


class RetrieveTool:
    """``retrieve(query, mode, filters, top_k)`` bound to an engine and a session."""

    name = "retrieve"
    description = DESCRIPTION

    def __init__(self, engine: "Engine", session: Session | Mapping[str, Any], as_of: Any = None,
                 budget_ms: int | None = None) -> None:
        """``as_of`` (optional): search the documents in force then, not today's current revisions.
        ``budget_ms``: a call's wall-clock budget (default the engine's ``tool_budget_ms``, 200):
        calls take the engine's agent-tool slots (``tool_max_active``, apart from the request
        slots of ``Engine.retrieve``) and one that cannot get a slot in time to finish within it
        is shed (OverloadedError), never answered late.
        Raises InputError / TenantError for a malformed session or as_of (the engine's boundary)."""
        from hopweave.models.common import to_datetime

        if budget_ms is not None and (isinstance(budget_ms, bool) or not isinstance(budget_ms, int) or budget_ms < 1):
            raise InputError("budget_ms must be a positive integer")
        self.engine = engine
        self.budget_ms = budget_ms
        self.session = check_session(session, "the agent tool's session")
        check_session_attributes(self.session, engine.settings_for(self.session.tenant_id))
        self.as_of = to_datetime(as_of) if as_of is not None else None

    def __call__(self, query: str, mode: Mode = "hybrid", filters: Mapping[str, Any] | None = None,
                 top_k: int = 10, *, arrived: float | None = None) -> list[dict[str, Any]]:
        """Ranked passages as dicts (chunk_id, document, revision, version, section, text, score,
        channels). ``arrived``: when the call arrived (``time.perf_counter()``; default now), the
        start of its budget. Raises InputError for a bad mode / top_k / filter, FilterError for an
        unknown field, ScopeFilterError for a filter that would widen the session's scope (a
        clause on tenant, customer, status or validity; an authoritative value the record does not
        have), StoreError when the index is unavailable, OverloadedError when the engine had no
        free tool slot in time to answer within the budget (retry)."""
        from hopweave.search.profiles import get_profile

        check_utterance_input(query)
        if mode not in MODE_PROFILES:
            raise InputError(f"mode must be one of {sorted(MODE_PROFILES)}, not {mode!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
            raise InputError("top_k must be an integer between 1 and 100")
        if self.engine.index is None:
            raise InputError("the engine has no vector index to search")
        tree = filters_to_tree(filters)
        if tree is not None:
            check_fields(tree, self.engine.graph.schema.filter_fields())
        # The session's scope (the record's authoritative values, tenant, region, in force at
        # as_of...) exactly as Engine.retrieve applies it: one function (hopweave.engine.scope).
        settings = self.engine.settings_for(self.session.tenant_id)
        where = scoped(self.engine.graph, settings, self.session, tree, self.as_of)
        prof = get_profile(MODE_PROFILES[mode])
        budget = self.budget_ms or self.engine.config.tool_budget_ms
        with self.engine.admitted(budget, arrived=arrived, kind="tool"):  # the engine's tool slots
            vec = space = None
            if prof.uses_semantic:
                vec = self.engine.embedder.embed([query])[0]
                space = self.engine.embedder.space
            res = self.engine.index.search(self.session.tenant_id, query, prof, where=where, limit=top_k,
                                           query_vector=vec, query_space=space,
                                           include_superseded=self.as_of is not None)
        out = []
        for h in res.hits:
            out.append({
                "chunk_id": h.chunk_id, "document": h.document, "document_id": h.document_id,
                "revision": h.revision, "version": h.version, "section": h.section, "title": h.title,
                "text": h.text, "score": round(h.score, 6),
                "channels": {
                    name: {"rank": ch.rank, "score": round(ch.score, 6)}
                    for name, ch in (("semantic", h.semantic), ("lexical", h.lexical)) if ch is not None
                },
            })
        return out

    def as_langchain_tool(self) -> Any:
        """A LangChain ``StructuredTool`` calling this tool. Raises MissingDependencyError."""
        try:
            from langchain_core.tools import StructuredTool
        except ImportError:
            raise MissingDependencyError("langchain-core", "langchain", "The LangChain agent tool") from None

        def retrieve(query: str, mode: Mode = "hybrid", filters: dict[str, Any] | None = None,
                     top_k: int = 10) -> list[dict[str, Any]]:
            return self(query, mode=mode, filters=filters, top_k=top_k)

        return StructuredTool.from_function(retrieve, name=self.name, description=self.description)


DECISION_DESCRIPTION = (
    "Record what was decided on a case: trace_id is the id the retrieval returned, outcome one of "
    "the goal's outcomes (listed below when known), rationale why, cited the "
    "provenance ids (src: ...) of the context lines the decision rests on. Recording the same "
    "decision again changes nothing; a different one is a correction (a new version)."
)


def _outcome_vocabulary(engine: "Engine", tenant_id: str) -> str:
    """`` Outcomes by goal: G: a, b, c; H: ...`` for the goals of ``tenant_id``'s domain that declare
    outcomes ('' when the engine has no domains or no goal declares any)."""
    try:
        domain = engine.settings_for(tenant_id).name
    except HopweaveError:
        return ""
    vocab = sorted((g.name, list(g.outcomes.vocabulary)) for g in engine.graph.domain_goal_types(domain)
                   if g.outcomes is not None)
    if not vocab:
        return ""
    return " Outcomes by goal: " + "; ".join(f"{name}: {', '.join(v)}" for name, v in vocab) + "."


class RecordDecisionTool:
    """``record_decision(trace_id, outcome, rationale, cited)`` bound to an engine and a session:
    :meth:`hopweave.engine.engine.Engine.record_outcome` for the session's customer (the tenant and
    the customer come from the bound session, never from the agent's arguments)."""

    name = "record_decision"
    description = DECISION_DESCRIPTION

    def __init__(self, engine: "Engine", session: Session | Mapping[str, Any], decided_by: str | None = None) -> None:
        """``decided_by``: who the agent decides for (recorded as the decision's author). Raises
        InputError / TenantError for a malformed session."""
        self.engine = engine
        self.session = check_session(session, "the agent tool's session")
        self.decided_by = decided_by
        #: What the agent reads: :data:`DECISION_DESCRIPTION` plus the outcomes of the session
        #: domain's goals (``Outcomes by goal: G: a, b, c.``), so it never guesses another domain's.
        self.description = DECISION_DESCRIPTION + _outcome_vocabulary(engine, self.session.tenant_id)

    def __call__(self, trace_id: str, outcome: str, rationale: str | None = None,
                 cited: list[str] | tuple[str, ...] = (), as_of: Any = None) -> dict[str, Any]:
        """The recorded outcome as a JSON-ready dict (trace_id, decided_id, version, outcome,
        decided_at, created, ...). Raises the engine's typed errors (UnknownOutcomeError,
        IdentityError, NotFoundError, OutcomeTimeError, OutcomeError)."""
        rec = self.engine.record_outcome(trace_id, session=self.session, outcome=outcome, decided_by=self.decided_by,
                                         rationale=rationale, cited=cited, as_of=as_of)
        return rec.model_dump(mode="json")

    def as_langchain_tool(self) -> Any:
        """A LangChain ``StructuredTool`` calling this tool. Raises MissingDependencyError."""
        try:
            from langchain_core.tools import StructuredTool
        except ImportError:
            raise MissingDependencyError("langchain-core", "langchain", "The LangChain agent tool") from None

        def record_decision(trace_id: str, outcome: str, rationale: str | None = None,
                            cited: list[str] | None = None) -> dict[str, Any]:
            return self(trace_id, outcome, rationale=rationale, cited=tuple(cited or ()))

        return StructuredTool.from_function(record_decision, name=self.name, description=self.description)
