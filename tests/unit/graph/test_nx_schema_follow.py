"""A store directory whose schema another process extends (``hopweave load`` of a second pack
while ``serve`` runs): an open store adopts the settings' merged schema when it catches up, so the
new labels' records are read (journal and compacted snapshot alike), never held as corrupt or
quarantined, and its own writes go on. A settings schema that drops a label is not adopted."""

from __future__ import annotations

from pathlib import Path

from domains import deltabank_schema, write_deltabank_settings

from hopweave.graph import open_graph_store
from hopweave.graph.base import Node
from hopweave.models.store_settings import read_store_settings, write_store_settings

EXTENSION = {"version": "plans-1", "labels": [{"name": "Plan", "subgraph": "semantic",
                                                "properties": [{"name": "name", "type": "str"}]}]}


def _extend_settings(store: Path) -> None:
    s = read_store_settings(store)
    assert s is not None
    merged = deltabank_schema().extend(EXTENSION)
    write_store_settings(store, s.model_copy(update={"store_schema": merged.model_dump(mode="json")}))


def test_an_open_store_follows_an_extended_schema_through_journal_and_snapshot(tmp_path: Path) -> None:
    write_deltabank_settings(tmp_path)
    serving = open_graph_store(tmp_path)
    serving.write("t1", [Node("CUST_1", "Customer", {})])
    _extend_settings(tmp_path)
    loader = open_graph_store(tmp_path)  # opens with the merged schema, like `hopweave load`
    assert "Plan" in loader.schema.label_map
    loader.write("t1", [Node("PLAN_1", "Plan", {"name": "Unlimited"})])
    serving.refresh()  # the journal record of a label the store did not know
    assert serving.get_node("t1", "PLAN_1") is not None and not serving.quarantined
    loader.write("t1", [Node("PLAN_2", "Plan", {"name": "Basic"})])
    loader.compact()  # a new snapshot holding the new label
    serving.write("t1", [Node("DT_1", "DecisionTrace", {"kind": "retrieval"})])  # catches up, then writes
    assert {n.id for n in serving.find_nodes("t1", "Plan")} == {"PLAN_1", "PLAN_2"}
    reopened = open_graph_store(tmp_path)
    assert reopened.get_node("t1", "DT_1") is not None and not reopened.quarantined
    for s in (serving, loader, reopened):
        s.close()


def test_a_settings_schema_that_drops_a_label_is_not_adopted(tmp_path: Path) -> None:
    write_deltabank_settings(tmp_path)
    _extend_settings(tmp_path)
    serving = open_graph_store(tmp_path)
    assert "Plan" in serving.schema.label_map
    s = read_store_settings(tmp_path)
    assert s is not None
    write_store_settings(tmp_path, s.model_copy(update={"store_schema": deltabank_schema().model_dump(mode="json")}))
    other = open_graph_store(tmp_path)
    other.write("t1", [Node("CUST_1", "Customer", {})])
    serving.refresh()
    assert "Plan" in serving.schema.label_map and serving.get_node("t1", "CUST_1") is not None
    serving.close()
    other.close()
