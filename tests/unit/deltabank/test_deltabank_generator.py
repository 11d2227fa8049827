"""The DeltaBank generator: deterministic, scalable, schema-valid."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "deltabank"))  # the pack's generator

from generator.build import PACK_DIR, load_deltabank  # noqa: E402
from generator.generate import generate, write_graph_files  # noqa: E402

from hopweave.graph import open_graph_store
from hopweave.graph.base import Node


def digest(nodes: int, seed: int) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    for tenant, items in generate(nodes=nodes, seed=seed):
        for it in items:
            h.update(json.dumps([tenant, type(it).__name__, it.__dict__], sort_keys=True).encode())
            n += isinstance(it, Node)
    return h.hexdigest(), n


def test_same_seed_same_graph_other_seed_other_graph():
    a, n = digest(3000, 1)
    assert digest(3000, 1) == (a, n)
    assert digest(3000, 2)[0] != a


def test_node_count_follows_the_parameter():
    for target in (2000, 12000):
        _, n = digest(target, 3)
        assert abs(n - target) / target < 0.03, (target, n)


def test_load_builds_graph_and_metagraph_atomically(tmp_path):
    summary = load_deltabank(tmp_path, nodes=3000, seed=5, with_vectors=False)
    assert summary["goals"] == 4 and summary["patterns"] >= 26
    s = open_graph_store(tmp_path)
    assert s.stats()["nodes"] == summary["nodes"]
    assert s.metagraph_revision() == summary["metagraph_revision"]
    assert s.get_node("deltabank", "CUST_4421").props["summary"].startswith("CUST_4421, Platinum")
    assert "Maria" not in s.get_node("deltabank", "CUST_4421").props["summary"]  # no PII in summaries
    assert s.get_node("deltabank", "TIER_Platinum").props["aliases"]
    lf = s.get_node("deltabank", "EVENTTYPE_LateFeeCharged").props
    assert lf["aliases"] == ["late fee", "late charge", "late payment fee"]
    assert lf["policy_types"] == ["LateFeeWaiver", "FeeSchedule"]
    # every non-metagraph node has a summary line
    missing = [nid for nid, a in s.graph.nodes(data=True)
               if a["label"] not in ("GoalType", "TraversalPattern", "FilterMapping") and not a.get("summary")]
    assert missing == []
    # loading again is idempotent (no duplicates), same seed => same counts
    again = load_deltabank(tmp_path, nodes=3000, seed=5, with_vectors=False)
    assert (again["nodes"], again["edges"]) == (summary["nodes"], summary["edges"])


def test_committed_graph_files_are_the_generator_output(tmp_path):
    """examples/deltabank/graph is exactly what `generate.py` writes at the default size."""
    counts = write_graph_files(tmp_path)
    for name in counts:
        assert (tmp_path / name).read_bytes() == (PACK_DIR / "graph" / name).read_bytes(), (
            f"{name} is stale: run python examples/deltabank/generator/generate.py")
