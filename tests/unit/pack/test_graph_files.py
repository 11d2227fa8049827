"""Graph data files (JSONL, neo4j-admin CSV, .gz): streamed into Node/Edge items, every problem
collected with its file, line and fix; the load path raises PackError and yields no bad record."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import pytest

from hopweave.errors import PackError
from hopweave.graph.base import Edge, Node
from hopweave.models.schema import GraphSchema
from hopweave.pack.graph_files import GraphContext, check_graph_files, iter_graph_files, read_graph_files

PACK_SCHEMA = Path(__file__).resolve().parents[3] / "examples" / "deltabank" / "schema.yaml"


@pytest.fixture(scope="module")
def schema() -> GraphSchema:
    return GraphSchema.load(PACK_SCHEMA)


def _w(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


VOCAB = """
# the shared vocabulary
{"node": "TIER_Platinum", "label": "Tier", "properties": {"name": "Platinum", "rank": 1, "aliases": ["plat"]}}

{"node": "PRODUCT_Card", "label": "Product", "properties": {"name": "Card"}}
"""


def test_jsonl_and_csv_stream_nodes_and_edges_across_entries(schema, tmp_path):
    vocab = _w(tmp_path / "graph/vocabulary.jsonl", VOCAB)
    cust = _w(tmp_path / "graph/t1/nodes/Customer.csv", """
        :ID,name,tier,tier_since:date,region
        CUST_1,Ana Ruiz,Platinum,2021-01-05,US
        CUST_2,"Bo, Jr",,,EU
        """)
    acct = _w(tmp_path / "graph/t1/nodes/Account.csv", """
        id:ID,balance:double,opened,status
        ACCT_1,12.5,2022-02-02,active
        """)
    holds = _w(tmp_path / "graph/t1/edges/HOLDS.csv", ":START_ID,:END_ID\nCUST_1,ACCT_1\n")
    tier = _w(tmp_path / "graph/t1/more.jsonl", '{"edge": "HAS_TIER", "from": "CUST_1", "to": "TIER_Platinum"}\n')
    ctx = GraphContext()
    shared = list(read_graph_files([vocab], schema, shared=True, context=ctx, root=tmp_path))
    assert shared == [Node("TIER_Platinum", "Tier", {"name": "Platinum", "rank": 1, "aliases": ["plat"]}),
                      Node("PRODUCT_Card", "Product", {"name": "Card"})]
    items = list(read_graph_files([holds, cust, acct, tier], schema, tenant="t1", context=ctx, root=tmp_path))
    # the HOLDS edge came before its nodes: held back and yielded after them, once checked
    assert items[0] == Node("CUST_1", "Customer", {"name": "Ana Ruiz", "tier": "Platinum",
                                                   "tier_since": "2021-01-05", "region": "US"})
    assert items[1] == Node("CUST_2", "Customer", {"name": "Bo, Jr", "region": "EU"})
    assert items[2] == Node("ACCT_1", "Account", {"balance": 12.5, "opened": "2022-02-02", "status": "active"})
    assert items[3:] == [Edge("CUST_1", "TIER_Platinum", "HAS_TIER"), Edge("CUST_1", "ACCT_1", "HOLDS")]


def test_gzip_and_typed_arrays(schema, tmp_path):
    p = tmp_path / "Tier.csv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(":ID,name,rank:int,aliases:string[]\nTIER_Gold,Gold,2,gold;golden\n")
    j = tmp_path / "v.jsonl.gz"
    with gzip.open(j, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"node": "REGION_US", "label": "Region", "properties": {"name": "US"}}) + "\n")
    items = list(read_graph_files([p, j], schema, shared=True))
    assert items == [Node("TIER_Gold", "Tier", {"name": "Gold", "rank": 2, "aliases": ["gold", "golden"]}),
                     Node("REGION_US", "Region", {"name": "US"})]


BAD = """
{"node": "TIER_X", "label": "Tier", "properties": {"name": "X"}}
not json
{"node": "CUST_9", "label": "Custmer", "properties": {}}
{"node": "CUST_1", "label": "Customer", "properties": {"name": "A", "colour": "red"}}
{"node": "CUST_2", "label": "Customer", "properties": {"tier_since": "May 2020"}}
{"node": "CUST_3", "label": "Customer", "properties": {"tenant_id": "other"}}
{"node": "CUST_4", "label": "Customer"}
{"node": "CUST_4", "label": "Customer"}
{"node": "ACCT_1", "label": "Account", "properties": {"balance": "lots"}}
{"edge": "HOLDS", "from": "CUST_4", "to": "NOPE_1"}
{"edge": "HOLDS", "from": "ACCT_1", "to": "CUST_4"}
{"edge": "OWNS", "from": "CUST_4", "to": "CUST_4"}
{"edge": "HOLDS", "from": "CUST_4", "to": "ACCT_2", "extra": 1}
{"edge": "HAS_TIER", "from": "CUST_4", "to": "OTHER_1"}
{"something": 1}
[1, 2]
"""


def test_every_problem_is_reported_with_file_line_and_fix(schema, tmp_path):
    ctx = GraphContext()
    ctx.ids["OTHER_1"] = ("Tier", "t2")  # a node of another tenant (HAS_TIER to it crosses tenants)
    bad = _w(tmp_path / "graph/t1.jsonl", BAD)
    probs = check_graph_files([bad], schema, tenant="t1", context=ctx, root=tmp_path)
    by_line: dict = {}
    for p in probs:
        by_line[p.line] = by_line.get(p.line, "") + " | " + p.message
    assert all(p.file == "graph/t1.jsonl" and p.fix for p in probs)
    expect = {1: "a Tier node in the graph of tenant 't1'", 2: "not valid JSON", 3: "label 'Custmer' is not in",
              4: "property 'colour' is not declared", 5: "'tier_since' must be an ISO date",
              6: "property 'tenant_id' is reserved", 8: "defined twice", 9: "'balance' must be",
              10: "no node 'NOPE_1'", 11: "HOLDS goes to ['Account'], not Customer",
              12: "'OWNS' is not in the schema", 13: "unknown keys ['extra']", 14: "belongs to tenant 't2'",
              15: "neither a node nor an edge", 16: "neither a node nor an edge"}
    for line, needle in expect.items():
        assert needle in by_line[line], (line, by_line.get(line))
    assert sorted(by_line) == sorted(expect)  # line 7 (CUST_4) is valid
    # the load path yields only the valid records, then raises listing every problem
    got: list = []
    with pytest.raises(PackError) as exc:
        for it in read_graph_files([bad], schema, tenant="t1", context=GraphContext(), root=tmp_path):
            got.append(it)
    assert got == [Node("CUST_4", "Customer", {})]
    assert "graph/t1.jsonl:3 [CUST_9]: node CUST_9: label 'Custmer'" in str(exc.value)


def test_csv_header_and_cell_problems(schema, tmp_path):
    f1 = _w(tmp_path / "nodes/Account.csv", ":ID,balance:int\nA1,3\n")
    f2 = _w(tmp_path / "nodes/Customer.csv", ":ID,name,size:weird\nC1,x,1\n")
    f3 = _w(tmp_path / "edges/HOLDS.csv", ":START_ID,name\nC1,x\n")
    f4 = _w(tmp_path / "nodes/Event.csv", ":ID,amount,on_time\nE1,abc,true\nE2,1.5,maybe\nE3,2\n")
    f5 = _w(tmp_path / "graph.txt", "x")
    probs = check_graph_files([f1, f2, f3, f4, f5], schema, tenant="t1", root=tmp_path)
    msgs = [(p.file, p.line, p.message) for p in probs]
    assert ("nodes/Account.csv", 2, "column balance: typed int in the header, float in the schema") in msgs
    assert ("nodes/Customer.csv", 1, "column 'size:weird': unknown type 'weird'") in msgs
    assert any(f == "edges/HOLDS.csv" and "neither :ID" in m for f, _, m in msgs)
    assert ("nodes/Event.csv", 2, "column amount: 'abc' is not a float") in msgs
    assert ("nodes/Event.csv", 3, "column on_time: 'maybe' is not a bool") in msgs
    assert ("nodes/Event.csv", 4, "2 cells for 3 columns") in msgs
    assert any(f == "graph.txt" and "unknown graph file type" in m for f, _, m in msgs)


def test_problem_list_is_capped(schema, tmp_path):
    f = _w(tmp_path / "many.jsonl", "\n".join("nope" for _ in range(600)) + "\n")
    probs: list = []
    assert list(iter_graph_files([f], schema, probs, tenant="t1")) == []
    assert len(probs) == 501 and probs[-1].message == "100 more problems not listed"
