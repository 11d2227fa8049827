"""``hopweave inspect trace --html``: a decision trace's subgraph as one self-contained HTML page.

:func:`collect` reads the subgraph through the tenant-scoped GraphStore API (any backend): the
trace, the patterns it used (with the version it ran), the facts and precedent it saw, the
documents it cited and the chunk ids that reached the context, its goal, customer, outcome and
steps. :func:`layout` places it by stage, left to right (request and goal, patterns, facts, search,
chunks, documents, precedent, procedure, the assembled context), one column each, on a fixed grid
computed here (no force simulation, no random seed, no clock), repeats of one label and caption
drawn as one group box; :func:`render` writes that as inline SVG with a legend and a property
table (a group's members in an expandable ``<details>``); a few lines of inline JS only highlight
the table row of a clicked box. No external resource is referenced: the page opens
offline. PII properties are never written (the same rule as pattern rows).
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from hopweave.engine.record import redact_props, trace_pii_values
from hopweave.errors import NotFoundError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, Session
from hopweave.models.internal_patterns import INTERNAL_EPOCH, internal_pattern
from hopweave.models.metagraph import EdgeStep, Literal_, Seed

#: Colours of the labels the engine writes itself (every domain has them).
BASE_COLORS: dict[str, str] = {
    "DecisionTrace": "#C990C0",
    "TraversalPattern": "#FFC454",
    "GoalType": "#F79767",
    "Document": "#ECB5C9",
    "Chunk": "#B0D7F0",
    # the base schema's procedural and episodic labels (cypher/browser/style.grass)
    "TraceStep": "#E5C7E0",
    "Workflow": "#FFE081",
    "Rule": "#FFE081",
    "Heuristic": "#FFE081",
    "CaseType": "#F79767",
    "CaseState": "#F79767",
}
#: A neutral palette for a domain's labels that its pack gives no colour (``domain.styles``):
#: a label always gets the same one (by a hash of its name).
NEUTRAL_PALETTE: tuple[str, ...] = ("#4C8EDA", "#57C7E3", "#8DCC93", "#D9C8AE", "#F16667", "#6DCE9E",
                                    "#FFE081", "#A5ABB6", "#E5C7E0", "#C9A27E")
DEFAULT_COLOR = "#A5ABB6"
#: Order of groups around the trace: engine labels first, then the domain's, alphabetically.
GROUP_ORDER = ("GoalType", "TraversalPattern")
#: Caption properties tried in order (the first one a node has); else its id.
_CAPTION_KEYS = ("name", "document_id", "chunk_id", "type", "result", "idx")
_TAIL_GROUPS = ("DecisionTrace", "Document", "Chunk")


def colors(styles: Mapping[str, str] | None = None) -> dict[str, str]:
    """Label -> colour: the engine's base labels, then the domain's ``styles``."""
    return {**BASE_COLORS, **dict(styles or {})}


def color_of(label: str, palette: Mapping[str, str]) -> str:
    """A label's colour: from ``palette``, else a stable neutral one."""
    if label in palette:
        return palette[label]
    digest = hashlib.sha256(label.encode()).digest()
    return NEUTRAL_PALETTE[digest[0] % len(NEUTRAL_PALETTE)]


@dataclass
class GNode:
    id: str
    label: str
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def caption(self) -> str:
        if self.label == "TraversalPattern" and "version_used" in self.props:
            return f"{self.props.get('name', self.id)} v{self.props['version_used']}"
        value = next((self.props[k] for k in _CAPTION_KEYS if self.props.get(k) not in (None, "")), self.id)
        return str(value)[:28]


@dataclass
class GEdge:
    src: str
    dst: str
    type: str
    caption: str = ""


@dataclass
class TraceGraph:
    trace: GNode
    nodes: list[GNode]
    edges: list[GEdge]


def _walk(
    store: GraphStore, tenant: str, trace_id: str, rel: str, direction: str, target: str
) -> list[GNode]:
    p = internal_pattern(
        f"inspect_{rel.lower()}", owner="_inspect", question=f"trace {rel} {target}",
        seed=Seed(type="DecisionTrace", key="id", value=Literal_(value=trace_id)),
        edges=[EdgeStep(type=rel, direction=direction)],  # type: ignore[arg-type]
        target=target,
    )
    res = store.run_pattern(tenant, p, Bindings(session=Session(tenant_id=tenant), as_of=INTERNAL_EPOCH,
                                                         timeless=True))
    return [GNode(r.node_id, r.label, dict(r.properties)) for r in res.rows]


