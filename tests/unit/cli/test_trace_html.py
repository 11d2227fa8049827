"""`hopweave inspect trace --html`: the subgraph it collects, the page it writes (self-contained,
deterministic, PII-free) and that page rendered in headless Chromium (screenshot + DOM check)."""

from __future__ import annotations

import html
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

import sys

from generator.build import deltabank_batches  # noqa: E402

from hopweave.cli import app
from hopweave.cli.trace_html import BASE_COLORS, collect, color_of, colors, render
from hopweave.graph import open_graph_store
from hopweave.graph.base import Edge, Node

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import DELTABANK, write_deltabank_settings  # noqa: E402

COLORS = colors(DELTABANK.styles)

ROOT = Path(__file__).resolve().parents[3]
TRACE = "RT_test_maria"
UTTERANCE = "I want to dispute this $39 late fee, my SSN is 123-45-6789"
#: Maria's 24 monthly payments (Transaction events of the generated pack): one group box.
PAYMENTS = [f"EVT_4421_PAY_{y}{m:02d}" for y, ms in ((2024, range(6, 13)), (2025, range(1, 13)),
                                                     (2026, range(1, 6))) for m in ms]
#: What the agent saw: the customer's name, email and phone (pii: true in the pack's schema).
CUSTOMER_PII = ("Maria Lopez", "maria.lopez@example.com", "+1-555-0142")
CONTEXT = "[Customer]\nMaria Lopez, maria.lopez@example.com, +1-555-0142  (src: CUST_4421)\n"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inspect")
    write_deltabank_settings(root)  # the store's own schema and domain, as `hopweave load` keeps them
    store = open_graph_store(root)
    with store.bulk(replace=True) as bulk:
        for tenant, items in deltabank_batches(nodes=1500):
            bulk.write(tenant, items)
    store.write(
        "deltabank",
        [
            Node(
                TRACE,
                "DecisionTrace",
                {
                    "kind": "retrieval",
                    "goal": "LateFeeDispute",
                    "customer_id": "CUST_4421",
                    "as_of": "2026-05-12T23:59:59",
                    "utterance": UTTERANCE,
                    "chunk_ids": ["waiver-policy_v3#3.2", "fee-schedule_v7#1"],
                    "patterns_json": [
                        {"name": "customer_tier", "version": 1},
                        {"name": "comparable_precedent", "version": 1},
                    ],
                    "summary": "retrieval for LateFeeDispute",
                    "fact_ids": ["CUST_4421", "ACCT_99812"],
                    "search_query": "dispute late fee 123-45-6789",
                    "ranking_profile": "policy@1",
                    "tokens": 42,
                    "context_text": CONTEXT,
                    "pins_json": {"chunks": [{"chunk_id": "waiver-policy_v3#3.2", "document_id": "waiver-policy",
                                              "revision": "v3", "section": "3.2"}]},
                },
            )
        ],
        [
            Edge(TRACE, "PATTERN_customer_tier", "USED_PATTERN", {"version": 1}),
            Edge(TRACE, "PATTERN_comparable_precedent", "USED_PATTERN", {"version": 1}),
            Edge(TRACE, "CUST_4421", "FOR_CUSTOMER"),
            Edge(TRACE, "GOAL_LateFeeDispute", "FOR_GOAL"),
            Edge(TRACE, "TIER_Platinum", "SAW_FACT"),
            Edge(TRACE, "ACCT_99812", "SAW_FACT"),
            Edge(TRACE, "TRACE_8514", "SAW_FACT"),
            Edge(TRACE, "WF_LateFeeDispute_v2", "SAW_FACT"),
            Edge(TRACE, "DOC_waiver-policy_v3", "CITES"),
            *(Edge(TRACE, eid, "SAW_FACT") for eid in PAYMENTS),
        ],
    )
    store.close()
    return root


def _graph(store_dir: Path):
    store = open_graph_store(store_dir, read_only=True)
    try:
        return collect(store, "deltabank", TRACE)
    finally:
        store.close()


def test_collects_patterns_facts_chunks_and_customer(store_dir: Path) -> None:
    g = _graph(store_dir)
    by_label: dict[str, list[str]] = {}
    for n in g.nodes:
        by_label.setdefault(n.label, []).append(n.id)
    assert by_label["TraversalPattern"] == ["PATTERN_comparable_precedent", "PATTERN_customer_tier"]
    assert by_label["Customer"] == ["CUST_4421"] and by_label["GoalType"] == ["GOAL_LateFeeDispute"]
    assert by_label["Chunk"] == ["chunk:fee-schedule_v7#1", "chunk:waiver-policy_v3#3.2"]
    assert {"ACCT_99812", "TIER_Platinum", "TRACE_8514"} <= {n.id for n in g.nodes}
    assert {e.caption for e in g.edges if e.type == "USED_PATTERN"} == {"USED_PATTERN v1"}
    assert "utterance" not in g.trace.props  # PII stays out


