"""What a decision trace pins, and the context rebuilt from those pins.

A recorded retrieval pins exactly what the agent saw:

- ``pins_json.chunks``: per context chunk its id, document, revision, section, validity interval,
  a hash of its text and the id of its pinned text (``text_id``);
- ``pins_json.facts``: per fact node seen, a hash of its properties when it was seen;
- ``pins_json.embedding_space`` (model identity) next to the pattern versions, ranking profile
  version, metagraph revision and store revision the trace already records;
- ``context_skeleton``: the context text with every policy passage replaced by a slot naming
  its chunk (``\x1fchunk:<id>\x1f``) and every fact, aggregate and precedent line replaced by
  a slot naming its pinned text (``\x1ftext:<PT_...>\x1f``), and ``context_hash``;
- the texts themselves: one ``:PinnedText {id, sha256, text}`` graph node per distinct text of a
  tenant (``id`` = ``PT_`` + sha256 of tenant and text, ``sha256`` = of the text alone), linked
  ``(trace)-[:PINNED]->(text)``. A text shown by many traces is stored once. Headers, blank
  lines and the ``[Note]`` lines (they quote the utterance) stay literal in the skeleton, where
  the trace's redaction applies to them.

:func:`rebuild` (``hopweave replay --as-recorded TRACE``) puts the context back together from the
pins: each slot is filled with its pinned text, checked against its hash, and the rebuilt text is
checked against the recorded context hash. Edits, re-ingestion or deletion of documents and
changes of graph nodes since cannot alter it. Traces recorded before texts were pinned (or in a
store whose schema has no ``PinnedText``) fill chunk slots from the vector index by chunk id as
before. Separately, every chunk is checked against today's index text and every fact node against
today's properties, so the report names what changed since (``hopweave audit --trace`` shows how).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hopweave.engine.result import RetrievalResult, context_hash
from hopweave.engine.section_kinds import PINNED_LINES, ROW_PINNED_LINES
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
#: The graph label and relationship of pinned texts (base schema).
PIN_LABEL = "PinnedText"
PIN_REL = "PINNED"
#: Context line kinds whose whole text is pinned (chunk lines pin their chunk's text): the
#: section kinds' ``pinned_lines`` (:mod:`hopweave.engine.section_kinds`).
PINNED_KINDS = PINNED_LINES


def text_hash(text: str) -> str:
    """The pinned hash of a chunk's text (sha256, 32 hex digits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def pin_id(tenant_id: str, text: str) -> str:
    """The id of the ``PinnedText`` node of ``text`` in ``tenant_id``: ``PT_`` + sha256 of both
    (node ids are unique in the store, so the tenant is part of the address)."""
    return "PT_" + hashlib.sha256(f"{tenant_id}\x00{text}".encode()).hexdigest()


