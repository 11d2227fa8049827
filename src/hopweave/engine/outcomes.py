"""Recording what was decided on a retrieval: decided traces (living episodic memory).

:meth:`OutcomeRecorder.record` takes a recorded retrieval (``:DecisionTrace {kind: "retrieval"}``),
the session, the outcome and its provenance, checks it through the memory-write gates and writes:

- the **decided trace** ``DEC_<hash of tenant and trace id>``: a ``:DecisionTrace`` of the kind the
  goal's ``outcomes.precedent.kind`` names (``decision`` without a precedent link) with the
  current outcome, who decided, the rationale, the cited ids, the case facts the goal keeps
  (``outcomes.keep``, read from the retrieval's ``case_json``), a ``summary`` (the goal's
  template, kept names as words) and a ``text`` (the goal's name as words, the summary, the
  rationale: what the precedent ranking compares with the case);
  ``timestamp`` and ``recorded_at`` are the first decision's instant, so a pattern at an earlier
  ``as_of`` (and every replay of an earlier trace) never sees it (docs/engine.md, "Time");
- one **version** node per distinct outcome, ``DEC_<hash>_v<N>`` (``kind: outcome_version``,
  immutable, never precedent): the audit keeps every version;
- edges ``(decided)-[:DECIDES]->(retrieval)``, ``(decided)-[:HAS_VERSION]->(version)``,
  ``(version)-[:DECIDES]->(retrieval)``, ``(decided)-[:<subject relationship>]->(subject)``,
  ``(decided)-[:CITED]->(node)`` per cited graph node, and the goal's precedent link: from every
  node reached from the session's subject along ``outcomes.precedent.path``, an edge
  ``outcomes.precedent.relationship`` to the decided trace (recorded at the decision's instant).

Gates, each a typed error with nothing written:

- **tenant and identity**: the trace is read tenant-scoped (another tenant's trace is
  NotFoundError: it cannot tell whether it exists); a trace of another customer than the
  session's is IdentityError (the session decides, never the request body);
- **schema**: the outcome is in the goal's vocabulary (UnknownOutcomeError), the goal declares
  outcomes (OutcomeError), every cited id is a node the tenant sees or a chunk the trace saw
  (OutcomeError); the write itself is schema-validated by the store (SchemaError);
- **time**: the outcome's instant is not before the retrieval's ``as_of`` nor before the
  previous version (OutcomeTimeError);
- **provenance**: ``decided_by``, ``rationale`` and ``cited`` are stored on every version;
- **PII policy**: ``decided_by`` and ``rationale`` must not contain a PII property value of the
  session's subject (its name, e-mail, ...: OutcomeError naming the field and the property).

Idempotent: the same outcome (outcome, decided_by, rationale, cited) again returns the current
version and writes nothing. Amendable: a different one is version N+1; the decided trace shows
the latest, the version nodes keep them all (:meth:`OutcomeRecorder.history`).

Writes go through a group commit (:class:`~hopweave.engine.trace_writer.GroupCommitter`): calls
from many threads share one store write (one journal record and fsync on the embedded store).
Calls for one trace are serialised in this process; two processes amending one trace at the
same moment may both write version N+1 (the later write wins that version's node).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from hopweave.engine.boundary import check_as_of, check_session
from hopweave.engine.trace_writer import GroupCommitter
from hopweave.errors import (
    IdentityError,
    InputError,
    NotFoundError,
    OutcomeError,
    OutcomeTimeError,
    StoreBusyError,
    UnknownOutcomeError,
)
from hopweave.graph.base import Edge, GraphStore, Node
from hopweave.models.common import Bindings, Session, to_datetime
from hopweave.models.domain import SubjectSpec
from hopweave.models.internal_patterns import internal_pattern
from hopweave.models.metagraph import EdgeStep, GoalType, Literal_, Seed
from hopweave.models.outcomes import OutcomeSpec, as_words, goal_words

__all__ = ["DECIDED_PREFIX", "OutcomeRecord", "OutcomeRecorder", "VERSION_KIND", "commit", "decided_id"]

#: The id prefix of decided traces, and the kind of their immutable version nodes.
DECIDED_PREFIX = "DEC_"
VERSION_KIND = "outcome_version"
RETRIEVAL_KIND = "retrieval"
#: Input limits.
MAX_ID_CHARS = 256
MAX_DECIDED_BY_CHARS = 200
MAX_RATIONALE_CHARS = 4000
MAX_CITED = 200
#: Shortest PII value the PII policy looks for in free text (shorter ones match by accident).
MIN_PII_CHARS = 3
#: Longest wait for a write to be durable.
WRITE_TIMEOUT_S = 30.0
_STRIPES = 64


class OutcomeRecord(BaseModel):
    """What :meth:`OutcomeRecorder.record` did: the decided trace and its current version.
    ``created`` is False when the same outcome was already recorded (nothing was written)."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    decided_id: str
    version_id: str
    version: int
    outcome: str
    decided_at: datetime
    decided_by: str | None = None
    rationale: str | None = None
    cited: tuple[str, ...] = ()
    kept: dict[str, Any] = {}
    created: bool = True


