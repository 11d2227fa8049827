"""``hopweave compact``: the journal folded into a format-3 snapshot, nothing lost (real store)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.graph import GRAPH_SUBDIR, _persist as P, open_graph_store
from hopweave.graph.base import Node

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator
from generator.build import sized_pack  # noqa: E402
from snapshot_forge import write_older_format  # noqa: E402 (tests/shared, on the path through conftest)

runner = CliRunner()


def test_compact_folds_the_journal_and_keeps_every_node(tmp_path: Path) -> None:
    store = tmp_path / "store"
    pack = sized_pack(tmp_path / "pack", 2000, 4421)
    r = runner.invoke(app, ["load", str(pack), "--store", str(store), "--no-vectors", "--json"])
    assert r.exit_code == 0, r.output
    g = open_graph_store(store)
    g.write("deltabank", [Node(id="CUST_COMPACT", label="Customer", props={"name": "Compact Test"})])
    write_older_format(g)  # an older snapshot to convert
    g.write("deltabank", [Node(id="CUST_COMPACT2", label="Customer", props={"name": "After The Snapshot"})])
    before = g.stats()
    g.close()
    journal = store / GRAPH_SUBDIR / P.JOURNAL
    assert journal.stat().st_size > 0

    r = runner.invoke(app, ["compact", "--graph", str(store), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["before"]["snapshot_format"] == P.JSON_FORMAT and out["before"]["journal_bytes"] > 0
    assert out["after"] == {**out["after"], "snapshot_format": P.FORMAT, "journal_bytes": 0}
    assert journal.stat().st_size == 0
    g = open_graph_store(store)
    try:
        assert (g.stats()["nodes"], g.stats()["edges"]) == (before["nodes"], before["edges"])
        assert g.get_node("deltabank", "CUST_COMPACT2").props["name"] == "After The Snapshot"
    finally:
        g.close()
    r = runner.invoke(app, ["compact", "--graph", str(store)])  # again: nothing to do, nothing rewritten
    assert r.exit_code == 0 and "nothing to compact" in r.output, r.output


def test_compact_refuses_what_is_not_an_embedded_store(tmp_path: Path) -> None:
    r = runner.invoke(app, ["compact", "--graph", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no hopweave store" in r.output
    r = runner.invoke(app, ["compact", "--graph", "neo4j://localhost:7687"])
    assert r.exit_code == 2 and "embedded store directory" in r.output
