"""The shard's search pool is loaded at one thread (``SEARCH_THREADS``): the stored configuration
is rebuilt with that count when every setting in it is one this adapter knows, else the shard
loads as stored; the answers are the same either way."""

from __future__ import annotations

import json

from search_fixtures import load, random_payloads

from hopweave.search.edge_index import SEARCH_THREADS, EdgeIndex
from hopweave.search.profiles import get_profile


def _config(store):
    return json.loads((store / "vectors" / "shard" / "edge_config.json").read_text())


def _ids(idx):
    return [idx.search("t1", q, get_profile("lexical_only"), limit=5).ids() for q in ("fee waiver", "card fraud")]


def test_an_older_shard_gets_one_search_thread_and_the_same_answers(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    load(idx, random_payloads(120, seed=3), hash_embedder)
    idx.close()
    cfg = _config(tmp_path)
    assert cfg["max_search_threads"] == SEARCH_THREADS  # a new shard is created with it
    del cfg["max_search_threads"]  # as a shard built before it was set
    (tmp_path / "vectors" / "shard" / "edge_config.json").write_text(json.dumps(cfg))
    idx = EdgeIndex(tmp_path, schema)
    before = _ids(idx)
    idx.close()
    assert _config(tmp_path)["max_search_threads"] == SEARCH_THREADS
    after = _config(tmp_path)
    for key in ("vectors", "sparse_vectors", "hnsw_config"):  # the shard's own settings, unchanged
        assert after.get(key) == cfg.get(key)
    idx = EdgeIndex(tmp_path, schema)
    try:
        assert _ids(idx) == before
    finally:
        idx.close()


def test_a_setting_it_does_not_rebuild_leaves_the_stored_configuration(tmp_path, schema, hash_embedder):
    idx = EdgeIndex(tmp_path, schema)
    load(idx, random_payloads(60, seed=4), hash_embedder)
    idx.close()
    cfg = _config(tmp_path)
    del cfg["max_search_threads"]
    cfg["wal_enabled"] = True  # a setting _load_config does not rebuild
    path = tmp_path / "vectors" / "shard" / "edge_config.json"
    path.write_text(json.dumps(cfg))
    idx = EdgeIndex(tmp_path, schema)
    try:
        assert len(_ids(idx)) == 2  # loads as stored
    finally:
        idx.close()
    assert "max_search_threads" not in _config(tmp_path)