def decided_id(tenant_id: str, trace_id: str) -> str:
    """The decided trace's id for ``trace_id`` of ``tenant_id`` (deterministic)."""
    return DECIDED_PREFIX + hashlib.sha256(f"{tenant_id}\0{trace_id}".encode()).hexdigest()[:20]


@dataclass(frozen=True)
class _Checked:
    session: Session
    trace: Node
    goal: GoalType
    spec: OutcomeSpec
    outcome: str
    decided_by: str | None
    rationale: str | None
    cited: tuple[str, ...]
    instant: datetime
    content_hash: str


class OutcomeRecorder:
    """Records outcomes on ``graph`` (see the module docstring).

    Args:
        graph: the store the traces live in.
        goals: returns the goal types by name (the engine's cached metagraph).
        subject: returns the domain's subject spec for a tenant (label and trace relationship).
        committer: the group commit the writes go through (its own when None).
    """

    def __init__(self, graph: GraphStore, goals: Callable[[], Mapping[str, GoalType]],
                 subject: Callable[[str], SubjectSpec], committer: GroupCommitter | None = None) -> None:
        self.graph = graph
        self._goals = goals
        self._subject = subject
        self._own = committer is None
        self.committer = committer or GroupCommitter(graph)
        self._locks = [threading.Lock() for _ in range(_STRIPES)]

    def close(self) -> None:
        """Write what is queued and stop the writer thread (when the committer is this object's)."""
        if self._own:
            self.committer.close()

    # ---- the write --------------------------------------------------------------------------
    def record(self, trace_id: str, *, session: Any, outcome: str, decided_by: str | None = None,
               rationale: str | None = None, cited: Iterable[str] = (), as_of: Any = None) -> OutcomeRecord:
        """Record what was decided on a recorded retrieval, for the session's customer (``Engine.
        record_outcome``): gated, idempotent, amendable (each version kept).

        Args:
            trace_id: the retrieval's trace. session: who decided (the trace's customer).
            outcome: one of the goal's outcomes. decided_by, rationale: who and why.
            cited: ids the decision cites (of the trace). as_of: when it was decided (default
                now, UTC).

        Returns:
            The OutcomeRecord (the existing one, ``created=False``, for a repeat).

        Raises:
            NotFoundError, IdentityError, TenantError, UnknownOutcomeError, OutcomeTimeError,
            OutcomeError, InputError, SchemaError or the store's errors; nothing is written then.
        """
        sess = check_session(session)
        tid = _text("trace_id", trace_id, MAX_ID_CHARS, required=True)
        assert tid is not None
        lock = self._locks[hash((sess.tenant_id, tid)) % _STRIPES]
        with lock:
            c = self._check(sess, tid, outcome, decided_by, rationale, cited, as_of)
            dec = decided_id(sess.tenant_id, tid)
            current = self.graph.get_node(sess.tenant_id, dec)
            if current is not None and current.props.get("outcome_hash") == c.content_hash:
                return _record_of(current, tid, created=False, keep=c.spec.keep)
            version = int(current.props.get("outcome_version") or 0) + 1 if current is not None else 1
            if current is not None:
                before = to_datetime(str(current.props.get("decided_at")))
                if before is not None and c.instant < before:
                    raise OutcomeTimeError(
                        f"as_of {c.instant.isoformat()} is before version {version - 1} of this outcome "
                        f"({before.isoformat()}); an amendment is dated at or after what it amends")
            nodes, edges = self._build(c, dec, version, current)
            commit(self.committer, sess.tenant_id, nodes, edges)
            return _record_of(nodes[0], tid, created=True, keep=c.spec.keep)

    def history(self, trace_id: str, *, session: Any) -> list[OutcomeRecord]:
        """Every recorded version of the outcome on ``trace_id`` (oldest first), for the
        session's customer. Raises NotFoundError / IdentityError as :meth:`record`."""
        sess = check_session(session)
        tid = _text("trace_id", trace_id, MAX_ID_CHARS, required=True)
        assert tid is not None
        trace = self._trace(sess, tid)
        goal = self._goals().get(str(trace.props.get("goal") or ""))
        keep = goal.outcomes.keep if goal is not None and goal.outcomes is not None else {}
        dec = decided_id(sess.tenant_id, tid)
        current = self.graph.get_node(sess.tenant_id, dec)
        if current is None:
            return []
        out = []
        for n in range(1, int(current.props.get("outcome_version") or 0) + 1):
            node = self.graph.get_node(sess.tenant_id, f"{dec}_v{n}")
            if node is not None:
                out.append(_record_of(node, tid, created=True, keep=keep))
        return out

    # ---- gates ------------------------------------------------------------------------------
    def _trace(self, sess: Session, trace_id: str) -> Node:
        node = self.graph.get_node(sess.tenant_id, trace_id)
        refresh = getattr(self.graph, "refresh", None)
        if node is None and callable(refresh):
            refresh()  # recorded by another process since this one last looked
            node = self.graph.get_node(sess.tenant_id, trace_id)
        if node is None or node.label != "DecisionTrace" or node.props.get("kind") != RETRIEVAL_KIND:
            raise NotFoundError(f"no recorded retrieval {trace_id!r} in tenant {sess.tenant_id!r}; "
                                "record an outcome on the trace_id a retrieval returned")
        if not sess.customer_id:
            raise IdentityError("the session has no customer_id: an outcome is recorded for the session's own "
                                "customer; authenticate the customer first")
        if node.props.get("customer_id") != sess.customer_id:
            raise IdentityError(f"trace {trace_id!r} is not a retrieval for the session's customer; an outcome "
                                "can only be recorded on the session's own customer's traces")
        return node

    def _check(self, sess: Session, trace_id: str, outcome: Any, decided_by: Any, rationale: Any,
               cited: Any, as_of: Any) -> _Checked:
        if not isinstance(outcome, str) or not outcome:
            raise OutcomeError(f"outcome must be a non-empty string, not {type(outcome).__name__}")
        by = _text("decided_by", decided_by, MAX_DECIDED_BY_CHARS)
        why = _text("rationale", rationale, MAX_RATIONALE_CHARS)
        ids = _cited(cited)
        instant, _ = check_as_of(as_of)
        trace = self._trace(sess, trace_id)
        goal = self._goals().get(str(trace.props.get("goal") or ""))
        if goal is None or goal.outcomes is None:
            raise OutcomeError(f"goal {trace.props.get('goal')!r} of trace {trace_id!r} declares no outcomes; "
                               "add an `outcomes:` vocabulary to the goal in its pack")
        spec = goal.outcomes
        if outcome not in spec.vocabulary:
            raise UnknownOutcomeError(f"outcome {outcome!r} is not one of goal {goal.name}'s outcomes "
                                      f"{list(spec.vocabulary)}")
        at = to_datetime(str(trace.props.get("as_of") or trace.props.get("timestamp")))
        if at is not None and instant < at:
            raise OutcomeTimeError(f"as_of {instant.isoformat()} is before the retrieval it decides "
                                   f"({at.isoformat()}); date the outcome at or after the trace")
        seen = set(trace.props.get("chunk_ids") or ())
        for cid in ids:
            if cid not in seen and self.graph.get_node(sess.tenant_id, cid) is None:
                raise OutcomeError(f"cited id {cid!r} is neither a node of tenant {sess.tenant_id!r} nor a chunk "
                                   f"trace {trace_id!r} saw; cite the provenance ids of the context lines")
        self._pii_policy(sess, {"decided_by": by, "rationale": why})
        content = json.dumps({"outcome": outcome, "decided_by": by, "rationale": why, "cited": sorted(ids)},
                             sort_keys=True, separators=(",", ":"))
        return _Checked(sess, trace, goal, spec, outcome, by, why, ids, instant,
                        hashlib.sha256(content.encode()).hexdigest()[:32])

    def _pii_policy(self, sess: Session, texts: Mapping[str, str | None]) -> None:
        """Refuse free text quoting a PII property value of the session's subject."""
        subject = self._subject(sess.tenant_id)
        node = self.graph.get_node(sess.tenant_id, str(sess.customer_id))
        if node is None or subject.label not in self.graph.schema.label_map:
            return
        for prop in sorted(self.graph.schema.pii_properties(subject.label)):
            value = node.props.get(prop)
            if not isinstance(value, str) or len(value.strip()) < MIN_PII_CHARS:
                continue
            for field, text in texts.items():
                if text and value.strip().casefold() in text.casefold():
                    raise OutcomeError(f"{field} contains the customer's {prop} (a PII property); "
                                       "refer to the customer by the session, not by personal data")

    # ---- nodes and edges --------------------------------------------------------------------
    def _build(self, c: _Checked, dec: str, version: int, current: Node | None) -> tuple[list[Node], list[Edge]]:
        tenant, trace_id = c.session.tenant_id, c.trace.id
        first = (to_datetime(str(current.props.get("timestamp"))) if current is not None else None) or c.instant
        kept = _kept(c.spec, c.trace.props.get("case_json"))
        # the texts read the kept values as words (a plan `Unlimited_Plus` as "Unlimited Plus"), as
        # shipped precedent texts do: the precedent ranking compares them with the case's words
        values = {**{k: as_words(v) for k, v in kept.items()}, "outcome": c.outcome, "decided_by": c.decided_by}
        summary = c.spec.render_summary(values)
        if c.decided_by:
            summary += f" (decided by {c.decided_by})"
        provenance: dict[str, Any] = {
            "goal": c.goal.name, "case_type": c.goal.name, "customer_id": c.session.customer_id,
            "retrieval_id": trace_id, "outcome": c.outcome, "outcome_hash": c.content_hash,
            "outcome_version": version, "decided_by": c.decided_by, "approved_by": c.decided_by,
            "rationale": c.rationale, "cited": list(c.cited), "decided_at": c.instant,
        }
        text = f"{goal_words(c.goal.name)} case: {summary}." + (f" {c.rationale}" if c.rationale else "")
        kind = c.spec.precedent.kind if c.spec.precedent is not None else "decision"
        # the decided trace shows the latest version: a field the amendment leaves out is removed (None)
        decided = Node(dec, "DecisionTrace", {
            **{k: (None if v == [] else v) for k, v in provenance.items()}, **kept, "kind": kind,
            "timestamp": first, "recorded_at": first, "text": text, "summary": summary})
        vid = f"{dec}_v{version}"
        ver = Node(vid, "DecisionTrace", _clean({
            **provenance, **kept, "kind": VERSION_KIND, "timestamp": c.instant, "recorded_at": c.instant,
            "summary": f"version {version}: {summary}"}))
        edges = [Edge(dec, trace_id, "DECIDES"), Edge(dec, vid, "HAS_VERSION", {"recorded_at": c.instant}),
                 Edge(vid, trace_id, "DECIDES")]
        subject = self._subject(tenant)
        customer = self.graph.get_node(tenant, str(c.session.customer_id))
        if customer is not None and customer.label == subject.label:
            edges.append(Edge(dec, customer.id, subject.trace_relationship))
        edges += [Edge(dec, cid, "CITED") for cid in c.cited if self.graph.get_node(tenant, cid) is not None]
        if current is None and c.spec.precedent is not None:
            edges += [Edge(src, dec, c.spec.precedent.relationship, {"recorded_at": first})
                      for src in self._link_sources(c.session, c.spec, c.instant)]
        return [decided, ver], edges

    def _link_sources(self, sess: Session, spec: OutcomeSpec, instant: datetime) -> list[str]:
        """The nodes reached from the session's subject along the precedent link's path (known at
        the decision's instant) that may hold the link's relationship."""
        assert spec.precedent is not None
        schema = self.graph.schema
        subject = self._subject(sess.tenant_id)
        last = spec.precedent.path[-1]
        rel = schema.rel(last.type)
        ends = rel.to_labels if last.direction == "out" else rel.from_labels
        sources = set(schema.rel(spec.precedent.relationship).from_labels)
        targets = [lab for lab in ends if lab in sources]
        if not targets:
            return []
        q = internal_pattern(
            "precedent_link_sources", owner="_outcomes",
            seed=Seed(type=subject.label, key="id", value=Literal_(value=str(sess.customer_id))),
            edges=[EdgeStep(type=s.type, direction=s.direction) for s in spec.precedent.path],
            target=targets[0], limit=100, budget_ms=1_000,
        )
        res = self.graph.run_pattern(sess.tenant_id, q, Bindings(session=sess, as_of=instant))
        return [r.node_id for r in res.rows]