def collect(store: GraphStore, tenant: str, trace_id: str) -> TraceGraph:
    """The trace's subgraph, visible to ``tenant``. Raises NotFoundError when the tenant has no
    DecisionTrace ``trace_id``."""
    node = store.get_node(tenant, trace_id)
    if node is None or node.label != "DecisionTrace":
        raise NotFoundError(
            f"no DecisionTrace {trace_id!r} in tenant {tenant!r} (check --tenant and --store)"
        )
    schema = store.schema
    pii = schema.pii_properties("DecisionTrace")
    # nothing derived from the utterance (search query, notes, part headers), no PII values seen
    seen_pii = trace_pii_values(store, tenant, list(node.props.get("fact_ids") or []),
                                node.props.get("customer_id"))
    shown = redact_props(node.props, seen_pii)
    trace = GNode(node.id, node.label, {k: v for k, v in shown.items() if k not in pii})
    trace.props["id"] = node.id
    versions = _pattern_versions(trace.props.get("patterns_json"))
    nodes: dict[str, GNode] = {}
    edges: list[GEdge] = []
    # the pinned texts are the context's own lines (shown as the context, not as graph nodes)
    outgoing = sorted(r.name for r in schema.relationships if "DecisionTrace" in r.from_labels and r.name != "PINNED")
    for rel in outgoing:
        for target in schema.rel(rel).to_labels:
            for g in _walk(store, tenant, trace_id, rel, "out", target):
                caption = rel
                if rel == "USED_PATTERN" and g.props.get("name") in versions:
                    g.props["version_used"] = versions[g.props["name"]]
                    caption = f"USED_PATTERN v{versions[g.props['name']]}"
                nodes.setdefault(g.id, g)
                edges.append(GEdge(trace.id, g.id, rel, caption))
    incoming = sorted(r.name for r in schema.relationships if "DecisionTrace" in r.to_labels
                      and "DecisionTrace" not in r.from_labels)
    for rel in incoming:  # e.g. precedent: the profile that led to it
        for source in schema.rel(rel).from_labels:
            for g in _walk(store, tenant, trace_id, rel, "in", source):
                nodes.setdefault(g.id, g)
                edges.append(GEdge(g.id, trace.id, rel, rel))
    pinned = _pinned_chunks(trace.props.get("pins_json"))
    for cid in trace.props.get("chunk_ids") or []:
        props = {"chunk_id": cid, "name": cid, **pinned.get(str(cid), {})}
        if "document_id" in props:
            section = f" §{props['section']}" if props.get("section") else ""
            props["name"] = f"{props['document_id']}{section}"
        nodes.setdefault(f"chunk:{cid}", GNode(f"chunk:{cid}", "Chunk", props))
        edges.append(GEdge(trace.id, f"chunk:{cid}", "SAW_CHUNK", "SAW_CHUNK"))
    nodes.pop(trace.id, None)
    ordered = sorted(nodes.values(), key=lambda n: (_group_rank(n.label), n.id))
    return TraceGraph(trace, ordered, sorted(edges, key=lambda e: (e.src, e.type, e.dst)))


