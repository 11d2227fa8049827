"""``hopweave doctor`` on the embedded store: healthy, then broken in planted ways (no store, no
settings, unreadable settings, a graph emptied behind its settings, an index of another embedding
space, no vector index); each is named with what to fix, and the exit code says whether the
engine can run. (tests/falkordb/test_front.py checks a Cypher store's constraints and indexes.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.stores.doctor import doctor

REPO = Path(__file__).resolve().parents[3]
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
            "vectors.space"} <= set(checks)
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
