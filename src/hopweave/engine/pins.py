"""What a decision trace pins, and the context rebuilt from those pins (issue 14).

A recorded retrieval pins exactly what the agent saw:

- ``pins_json.chunks``: per context chunk its id, document, revision, section, validity interval
  and a hash of its text;
- ``pins_json.facts``: per fact node seen, a hash of its properties when it was seen;
- ``pins_json.embedding_space`` (model identity) next to the pattern versions, ranking profile
  version, metagraph revision and store revision the trace already records;
- ``context_skeleton``: the context text with every policy passage replaced by a slot naming
  its chunk (``\\x1fchunk:<id>\\x1f``), and ``context_hash``.

:func:`rebuild` (``hopweave replay --as-recorded TRACE``) puts the context back together from the
pins: each slot is filled with the chunk's text fetched from the vector index by id (every
revision stays indexed, so a later policy update does not touch it), checked against the pinned
text hash, and the rebuilt text is checked against the recorded context hash. Facts are not
versioned in the graph: their lines come from the trace, and a fact whose node changed since is
reported as drifted.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hopweave.engine.result import RetrievalResult, context_hash
from hopweave.models.filters import In

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.engine.stages import DocumentIndex
    from hopweave.graph.base import GraphStore


class RecordedTrace(Protocol):
    """What a rebuild reads of a recorded trace (:class:`hopweave.engine.record.RecordedTrace`;
    a protocol, because record imports this module to write the pins)."""

    @property
    def trace_id(self) -> str: ...

    @property
    def as_of(self) -> str | None: ...

    @property
    def pins(self) -> dict[str, Any]: ...

    @property
    def context_hash(self) -> str | None: ...

    @property
    def context_skeleton(self) -> str | None: ...


SEP = "\x1f"
PinStatus = Literal["same", "changed", "missing"]


def text_hash(text: str) -> str:
    """The pinned hash of a chunk's text (sha256, 32 hex digits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def props_hash(props: dict[str, Any]) -> str:
    """The pinned hash of a fact row's properties (canonical JSON, sha256, 32 hex digits)."""
    blob = json.dumps(props, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def embedding_space(store_revision: str) -> str:
    """The embedding-space identity inside a store revision (``<metagraph>:<space>|avg_len=..``)."""
    _, _, index = store_revision.partition(":")
    return index.split("|", 1)[0]


def pins(result: RetrievalResult, props_of: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
    """The ``pins_json`` of a result: its context chunks, the fact nodes its lines came from
    (a hash of each node's properties, read with ``props_of``) and the embedding space."""
    in_ctx = [c for c in result.chunks if c.in_context]
    chunks = [{"chunk_id": c.chunk_id, "document_id": c.document_id, "document": c.document,
               "revision": c.revision, "section": c.section, "valid_from": c.metadata.get("valid_from"),
               "valid_until": c.metadata.get("valid_until"), "text_hash": text_hash(c.text)} for c in in_ctx]
    rows = {row.node_id for f in result.facts for row in f.rows}
    seen = sorted({s for ln in result.context.lines if ln.kind in ("fact", "aggregate") for s in ln.sources} & rows)
    facts: dict[str, str] = {}
    for node_id in seen:
        props = props_of(node_id)
        if props is not None:
            facts[node_id] = props_hash(props)
    return {"chunks": chunks, "facts": facts, "embedding_space": embedding_space(result.store_revision)}


def skeleton(result: RetrievalResult) -> str | None:
    """The context text with each policy passage (a chunk line quoting its whole chunk) replaced
    by its slot; None when the text already holds the slot separator (nothing is pinned then)."""
    text = result.context.text
    if SEP in text:
        return None
    by_id = {c.chunk_id: c for c in result.chunks}
    parts: list[str] = []
    cursor = 0
    for ln in result.context.lines:
        chunk = by_id.get(ln.sources[0]) if ln.kind == "chunk" and len(ln.sources) == 1 else None
        if chunk is None or not chunk.text or chunk.text not in ln.text:
            continue  # a clipped passage stays literal
        at = text.find(ln.text, cursor)
        if at < 0:
            continue
        parts += [text[cursor:at], ln.text.replace(chunk.text, f"{SEP}chunk:{chunk.chunk_id}{SEP}", 1)]
        cursor = at + len(ln.text)
    parts.append(text[cursor:])
    return "".join(parts)


class PinCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    status: PinStatus
    what: str = ""


class AsRecorded(BaseModel):
    """The context rebuilt from a trace's pins, and whether it is byte-identical."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    as_of: str | None
    recorded_hash: str
    rebuilt_hash: str
    identical: bool
    text: str
    chunks: tuple[PinCheck, ...] = ()
    facts: tuple[PinCheck, ...] = ()
    pinned: dict[str, Any] = Field(default_factory=dict)

    def render(self) -> str:
        """The human report: verdict, pins that changed since, the rebuilt context."""
        verdict = "byte-identical" if self.identical else "DIFFERS from the recording"
        out = [f"trace {self.trace_id} as recorded (as_of {self.as_of}): rebuilt context {verdict}",
               f"  sha256 recorded {self.recorded_hash}", f"  sha256 rebuilt  {self.rebuilt_hash}"]
        for kind, checks in (("chunk", self.chunks), ("fact", self.facts)):
            same = sum(1 for c in checks if c.status == "same")
            out.append(f"  {kind}s: {same}/{len(checks)} unchanged in the store")
            out += [f"    {c.status}: {c.id} {c.what}".rstrip() for c in checks if c.status != "same"]
        return "\n".join(out + ["", self.text])


def _label(pin: dict[str, Any]) -> str:
    return f"{pin.get('document') or pin.get('document_id')} {pin.get('revision')} §{pin.get('section')}"


def rebuild(trace: "RecordedTrace", index: "DocumentIndex | None", graph: "GraphStore",
            tenant_id: str) -> AsRecorded:
    """The context of ``trace`` rebuilt from its pins (see the module docstring).

    Raises:
        InputError: the trace was recorded without pins (before issue 14).
    """
    from hopweave.errors import InputError

    if trace.context_skeleton is None or not trace.pins:
        raise InputError(f"trace {trace.trace_id} has no pinned context (recorded before pins existed): "
                         "use `hopweave trace replay` to re-run it instead")
    pinned = {p["chunk_id"]: p for p in trace.pins.get("chunks", [])}
    texts: dict[str, str] = {}
    if index is not None and pinned:
        for p in index.fetch(tenant_id, In(field="chunk_id", values=tuple(sorted(pinned))), current_only=False):
            texts[str(p.get("chunk_id"))] = str(p.get("text") or "")
    checks: list[PinCheck] = []
    for cid, pin in pinned.items():
        got = texts.get(cid)
        status: PinStatus = "missing" if got is None else ("same" if text_hash(got) == pin["text_hash"] else "changed")
        checks.append(PinCheck(id=cid, status=status, what=_label(pin)))
    pieces = trace.context_skeleton.split(SEP)
    for i in range(1, len(pieces), 2):
        cid = pieces[i].removeprefix("chunk:")
        ok = texts.get(cid) is not None and text_hash(texts[cid]) == pinned.get(cid, {}).get("text_hash")
        pieces[i] = texts[cid] if ok else f"<chunk {cid} is no longer in the store as recorded>"
    text = "".join(pieces)
    return AsRecorded(trace_id=trace.trace_id, as_of=trace.as_of, recorded_hash=trace.context_hash or "",
                      rebuilt_hash=context_hash(text), identical=context_hash(text) == trace.context_hash,
                      text=text, chunks=tuple(checks), facts=tuple(_fact_checks(trace, graph, tenant_id)),
                      pinned={k: v for k, v in trace.pins.items() if k not in ("chunks", "facts")})


def _fact_checks(trace: "RecordedTrace", graph: "GraphStore", tenant_id: str) -> list[PinCheck]:
    out: list[PinCheck] = []
    for node_id, h in sorted(trace.pins.get("facts", {}).items()):
        node = graph.get_node(tenant_id, node_id)
        if node is None:
            out.append(PinCheck(id=node_id, status="missing"))
            continue
        out.append(PinCheck(id=node_id, status="same" if props_hash(dict(node.props)) == h else "changed",
                            what=node.label))
    return out


__all__ = ["AsRecorded", "PinCheck", "embedding_space", "pins", "rebuild", "skeleton", "text_hash"]