def _pinned_chunks(raw: Any) -> dict[str, dict[str, Any]]:
    """Chunk id -> the document id, revision and section the trace's pins name for it ({} when
    the trace pinned none)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    chunks = raw.get("chunks") if isinstance(raw, dict) else None
    if not isinstance(chunks, list):
        return {}
    keys = ("document_id", "revision", "section")
    return {str(c["chunk_id"]): {k: c[k] for k in keys if c.get(k) not in (None, "")}
            for c in chunks if isinstance(c, dict) and c.get("chunk_id")}


def _pattern_versions(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, list):
        return {}
    return {str(p.get("name")): p.get("version") for p in raw if isinstance(p, dict)}


def _group_rank(label: str) -> tuple[int, str]:
    if label in GROUP_ORDER:
        return (GROUP_ORDER.index(label), "")
    if label in _TAIL_GROUPS:
        return (len(GROUP_ORDER) + 2 + _TAIL_GROUPS.index(label), "")
    return (len(GROUP_ORDER) + 1, label)


# ---- layout: stages as columns, left to right ---------------------------------------------------
#: The stages an auditor reads, left to right: (key, heading).
STAGES: tuple[tuple[str, str], ...] = (
    ("request", "Request & goal"),
    ("patterns", "Patterns"),
    ("facts", "Facts"),
    ("search", "Search"),
    ("chunks", "Chunks"),
    ("documents", "Documents"),
    ("precedent", "Precedent"),
    ("procedure", "Procedure"),
    ("context", "Assembled context"),
)
#: Labels of the base schema's procedural memory (the procedure stage).
PROCEDURE_LABELS = frozenset({"Rule", "Heuristic", "Workflow", "CaseType", "CaseState", "Step", "TraceStep"})
#: Trace properties shown on the search node and on the assembled-context node instead of the trace.
SEARCH_KEYS = ("search_query", "ranking_profile", "filter_json")
CONTEXT_KEYS = ("context_text", "context_skeleton", "context_hash", "tokens", "confidence")
#: A column holding at least this many nodes of one label and caption draws them as one group node.
GROUP_MIN = 3
MARGIN, HEAD_H = 20, 40
COL_W, COL_GAP = 196, 36
BOX_H, ROW_GAP = 34, 10
#: Font sizes (px) of a box's caption and subtitle; text is clipped to the box's inner width
#: (``COL_W`` - 2 * ``PAD``) by :func:`text_width`, and the box clips whatever a font draws wider.
CAPTION_PX, SUB_PX, PAD = 11, 9, 8
_NARROW = frozenset("iljtfrI.,:;'|!() ")


@dataclass(frozen=True)
class Box:
    """One drawn node: what it stands for (``members``: one node, or a group of repeats), its
    column and its rectangle (x, y = top left, in SVG units)."""

    id: str
    label: str
    caption: str
    subtitle: str
    stage: str
    members: tuple[GNode, ...]
    x: float
    y: float
    w: float
    h: float

    @property
    def grouped(self) -> bool:
        return len(self.members) > 1


@dataclass(frozen=True)
class Column:
    """A stage's column: its heading box and the node boxes in it, top to bottom."""

    stage: str
    heading: str
    x: float
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class Layout:
    """The whole picture: columns left to right and the SVG size."""

    columns: tuple[Column, ...]
    width: float
    height: float

    @property
    def boxes(self) -> list[Box]:
        return [b for c in self.columns for b in c.boxes]


def stage_of(node: GNode, rels: set[str], *, customer: bool = False, incoming: bool = False) -> str:
    """The stage a node of the trace's subgraph belongs to, from its label, the relationship types
    linking it to the trace (``rels``), whether it is the trace's customer (``customer``) and
    whether it links into the trace (``incoming``, e.g. the profile a precedent came from)."""
    if node.label == "GoalType" or customer or "FOR_GOAL" in rels:
        return "request"
    if node.label == "TraversalPattern":
        return "patterns"
    if node.label == "Chunk":
        return "chunks"
    if node.label == "Document":
        return "documents"
    if node.label == "DecisionTrace" or incoming or rels & {"DECIDES", "HAS_VERSION"}:
        return "precedent"
    if node.label in PROCEDURE_LABELS:
        return "procedure"
    return "facts"


def text_width(text: str, px: float) -> float:
    """A generous estimate of ``text``'s width in a sans-serif font of ``px`` pixels (capitals,
    digits and ``_`` 0.7 em, narrow glyphs 0.32 em, the rest 0.58 em)."""
    em = sum(0.32 if c in _NARROW else 0.7 if c.isupper() or c.isdigit() or c in "_MWmw@#%&§" else 0.58
             for c in text)
    return em * px


def clip_text(text: str, px: float, width: float) -> str:
    """``text`` shortened (ending in "…") until :func:`text_width` fits ``width``."""
    if text_width(text, px) <= width:
        return text
    while text and text_width(text + "…", px) > width:
        text = text[:-1]
    return text + "…"


def _plural(caption: str, count: int) -> str:
    if caption.isalpha() and caption[:1].isupper() and not caption.endswith("s"):
        return f"{count} {caption}s"
    return f"{count} × {caption}"


