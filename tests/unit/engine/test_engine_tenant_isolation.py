"""Tenant isolation of recorded traces and of precedent (and of everything else a retrieval sees)."""

from __future__ import annotations

import pytest
from domains import AS_OF, MARIA, UTTERANCE

from hopweave.engine import record as rec
from hopweave.errors import NotFoundError, TenantError

NORTH = {"tenant_id": "northbank", "customer_id": "NB_CUST_4421", "region": "US", "channel": "phone"}


@pytest.fixture(scope="module")
def north(engine):
    return engine.retrieve(UTTERANCE, session=NORTH, as_of=AS_OF)


def test_precedent_is_tenant_scoped(maria, north) -> None:
    assert [p.trace_id for p in north.precedent] == ["NB_TRACE_77"]
    assert all(p.trace_id.startswith("TRACE_") for p in maria.precedent)


def test_other_tenant_sees_none_of_the_data(north) -> None:
    text = north.context.text
    assert "NB_CUST_4421" in text
    for leaked in ("Maria Lopez, CUST_4421", "ACCT_99812", "TRACE_8514", "waiver-policy-v3.pdf"):
        assert leaked not in text
    assert north.chunks == ()  # northbank owns no documents in the index
    assert all(r.properties["tenant_id"] in ("northbank", "_global") for f in north.facts for r in f.rows)


def test_traces_are_tenant_scoped(engine, maria, north) -> None:
    assert north.trace_id != maria.trace_id
    with pytest.raises(NotFoundError):
        rec.load(engine.graph, "northbank", maria.trace_id)
    with pytest.raises(NotFoundError):
        rec.load(engine.graph, "deltabank", north.trace_id)
    theirs = {t.trace_id for t in rec.traces_using(engine.graph, "northbank", "comparable_precedent")}
    ours = {t.trace_id for t in rec.traces_using(engine.graph, "deltabank", "comparable_precedent")}
    assert north.trace_id in theirs and maria.trace_id not in theirs
    assert maria.trace_id in ours and north.trace_id not in ours


def test_recorded_retrievals_are_never_precedent(engine, maria) -> None:
    again = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, record=False)
    assert not any(p.trace_id.startswith("RT_") for p in again.precedent)


def test_malformed_tenant_is_refused(engine) -> None:
    with pytest.raises(TenantError):
        engine.retrieve(UTTERANCE, session={"tenant_id": "../etc", "customer_id": "CUST_4421"}, as_of=AS_OF)
