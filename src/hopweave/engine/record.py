"""Decision traces of retrievals: write, query, diff.

Every retrieval becomes a ``:DecisionTrace {kind: "retrieval"}`` written through the GraphStore
(so tenant scoping and schema validation apply), linked::

    (t)-[:USED_PATTERN {version}]->(:TraversalPattern)   one per pattern that ran
    (t)-[:<subject.trace_relationship>]->(:<subject.label>)   (t)-[:FOR_GOAL]->(:GoalType)
    (t)-[:CITES]->(:Document)          every document revision whose chunk reached the context
    (t)-[:SAW_FACT]->(node)            every graph node whose row reached the context
    (t)-[:PINNED]->(:PinnedText)       the exact text of every chunk and fact line it showed

with the goal, entities, filter, chunk/fact/precedent ids, ranking profile, as_of, timings, the
context text and its hash, and the pins of what was seen (``pins_json``: chunk revisions and text
hashes, fact row hashes, embedding space; ``context_skeleton`` and the pinned texts: see
:mod:`hopweave.engine.pins`).
The trace id is a hash of the inputs, the as_of, the store revision and
what was seen, so replaying the same case on the same store gives the same id (an idempotent
upsert), and any change in what was seen gives a new id that :func:`diff` can compare.

The subject link (e.g. ``FOR_SUBSCRIBER`` to ``:Subscriber`` in the telecom pack) comes from the domain's
``subject`` settings. :func:`redact_props` blanks every property derived from the utterance (the
utterance, the search query, utterance entities, the [Note] lines quoting it); ``trace show`` and
the HTML view use it unless ``--pii`` is given.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from datetime import datetime
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from hopweave.engine.result import RetrievalResult
from hopweave.errors import NotFoundError
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import Bindings, Session
from hopweave.models.documents import document_node_id
from hopweave.models.domain import SubjectSpec
from hopweave.models.internal_patterns import INTERNAL_EPOCH, internal_pattern
from hopweave.models.metagraph import EdgeStep, Literal_, Predicate, Seed, goal_node_id, pattern_node_id

KIND = "retrieval"
REDACTED = "<redacted: derived from the utterance>"
#: What a PII property's value (a customer's name, email...) becomes in a redacted view.
PII_REDACTED = "<redacted: pii>"
#: PII values shorter than this are not replaced in a redacted context (too short to be safe).
MIN_PII_CHARS = 3
#: A multi-intent part header (engine/multi_intent.py): the quoted span is the utterance's.
_PART_HEADER = re.compile(r'^(\[Request part \d+ of \d+ — [^"\n]*: )".*"\]$', re.M)


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def trace_id_for(
    *,
    tenant_id: str,
    utterance: str,
    session: Session,
    as_of: datetime,
    store_revision: str,
    goal: str | None,
    patterns: Sequence[tuple[str, int]],
    chunk_ids: Sequence[str],
    context_hash: str,
    caller: str | None = None,
) -> str:
    """``RT_`` + 20 hex digits of sha256 over the inputs and what was seen (deterministic); a
    verified ``caller`` is one of the inputs (two callers' identical requests are two traces)."""
    blob = _canon(
        {**({"caller": caller} if caller is not None else {}),
            "tenant": tenant_id,
            "utterance": utterance,
            "session": session.model_dump(mode="json"),
            "as_of": as_of.isoformat(),
            "store": store_revision,
            "goal": goal,
            "patterns": sorted(patterns),
            "chunks": list(chunk_ids),
            "context": context_hash,
        }
    )
    return "RT_" + hashlib.sha256(blob.encode()).hexdigest()[:20]


def build(
    result: RetrievalResult, session: Session, store: GraphStore, subject: SubjectSpec, caller: str | None = None,
    asked_at: datetime | None = None,
) -> tuple[list[Node], list[Edge]]:
    """The trace node and its edges for ``result`` (edges only to nodes visible to the tenant);
    ``subject`` names the session subject's label and the trace's relationship to it; ``caller``
    (who asked: a verified token subject or key id) is recorded as the trace's ``caller``, and
    ``asked_at`` (when the request arrived, UTC wall clock) as its ``asked_at`` on a store whose
    schema declares it (not one of the trace id's inputs: an identical request later rewrites it)."""
    from hopweave.engine.pins import PIN_LABEL, PIN_REL, full_hash, pins, skeleton

    tenant = result.tenant_id
    pin_texts = PIN_LABEL in store.schema.label_map and PIN_REL in store.schema.rel_map
    texts: dict[str, str] | None = {} if pin_texts else None
    seen: dict[str, Node | None] = {}  # each node read once: the pins and the edges ask for the same facts

    def get(nid: str) -> Node | None:
        if nid not in seen:
            seen[nid] = store.get_node(tenant, nid)
        return seen[nid]

    ctx_chunks = [c for c in result.chunks if c.in_context]
    fact_ids = sorted({s for ln in result.context.lines if ln.kind == "fact" for s in ln.sources})
    agg_ids = sorted({s for ln in result.context.lines if ln.kind == "aggregate" for s in ln.sources
                      if not s.startswith("PATTERN_")})
    prec_ids = [p.trace_id for p in result.precedent if p.in_context]
    patterns = sorted((f.pattern, f.version) for f in result.facts)
    props: dict[str, Any] = {
        "kind": KIND,
        "goal": result.goal,
        "goal_version": result.goal_version,
        "confidence": round(result.confidence, 6),
        "customer_id": session.customer_id,
        "caller": caller,
        "asked_at": asked_at if asked_at is not None and "asked_at" in store.schema.label("DecisionTrace").props
        else None,
        "utterance": result.utterance,
        "as_of": result.as_of,
        "timestamp": result.as_of,
        "session_json": session.model_dump(mode="json"),
        "entities_json": [e.model_dump(mode="json") for e in result.entities],
        "filter_json": result.filter or {},
        "search_query": result.search_query,
        "chunk_ids": [c.chunk_id for c in ctx_chunks],
        "fact_ids": sorted(set(fact_ids) | set(agg_ids)),
        "precedent_ids": prec_ids,
        "patterns_json": [{"name": n, "version": v} for n, v in patterns],
        "pattern_rows_json": {f.pattern: [r.node_id for r in f.rows] for f in sorted(result.facts, key=lambda f: f.pattern)},
        "ranking_profile": (
            f"{result.ranking_profile}@{result.ranking_profile_version}" if result.ranking_profile else None
        ),
        "timings_json": result.timings_ms,
        "degraded_json": [d.model_dump(mode="json") for d in result.degraded],
        # the degradation ladder's rung, only below full (a full trace is as it always was) and on
        # a store whose schema declares it (an older one has it in degraded_json alone)
        "rung": None if result.rung == "full" or "rung" not in store.schema.label("DecisionTrace").props
        else result.rung,
        "context_hash": result.context.hash,
        "context_text": result.context.text,
        "tokens": result.context.tokens,
        "store_revision": result.store_revision,
        "metagraph_revision": result.metagraph_revision,
        "pins_json": pins(result, lambda nid: None if (n := get(nid)) is None else dict(n.props), texts=pin_texts),
        "context_skeleton": skeleton(result, texts),
        "case_json": _case_values(result, session, store),
        "summary": (
            f"retrieval for {result.goal or 'unclear goal'} "
            f"({len(ctx_chunks)} chunks, {len(fact_ids) + len(agg_ids)} facts, {len(prec_ids)} precedent)"
        ),
    }
    node = Node(id=result.trace_id, label="DecisionTrace", props={k: v for k, v in props.items() if v is not None})
    nodes = [node]
    edges: list[Edge] = []
    if props["context_skeleton"] is not None:  # the texts the skeleton's slots name, each stored once
        for tid, text in sorted((texts or {}).items()):
            if get(tid) is None:
                nodes.append(Node(id=tid, label=PIN_LABEL, props={"sha256": full_hash(text), "text": text}))
            edges.append(Edge(src=result.trace_id, dst=tid, type=PIN_REL))

    def link(dst: str, rel: str, labels: Sequence[str] | None = None, **eprops: Any) -> None:
        target = get(dst)
        if target is None or (labels is not None and target.label not in labels):
            return
        edges.append(Edge(src=result.trace_id, dst=dst, type=rel, props=eprops))

    for name, version in patterns:
        link(pattern_node_id(name), "USED_PATTERN", ("TraversalPattern",), version=version)
    if session.customer_id:
        link(session.customer_id, subject.trace_relationship, (subject.label,))
    if result.goal:
        link(goal_node_id(result.goal), "FOR_GOAL", ("GoalType",))
    for doc in sorted({(c.document_id, c.revision) for c in ctx_chunks}):
        link(document_node_id(*doc), "CITES", ("Document",))
    saw = set(store.schema.rel("SAW_FACT").to_labels)
    for nid in sorted(set(fact_ids) | set(agg_ids) | set(prec_ids)):
        link(nid, "SAW_FACT", tuple(saw))
    return nodes, edges


def _case_values(result: RetrievalResult, session: Session, store: GraphStore) -> dict[str, Any] | None:
    """The goal's case facts as this retrieval resolved them (None without a goal or a case
    spec): what a decision on the trace keeps (:mod:`hopweave.engine.outcomes`)."""
    from hopweave.engine.rules import case_facts

    goal = next((g for g in store.goal_types() if g.name == result.goal), None) if result.goal else None
    if goal is None or goal.case is None:
        return None
    entities: dict[str, Any] = {}
    for e in result.entities:
        entities.setdefault(e.type, e.value)
    return case_facts(goal.case, result.facts, entities, session)


def record(store: GraphStore, result: RetrievalResult, session: Session, subject: SubjectSpec) -> bool:
    """Write the trace of ``result`` (idempotent for the same trace id). Returns True once
    written. Raises StoreError (and whatever the store raises; the engine types it)."""
    nodes, edges = build(result, session, store, subject)
    store.write(result.tenant_id, nodes, edges)
    return True


def redact_context(text: str, pii_values: Sequence[str] = ()) -> str:
    """The context text with everything the policy keeps out of a view without ``--pii``: the
    [Note] and [Not handled] sections (they quote the utterance) and the quoted span of every
    multi-intent part header (``[Request part i of n — Goal: "<span>"]``) replaced by
    :data:`REDACTED`, and every occurrence of one of ``pii_values`` (the PII properties of the
    nodes the trace saw, :func:`trace_pii_values`) by :data:`PII_REDACTED`."""
    blocks = text.split("\n\n")
    quoting = ("[Note]", "[Not handled]")
    out = "\n\n".join(f"{b.split(chr(10), 1)[0]}\n{REDACTED}" if b.startswith(quoting) else b for b in blocks)
    out = _PART_HEADER.sub(lambda m: f'{m.group(1)}"{REDACTED}"]', out)
    for value in sorted(set(pii_values), key=lambda v: (-len(v), v)):
        out = out.replace(value, PII_REDACTED)
    return out


def trace_pii_values(store: GraphStore, tenant_id: str, fact_ids: Sequence[Any],
                     customer_id: str | None) -> tuple[str, ...]:
    """The values of the schema's PII properties (``pii: true``, e.g. a customer's name, email,
    phone) on the nodes a trace saw: its fact nodes and its customer, read as ``tenant_id``.
    Values under :data:`MIN_PII_CHARS` characters are left out (too short to replace safely).
    Returns them sorted. Raises StoreError."""
    ids = [str(i) for i in fact_ids or ()] + ([str(customer_id)] if customer_id else [])
    values: set[str] = set()
    for nid in dict.fromkeys(ids):
        node = store.get_node(tenant_id, nid)
        if node is None or node.label not in store.schema.label_map:
            continue
        for name in store.schema.pii_properties(node.label):
            v = node.props.get(name)
            if isinstance(v, str) and len(v.strip()) >= MIN_PII_CHARS:
                values.add(v.strip())
    return tuple(sorted(values))


def redact_entities(entities: list[Any]) -> list[Any]:
    """Entity dicts with the surface text and value of utterance-sourced ones blanked."""
    out = []
    for e in entities:
        if isinstance(e, dict) and e.get("source") == "utterance":
            e = {**e, "text": REDACTED, "value": REDACTED}
        out.append(e)
    return out


def redact_props(props: dict[str, Any], pii_values: Sequence[str] = ()) -> dict[str, Any]:
    """A DecisionTrace's properties without anything derived from the utterance (for display):
    utterance, search query, utterance entities, the context's [Note] lines and part-header
    spans; and without ``pii_values`` in the context (see :func:`redact_context`)."""
    out = dict(props)
    for key in ("utterance", "search_query"):
        if out.get(key):
            out[key] = REDACTED
    if out.get("entities_json") is not None:
        out["entities_json"] = redact_entities(json_prop(out["entities_json"], []))
    for key in ("context_text", "context_skeleton"):
        if isinstance(out.get(key), str):
            out[key] = redact_context(out[key], pii_values)
    return out


# ---------------------------------------------------------------------------- reading
class RecordedTrace(BaseModel):
    """A recorded retrieval as read back from the graph."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    goal: str | None = None
    goal_version: int | None = None
    confidence: float | None = None
    as_of: str | None = None
    customer_id: str | None = None
    #: Who asked through the service (``jwt:<sub>``, ``key:<id>``, ``gateway[:<name>]``); None in process.
    caller: str | None = None
    #: When the request arrived (UTC wall clock, ISO 8601, whole seconds); the latest arrival when an identical
    #: request (same caller, inputs and answer: the same trace id) came again; None before it was kept.
    asked_at: str | None = None
    utterance: str | None = None
    session: dict[str, Any] = Field(default_factory=dict)
    entities: list[Any] = Field(default_factory=list)
    filter: dict[str, Any] = Field(default_factory=dict)
    search_query: str | None = None
    chunk_ids: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)
    precedent_ids: list[str] = Field(default_factory=list)
    patterns: list[dict[str, Any]] = Field(default_factory=list)
    ranking_profile: str | None = None
    timings_ms: dict[str, Any] = Field(default_factory=dict)
    degraded: list[Any] = Field(default_factory=list)
    context_hash: str | None = None
    context_text: str = ""
    tokens: int | None = None
    store_revision: str | None = None
    metagraph_revision: str | None = None
    #: What was seen, pinned (:mod:`hopweave.engine.pins`); empty for traces recorded before.
    pins: dict[str, Any] = Field(default_factory=dict)
    context_skeleton: str | None = None

    def redacted(self, pii_values: Sequence[str] = ()) -> "RecordedTrace":
        """Without anything derived from the utterance (a PII property): the utterance, the
        search query, utterance entities, the context's [Note] lines and part-header spans are
        blanked; ``pii_values`` (:func:`trace_pii_values`) are blanked in the context."""
        return self.model_copy(update={
            "utterance": REDACTED if self.utterance else None,
            "search_query": REDACTED if self.search_query else None,
            "entities": redact_entities(self.entities),
            "context_text": redact_context(self.context_text, pii_values),
            "context_skeleton": redact_context(self.context_skeleton, pii_values) if self.context_skeleton else None,
        })


def json_prop(v: Any, default: Any) -> Any:
    """A stored JSON property as data: a JSON string parsed (``default`` when it does not parse),
    None as ``default``, anything else as it is."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return default
    return default if v is None else v


def _iso(v: Any) -> str | None:
    """A stored instant as ISO 8601 text (None stays None)."""
    return v.isoformat() if isinstance(v, datetime) else None if v is None else str(v)


def load(store: GraphStore, tenant_id: str, trace_id: str) -> RecordedTrace:
    """The recorded retrieval ``trace_id`` of the tenant. Raises NotFoundError (also for another
    tenant's trace: tenants cannot tell whether it exists)."""
    node = store.get_node(tenant_id, trace_id)
    if node is None or node.label != "DecisionTrace" or node.props.get("kind") != KIND:
        raise NotFoundError(f"no recorded retrieval {trace_id!r} in tenant {tenant_id!r}")
    return from_props(trace_id, node.props)


def from_props(trace_id: str, p: Mapping[str, Any]) -> RecordedTrace:
    """A RecordedTrace from a retrieval trace node's properties (stored, or as :func:`build`
    makes them for a result that was not recorded)."""
    return RecordedTrace(
        trace_id=trace_id,
        goal=p.get("goal"),
        goal_version=p.get("goal_version"),
        confidence=p.get("confidence"),
        as_of=p.get("as_of"),
        customer_id=p.get("customer_id"),
        caller=p.get("caller"),
        asked_at=_iso(p.get("asked_at")),
        utterance=p.get("utterance"),
        session=json_prop(p.get("session_json"), {}),
        entities=json_prop(p.get("entities_json"), []),
        filter=json_prop(p.get("filter_json"), {}),
        search_query=p.get("search_query"),
        chunk_ids=list(p.get("chunk_ids") or []),
        fact_ids=list(p.get("fact_ids") or []),
        precedent_ids=list(p.get("precedent_ids") or []),
        patterns=json_prop(p.get("patterns_json"), []),
        ranking_profile=p.get("ranking_profile"),
        timings_ms=json_prop(p.get("timings_json"), {}),
        degraded=json_prop(p.get("degraded_json"), []),
        context_hash=p.get("context_hash"),
        context_text=p.get("context_text") or "",
        tokens=p.get("tokens"),
        store_revision=p.get("store_revision"),
        metagraph_revision=p.get("metagraph_revision"),
        pins=json_prop(p.get("pins_json"), {}),
        context_skeleton=p.get("context_skeleton"),
    )


def traces_using(
    store: GraphStore, tenant_id: str, pattern: str, version: int | None = None
) -> list[RecordedTrace]:
    """Recorded retrievals of the tenant that used ``pattern`` (at ``version`` if given), newest
    as_of first, ties by id."""
    q = internal_pattern(
        "traces_using_pattern", owner="_audit",
        seed=Seed(type="TraversalPattern", key="name", value=Literal_(value=pattern)),
        edges=[EdgeStep(type="USED_PATTERN", direction="in")], target="DecisionTrace",
        predicates=(Predicate(property="kind", op="eq", value=Literal_(value=KIND)),), returns=("kind",),
    )
    bindings = Bindings(session=Session(tenant_id=tenant_id), as_of=INTERNAL_EPOCH, timeless=True)
    res = store.run_pattern(tenant_id, q, bindings)
    out = [load(store, tenant_id, r.node_id) for r in res.rows]
    if version is not None:
        out = [t for t in out if any(p.get("name") == pattern and p.get("version") == version for p in t.patterns)]
    return sorted(out, key=lambda t: (t.asked_at is not None, t.asked_at or "", t.as_of or "", t.trace_id),
                  reverse=True)


def traces_by_caller(store: GraphStore, tenant_id: str, caller: str) -> list[RecordedTrace]:
    """Recorded retrievals of the tenant asked for by ``caller`` (a trace's ``caller``: ``jwt:<sub>``,
    ``key:<id>``, ...), the latest asked first (``asked_at``; traces without one last, newest
    as_of first), ties by id: who saw which customer's data when."""
    from hopweave.models.filters import And, Eq

    where = And(clauses=(Eq(field="kind", value=KIND), Eq(field="caller", value=caller)))
    out = [load(store, tenant_id, n.id) for n in store.find_nodes(tenant_id, "DecisionTrace", where)]
    return sorted(out, key=lambda t: (t.as_of or "", t.trace_id), reverse=True)


class TraceDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    same_context: bool
    changes: dict[str, Any] = Field(default_factory=dict)
    context_diff: list[str] = Field(default_factory=list)

    def render(self) -> str:
        if self.same_context and not self.changes:
            return f"{self.a} and {self.b}: identical context and plan"
        out = [f"--- {self.a}", f"+++ {self.b}"]
        for k, v in self.changes.items():
            if k == "filter":
                out += _filter_lines(v[0], v[1])
            elif isinstance(v, dict):
                for x in v.get("removed", []):
                    out.append(f"{k}: - {x}")
                for x in v.get("added", []):
                    out.append(f"{k}: + {x}")
                for x in v.get("changed", []):
                    out.append(f"{k}: ~ {x}")
            else:
                out.append(f"{k}: {v[0]!r} -> {v[1]!r}")
        if self.context_diff:
            out.append("context:")
            out.extend(self.context_diff)
        return "\n".join(out)


def _clauses(data: Any) -> list[str]:
    """The top-level clauses of a stored filter as infix text (``tier = Platinum``, the in-force
    clause as ``(valid_from is empty or valid_from <= ...)``)."""
    from hopweave.models.filters import And, Or, parse_filter, to_text

    if not data:
        return []
    try:
        tree = parse_filter(data)
    except Exception:  # an unreadable stored filter is shown as stored
        return [str(data)]
    parts = tree.clauses if isinstance(tree, And) else (tree,)
    return [f"({to_text(c)})" if isinstance(c, (And, Or)) else to_text(c) for c in parts]


def _filter_lines(a: Any, b: Any) -> list[str]:
    """The document filter's clauses that differ, one per line (``filter: - tier = Gold``)."""
    ca, cb = _clauses(a), _clauses(b)
    return [f"filter: - {c}" for c in ca if c not in cb] + [f"filter: + {c}" for c in cb if c not in ca]


def _set_diff(a: Sequence[Any], b: Sequence[Any]) -> dict[str, list[Any]]:
    sa, sb = set(a), set(b)
    d: dict[str, list[Any]] = {}
    if sa - sb:
        d["removed"] = sorted(sa - sb)
    if sb - sa:
        d["added"] = sorted(sb - sa)
    return d


def _chunk_names(t: RecordedTrace) -> dict[str, str]:
    return {p["chunk_id"]: f"{p.get('document') or p.get('document_id')} {p.get('revision')} "
                           f"section {p.get('section')} ({p['chunk_id']})" for p in t.pins.get("chunks", [])}


def _pinned_changes(a: RecordedTrace, b: RecordedTrace) -> dict[str, Any]:
    """Named changes from the pins: the chunks (document, revision, section), the document
    revisions cited, the facts whose rows changed, the embedding space."""
    out: dict[str, Any] = {}
    na, nb = _chunk_names(a), _chunk_names(b)
    removed, added = sorted(na[c] for c in na if c not in nb), sorted(nb[c] for c in nb if c not in na)
    named = ({"removed": removed} if removed else {}) | ({"added": added} if added else {})
    if named:
        out["chunks"] = named
    revs = _set_diff(sorted({f"{p.get('document_id')}@{p.get('revision')}" for p in a.pins.get("chunks", [])}),
                     sorted({f"{p.get('document_id')}@{p.get('revision')}" for p in b.pins.get("chunks", [])}))
    if revs:
        out["documents"] = revs
    fa, fb = a.pins.get("facts", {}), b.pins.get("facts", {})
    changed = sorted(n for n in set(fa) & set(fb) if fa[n] != fb[n])
    if changed:
        out["facts"] = {"changed": changed}
    if a.pins.get("embedding_space") != b.pins.get("embedding_space") and a.pins and b.pins:
        out["embedding_space"] = (a.pins.get("embedding_space"), b.pins.get("embedding_space"))
    return out


def diff(a: RecordedTrace, b: RecordedTrace) -> TraceDiff:
    """What changed from trace ``a`` to trace ``b``: plan (goal, patterns and versions, filter,
    profile), what was seen (chunks, facts, precedent) and the context, line by line."""
    changes: dict[str, Any] = {}
    for field in ("goal", "goal_version", "ranking_profile", "as_of", "search_query", "metagraph_revision",
                  "store_revision", "tokens"):
        va, vb = getattr(a, field), getattr(b, field)
        if va != vb:
            changes[field] = (va, vb)
    if a.filter != b.filter:
        changes["filter"] = (a.filter, b.filter)
    pa = {p["name"]: p.get("version") for p in a.patterns}
    pb = {p["name"]: p.get("version") for p in b.patterns}
    pd: dict[str, list[str]] = {}
    if set(pa) - set(pb):
        pd["removed"] = [f"{n}@{pa[n]}" for n in sorted(set(pa) - set(pb))]
    if set(pb) - set(pa):
        pd["added"] = [f"{n}@{pb[n]}" for n in sorted(set(pb) - set(pa))]
    changed = [f"{n}@{pa[n]} -> @{pb[n]}" for n in sorted(set(pa) & set(pb)) if pa[n] != pb[n]]
    if changed:
        pd["changed"] = changed
    if pd:
        changes["patterns"] = pd
    for field in ("chunk_ids", "fact_ids", "precedent_ids"):
        d = _set_diff(getattr(a, field), getattr(b, field))
        if d:
            changes[field] = d
    changes.update(_pinned_changes(a, b))
    ctx = list(
        difflib.unified_diff(a.context_text.splitlines(), b.context_text.splitlines(), a.trace_id, b.trace_id,
                             lineterm="", n=1)
    )[2:]
    return TraceDiff(a=a.trace_id, b=b.trace_id, same_context=a.context_hash == b.context_hash, changes=changes,
                     context_diff=ctx)