def _synthetic(trace: GNode) -> tuple[GNode, dict[str, list[GNode]]]:
    """The trace without its search and context properties, and the search and assembled-context
    nodes that hold them (only when the trace has them)."""
    props = dict(trace.props)
    extra: dict[str, list[GNode]] = {}
    for stage, keys in (("search", SEARCH_KEYS), ("context", CONTEXT_KEYS)):
        moved = {k: props.pop(k) for k in keys if props.get(k) not in (None, "", {}, [])}
        if moved:
            caption = "vector search" if stage == "search" else f"{moved.get('tokens', '?')} tokens"
            if stage == "context" and isinstance(moved.get("context_skeleton") or moved.get("context_text"), str):
                text = moved.get("context_skeleton") or moved.get("context_text")
                moved["sections"] = [line[1:-1] for line in str(text).splitlines()
                                     if line.startswith("[") and line.endswith("]")]
                count = len(moved["sections"])
                caption = f"{caption}, {count} section{'' if count == 1 else 's'}"
            extra[stage] = [GNode(f"{stage}:{trace.id}", stage.capitalize(), {"name": caption, **moved})]
    return GNode(trace.id, trace.label, props), extra


def layout(graph: TraceGraph) -> Layout:
    """Deterministic layered layout: one column per stage (``STAGES`` order, empty stages left
    out, the trace first in the request column); in a column, nodes by label group, caption and id (so a document's chunks are
    neighbours), with
    ``GROUP_MIN`` or more nodes of one label and caption drawn as one group box. Boxes sit on a
    fixed grid (rows of ``BOX_H`` + ``ROW_GAP``, columns of ``COL_W`` + ``COL_GAP``), so no two
    boxes overlap; captions are clipped to what fits a box."""
    trace, extra = _synthetic(graph.trace)
    rels: dict[str, set[str]] = {}
    incoming: set[str] = set()
    for e in graph.edges:
        other = e.dst if e.src == trace.id else e.src
        rels.setdefault(other, set()).add(e.type)
        if e.dst == trace.id:
            incoming.add(e.src)
    customer = str(trace.props.get("customer_id") or "")
    by_stage: dict[str, list[GNode]] = {key: list(extra.get(key, [])) for key, _ in STAGES}
    by_stage["request"].insert(0, trace)
    for node in sorted(graph.nodes, key=lambda n: (_group_rank(n.label), n.caption, n.id)):
        stage = stage_of(node, rels.get(node.id, set()), customer=node.id == customer, incoming=node.id in incoming)
        by_stage[stage].append(node)
    columns: list[Column] = []
    tallest = 0
    for key, heading in STAGES:
        nodes = by_stage[key]
        if not nodes:
            continue
        x = MARGIN + len(columns) * (COL_W + COL_GAP)
        groups: dict[tuple[str, str], list[GNode]] = {}
        for n in nodes:
            groups.setdefault((n.label, n.caption), []).append(n)
        boxes: list[Box] = []
        placed: set[tuple[str, str]] = set()
        for n in nodes:
            k = (n.label, n.caption)
            if k in placed:
                continue
            members = groups[k] if len(groups[k]) >= GROUP_MIN else [n]
            if len(members) > 1:
                placed.add(k)
                box_id, caption = f"group:{key}:{n.label}:{n.caption}", _plural(n.caption, len(members))
            else:
                box_id, caption = n.id, n.caption
            types = sorted({t for m in members for t in rels.get(m.id, set())})
            parts = [n.label, *types] if n is not trace else ["this trace"]
            while len(parts) > 1 and text_width(" · ".join(parts), SUB_PX) > COL_W - 2 * PAD:
                parts.pop()  # the relationship types that do not fit are in the property table
            subtitle = " · ".join(parts)
            y = MARGIN + HEAD_H + len(boxes) * (BOX_H + ROW_GAP)
            boxes.append(Box(box_id, n.label, clip_text(caption, CAPTION_PX, COL_W - 2 * PAD),
                             clip_text(subtitle, SUB_PX, COL_W - 2 * PAD), key,
                             tuple(members), float(x), float(y), float(COL_W), float(BOX_H)))
        tallest = max(tallest, len(boxes))
        heading_text = f"{heading} ({sum(len(b.members) for b in boxes)})"
        columns.append(Column(key, heading_text, float(x), tuple(boxes)))
    width = MARGIN * 2 + len(columns) * COL_W + max(len(columns) - 1, 0) * COL_GAP
    height = MARGIN * 2 + HEAD_H + tallest * (BOX_H + ROW_GAP)
    return Layout(tuple(columns), float(width), float(height))


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _svg(lay: Layout, palette: Mapping[str, str]) -> tuple[str, list[Box]]:
    parts: list[str] = []
    drawn: list[Box] = []
    for ci, col in enumerate(lay.columns):
        hx, hy = col.x, float(MARGIN)
        parts.append(f'<g class="stage" data-stage="{col.stage}" data-x="{hx}" data-y="{hy}" data-w="{COL_W}"'
                     f' data-h="{HEAD_H - 12}"><rect x="{hx}" y="{hy}" width="{COL_W}" height="{HEAD_H - 12}"/>'
                     f'<text x="{hx + COL_W / 2}" y="{hy + 18}">{_e(col.heading)}</text></g>')
        if ci:  # the stage order: an arrow from the previous heading
            x1, y1 = col.x - COL_GAP + 4, hy + (HEAD_H - 12) / 2
            parts.append(f'<path class="flow" d="M{x1} {y1} H{col.x - 6} m-6 -4 l6 4 l-6 4"/>')
        if col.boxes:  # the column's spine: every box hangs off it
            sx, last = col.x - 8, col.boxes[-1].y + BOX_H / 2
            ticks = "".join(f" M{sx} {b.y + BOX_H / 2} H{b.x}" for b in col.boxes)
            parts.append(f'<path class="spine" d="M{sx} {MARGIN + HEAD_H - 12} V{last}{ticks}"/>')
        if ci and lay.columns[ci - 1].stage == "chunks" and col.stage == "documents":
            parts.extend(_chunk_links(lay.columns[ci - 1].boxes, col.boxes))
        for b in col.boxes:
            i = len(drawn)
            drawn.append(b)
            kind = "node group" if b.grouped else "node"
            parts.append(
                f'<g class="{kind}" data-id="{_e(b.id)}" data-label="{_e(b.label)}" data-stage="{b.stage}"'
                f' data-count="{len(b.members)}" data-row="row{i}" data-x="{b.x}" data-y="{b.y}" data-w="{b.w}"'
                f' data-h="{b.h}" tabindex="0"><svg x="{b.x}" y="{b.y}" width="{b.w}" height="{b.h}">'
                f'<rect x="0.6" y="0.6" width="{b.w - 1.2}" height="{b.h - 1.2}" rx="5" fill="{color_of(b.label, palette)}"/>'
                f'<text x="{PAD}" y="14" class="cap">{_e(b.caption)}</text>'
                f'<text x="{PAD}" y="27" class="lab">{_e(b.subtitle)}</text></svg></g>'
            )
    return "\n".join(parts), drawn


