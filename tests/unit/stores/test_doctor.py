"""``hopweave doctor`` on the embedded store: healthy, then broken in planted ways (no store, no
settings, unreadable settings, a graph emptied behind its settings, an index of another embedding
space, no vector index); each is named with what to fix, and the exit code says whether the
engine can run. (tests/falkordb/test_front.py checks a Cypher store's constraints and indexes.)"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.stores.doctor import doctor

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "shared"))
from snapshot_forge import array, forge, parts, props_of, section, write_older_format  # noqa: E402

PACK = REPO / "examples" / "telecom"
RUN = CliRunner()


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hopweave.pack.loader import load_pack

    store = tmp_path_factory.mktemp("doctor") / "store"
    load_pack(PACK, store)  # with its corpus vectors
    return store


@pytest.fixture
def copy(healthy: Path, tmp_path: Path) -> Path:
    d = tmp_path / "store"
    shutil.copytree(healthy, d)
    return d


def _by_check(report) -> dict[str, object]:  # noqa: ANN001
    return {f"{f.store}.{f.check}": f for f in report.findings}


def test_a_healthy_store_passes_every_check(healthy: Path) -> None:
    report = doctor(healthy)
    checks = _by_check(report)
    assert report.ok and all(f.severity == "ok" for f in report.findings), report.findings
    assert {"graph.open", "graph.settings", "graph.schema", "graph.domain telecom", "vectors.collection",
            "vectors.space", "vectors.search process"} <= set(checks)
    assert "opened the shard" in checks["vectors.search process"].detail
    res = RUN.invoke(app, ["doctor", "--graph", str(healthy), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["ok"] is True and data["graph"] == str(healthy) and data["vectors"] == str(healthy)
    text = RUN.invoke(app, ["doctor", "--store", str(healthy)])
    assert text.exit_code == 0 and "all checks passed" in text.stdout


def test_no_store_says_how_to_build_it(tmp_path: Path) -> None:
    report = doctor(tmp_path / "nowhere")
    f = _by_check(report)["graph.open"]
    assert not report.ok and f.severity == "error" and "no hopweave store" in f.detail
    assert "hopweave load PACK --graph" in f.fix
    res = RUN.invoke(app, ["doctor", "--graph", str(tmp_path / "nowhere")])
    assert res.exit_code == 1 and "ERROR" in res.stdout and "fix: " in res.stdout


def test_missing_settings_are_an_error(copy: Path) -> None:
    (copy / "hopweave-store.json").unlink()
    report = doctor(copy)
    f = _by_check(report)["graph.settings"]
    assert not report.ok and f.severity == "error" and "hopweave-store.json" in f.detail and "is missing" in f.detail
    assert "hopweave load" in f.fix
    assert _by_check(report)["graph.open"].severity == "error"  # the pack's labels are unknown to the base schema


def test_unreadable_settings_are_named(copy: Path) -> None:
    (copy / "hopweave-store.json").write_text("{not json", encoding="utf-8")
    f = _by_check(doctor(copy))["graph.open"]
    assert f.severity == "error" and "StoreCorruptError" in f.detail and "hopweave-store.json" in f.detail


def test_a_graph_emptied_behind_its_settings(copy: Path) -> None:
    shutil.rmtree(copy / "graph")
    (copy / "graph").mkdir()
    f = _by_check(doctor(copy))["graph.open"]  # settings name a pack, the snapshot is gone
    assert f.severity == "error" and "StoreCorruptError" in f.detail and "missing" in f.detail


def test_an_index_of_another_embedding_space(copy: Path) -> None:
    info_path = copy / "vectors" / "collection.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info["space"]["revision"] = "another-model-revision"
    info_path.write_text(json.dumps(info), encoding="utf-8")
    report = doctor(copy)
    f = _by_check(report)["vectors.space"]
    assert not report.ok and f.severity == "error"
    assert "another-model-revision" in f.detail and "HOPWEAVE_ENCODER" in f.fix
    assert RUN.invoke(app, ["doctor", "--graph", str(copy)]).exit_code == 1


def test_no_vector_index_is_a_warning_only(copy: Path) -> None:
    shutil.rmtree(copy / "vectors")
    report = doctor(copy)
    f = _by_check(report)["vectors.open"]
    assert report.ok and f.severity == "warning" and "graph-only" in f.detail
    res = RUN.invoke(app, ["doctor", "--graph", str(copy)])
    assert res.exit_code == 0 and "1 warning(s)" in res.stdout


def test_a_dead_qdrant_server_is_an_error(healthy: Path) -> None:
    report = doctor(healthy, "http://127.0.0.1:9")
    f = _by_check(report)["vectors.collection"]
    assert not report.ok and f.severity == "error" and "http://127.0.0.1:9" in f.detail


def _compacted(store: Path) -> Path:
    """``store`` compacted into a format-3 snapshot; returns its graph directory."""
    from hopweave.graph import GRAPH_SUBDIR

    res = RUN.invoke(app, ["compact", "--graph", str(store)])
    assert res.exit_code == 0, res.output
    return store / GRAPH_SUBDIR


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_deep_decodes_every_node_and_names_a_forged_one(copy: Path) -> None:
    d = _compacted(copy)
    report = doctor(copy, deep=True)
    nodes = _by_check(report)["graph.nodes"]
    assert report.ok and nodes.severity == "ok" and "snapshot nodes decoded" in nodes.detail
    header, payload = parts(d)
    ids = json.loads(section(header, payload, "ids"))
    victim = "LINE_5550101" if "LINE_5550101" in ids else ids[len(ids) // 2]
    forge(d, props_of(d, victim, {"evil": "x"}))  # a sound file (checksum matches) with a node out of schema
    assert doctor(copy).ok  # columns are checked at open, a node when it is first read
    report = doctor(copy, deep=True)
    f = _by_check(report)["graph.nodes"]
    assert not report.ok and f.severity == "error" and victim in f.detail and "'evil'" in f.detail
    res = RUN.invoke(app, ["doctor", "--graph", str(copy), "--deep"])
    assert res.exit_code == 1 and "restore a backup" in res.output


@pytest.mark.slow  # several seconds (processes, CLI runs): the slow suite, which CI also runs
def test_an_old_snapshot_format_and_a_long_journal_are_warnings(copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hopweave.graph import _persist as P, networkx_store, open_graph_store
    from hopweave.graph.base import Node

    d = _compacted(copy)
    g = open_graph_store(copy)
    write_older_format(g)
    g.close()
    checks = _by_check(report := doctor(copy))
    assert report.ok  # warnings only
    assert checks["graph.snapshot"].severity == "warning" and "format 2" in checks["graph.snapshot"].detail
    assert checks["graph.snapshot"].fix == f"hopweave compact --graph {copy}"
    g = open_graph_store(copy)
    write_older_format(g, fmt=3)
    g.close()
    checks = _by_check(report := doctor(copy))
    assert report.ok and checks["graph.snapshot"].severity == "warning"
    assert "format 3" in checks["graph.snapshot"].detail and "dict of every node id" in checks["graph.snapshot"].detail
    _compacted(copy)
    checks = _by_check(doctor(copy))
    assert checks["graph.snapshot"].severity == "ok" and checks["graph.journal"].severity == "ok"
    g = open_graph_store(copy)  # a journal past the threshold
    line = g.get_node("acme", "LINE_5550101")
    assert line is not None
    g.write("acme", [Node(f"LINE_9{i:03d}", "Line", dict(line.props)) for i in range(20)])
    g.close()
    assert (d / P.JOURNAL).stat().st_size > 1024
    monkeypatch.setattr(networkx_store, "AUTO_COMPACT_BYTES", 1024)
    f = _by_check(doctor(copy))["graph.journal"]
    assert f.severity == "warning" and "every open replays it" in f.detail and "hopweave compact" in f.fix


def test_a_shard_held_by_a_serving_engine_is_a_warning(copy: Path) -> None:
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.stores.front import open_stores

    stores = open_stores(copy, graph_only=True, read_only=True)
    schema = stores.graph.schema
    stores.close()
    held = EdgeIndex(copy, schema)
    held.count("telco")  # this process now holds the shard's lock, as a serving engine would
    try:
        f = _by_check(doctor(copy))["vectors.search process"]
        assert f.severity == "warning" and "another process" in f.detail
    finally:
        held.close()


@pytest.mark.slow  # several seconds (doctor and CLI runs): the slow suite, which CI also runs
def test_a_bad_journal_record_is_quarantined_and_reported_the_store_still_opens(copy: Path) -> None:
    from hopweave.graph import GRAPH_SUBDIR, _persist as P

    d = copy / GRAPH_SUBDIR
    # what an older hopweave appended for a retrieval at as_of 0999-12-31 (the year not zero-padded)
    rec = {"seq": 10**6, "t": "acme", "n": [["RT_x", "DecisionTrace", {"kind": "retrieval",
                                                                        "as_of": "999-12-31T23:59:59"}, []]], "e": []}
    with open(d / P.JOURNAL, "ab") as f:
        f.write(json.dumps(rec).encode() + b"\n")
    report = doctor(copy, deep=True)
    checks = _by_check(report)
    q = checks["graph.quarantine"]
    assert checks["graph.open"].severity == "ok" and not report.ok  # type: ignore[attr-defined]
    assert q.severity == "error" and "999-12-31T23:59:59" in q.detail and "not applied" in q.detail  # type: ignore[attr-defined]
    res = RUN.invoke(app, ["compact", "--graph", str(copy)])  # compaction keeps it out of the snapshot
    assert res.exit_code == 0, res.output
    again = _by_check(doctor(copy, deep=True))
    assert again["graph.quarantine"].severity == "error" and "quarantine.jsonl" in again["graph.quarantine"].detail  # type: ignore[attr-defined]
    assert again["graph.values"].severity == "ok"  # type: ignore[attr-defined]


@pytest.mark.slow  # several seconds (doctor and CLI runs): the slow suite, which CI also runs
def test_deep_checks_stored_values_by_the_write_rules_after_compaction(copy: Path) -> None:
    d = _compacted(copy)
    header, payload = parts(d)
    ids = json.loads(section(header, payload, "ids"))
    blob, off = section(header, payload, "props"), array(d, "props_off")
    victim = next(nid for i, nid in enumerate(ids) if "timestamp" in json.loads(blob[off[i]:off[i + 1]]))
    forge(d, props_of(d, victim, {"timestamp": "999-12-31T23:59:59"}))  # a str: the type check passes
    report = doctor(copy, deep=True)
    f = _by_check(report)["graph.values"]
    assert not report.ok and f.severity == "error" and victim in f.detail and "timestamp" in f.detail  # type: ignore[attr-defined]



def test_explosive_separators_forged_into_the_settings_are_an_error(copy: Path) -> None:
    path = copy / "hopweave-store.json"
    settings = json.loads(path.read_text(encoding="utf-8"))
    (name, rec), = [(n, r) for n, r in settings["domains"].items() if r.get("classifier")][:1]
    rec["classifier"]["clause_separators"] = r"(\w+\s?)+$|[.?!;]+"
    path.write_text(json.dumps(settings), encoding="utf-8")
    report = doctor(copy)
    f = _by_check(report)[f"graph.domain {name} classifier"]
    assert not report.ok and f.severity == "error" and "nested repetition" in f.detail and "hopweave load" in f.fix


def test_a_calibration_refitted_after_the_load_is_a_warning(healthy: Path, copy: Path) -> None:
    from hopweave.models.store_settings import SETTINGS_FILE

    ok = _by_check(doctor(healthy))["graph.domain telecom calibration"]
    assert ok.severity == "ok" and "classifier_calibration.json" in ok.detail
    settings = copy / SETTINGS_FILE
    data = json.loads(settings.read_text(encoding="utf-8"))
    rec = data["domains"]["telecom"]
    assert Path(rec["calibration_file"]) == (PACK / "classifier_calibration.json").resolve()
    rec["calibration"] = {**rec["calibration"], "fitted_at": "an older fit"}  # the pack's file moved on
    settings.write_text(json.dumps(data), encoding="utf-8")
    report = doctor(copy)
    warn = _by_check(report)["graph.domain telecom calibration"]
    assert warn.severity == "warning" and "differs from the store's copy" in warn.detail
    assert "hopweave load" in warn.fix and report.ok  # the engine still runs, on the stored copy
