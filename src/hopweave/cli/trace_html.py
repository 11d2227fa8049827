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

import html
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hopweave.errors import NotFoundError
from hopweave.graph.base import GraphStore
from hopweave.models.common import Bindings, Session
from hopweave.models.metagraph import EdgeStep, Literal_, Seed, TraversalPattern

#: Node colours: the same palette as cypher/browser/style.grass (a test keeps them in sync).
COLORS: dict[str, str] = {
    "DecisionTrace": "#C990C0",
    "TraversalPattern": "#FFC454",
    "GoalType": "#F79767",
    "Customer": "#4C8EDA",
    "CustomerProfile": "#8DCC93",
    "Account": "#57C7E3",
    "Event": "#F16667",
    "Tier": "#D9C8AE",
    "Product": "#D9C8AE",
    "Document": "#ECB5C9",
    "Outcome": "#6DCE9E",
    "Conversation": "#A5ABB6",
    "Workflow": "#FFE081",
    "Rule": "#FFE081",
    "Heuristic": "#FFE081",
    "CaseType": "#F79767",
    "CaseState": "#F79767",
    "TraceStep": "#E5C7E0",
    "Chunk": "#B0D7F0",
}
DEFAULT_COLOR = "#A5ABB6"
#: Order of groups around the trace.
GROUP_ORDER = (
    "GoalType",
    "TraversalPattern",
    "Customer",
    "Account",
    "Event",
    "Tier",
    "Product",
    "Outcome",
    "Conversation",
    "CustomerProfile",
    "DecisionTrace",
    "Workflow",
    "Rule",
    "Heuristic",
    "Step",
    "CaseType",
    "Document",
    "Chunk",
    "TraceStep",
)
_EPOCH = datetime(2000, 1, 1)
#: Caption property per label (as in style.grass); "id" means the node id.
_CAPTIONS = {
    "GoalType": "name",
    "TraversalPattern": "name",
    "Tier": "name",
    "Product": "name",
    "Workflow": "name",
    "Rule": "name",
    "CaseType": "name",
    "CaseState": "name",
    "Event": "type",
    "Outcome": "result",
    "Document": "document_id",
    "CustomerProfile": "tier",
    "TraceStep": "idx",
    "Chunk": "chunk_id",
}


@dataclass
class GNode:
    id: str
    label: str
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def caption(self) -> str:
        if self.label == "TraversalPattern" and "version_used" in self.props:
            return f"{self.props.get('name', self.id)} v{self.props['version_used']}"
        value = self.props.get(_CAPTIONS.get(self.label, "id"))
        return str(value if value not in (None, "") else self.id)[:28]


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
    p = TraversalPattern(
        name=f"inspect_{rel.lower()}",
        goal="_inspect",
        sub_question=f"trace {rel} {target}",
        seed=Seed(type="DecisionTrace", key="id", value=Literal_(value=trace_id)),
        edge_sequence=(EdgeStep(type=rel, direction=direction),),
        target_type=target,
        depth=1,  # type: ignore[arg-type]
        budget_ms=10_000,
        max_visited=1_000_000,
        limit=10_000,
        version=1,
        author="hopweave",
        created_at=_EPOCH,
    )
    res = store.run_pattern(tenant, p, Bindings(session=Session(tenant_id=tenant), as_of=_EPOCH))
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
    trace = GNode(node.id, node.label, {k: v for k, v in node.props.items() if k not in pii})
    trace.props["id"] = node.id
    versions = _pattern_versions(trace.props.get("patterns_json"))
    nodes: dict[str, GNode] = {}
    edges: list[GEdge] = []
    for rel in (
        "USED_PATTERN",
        "FOR_GOAL",
        "FOR_CUSTOMER",
        "CITES",
        "HAS_OUTCOME",
        "HAS_TRACE_STEP",
        "ABOUT",
        "SAW_FACT",
    ):
        for target in schema.rel(rel).to_labels:
            for g in _walk(store, tenant, trace_id, rel, "out", target):
                caption = rel
                if rel == "USED_PATTERN" and g.props.get("name") in versions:
                    g.props["version_used"] = versions[g.props["name"]]
                    caption = f"USED_PATTERN v{versions[g.props['name']]}"
                nodes.setdefault(g.id, g)
                edges.append(GEdge(trace.id, g.id, rel, caption))
    for source in schema.rel("RESULTED_IN").from_labels:  # precedent: the profile that led to it
        for g in _walk(store, tenant, trace_id, "RESULTED_IN", "in", source):
            nodes.setdefault(g.id, g)
            edges.append(GEdge(g.id, trace.id, "RESULTED_IN", "RESULTED_IN"))
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


def _group_rank(label: str) -> int:
    return GROUP_ORDER.index(label) if label in GROUP_ORDER else len(GROUP_ORDER)


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


def render(graph: TraceGraph) -> str:
    """The complete HTML document (str). Same graph => byte-identical page."""
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
        color = COLORS.get(node.label, DEFAULT_COLOR)
        parts.append(
            f'<g class="node" data-id="{_e(node.id)}" data-label="{_e(node.label)}" data-row="row{i}" tabindex="0">'
            f'<circle cx="{x}" cy="{y}" r="{r}" fill="{color}"/>'
            f'<text x="{x}" y="{y + 4}" class="cap">{_e(node.caption)}</text>'
            f'<text x="{x}" y="{y + r + 13}" class="lab">{_e(node.label)}</text></g>'
        )
    legend_labels = sorted({n.label for n in all_nodes}, key=lambda lab: (_group_rank(lab), lab))
    legend = "".join(
        f'<span class="sw"><i style="background:{COLORS.get(lab, DEFAULT_COLOR)}"></i>{_e(lab)}</span>'
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
