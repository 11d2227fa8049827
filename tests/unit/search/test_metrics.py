"""Metrics: hand-computed values, bounds, ideal DCG from all judged docs, bootstrap."""

from __future__ import annotations

import math

import pytest

from hopweave.search.eval.metrics import (
    MetricBoundsError,
    _check,
    mean_metrics,
    mrr_at,
    ndcg_at,
    paired_bootstrap,
    precision_at,
    query_metrics,
    recall_at,
)

QRELS = {"d1": 2, "d2": 1, "d9": 1, "d0": 0}


def test_ndcg_uses_all_judged_documents_for_the_ideal():
    ranked = ["d1", "x", "d2"]
    dcg = 2 / math.log2(2) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # d9 counts though never retrieved
    assert ndcg_at(ranked, QRELS) == pytest.approx(dcg / idcg)
    assert ndcg_at(["d1", "d2", "d9"], QRELS) == pytest.approx(1.0)
    assert ndcg_at([], QRELS) == 0.0


def test_recall_mrr_precision():
    ranked = ["x", "d2", "d0", "d1"]
    assert recall_at(ranked, QRELS, 10) == pytest.approx(2 / 3)
    assert recall_at(ranked, QRELS, 1) == 0.0
    assert mrr_at(ranked, QRELS) == pytest.approx(0.5)
    assert precision_at(ranked, QRELS) == pytest.approx(0.2)
    m = query_metrics(ranked, QRELS)
    assert all(0.0 <= v <= 1.0 for v in m.values())
    assert mean_metrics({"q1": m, "q2": m}) == pytest.approx(m)


def test_out_of_bounds_metric_raises():
    with pytest.raises(MetricBoundsError):
        _check("ndcg@10", 1.2)
    with pytest.raises(MetricBoundsError):
        _check("ndcg@10", float("nan"))


def test_paired_bootstrap():
    a = {str(i): 0.6 + (i % 3) * 0.01 for i in range(50)}
    b = {str(i): 0.5 for i in range(50)}
    ci = paired_bootstrap(a, b)
    assert ci.low > 0 and ci.excludes_zero and ci.low <= ci.mean <= ci.high
    assert paired_bootstrap(a, b) == ci  # deterministic
    same = paired_bootstrap(b, b)
    assert same.mean == 0 and not same.excludes_zero
    with pytest.raises(ValueError):
        paired_bootstrap({"x": 1.0}, {"y": 1.0})


def test_beir_loader(tmp_path):
    import gzip
    import json

    from hopweave.errors import InputError
    from hopweave.search.eval.beir import load_beir

    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as fh:
        for i in range(3):
            fh.write(json.dumps({"_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"}) + "\n")
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "q one"}\n{"_id": "2", "text": "q two"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td0\t2\n1\td1\t1\n2\td2\t0\n")
    ds = load_beir(tmp_path, "test")
    assert [d.doc_id for d in ds.corpus] == ["d0", "d1", "d2"]
    assert ds.queries == {"1": "q one"}  # query 2 has no positive judgement
    assert ds.qrels["1"] == {"d0": 2, "d1": 1}
    with pytest.raises(InputError, match="train"):
        load_beir(tmp_path, "train")
