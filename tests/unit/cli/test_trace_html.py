"""`hopweave inspect trace --html`: the subgraph it collects, the page it writes (self-contained,
deterministic, PII-free) and that page rendered in headless Chromium (screenshot + DOM check)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from hopweave.cli import app
import sys

from hopweave.cli.trace_html import BASE_COLORS, color_of, colors, collect, render
from hopweave.graph import open_graph_store
from hopweave.graph.base import Edge, Node
from generator.build import deltabank_batches  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))  # tests/shared helpers
from domains import DELTABANK, write_deltabank_settings  # noqa: E402

COLORS = colors(DELTABANK.styles)

ROOT = Path(__file__).resolve().parents[3]
TRACE = "RT_test_maria"
UTTERANCE = "I want to dispute this $39 late fee, my SSN is 123-45-6789"


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
    assert page.count('class="node"') == 1 + len(_graph(store_dir).nodes)


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
    assert m and int(m.group(1)) == 1 + len(graph.nodes)
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