def test_precedent_trace_shows_its_profile(store_dir: Path) -> None:
    store = open_graph_store(store_dir, read_only=True)
    try:
        g = collect(store, "deltabank", "TRACE_8514")
        assert any(e.type == "RESULTED_IN" and e.dst == "TRACE_8514" for e in g.edges)
        profiles = [e.src for e in g.edges if e.dst == "TRACE_8514"]
        page = render(g, DELTABANK.styles)
        stages = {b["id"]: b["stage"] for b in _boxes(page, "node")}
        assert profiles and all(stages[p] == "precedent" for p in profiles)  # what led to it
        assert stages["TRACE_8514"] == "request"
        from hopweave.errors import NotFoundError

        with pytest.raises(NotFoundError):
            collect(store, "northbank", TRACE)  # another tenant cannot see it
    finally:
        store.close()


def test_page_is_self_contained_deterministic_and_pii_free(store_dir: Path) -> None:
    page = render(_graph(store_dir), DELTABANK.styles)
    assert page == render(_graph(store_dir), DELTABANK.styles)
    assert UTTERANCE not in page and "123-45-6789" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "no external resources"
    assert "@import" not in page and "url(" not in page
    # one box per node, the 24 payments as one group box, plus the search and context nodes
    drawn = re.findall(r'<g class="node( group)?" [^>]*data-count="(\d+)"', page)
    assert sum(int(c) for _, c in drawn) == 1 + len(_graph(store_dir).nodes) + 2
    assert [int(c) for g, c in drawn if g] == [len(PAYMENTS)]


def _boxes(page: str, kind: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'data-(\w+)="([^"]*)"', m)) for m in re.findall(rf'<g class="{kind}"([^>]*)>', page)]


def test_columns_follow_the_stages_left_to_right(store_dir: Path) -> None:
    page = render(_graph(store_dir), DELTABANK.styles)
    stages = _boxes(page, "stage")
    assert [s["stage"] for s in stages] == ["request", "patterns", "facts", "search", "chunks", "documents",
                                            "precedent",
                                            "procedure", "context"]
    xs = [float(s["x"]) for s in stages]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    col = {s["stage"]: float(s["x"]) for s in stages}
    nodes = _boxes(page, "node") + _boxes(page, "node group")
    where = {n["id"]: n["stage"] for n in nodes}
    assert where[TRACE] == where["GOAL_LateFeeDispute"] == where["CUST_4421"] == "request"
    assert where["PATTERN_customer_tier"] == "patterns" and where["ACCT_99812"] == "facts"
    assert where["TRACE_8514"] == "precedent" and where["WF_LateFeeDispute_v2"] == "procedure"
    assert where["chunk:fee-schedule_v7#1"] == "chunks" and where[f"context:{TRACE}"] == "context"
    assert where["DOC_waiver-policy_v3"] == "documents"
    # the pinned chunk is captioned and linked by the document it came from; the other has no pin
    assert re.search(r'<path class="link" data-from="chunk:waiver-policy_v3#3.2" data-to="DOC_waiver-policy_v3"',
                     page)
    assert page.count('class="link"') == 1 and ">waiver-policy §3.2<" in page
    assert ">42 tokens, 1 section<" in page
    for n in nodes:  # every box sits in its stage's column
        assert float(n["x"]) == col[n["stage"]], n
    first = min((n for n in nodes if n["stage"] == "request"), key=lambda n: float(n["y"]))
    assert first["id"] == TRACE  # the trace heads the first column


def test_repeats_are_one_expandable_group(store_dir: Path) -> None:
    page = render(_graph(store_dir), DELTABANK.styles)
    (group,) = _boxes(page, "node group")
    assert group["count"] == "24" and group["label"] == "Event" and group["stage"] == "facts"
    assert ">24 Transactions<" in page
    row = page[page.index(f'<tr id="{group["row"]}">'):]
    row = row[: row.index("</tr>")]
    assert "<details><summary>24 Transactions (24 nodes)</summary>" in row
    assert all(f"<h4>{eid}</h4>" in row for eid in PAYMENTS)
    assert not any(f'data-id="{eid}"' in page for eid in PAYMENTS)  # not drawn one by one