def commit(committer: GroupCommitter, tenant_id: str, nodes: list[Node], edges: list[Edge]) -> None:
    """Write ``nodes`` and ``edges`` through the group commit and wait until they are durable
    (at most WRITE_TIMEOUT_S). Raises what the store raised (typed), or StoreBusyError when the
    write did not finish in time (it may still be written: the ids are idempotent)."""
    fut = committer.submit(tenant_id, lambda: (nodes, edges), time.perf_counter() + WRITE_TIMEOUT_S)
    try:
        fut.result(timeout=WRITE_TIMEOUT_S)
    except FutureTimeout:
        raise StoreBusyError(f"the memory write was not durable within {WRITE_TIMEOUT_S:g}s; retry "
                             "(the same write again is idempotent)") from None


def _text(name: str, value: Any, limit: int, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise OutcomeError(f"{name} must be a non-empty string, not {type(value).__name__}")
    if len(value) > limit:
        raise OutcomeError(f"{name} is {len(value):,} characters; at most {limit:,} are accepted")
    if "\x00" in value:
        raise OutcomeError(f"{name} contains a NUL character; send plain text")
    return value


def _cited(cited: Any) -> tuple[str, ...]:
    if isinstance(cited, (str, bytes)) or not isinstance(cited, Iterable):
        raise OutcomeError("cited must be a list of provenance ids (node or chunk ids), not a single string")
    ids = list(cited)
    if len(ids) > MAX_CITED:
        raise OutcomeError(f"cited has {len(ids)} ids; at most {MAX_CITED} are accepted")
    out: list[str] = []
    for x in ids:
        out.append(_text("a cited id", x, MAX_ID_CHARS, required=True) or "")
    return tuple(sorted(set(out)))


def _kept(spec: OutcomeSpec, raw: Any) -> dict[str, Any]:
    """The kept case facts (``{property: value}``) from a retrieval's ``case_json`` (absent
    values are left out)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    case = raw if isinstance(raw, dict) else {}
    return {prop: case[fact] for prop, fact in sorted(spec.keep.items()) if case.get(fact) is not None}


def _clean(props: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if v is not None and v != []}


def _record_of(node: Node, trace_id: str, *, created: bool, keep: Iterable[str] = ()) -> OutcomeRecord:
    p = node.props
    at = to_datetime(str(p.get("decided_at")))
    if at is None:  # pragma: no cover - every stored version has its instant
        raise InputError(f"{node.id} has no decided_at")
    version = int(p.get("outcome_version") or 1)
    base = node.id.rsplit("_v", 1)[0] if p.get("kind") == VERSION_KIND else node.id
    return OutcomeRecord(
        trace_id=trace_id, decided_id=base, version_id=f"{base}_v{version}", version=version,
        outcome=str(p.get("outcome")), decided_at=at, decided_by=p.get("decided_by"),
        rationale=p.get("rationale"), cited=tuple(p.get("cited") or ()),
        kept={k: p[k] for k in sorted(keep) if k in p}, created=created)
