"""``hopweave inspect trace --html``: a decision trace's subgraph as one self-contained HTML page.

:func:`collect` reads the subgraph through the tenant-scoped GraphStore API (any backend): the
trace, the patterns it used (with the version it ran), the facts and precedent it saw, the
documents it cited and the chunk ids that reached the context, its goal, customer, outcome and
steps. :func:`render` lays it out deterministically (a radial layout computed here, no random
seed, no clock) as inline SVG with a legend and a property table; a few lines of inline JS only
highlight the table row of a clicked node. No external resource is referenced: the page opens
offline. PII properties are never written (the same rule as pattern rows).
"""

from __future__ import annotations

import hashlib
import html
import json
import math
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
    for cid in trace.props.get("chunk_ids") or []:
        nodes.setdefault(f"chunk:{cid}", GNode(f"chunk:{cid}", "Chunk", {"chunk_id": cid, "name": cid}))
        edges.append(GEdge(trace.id, f"chunk:{cid}", "SAW_CHUNK", "SAW_CHUNK"))
    nodes.pop(trace.id, None)
    ordered = sorted(nodes.values(), key=lambda n: (_group_rank(n.label), n.id))
    return TraceGraph(trace, ordered, sorted(edges, key=lambda e: (e.src, e.type, e.dst)))


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


# ---- rendering --------------------------------------------------------------------------------
W, H = 1200, 860
CX, CY = 600, 420


def layout(graph: TraceGraph) -> dict[str, tuple[float, float]]:
    """Deterministic positions: the trace in the centre, the others on one or two rings in
    group order (then id order)."""
    pos = {graph.trace.id: (float(CX), float(CY))}
    n = len(graph.nodes)
    rings = 1 if n <= 28 else 2
    for i, node in enumerate(graph.nodes):
        ring = i % rings
        radius = 330.0 if ring == 0 else 215.0
        angle = -math.pi / 2 + 2 * math.pi * i / max(n, 1)
        pos[node.id] = (
            round(CX + radius * math.cos(angle), 1),
            round(CY + radius * 0.95 * math.sin(angle), 1),
        )
    return pos


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render(graph: TraceGraph, styles: Mapping[str, str] | None = None) -> str:
    """The complete HTML document (str); ``styles`` are the domain's label colours (neutral
    ones otherwise). Same graph and styles => byte-identical page."""
    palette = colors(styles)
    pos = layout(graph)
    all_nodes = [graph.trace, *graph.nodes]
    parts: list[str] = []
    for e in graph.edges:
        (x1, y1), (x2, y2) = pos[e.src], pos[e.dst]
        parts.append(
            f'<g class="edge" data-type="{_e(e.type)}"><line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>'
            f'<text x="{round((x1 + x2) / 2, 1)}" y="{round((y1 + y2) / 2, 1)}">{_e(e.caption)}</text></g>'
        )
    for i, node in enumerate(all_nodes):
        x, y = pos[node.id]
        r = 46 if i == 0 else 30
        color = color_of(node.label, palette)
        parts.append(
            f'<g class="node" data-id="{_e(node.id)}" data-label="{_e(node.label)}" data-row="row{i}" tabindex="0">'
            f'<circle cx="{x}" cy="{y}" r="{r}" fill="{color}"/>'
            f'<text x="{x}" y="{y + 4}" class="cap">{_e(node.caption)}</text>'
            f'<text x="{x}" y="{y + r + 13}" class="lab">{_e(node.label)}</text></g>'
        )
    legend_labels = sorted({n.label for n in all_nodes}, key=lambda lab: (_group_rank(lab), lab))
    legend = "".join(
        f'<span class="sw"><i style="background:{color_of(lab, palette)}"></i>{_e(lab)}</span>'
        for lab in legend_labels
    )
    rows = "".join(
        f'<tr id="row{i}"><td><b>{_e(n.id)}</b><br><small>{_e(n.label)}</small></td><td><dl>'
        + "".join(f"<dt>{_e(k)}</dt><dd>{_e(_short(v))}</dd>" for k, v in sorted(n.props.items()))
        + "</dl></td></tr>"
        for i, n in enumerate(all_nodes)
    )
    counts = {lab: sum(1 for n in graph.nodes if n.label == lab) for lab in legend_labels}
    summary = ", ".join(f"{c} {lab}" for lab, c in counts.items() if c)
    return _PAGE.format(
        title=_e(f"hopweave trace {graph.trace.id}"),
        trace=_e(graph.trace.id),
        summary=_e(summary or "no links"),
        w=W,
        h=H,
        svg="\n".join(parts),
        legend=legend,
        rows=rows,
        n=len(all_nodes),
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
svg{{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}}
.edge line{{stroke:#9aa1ac;stroke-width:1.4}} .edge text{{font-size:9px;fill:#777;text-anchor:middle}}
.node circle{{stroke:#555;stroke-width:1.5;cursor:pointer}} .node.sel circle{{stroke:#000;stroke-width:4}}
.node text.cap{{font-size:10px;text-anchor:middle;fill:#111;pointer-events:none}}
.node text.lab{{font-size:9px;text-anchor:middle;fill:#666;pointer-events:none}}
.legend{{margin:8px 0}} .sw{{margin-right:12px;font-size:12px}}
.sw i{{display:inline-block;width:12px;height:12px;border-radius:6px;margin-right:4px;vertical-align:middle}}
table{{border-collapse:collapse;width:100%;background:#fff;font-size:12px}}
td{{border:1px solid #ddd;padding:4px 8px;vertical-align:top}} tr.sel{{background:#fff6d5}}
dl{{margin:0;display:grid;grid-template-columns:max-content 1fr;gap:0 10px}} dt{{color:#666}} dd{{margin:0;word-break:break-word}}
</style></head>
<body data-nodes="{n}">
<h1>Decision trace {trace}</h1>
<p class="sum">{summary}. Click a node to see its properties. (Generated by hopweave; works offline.)</p>
<div class="legend">{legend}</div>
<svg id="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img"
 aria-label="{title}">
{svg}
</svg>
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
      if (row) {{ row.classList.add("sel"); row.scrollIntoView({{block: "nearest"}}); }}
    }});
  }});
  var shown = 0;
  nodes.forEach(function (g) {{ var b = g.getBoundingClientRect(); if (b.width > 0 && b.height > 0) shown++; }});
  document.body.setAttribute("data-rendered", String(shown));
}})();
</script>
</body></html>
"""