def test_no_two_boxes_overlap_and_captions_fit(store_dir: Path) -> None:
    from hopweave.cli.trace_html import CAPTION_PX, PAD, SUB_PX, text_width

    page = render(_graph(store_dir), DELTABANK.styles)
    boxes = _boxes(page, "stage") + _boxes(page, "node") + _boxes(page, "node group")
    rects = [(float(b["x"]), float(b["y"]), float(b["x"]) + float(b["w"]), float(b["y"]) + float(b["h"]))
             for b in boxes]
    w, h = map(float, re.search(r'viewBox="0 0 (\S+) (\S+)"', page).groups())  # type: ignore[union-attr]
    for i, a in enumerate(rects):
        assert 0 <= a[0] < a[2] <= w and 0 <= a[1] < a[3] <= h, a
        for b in rects[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    # each box is its own clipping viewport, and its text is clipped to fit inside it
    inner = re.findall(r'<svg x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)">'
                       r'<rect [^>]*/><text [^>]*class="cap">([^<]*)</text><text [^>]*class="lab">([^<]*)</text></svg>',
                       page)
    nodes = _boxes(page, "node") + _boxes(page, "node group")
    assert sorted(i[:4] for i in inner) == sorted((n["x"], n["y"], n["w"], n["h"]) for n in nodes)
    for _x, _y, w, _h, cap, sub in inner:
        room = float(w) - 2 * PAD
        assert text_width(html.unescape(cap), CAPTION_PX) <= room, cap
        assert text_width(html.unescape(sub), SUB_PX) <= room, sub


def test_page_without_pii_names_no_customer(store_dir: Path) -> None:
    store = open_graph_store(store_dir, read_only=True)
    try:
        customer = store.get_node("deltabank", "CUST_4421")
    finally:
        store.close()
    assert customer is not None and all(v in customer.props.values() for v in CUSTOMER_PII)
    page = render(_graph(store_dir), DELTABANK.styles)
    for leaked in (*CUSTOMER_PII, html.escape(CUSTOMER_PII[2]), UTTERANCE, "123-45-6789"):
        assert leaked not in page, leaked
    assert "&lt;redacted: pii&gt;" in page  # the context keeps its shape, the values are gone


def test_layout_is_deterministic(store_dir: Path) -> None:
    from hopweave.cli.trace_html import layout

    a, b = _graph(store_dir), _graph(store_dir)
    b.nodes.reverse()
    b.edges.reverse()  # the page does not depend on the order the store returned things in
    assert layout(a) == layout(b)
    assert render(a, DELTABANK.styles) == render(b, DELTABANK.styles)


def test_cli_writes_the_page(store_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.html"
    res = CliRunner().invoke(
        app,
        ["inspect", "trace", TRACE, "--html", str(out), "--store", str(store_dir), "--tenant", "deltabank"],
    )
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    res = CliRunner().invoke(
        app,
        [
            "inspect",
            "trace",
            "RT_nope",
            "--html",
            str(out),
            "--store",
            str(store_dir),
            "--tenant",
            "deltabank",
        ],
    )
    assert res.exit_code == 2 and "NotFoundError" in res.output


def test_colours_match_the_browser_style() -> None:
    grass = (ROOT / "cypher" / "browser" / "style.grass").read_text(encoding="utf-8")
    styled = dict(re.findall(r"node\.(\w+)\s*\{[^}]*?color:\s*(#[0-9A-Fa-f]{6});", grass))
    assert styled, "style.grass has node styles"
    for label, color in styled.items():
        assert COLORS[label].upper() == color.upper(), label


# ---- headless Chromium ---------------------------------------------------------------------------
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) into rows of pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, bpp, rows


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
@pytest.mark.skipif(
    _chromium() is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)"
)
def test_page_renders_nodes_in_headless_chromium(store_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "trace.html"
    graph = _graph(store_dir)
    page.write_text(render(graph, DELTABANK.styles), encoding="utf-8")
    shot = tmp_path / "trace.png"
    base = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    subprocess.run(
        [*base, f"--screenshot={shot}", page.as_uri()], check=True, capture_output=True, timeout=120
    )
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    # the inline script ran and measured every node with a non-empty box
    m = re.search(r'data-rendered="(\d+)"', dom)
    drawn = re.search(r'data-nodes="(\d+)"', dom)
    assert m and drawn and int(m.group(1)) == int(drawn.group(1)) > 10
    assert 'data-overlaps="0"' in dom  # the browser's own boxes: none overlaps another
    width, bpp, rows = _png_pixels(shot)
    seen = {row[i : i + 3] for row in rows for i in range(0, width * bpp, bpp)}
    for label in ("DecisionTrace", "TraversalPattern", "Customer", "Chunk"):
        rgb = bytes.fromhex(COLORS[label][1:])
        assert rgb in seen, f"no {label} node ({COLORS[label]}) visible in the screenshot {shot}"


def test_labels_without_a_style_get_a_stable_neutral_colour() -> None:
    from hopweave.cli.trace_html import NEUTRAL_PALETTE

    assert color_of("Policyholder", BASE_COLORS) == color_of("Policyholder", {}) in NEUTRAL_PALETTE
    assert color_of("DecisionTrace", colors()) == BASE_COLORS["DecisionTrace"]
    assert color_of("Customer", colors(DELTABANK.styles)) == "#4C8EDA"
