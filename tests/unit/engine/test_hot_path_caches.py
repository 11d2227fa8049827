"""Issue 13, CPU outside the search stage: the parse caches, the metric without a model, the
Jaccard without a union set and the warm heap's freeze give the same answers as before."""

from __future__ import annotations

import gc
from datetime import date

import pytest

from hopweave.engine.context_lines import _metric, jaccard, metric_value, shingles
from hopweave.engine.warmup import freeze_warm_heap
from hopweave.errors import FilterError, RuleExpressionError
from hopweave.models import filters
from hopweave.models.common import Row
from hopweave.models.expr import evaluate, parse
from hopweave.models.filters import Eq, parse_filter, parse_filter_cached
from hopweave.models.metagraph import Metric

ROWS = tuple(Row(node_id=f"r{i}", label="X", properties=p) for i, p in enumerate([
    {"on_time": True, "amount": 10}, {"on_time": False, "amount": 2.5}, {"on_time": True, "amount": True},
    {"on_time": True}, {"on_time": False, "amount": 7}]))


def test_parse_is_cached_and_still_raises() -> None:
    assert parse("a > 1 and b in ['x', 'y']") is parse("a > 1 and b in ['x', 'y']")
    assert evaluate("a > 1", {"a": 2}).value is True
    for bad in ("a >", "a > (1", ""):
        with pytest.raises(RuleExpressionError):
            parse(bad)
        with pytest.raises(RuleExpressionError):  # an error is not cached as an answer
            parse(bad)
    with pytest.raises(RuleExpressionError, match="must be a string"):
        parse(3)  # type: ignore[arg-type]


def test_parse_filter_cached_equals_parse_filter() -> None:
    data = {"op": "and", "clauses": [{"op": "eq", "field": "on_time", "value": True},
                                     {"op": "range", "field": "amount", "gte": 1}]}
    tree = parse_filter_cached(data)
    assert tree == parse_filter(data)
    assert parse_filter_cached(dict(reversed(list(data.items())))) is tree  # same data, any key order
    one = parse_filter_cached({"op": "eq", "field": "on_time", "value": 1})
    true = parse_filter_cached({"op": "eq", "field": "on_time", "value": True})
    assert (type(one.value), type(true.value)) == (int, bool)  # type: ignore[union-attr]  # different keys
    node = Eq(field="x", value="y")
    assert parse_filter_cached(node) is node  # not JSON data: parsed (here: passed) every time
    with pytest.raises(FilterError):
        parse_filter_cached({"op": "nope"})
    with pytest.raises(FilterError):
        parse_filter_cached({"op": "nope"})
    assert {"op": "nope"} not in filters._PARSED.values()


def test_parse_filter_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filters, "_PARSED", {})
    monkeypatch.setattr(filters, "_PARSED_MAX", 2)
    trees = [parse_filter_cached({"op": "eq", "field": "f", "value": i}) for i in range(5)]
    assert len(filters._PARSED) == 2
    assert [t.value for t in trees] == [0, 1, 2, 3, 4]  # type: ignore[union-attr]


@pytest.mark.parametrize("fn", ["count", "sum", "min", "max", "mean", "percent"])
@pytest.mark.parametrize("where", [None, {"op": "eq", "field": "on_time", "value": True},
                                   {"op": "eq", "field": "on_time", "value": "never"}])
def test_metric_value_equals_the_metric_model(fn: str, where: dict | None) -> None:
    prop = None if fn in ("count", "percent") else "amount"
    m = Metric(fn=fn, property=prop, where=where)  # type: ignore[arg-type]
    for rows in (ROWS, ()):
        assert metric_value(fn, prop, where, rows) == _metric(m, rows)
        assert type(metric_value(fn, prop, where, rows)) is type(_metric(m, rows))


@pytest.mark.parametrize("a,b", [
    ("the fee is waived once a year for gold customers", "the fee is waived once a year for silver customers"),
    ("identical text here", "identical text here"), ("one two", "one two three four"), ("", "x y z"),
    ("a b c d e f", "g h i j k l")])
def test_jaccard_equals_the_set_formula(a: str, b: str) -> None:
    sa, sb = shingles(a), shingles(b)
    expected = len(sa & sb) / len(sa | sb) if sa and sb else 0.0
    assert jaccard(a, b) == expected


def test_freeze_warm_heap_only_after_a_frozen_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    # The collector's on/off state is process-wide and a store thread left over from another
    # test may pause it for a moment (gc_paused): the test decides it instead of reading it.
    collector_on = [True]
    monkeypatch.setattr(gc, "isenabled", lambda: collector_on[0])
    gc.unfreeze()
    try:
        assert freeze_warm_heap() is False  # nothing frozen yet (no large embedded graph): left alone
        assert gc.get_freeze_count() == 0
        gc.freeze()
        before = gc.get_freeze_count()
        kept = [date(2026, 1, 1), {"x": [1]}]  # long-lived objects made after the first freeze
        assert freeze_warm_heap() is True
        assert gc.get_freeze_count() > before
        collector_on[0] = False
        assert freeze_warm_heap() is False  # the collector is off: not touched
        assert kept
    finally:
        gc.unfreeze()


def test_precedent_terms_tokenize_once_with_the_same_scores() -> None:
    from hopweave.engine.precedent import _doc_terms
    from hopweave.search.lexical import Bm25Encoder, Bm25Params, average_length, bm25_reference

    texts = ["Late fee waived for a Platinum customer, first waiver this year",
             "Fraud claim on a card-not-present purchase; provisional credit issued",
             "Late fee of $39 not waived: two waivers already used", ""]
    case = "dispute a $39 late fee, Platinum tier, no waiver this year"
    old = Bm25Encoder(Bm25Params(avg_len=average_length(Bm25Encoder(), ((t, "") for t in texts))))
    expected = bm25_reference(old, [old.encode_document(t) for t in texts], old.encode_query(case))
    terms = [_doc_terms(t) for t in texts]
    assert terms[0] is _doc_terms(texts[0])  # cached
    enc = Bm25Encoder(Bm25Params(avg_len=max(1.0, sum(len(x) for x in terms) / len(terms))))
    assert enc.params == old.params
    assert bm25_reference(enc, [enc.encode_terms(x) for x in terms], enc.encode_query(case)) == expected