def full_hash(text: str) -> str:
    """The sha256 of ``text`` (64 hex digits), stored on its ``PinnedText`` node."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def props_hash(props: dict[str, Any]) -> str:
    """The pinned hash of a fact row's properties (canonical JSON, sha256, 32 hex digits)."""
    blob = json.dumps(props, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def embedding_space(store_revision: str) -> str:
    """The embedding-space identity inside a store revision (``<metagraph>:<space>|avg_len=..``)."""
    _, _, index = store_revision.partition(":")
    return index.split("|", 1)[0]


def pins(result: RetrievalResult, props_of: Callable[[str], dict[str, Any] | None], *,
         texts: bool = True) -> dict[str, Any]:
    """The ``pins_json`` of a result: its context chunks (with the id of each one's pinned text
    when ``texts``), the fact nodes its lines came from (a hash of each node's properties, read
    with ``props_of``) and the embedding space."""
    in_ctx = [c for c in result.chunks if c.in_context]
    chunks = [{"chunk_id": c.chunk_id, "document_id": c.document_id, "document": c.document,
               "revision": c.revision, "section": c.section, "valid_from": c.metadata.get("valid_from"),
               "valid_until": c.metadata.get("valid_until"), "text_hash": text_hash(c.text),
               **({"text_id": pin_id(result.tenant_id, c.text)} if texts else {})} for c in in_ctx]
    rows = {row.node_id for f in result.facts for row in f.rows}
    seen = sorted({s for ln in result.context.lines if ln.kind in ROW_PINNED_LINES for s in ln.sources} & rows)
    facts: dict[str, str] = {}
    for node_id in seen:
        props = props_of(node_id)
        if props is not None:
            facts[node_id] = props_hash(props)
    return {"chunks": chunks, "facts": facts, "embedding_space": embedding_space(result.store_revision)}


def skeleton(result: RetrievalResult, texts: dict[str, str] | None = None) -> str | None:
    """The context text with each policy passage (a chunk line quoting its whole chunk) replaced
    by its chunk slot; when ``texts`` is given, every other fact, aggregate, precedent or
    (clipped) chunk line is replaced by a text slot too, and ``texts`` receives pin id -> text of
    every slot (the chunk texts included). None when the text already holds the slot separator
    (nothing is pinned then)."""
    text = result.context.text
    if SEP in text:
        return None
    by_id = {c.chunk_id: c for c in result.chunks}
    parts: list[str] = []
    cursor = 0
    for ln in result.context.lines:
        if ln.kind not in PINNED_KINDS or not ln.text:
            continue
        chunk = by_id.get(ln.sources[0]) if ln.kind == "chunk" and len(ln.sources) == 1 else None
        whole = chunk is not None and bool(chunk.text) and chunk.text in ln.text
        at = text.find(ln.text, cursor) if whole or texts is not None else -1
        if at < 0:
            continue  # without pinned texts only whole passages get a slot
        if chunk is not None and whole:
            slotted = ln.text.replace(chunk.text, f"{SEP}chunk:{chunk.chunk_id}{SEP}", 1)
            if texts is not None:
                texts[pin_id(result.tenant_id, chunk.text)] = chunk.text
        elif texts is not None:
            tid = pin_id(result.tenant_id, ln.text)
            texts[tid] = ln.text
            slotted = f"{SEP}text:{tid}{SEP}"
        else:  # pragma: no cover - excluded by ``at`` above
            continue
        parts += [text[cursor:at], slotted]
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
    #: slots whose text could not be found (0 for a trace with its pinned texts in the store)
    lost: int = 0

    def render(self) -> str:
        """The human report: verdict, pins that changed since, the rebuilt context."""
        verdict = "byte-identical" if self.identical else "DIFFERS from the recording"
        out = [f"trace {self.trace_id} as recorded (as_of {self.as_of}): rebuilt context {verdict}",
               f"  sha256 recorded {self.recorded_hash}", f"  sha256 rebuilt  {self.rebuilt_hash}"]
        for kind, checks in (("chunk", self.chunks), ("fact", self.facts)):
            same = sum(1 for c in checks if c.status == "same")
            out.append(f"  {kind}s: {same}/{len(checks)} unchanged in the store today")
            out += [f"    {c.status}: {c.id} {c.what}".rstrip() for c in checks if c.status != "same"]
        if any(c.status != "same" for c in self.chunks + self.facts):
            out.append(f"  the text below is as seen; today's differences: hopweave audit --trace {self.trace_id}")
        if self.lost:
            out.append(f"  {self.lost} pinned text(s) are no longer in the store")
        return "\n".join(out + ["", self.text])


def _label(pin: dict[str, Any]) -> str:
    return f"{pin.get('document') or pin.get('document_id')} {pin.get('revision')} §{pin.get('section')}"


def pinned_texts(graph: "GraphStore", tenant_id: str, ids: "Iterable[str]") -> dict[str, str]:
    """The pinned texts of ``ids`` in ``tenant_id`` (pin id -> text); a text whose node is gone,
    or whose content no longer hashes to its address, is left out."""
    out: dict[str, str] = {}
    for tid in sorted(set(ids)):
        node = graph.get_node(tenant_id, tid)
        if node is None or node.label != PIN_LABEL:
            continue
        text = node.props.get("text")
        if isinstance(text, str) and pin_id(tenant_id, text) == tid:
            out[tid] = text
    return out


def slots(skeleton_text: str) -> list[str]:
    """The slots of a skeleton in order (``chunk:<id>`` or ``text:<PT_...>``)."""
    return skeleton_text.split(SEP)[1::2]


def rebuild(trace: "RecordedTrace", index: "DocumentIndex | None", graph: "GraphStore",
            tenant_id: str) -> AsRecorded:
    """The context of ``trace`` rebuilt from its pins (see the module docstring).

    Raises:
        InputError: the trace was recorded without pins.
        StoreError: the vector index cannot be read (it is asked for today's chunk texts).
    """
    from hopweave.errors import InputError

    if trace.context_skeleton is None or not trace.pins:
        raise InputError(f"trace {trace.trace_id} has no pinned context (recorded before pins existed): "
                         "use `hopweave trace replay` to re-run it instead")
    pinned = {p["chunk_id"]: p for p in trace.pins.get("chunks", [])}
    today: dict[str, str] = {}
    if index is not None and pinned:
        for p in index.fetch(tenant_id, In(field="chunk_id", values=tuple(sorted(pinned))), current_only=False):
            today[str(p.get("chunk_id"))] = str(p.get("text") or "")
    pieces = trace.context_skeleton.split(SEP)
    wanted = [p["text_id"] for p in pinned.values() if p.get("text_id")]
    wanted += [x.removeprefix("text:") for x in pieces[1::2] if x.startswith("text:")]
    kept = pinned_texts(graph, tenant_id, wanted)
    checks: list[PinCheck] = []
    for cid, pin in pinned.items():
        got = today.get(cid)
        status: PinStatus = "missing" if got is None else ("same" if text_hash(got) == pin["text_hash"] else "changed")
        checks.append(PinCheck(id=cid, status=status, what=_label(pin)))
    lost = 0
    for i in range(1, len(pieces), 2):
        kind, _, ref = pieces[i].partition(":")
        seen = _seen_chunk(pinned.get(ref, {}), kept, today) if kind == "chunk" else kept.get(ref)
        if seen is None:
            lost += 1
            seen = (f"<chunk {ref} is no longer in the store as recorded>" if kind == "chunk"
                    else f"<pinned text {ref} is no longer in the store>")
        pieces[i] = seen
    text = "".join(pieces)
    return AsRecorded(trace_id=trace.trace_id, as_of=trace.as_of, recorded_hash=trace.context_hash or "",
                      rebuilt_hash=context_hash(text), identical=context_hash(text) == trace.context_hash,
                      text=text, chunks=tuple(checks), facts=tuple(_fact_checks(trace, graph, tenant_id)),
                      pinned={k: v for k, v in trace.pins.items() if k not in ("chunks", "facts")},
                      lost=lost)


def _seen_chunk(pin: dict[str, Any], kept: dict[str, str], today: dict[str, str]) -> str | None:
    """The text a chunk slot showed: its pinned text, else (a trace without pinned texts) the
    index's text if it still hashes to the pin; None when neither is left."""
    for text in (kept.get(pin.get("text_id") or ""), today.get(pin.get("chunk_id") or "")):
        if text is not None and text_hash(text) == pin.get("text_hash"):
            return text
    return None


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


__all__ = ["PIN_LABEL", "PIN_REL", "AsRecorded", "PinCheck", "embedding_space", "full_hash", "pin_id", "pinned_texts",
           "pins", "rebuild", "skeleton", "slots", "text_hash"]