def _chunk_links(chunks: tuple[Box, ...], documents: tuple[Box, ...]) -> list[str]:
    """A curve from each chunk box to the box of the document (and revision) it came from, across
    the gap between the two adjacent columns."""
    def key(props: Mapping[str, Any]) -> tuple[str, str]:
        return (str(props.get("document_id", "")), str(props.get("revision", "")))

    out = []
    for c in chunks:
        for d in documents:
            cp, dp = c.members[0].props, d.members[0].props
            if not cp.get("document_id") or cp.get("document_id") != dp.get("document_id"):
                continue
            if cp.get("revision") and dp.get("revision") and key(cp) != key(dp):
                continue
            x1, y1, x2, y2 = c.x + c.w, c.y + c.h / 2, d.x, d.y + d.h / 2
            mid = round((x1 + x2) / 2, 1)
            out.append(f'<path class="link" data-from="{_e(c.id)}" data-to="{_e(d.id)}"'
                       f' d="M{x1} {y1} C{mid} {y1} {mid} {y2} {x2} {y2}"/>')
    return out


def _props(n: GNode) -> str:
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(_short(v))}</dd>" for k, v in sorted(n.props.items())) + "</dl>"


def render(graph: TraceGraph, styles: Mapping[str, str] | None = None) -> str:
    """The complete HTML document (str) of ``graph`` in the layered layout of :func:`layout`;
    ``styles`` are the domain's label colours (neutral ones otherwise). Below the picture, one row
    per box with its properties (a group's members inside an expandable ``<details>``). Same
    graph and styles => byte-identical page."""
    palette = colors(styles)
    lay = layout(graph)
    svg, drawn = _svg(lay, palette)
    rows = []
    for i, b in enumerate(drawn):
        if b.grouped:
            inner = "".join(f"<h4>{_e(m.id)}</h4>{_props(m)}" for m in b.members)
            body = f"<details><summary>{_e(b.caption)} ({len(b.members)} nodes)</summary>{inner}</details>"
        else:
            body = _props(b.members[0])
        rows.append(f'<tr id="row{i}"><td><b>{_e(b.id)}</b><br><small>{_e(b.label)} · {_e(b.stage)}</small>'
                    f"</td><td>{body}</td></tr>")
    legend_labels = sorted({b.label for b in drawn}, key=lambda lab: (_group_rank(lab), lab))
    legend = "".join(
        f'<span class="sw"><i style="background:{color_of(lab, palette)}"></i>{_e(lab)}</span>'
        for lab in legend_labels
    )
    counts = {lab: sum(1 for n in graph.nodes if n.label == lab) for lab in legend_labels}
    summary = ", ".join(f"{c} {lab}" for lab, c in counts.items() if c)
    return _PAGE.format(
        title=_e(f"hopweave trace {graph.trace.id}"),
        trace=_e(graph.trace.id),
        summary=_e(summary or "no links"),
        w=round(lay.width), h=round(lay.height),
        svg=svg,
        legend=legend,
        rows="".join(rows),
        n=len(drawn),
        cap=CAPTION_PX, sub=SUB_PX,
    )


