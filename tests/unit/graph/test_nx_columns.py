"""Snapshot formats 3 and 4 (columns, ``graph._columns``): what the store answers from the arrays
equals what the eager networkx dicts answer, through the journal, compaction and the format-2 and
format-3 paths, and a forged or damaged file is refused with a typed error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from graph_helpers import bindings, pattern, small_graph
from snapshot_forge import (
    array as _array,
    forge as _forge,
    meta as _meta,
    parts as _parts,
    props_of as _props_of,
    section as _section,
    set_value as _set,
)

from hopweave.errors import StoreCorruptError, StoreError
from hopweave.graph import _persist as P
from hopweave.graph._columns import IdOrder
from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.filters import Eq
from hopweave.models.metagraph import EdgeStep, Literal_, Seed

REC = "2026-05-01T10:00:00"


def _more(store: NetworkxGraphStore) -> None:
    """Writes after the snapshot: new nodes and edges, a property update and removal on a
    snapshot node, a new type between two connected snapshot nodes, snapshot edge properties."""
    store.write("t1", [Node("C3", "Customer", {"name": "Cy", "tier": "Gold"}),
                       Node("A1", "Account", {"balance": 99.5, "type": None})],
                [Edge("C3", "TIER_Gold", "HAS_TIER"), Edge("C3", "A1", "HOLDS"),
                 Edge("A1", "E1", "HAS_EVENT", {"recorded_at": REC})])
    store.write("t1", [Node("E4", "Event", {"type": "Fee", "timestamp": "2026-05-02T10:00:00", "year": 2026})],
                [Edge("A1", "E4", "HAS_EVENT", {"recorded_at": REC}), Edge("C1", "TIER_Gold", "HAS_TIER")])
    store.write("t2", [Node("C2", "Customer", {"name": "Bo"})], [])


def _eager(schema: Any) -> NetworkxGraphStore:
    s = NetworkxGraphStore(None, schema)
    small_graph(s)
    _more(s)
    return s


def _dump(g: Any) -> tuple[dict[str, Any], list[Any]]:
    nodes = {n: dict(a) for n, a in g.nodes(data=True)}
    edges = sorted((u, v, k, json.dumps(d, sort_keys=True)) for u, v, k, d in g.edges(keys=True, data=True))
    return nodes, edges


def _res(result: Any) -> dict[str, Any]:
    return dict(result.model_dump(exclude={"elapsed_ms"}))


def _header(d: Path) -> dict[str, Any]:
    with open(d / P.SNAPSHOT, "rb") as f:
        return dict(json.loads(f.readline()))


def _columnar(tmp_path: Path, schema: Any, writes_after: bool = True) -> Path:
    d = tmp_path / "graph"
    s = NetworkxGraphStore.open(d, schema)
    small_graph(s)
    s.compact()
    s.close()
    assert _header(d)["format"] == P.FORMAT
    if writes_after:
        s = NetworkxGraphStore.open(d, schema)
        assert s._st.cols is not None  # the writes go on top of the columns
        _more(s)
        assert s._st.cols is not None
        s.close()
    return d


def test_round_trip_equals_the_eager_graph(tmp_path, schema):
    d = _columnar(tmp_path, schema, writes_after=False)
    eager = NetworkxGraphStore(None, schema)
    small_graph(eager)
    s = NetworkxGraphStore.open(d, schema, read_only=True)
    assert s._st.cols is not None and s.stats()["nodes"] == 8 and s.stats()["edges"] == 6
    assert s.stats()["labels"] == eager.stats()["labels"]
    assert s.get_node("t1", "C1") == eager.get_node("t1", "C1")
    assert s.get_node("t2", "C1") is None  # another tenant's node stays invisible
    assert len(s._st.node) == 1  # only what was read is decoded
    assert _dump(s.graph) == _dump(eager.graph)
    assert s._st.cols is None  # the networkx graph thawed the state


def test_journal_after_the_snapshot_and_every_read_path(tmp_path, schema):
    d = _columnar(tmp_path, schema)
    eager = _eager(schema)
    s = NetworkxGraphStore.open(d, schema)
    assert s._st.cols is not None and s.stats()["last_seq"] > 0
    assert {k: v for k, v in s.stats().items() if k != "journal_bytes"} == \
        {k: v for k, v in eager.stats().items() if k != "journal_bytes"}
    ids = sorted(eager.graph.nodes)
    rels = sorted({r.name for r in schema.relationships})
    for nid in ids:
        for rel in rels:
            for direction in ("out", "in", "both"):
                for ok in (None, lambda p: "recorded_at" not in p):
                    got = sorted(s._st.neighbors(nid, rel, direction, ok))
                    assert got == sorted(eager._st.neighbors(nid, rel, direction, ok)), (nid, rel, direction)
    for tenant in ("t1", "t2"):
        assert s.find_nodes(tenant, "Customer") == eager.find_nodes(tenant, "Customer")
        fee = Eq(field="type", value="Fee")
        assert s.find_nodes(tenant, "Event", fee) == eager.find_nodes(tenant, "Event", fee)
    p = pattern(name="ev", seed=pattern().seed, edge_sequence=(EdgeStep(type="HOLDS"), EdgeStep(type="HAS_EVENT")),
                target_type="Event")
    assert _res(s.run_pattern("t1", p, bindings())) == _res(eager.run_pattern("t1", p, bindings()))
    back = pattern(name="back", seed=Seed(type="Tier", key="name", value=Literal_(value="Gold")),
                   edge_sequence=(EdgeStep(type="HAS_TIER", direction="in"),), target_type="Customer")
    got = _res(s.run_pattern("t1", back, bindings()))
    assert got["rows"] and got == _res(eager.run_pattern("t1", back, bindings()))
    assert _dump(s.graph) == _dump(eager.graph)


def test_compaction_writes_format_3_from_the_columns_and_the_journal(tmp_path, schema):
    d = _columnar(tmp_path, schema)
    s = NetworkxGraphStore.open(d, schema)
    assert s.get_node("t1", "A1") is not None  # decoded nodes are re-encoded, the others copied
    s.compact()
    assert P.journal_size(d) == 0 and _header(d)["format"] == P.FORMAT
    assert s._st.cols is not None  # written from the columns, not thawed
    s.write("t1", [Node("C4", "Customer", {"name": "Di"})], [])
    s.close()
    eager = _eager(schema)
    eager.write("t1", [Node("C4", "Customer", {"name": "Di"})], [])
    r = NetworkxGraphStore.open(d, schema)
    assert r._st.cols is not None
    assert _dump(r.graph) == _dump(eager.graph)


def test_catch_up_after_another_process_compacted(tmp_path, schema):
    d = _columnar(tmp_path, schema, writes_after=False)
    a = NetworkxGraphStore.open(d, schema)
    b = NetworkxGraphStore.open(d, schema)
    _more(b)
    b.compact()
    a.write("t1", [Node("C5", "Customer", {"name": "Ed"})], [Edge("C5", "TIER_Gold", "HAS_TIER")])
    assert a._st.cols is not None  # re-read the new columns, then wrote on top
    eager = _eager(schema)
    eager.write("t1", [Node("C5", "Customer", {"name": "Ed"})], [Edge("C5", "TIER_Gold", "HAS_TIER")])
    assert _dump(a.graph) == _dump(eager.graph)
    b.refresh()
    assert _dump(b.graph) == _dump(eager.graph)


def test_a_format_2_store_opens_and_is_rewritten_at_compaction(tmp_path, schema):
    d = tmp_path / "graph"
    eager = NetworkxGraphStore(None, schema)
    small_graph(eager)
    header = {"last_seq": 3, "nodes": 8, "edges": 6}
    P.write_snapshot(d, eager.graph._node, eager.graph._succ, header, fmt=P.JSON_FORMAT)
    assert _header(d)["format"] == P.JSON_FORMAT
    s = NetworkxGraphStore.open(d, schema)
    assert s._st.cols is None  # format 2: the eager dicts, as before
    assert _dump(s.graph) == _dump(eager.graph)
    _more(s)
    _more(eager)
    s.compact()
    s.close()
    assert _header(d)["format"] == P.FORMAT
    r = NetworkxGraphStore.open(d, schema)
    assert r._st.cols is not None and _dump(r.graph) == _dump(eager.graph)


def test_a_format_3_store_opens_and_is_rewritten_as_format_4_at_compaction(tmp_path, schema):
    """Format 3 (no ``by_id`` order): opens with a dict of the ids and answers the same; the
    next compaction writes format 4, found by binary search."""
    d = tmp_path / "graph"
    eager = _eager(schema)
    header = {"last_seq": 3, "nodes": eager.stats()["nodes"], "edges": eager.stats()["edges"]}
    P.write_snapshot(d, eager.graph._node, eager.graph._succ, header, fmt=3)
    assert _header(d)["format"] == 3 and "by_id" not in _header(d)["sections"]
    s = NetworkxGraphStore.open(d, schema)
    assert type(s._st.cols.pos) is dict  # type: ignore[union-attr]
    assert _dump(s.graph) == _dump(eager.graph)
    s.write("t1", [Node("C6", "Customer", {"name": "Fay"})], [])
    eager.write("t1", [Node("C6", "Customer", {"name": "Fay"})], [])
    s.compact()
    s.close()
    assert _header(d)["format"] == P.FORMAT == 4
    r = NetworkxGraphStore.open(d, schema)
    pos = r._st.cols.pos  # type: ignore[union-attr]
    assert type(pos) is IdOrder and sorted(pos) == list(pos) and len(pos) == len(eager.graph)
    for nid in eager.graph:
        assert r._st.cols.ids[pos[nid]] == nid  # type: ignore[union-attr]
    for missing in ("", "C0", "C60", "zzz", 7, None):
        assert missing not in pos and pos.get(missing, -1) == -1
    with pytest.raises(KeyError):
        pos["C0"]
    assert _dump(r.graph) == _dump(eager.graph)
    assert r.get_node("t1", "C6").props["name"] == "Fay"  # type: ignore[union-attr]


@pytest.mark.parametrize("decoded", [0, 60])
def test_compaction_over_format_4_finds_snapshot_nodes_by_search_or_by_a_dict(tmp_path, schema, decoded):
    """Compaction on top of format-4 columns looks each written or decoded node up in the
    snapshot: a binary search each when few are, a dict of the ids when many are (``decoded``)."""
    d = tmp_path / "graph"
    events = [Node(f"E{100 + i}", "Event", {"type": "Fee", "timestamp": "2026-05-02T10:00:00", "year": 2026})
              for i in range(80)]
    eager = NetworkxGraphStore(None, schema)
    s = NetworkxGraphStore.open(d, schema)
    for store in (eager, s):
        small_graph(store)
        store.write("t1", events, [Edge("A1", e.id, "HAS_EVENT", {"recorded_at": REC}) for e in events])
    s.compact()
    s.close()
    s = NetworkxGraphStore.open(d, schema)
    assert type(s._st.cols.pos) is IdOrder  # type: ignore[union-attr]
    for e in events[:decoded]:
        assert s.get_node("t1", e.id) is not None
    assert (len(s._st.node) >= s._st.cols.n // 8) == bool(decoded)  # type: ignore[union-attr]
    _more(s)
    _more(eager)
    s.compact()
    s.close()
    r = NetworkxGraphStore.open(d, schema)
    assert _dump(r.graph) == _dump(eager.graph)


def test_warmup_builds_the_incoming_edge_index_before_the_first_backward_walk(tmp_path, schema):
    d = _columnar(tmp_path, schema, writes_after=False)
    s = NetworkxGraphStore.open(d, schema)
    cols = s._st.cols
    assert cols is not None and cols._in is None
    s.warmup()
    assert cols._in is not None
    built = cols._in
    cold = NetworkxGraphStore.open(d, schema)  # built on first use instead: the same answers
    for nid, rel in (("TIER_Platinum", "HAS_TIER"), ("A1", "HOLDS"), ("E1", "HAS_EVENT")):
        got = list(s._st.neighbors(nid, rel, "in"))
        assert got and got == list(cold._st.neighbors(nid, rel, "in"))
    assert cols._in is built  # built once
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.warmup()


def test_a_duplicate_id_in_format_3_is_refused_at_open(tmp_path, schema):
    d = tmp_path / "graph"
    eager = _eager(schema)
    P.write_snapshot(d, eager.graph._node, eager.graph._succ,
                     {"last_seq": 3, "nodes": eager.stats()["nodes"], "edges": eager.stats()["edges"]}, fmt=3)
    header, payload = _parts(d)
    ids = json.loads(_section(header, payload, "ids"))
    _forge(d, {"ids": json.dumps([ids[1]] + ids[1:]).encode()})
    with pytest.raises(StoreCorruptError, match="occurs twice"):
        NetworkxGraphStore.open(d, schema)


def test_integers_beyond_64_bits_survive(tmp_path, schema):
    d = _columnar(tmp_path, schema, writes_after=False)
    s = NetworkxGraphStore.open(d, schema)
    s.write("t1", [Node("E9", "Event", {"type": "Big", "year": 2 ** 70})], [])
    s.compact()
    s.close()
    r = NetworkxGraphStore.open(d, schema)
    node = r.get_node("t1", "E9")
    assert node is not None and node.props["year"] == 2 ** 70 and type(node.props["year"]) is int
    r.write("t1", [Node("E8", "Event", {"type": "Small", "year": 2026})], [])
    r.compact()  # E9 is copied from the columns this time: still read by the json module
    r.close()
    again = NetworkxGraphStore.open(d, schema)
    assert again.get_node("t1", "E9").props["year"] == 2 ** 70  # type: ignore[union-attr]
    assert again.get_node("t1", "E8").props["year"] == 2026  # type: ignore[union-attr]
    eager = NetworkxGraphStore.open(d, schema)
    eager.graph  # noqa: B018 - thawed: the eager encoder writes it next
    eager.compact()
    eager.close()
    assert NetworkxGraphStore.open(d, schema).get_node("t1", "E9").props["year"] == 2 ** 70  # type: ignore[union-attr]


def test_the_one_call_node_encoding_equals_one_call_per_node(tmp_path, schema):
    """The encoder splits one orjson output at each node's start; a node whose first key is not
    the label makes it encode node by node. Both read back the same."""
    s = _eager(schema)
    node = {k: dict(v) for k, v in s.graph._node.items()}
    odd = dict(node)
    odd["C1"] = {"tenant_id": "t1", **{k: v for k, v in node["C1"].items() if k != "tenant_id"}}
    for i, nodes in enumerate((node, odd)):
        d = tmp_path / str(i)
        P.write_snapshot(d, nodes, s.graph._succ, {"last_seq": 1, "nodes": len(nodes), "edges": s.stats()["edges"]})
        r = NetworkxGraphStore.open(d, schema)
        assert _dump(r.graph) == _dump(s.graph)


# ---- forged and damaged format-4 snapshots ------------------------------------------------------
@pytest.mark.parametrize("case,needle", [
    ("label_out_of_range", "label or tenant code is out of range"),
    ("unknown_label", "not in the schema"),
    ("unknown_rel", "not in the schema"),
    ("bad_tenant", "malformed"),
    ("shared_label_tenant", "not valid for its label"),
    ("dst_out_of_range", "out of range"),
    ("eprop_out_of_range", "out of range"),
    ("edge_type", "cannot go from"),
    ("offsets", "ascending offsets"),
    ("short_array", "bytes"),
    ("outside", "outside the payload"),
    ("duplicate_id", "occurs twice"),
    ("ids_not_strings", "section 'ids'"),
    ("missing_section", "sections"),
    ("eprops_not_objects", "section 'eprops'"),
    ("by_id_out_of_range", "node index out of range"),
    ("by_id_not_ascending", "not the node ids in ascending order"),
    ("by_id_an_index_twice", "not the node ids in ascending order"),
    ("by_id_missing", "sections"),
])
def test_a_forged_format_4_snapshot_is_refused_at_open(tmp_path, schema, case, needle):
    d = _columnar(tmp_path, schema, writes_after=False)
    header, payload = _parts(d)
    ids = json.loads(_section(header, payload, "ids"))
    meta = json.loads(_section(header, payload, "meta"))
    forged: dict[str, Any] = {
        "label_out_of_range": lambda: _forge(d, {"label": _set(d, "label", 0, 999)}),
        "unknown_label": lambda: _forge(d, {"meta": _meta(d, labels=["Exploit"] + meta["labels"][1:])}),
        "unknown_rel": lambda: _forge(d, {"meta": _meta(d, rels=["DROP"] + meta["rels"][1:])}),
        "bad_tenant": lambda: _forge(d, {"meta": _meta(d, tenants=["../x"] + meta["tenants"][1:])}),
        "shared_label_tenant": lambda: _forge(d, {"tenant": _set(d, "tenant", ids.index("TIER_Gold"),
                                                                  meta["tenants"].index("t1"))}),
        "dst_out_of_range": lambda: _forge(d, {"out_dst": _set(d, "out_dst", 0, len(ids))}),
        "eprop_out_of_range": lambda: _forge(d, {"out_eprop": _set(d, "out_eprop", 0, 5)}),
        "edge_type": lambda: _forge(d, {"out_dst": _set(d, "out_dst", 0, ids.index("E1"))}),
        "offsets": lambda: _forge(d, {"props_off": _set(d, "props_off", 2, 10 ** 6)}),
        "short_array": lambda: _forge(d, {"label": _array(d, "label")[:-1].tobytes()}),
        "outside": lambda: _forge(d, {}, sections=dict(header["sections"], label=[len(payload), 16])),
        "duplicate_id": lambda: _forge(d, {"ids": json.dumps([ids[1]] + ids[1:]).encode()}),
        "ids_not_strings": lambda: _forge(d, {"ids": json.dumps([1] + ids[1:]).encode()}),
        "missing_section": lambda: _forge(d, {}, sections={"meta": header["sections"]["meta"]}),
        "eprops_not_objects": lambda: _forge(d, {"eprops": b"[1]"}),
        "by_id_out_of_range": lambda: _forge(d, {"by_id": _set(d, "by_id", 3, len(ids))}),
        "by_id_not_ascending": lambda: _forge(d, {"by_id": _array(d, "by_id")[::-1].tobytes()}),
        "by_id_an_index_twice": lambda: _forge(d, {"by_id": _set(d, "by_id", 1, int(_array(d, "by_id")[0]))}),
        "by_id_missing": lambda: _forge(d, {}, sections={k: v for k, v in header["sections"].items() if k != "by_id"}),
    }
    forged[case]()
    with pytest.raises(StoreCorruptError, match=needle) as ei:
        NetworkxGraphStore.open(d, schema)
    assert str(d / P.SNAPSHOT) in str(ei.value) and "hopweave load" in str(ei.value)


@pytest.mark.parametrize("change,needle", [
    ({"evil": "x"}, "'evil' is undeclared"),
    ({"balance": "10"}, "'balance' is undeclared or not of its declared type"),
    ({"label": "Customer"}, "label 'Account'"),
    ({"tenant_id": "t2"}, "differs from the tenant column"),
])
def test_a_forged_node_is_refused_when_first_read(tmp_path, schema, change, needle):
    d = _columnar(tmp_path, schema, writes_after=False)
    _forge(d, _props_of(d, "A1", change))
    s = NetworkxGraphStore.open(d, schema)  # the columns are sound; the node is decoded on use
    assert s.get_node("t1", "C1") is not None
    with pytest.raises(StoreCorruptError, match=needle) as ei:
        s.get_node("t1", "A1")
    assert str(d / P.SNAPSHOT) in str(ei.value) and "hopweave load" in str(ei.value)
    with pytest.raises(StoreCorruptError, match=needle):
        s.graph  # noqa: B018 - thawing decodes every node


@pytest.mark.parametrize("section", ["meta", "ids", "label", "out_dst", "eprops", "by_id"])
def test_a_damaged_format_4_snapshot_fails_its_checksum(tmp_path, schema, section):
    # the checksum is computed beside the columns' checks: whatever those make of the damage,
    # the error is the checksum's
    d = _columnar(tmp_path, schema, writes_after=False)
    header = _header(d)
    raw = bytearray((d / P.SNAPSHOT).read_bytes())
    at, size = header["sections"][section]
    raw[raw.index(b"\n") + 1 + at + size // 2] ^= 0x41
    (d / P.SNAPSHOT).write_bytes(bytes(raw))
    with pytest.raises(StoreCorruptError, match="checksum mismatch"):
        NetworkxGraphStore.open(d, schema)
