"""Building a decision trace reads each graph node once (the pins and the edges ask for the
same fact nodes), and gives the same trace as reading the store every time."""

from __future__ import annotations

from collections import Counter
from typing import Any

from domains import (
    AS_OF,
    DELTABANK,  # tests/shared
    MARIA,
    UTTERANCE,
)

from hopweave.engine import record as trace_record
from hopweave.models.common import Session


class _CountingReads:
    """The engine's graph store, counting get_node per node id."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reads: Counter[str] = Counter()

    def get_node(self, tenant_id: str, node_id: str) -> Any:
        self.reads[node_id] += 1
        return self.inner.get_node(tenant_id, node_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_trace_build_reads_each_node_once_and_builds_the_same_trace(engine) -> None:  # noqa: ANN001
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    session = Session.model_validate(MARIA)
    counting = _CountingReads(engine.graph)
    nodes, edges = trace_record.build(r, session, counting, DELTABANK.subject)  # type: ignore[arg-type]
    assert counting.reads and max(counting.reads.values()) == 1
    fact_ids = {s for ln in r.context.lines if ln.kind == "fact" for s in ln.sources}
    assert fact_ids and fact_ids <= set(counting.reads)  # pinned and linked, from one read each
    again = trace_record.build(r, session, engine.graph, DELTABANK.subject)
    assert (nodes, edges) == again
    assert any(e.type == "SAW_FACT" for e in edges) and "pins_json" in nodes[0].props