def _short(v: Any) -> str:
    s = json.dumps(v, sort_keys=True, ensure_ascii=False) if isinstance(v, (list, dict)) else str(v)
    return s if len(s) <= 600 else s[:600] + "…"


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body{{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#222;background:#fafafa}}
h1{{font-size:18px;margin:0 0 4px}} p.sum{{margin:0 0 8px;color:#555}}
.pic{{overflow-x:auto;background:#fff;border:1px solid #ddd}}
.stage rect{{fill:#f0f1f4;stroke:#c9ccd3}} .stage text{{font-size:12px;font-weight:600;text-anchor:middle;fill:#333}}
.flow,.spine,.link{{fill:none;stroke:#9aa1ac;stroke-width:1.4}}
.node rect{{stroke:#555;stroke-width:1.2;cursor:pointer}} .node.group rect{{stroke-width:2.6;stroke-dasharray:5 2}}
.node.sel rect{{stroke:#000;stroke-width:3}}
.node text.cap{{font-size:{cap}px;fill:#111;pointer-events:none}}
.node text.lab{{font-size:{sub}px;fill:#444;pointer-events:none}}
.legend{{margin:8px 0}} .sw{{margin-right:12px;font-size:12px}}
.sw i{{display:inline-block;width:12px;height:12px;border-radius:6px;margin-right:4px;vertical-align:middle}}
table{{border-collapse:collapse;width:100%;background:#fff;font-size:12px}}
td{{border:1px solid #ddd;padding:4px 8px;vertical-align:top}} tr.sel{{background:#fff6d5}} h4{{margin:6px 0 2px}}
dl{{margin:0;display:grid;grid-template-columns:max-content 1fr;gap:0 10px}} dt{{color:#666}} dd{{margin:0;word-break:break-word}}
</style></head>
<body data-nodes="{n}">
<h1>Decision trace {trace}</h1>
<p class="sum">{summary}. Read left to right, one column per stage; a dashed box groups repeats (its members are
listed below). Click a box to see its properties. (Generated by hopweave; works offline.)</p>
<div class="legend">{legend}</div>
<div class="pic"><svg id="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}"
 role="img" aria-label="{title}">
{svg}
</svg></div>
<h2 style="font-size:15px">Nodes</h2>
<table id="props">{rows}</table>
<script>
(function () {{
  var nodes = document.querySelectorAll("#graph .node");
  nodes.forEach(function (g) {{
    g.addEventListener("click", function () {{
      document.querySelectorAll(".sel").forEach(function (x) {{ x.classList.remove("sel"); }});
      g.classList.add("sel");
      var row = document.getElementById(g.getAttribute("data-row"));
      if (row) {{
        row.classList.add("sel");
        var d = row.querySelector("details"); if (d) {{ d.open = true; }}
        row.scrollIntoView({{block: "nearest"}});
      }}
    }});
  }});
  var shown = 0;
  nodes.forEach(function (g) {{ var b = g.getBoundingClientRect(); if (b.width > 0 && b.height > 0) shown++; }});
  document.body.setAttribute("data-rendered", String(shown));
  var r = [].map.call(nodes, function (g) {{ return g.getBoundingClientRect(); }}), overlaps = 0;
  for (var i = 0; i < r.length; i++) {{ for (var j = i + 1; j < r.length; j++) {{
    if (r[i].right > r[j].left + 0.5 && r[j].right > r[i].left + 0.5 &&
        r[i].bottom > r[j].top + 0.5 && r[j].bottom > r[i].top + 0.5) {{ overlaps++; }}
  }} }}
  document.body.setAttribute("data-overlaps", String(overlaps));
}})();
</script>
</body></html>
"""
