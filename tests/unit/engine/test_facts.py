"""Facts at run time (engine/facts.py): a system of record's nodes and edges through
``Engine.write_facts``, ``POST /v1/facts`` and ``hopweave write-facts``: validated, all or
nothing, idempotent, stamped; the next retrieval sees them, earlier traces replay as recorded,
time travel sees them only from recorded_at on. This module's engine is its own, on a copy of
the session store."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from domains import AS_OF, DELTABANK_REGISTRY, MARIA, UTTERANCE
from typer.testing import CliRunner

from hopweave.cli import app
from hopweave.engine.engine import Engine
from hopweave.engine.replay import REPLAY_CONFIG, as_recorded
from hopweave.errors import FactError, HopweaveError, SchemaError, TenantError

NOW = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


def _fee(nid: str, amount: float, days_ago: int = 2) -> dict[str, Any]:
    ts = (NOW - timedelta(days=days_ago)).isoformat()
    return {"node": nid, "label": "Event", "properties": {
        "type": "LateFeeCharged", "amount": amount, "timestamp": ts, "status": "posted",
        "summary": f"LateFeeCharged ${amount:g} on {ts[:10]}"}}


def _on_account(nid: str) -> dict[str, Any]:
    return {"edge": "HAS_EVENT", "from": "ACCT_99812", "to": nid}


@pytest.fixture(scope="module")
def fact_store(cli_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("facts") / "store"
    shutil.copytree(cli_store, d)
    return d


@pytest.fixture(scope="module")
def eng(fact_store: Path) -> Iterator[Engine]:
    e = Engine.open(fact_store, domains=DELTABANK_REGISTRY, config=REPLAY_CONFIG)
    yield e
    e.close()


def _seq(eng: Engine) -> int:
    return int(eng.graph.stats()["last_seq"])  # type: ignore[attr-defined]


def _fee_rows(eng: Engine, as_of: Any) -> list[str]:
    res = eng.retrieve(UTTERANCE, session=MARIA, as_of=as_of, record=False)
    return [r.node_id for f in res.facts if f.pattern == "disputed_fee_event" for r in f.rows]


def test_a_fact_is_seen_from_recorded_at_on_and_earlier_traces_replay_as_recorded(eng: Engine) -> None:
    before = eng.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF)
    assert before.recorded
    res = eng.write_facts("deltabank", [_fee("EVT_RUNTIME_1", 27.0),
                                        {"node": "ACCT_99812", "label": "Account", "properties": {"balance": 5100.0}}],
                          [_on_account("EVT_RUNTIME_1")], source="billing")
    assert res.nodes_written == ("EVT_RUNTIME_1", "ACCT_99812") and res.edges_written == 1
    node = eng.graph.get_node("deltabank", "EVT_RUNTIME_1")
    assert node is not None and node.props["recorded_by"] == "billing"
    assert node.props["recorded_at"] == res.recorded_at.isoformat()
    acct = eng.graph.get_node("deltabank", "ACCT_99812")
    assert acct is not None and acct.props["balance"] == 5100.0 and "recorded_at" not in acct.props  # kept as it was
    assert "EVT_RUNTIME_1" in _fee_rows(eng, None)  # the next retrieval (as of now) sees it
    yesterday = (res.recorded_at - timedelta(days=1)).isoformat()
    assert "EVT_RUNTIME_1" not in _fee_rows(eng, yesterday)  # it happened then, but was not known yet
    again = as_recorded(eng, "deltabank", before.trace_id)
    assert again.identical and again.text == before.context.text  # the earlier trace, as recorded


def test_the_same_write_twice_is_one(eng: Engine) -> None:
    nodes, edges = [_fee("EVT_RUNTIME_2", 31.0)], [_on_account("EVT_RUNTIME_2")]
    first = eng.write_facts("deltabank", nodes, edges, source="billing")
    assert first.nodes_written == ("EVT_RUNTIME_2",)
    seq = _seq(eng)
    second = eng.write_facts("deltabank", nodes, edges, source="billing")
    assert second.nodes_written == () and second.edges_written == 0 and second.unchanged == 2
    assert _seq(eng) == seq


BAD: list[tuple[str, list[Any], list[Any], str, type[HopweaveError]]] = [
    ("an undeclared property", [_fee("EVT_BAD_1", 5.0), {"node": "EVT_BAD_2", "label": "Event",
                                                          "properties": {"colour": "red"}}], [], "deltabank", SchemaError),
    ("a value of the wrong type", [{"node": "EVT_BAD_3", "label": "Event", "properties": {"amount": "lots"}}], [],
     "deltabank", SchemaError),
    ("an undeclared label", [{"node": "X_1", "label": "Spaceship", "properties": {}}], [], "deltabank", SchemaError),
    ("an edge to a node nobody has", [_fee("EVT_BAD_4", 5.0)], [_on_account("EVT_BAD_4"),
                                                                {"edge": "HAS_EVENT", "from": "ACCT_NOPE", "to": "EVT_BAD_4"}],
     "deltabank", HopweaveError),
    ("another tenant's node", [{"node": "CUST_4421", "label": "Customer", "properties": {"segment": "x"}}], [],
     "northbank", TenantError),
    ("a decision trace", [{"node": "TRACE_FAKE", "label": "DecisionTrace", "properties": {"kind": "precedent"}}], [],
     "deltabank", FactError),
    ("a reserved property", [{"node": "EVT_BAD_5", "label": "Event", "properties": {"recorded_at": "2020-01-01T00:00:00"}}],
     [], "deltabank", FactError),
    ("a malformed record", [{"id": "EVT_BAD_6", "label": "Event"}], [], "deltabank", FactError),
]


@pytest.mark.parametrize("what,nodes,edges,tenant,error", BAD, ids=[b[0] for b in BAD])
def test_bad_writes_are_typed_errors_and_write_nothing(eng: Engine, what: str, nodes: list[Any], edges: list[Any],
                                                        tenant: str, error: type[HopweaveError]) -> None:
    seq = _seq(eng)
    with pytest.raises(error):
        eng.write_facts(tenant, nodes, edges, source="billing")
    assert _seq(eng) == seq, what
    for n in nodes:
        if isinstance(n, dict) and str(n.get("node", "")).startswith("EVT_BAD"):
            assert eng.graph.get_node("deltabank", n["node"]) is None, what  # all or nothing


def test_http_facts(eng: Engine) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hopweave.adapters.http import create_app

    sib = eng.sibling(index=eng.index, understander=None)
    with TestClient(create_app(sib, warm=False, close=False)) as client:
        ok = client.post("/v1/facts", json={"tenant_id": "deltabank", "nodes": [_fee("EVT_HTTP_1", 12.0)],
                                            "edges": [_on_account("EVT_HTTP_1")], "source": "crm"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["nodes_written"] == ["EVT_HTTP_1"]
        bad = client.post("/v1/facts", json={"tenant_id": "deltabank", "source": "crm", "nodes": [
            {"node": "EVT_HTTP_2", "label": "Event", "properties": {"colour": "red"}}]})
        assert bad.status_code == 400 and bad.json()["error"] == "SchemaError"
        no_source = client.post("/v1/facts", json={"tenant_id": "deltabank", "nodes": [_fee("EVT_HTTP_3", 1.0)]})
        assert no_source.status_code == 400
    sib.close_pools()
    assert eng.graph.get_node("deltabank", "EVT_HTTP_2") is None
    assert eng.graph.get_node("deltabank", "EVT_HTTP_3") is None


def test_cli_write_facts(fact_store: Path, tmp_path: Path, eng: Engine) -> None:
    f = tmp_path / "facts.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [_fee("EVT_CLI_1", 19.0), _on_account("EVT_CLI_1")]) + "\n")
    run = CliRunner()
    ok = run.invoke(app, ["write-facts", str(f), "--tenant", "deltabank", "--source", "billing", "--store",
                          str(fact_store), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["nodes_written"] == ["EVT_CLI_1"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"node": "EVT_CLI_2", "label": "Event", "properties": {"colour": "red"}}) + "\n")
    res = run.invoke(app, ["write-facts", str(bad), "--tenant", "deltabank", "--source", "billing", "--store",
                           str(fact_store)])
    assert res.exit_code == 2
    eng.graph.refresh()  # type: ignore[attr-defined]
    assert eng.graph.get_node("deltabank", "EVT_CLI_1") is not None
    assert eng.graph.get_node("deltabank", "EVT_CLI_2") is None


def test_another_process_sees_a_fact_within_a_second(fact_store: Path, eng: Engine) -> None:
    """What ``serve --workers 2`` relies on: a worker's graph (its own store object, refreshed
    every DEFAULT_GRAPH_REFRESH_S) sees a fact another worker wrote within 1 s."""
    import time

    from hopweave.adapters.serve_workers import DEFAULT_GRAPH_REFRESH_S, GraphRefresher
    from hopweave.graph.networkx_store import NetworkxGraphStore

    other = NetworkxGraphStore.open(fact_store / "graph", eng.graph.schema, auto_compact_bytes=None)
    refresher = GraphRefresher(other, DEFAULT_GRAPH_REFRESH_S)
    refresher.start()
    try:
        eng.write_facts("deltabank", [_fee("EVT_WORKER_1", 8.0)], [_on_account("EVT_WORKER_1")], source="billing")
        t0 = time.monotonic()
        while other.get_node("deltabank", "EVT_WORKER_1") is None and time.monotonic() - t0 < 1.0:
            time.sleep(0.02)
        assert other.get_node("deltabank", "EVT_WORKER_1") is not None, "not seen within 1 s"
        assert refresher.errors == 0
    finally:
        refresher.stop()
        other.close()
