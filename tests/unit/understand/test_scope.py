"""The pure scope function (hopweave.understand.scope.session_scope) on the example packs' own
settings and filter mappings, with hand-written records: what it yields and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.errors import ScopeFilterError, TenantError
from hopweave.models.common import Session
from hopweave.models.filters import Eq, In, IsEmpty, Not, Or, Range
from hopweave.pack.manifest import read_manifest
from hopweave.understand.filter_map import read_mapping_file
from hopweave.understand.scope import SubjectRecord, session_scope

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BANK = read_manifest(EXAMPLES / "deltabank").domain_settings()
BANK_MAP = read_mapping_file(EXAMPLES / "deltabank" / "filters.yaml")
TEL = read_manifest(EXAMPLES / "telecom").domain_settings()
TEL_MAP = read_mapping_file(EXAMPLES / "telecom" / "filters.yaml")
MARIA = Session(tenant_id="deltabank", customer_id="CUST_4421", region="US")
MARIA_REC = SubjectRecord(subject_id="CUST_4421",
                          values={"Tier": ("Platinum",), "Product": ("Checking", "Platinum_Card"), "Region": ("US",)},
                          names={"Tier": ("Platinum",), "Product": ("Checking", "Platinum_Card"), "Region": ("US",)},
                          origins={"Tier": "CUST_4421.tier", "Product": "CUST_4421 -HOLDS-> Account.product"})


def test_the_record_comes_first_then_identity_and_always_on() -> None:
    s = session_scope(BANK_MAP, BANK, MARIA_REC, MARIA, "2026-05-12")
    assert s.clauses[:2] == (Eq(field="tier", value="Platinum"),
                             In(field="product", values=("Checking", "Platinum_Card")))
    assert s.clauses[-2:] == (Eq(field="region", value="US"), Eq(field="tenant_id", value="deltabank"))
    assert sum(isinstance(c, Or) for c in s.clauses) == 2  # the in-force clause, flat
    assert s.locked >= {"tenant_id", "customer_id", "status", "valid_from", "valid_until"}
    assert "region" not in s.locked and s.authoritative["region"] == ("US",)
    today = session_scope(BANK_MAP, BANK, MARIA_REC, MARIA)
    assert Eq(field="status", value="active") in today.clauses


def test_pure_same_inputs_same_scope() -> None:
    a = session_scope(BANK_MAP, BANK, MARIA_REC, MARIA, "2026-05-12")
    assert a == session_scope(BANK_MAP, BANK, MARIA_REC, MARIA, "2026-05-12")


@pytest.mark.parametrize("where", [
    Eq(field="tier", value="Platinum"), In(field="product", values=("Checking",)), Eq(field="region", value="US"),
    Eq(field="policy_type", value="LateFeeWaiver"), Not(clause=Eq(field="tier", value="Gold")),
    Or(clauses=(Eq(field="product", value="Checking"), Eq(field="section", value="3.2")))])
def test_narrowing_filters_are_accepted_and_kept(where) -> None:  # noqa: ANN001
    s = session_scope(BANK_MAP, BANK, MARIA_REC, MARIA, "2026-05-12")
    tree = s.narrow(where)
    assert where in tree.clauses and all(c in tree.clauses for c in s.clauses)  # type: ignore[union-attr]


@pytest.mark.parametrize(("where", "why"), [
    (Eq(field="tier", value="Gold"), "record says Platinum .CUST_4421.tier."),
    (In(field="product", values=("Platinum_Card", "Gold_Card")), "Gold_Card widens"),
    (IsEmpty(field="tier"), "tier is empty widens"),
    (Range(field="tier", gte="A"), "by range"),
    (Eq(field="region", value="CA"), "record says US .session.region."),
    (Eq(field="tenant_id", value="northbank"), "may not name 'tenant_id'"),
    (Eq(field="customer_id", value="CUST_4412"), "may not name 'customer_id'"),
    (Eq(field="status", value="retired"), "may not name 'status'"),
    (Not(clause=Range(field="valid_until", lte="2026-01-01")), "may not name 'valid_until'"),
    (Or(clauses=(Eq(field="section", value="1"), Eq(field="tier", value="Standard"))), "Standard widens"),
])
def test_widening_filters_are_refused_with_the_reason(where, why: str) -> None:  # noqa: ANN001
    s = session_scope(BANK_MAP, BANK, MARIA_REC, MARIA, "2026-05-12")
    with pytest.raises(ScopeFilterError, match=why):
        s.narrow(where)


def test_anonymous_tier_is_unscoped_product_is_ignored() -> None:
    anon = Session(tenant_id="deltabank", region="US")
    s = session_scope(BANK_MAP, BANK, SubjectRecord(values={"Region": ("US",)}), anon, "2026-05-12")
    assert s.clauses[0] == IsEmpty(field="tier") and "product" not in s.authoritative
    with pytest.raises(ScopeFilterError, match="nothing is on record"):
        s.check(Eq(field="tier", value="Platinum"))
    s.check(Eq(field="product", value="Checking"))  # no record, anonymous: ignore -> free narrowing


def test_telecom_plan_market_and_required_attributes() -> None:
    ana = Session(tenant_id="acme", customer_id="SUB_1001", region="US", attributes={"market": "consumer"})
    rec = SubjectRecord(subject_id="SUB_1001", values={"Plan": ("Unlimited_Basic",), "Region": ("US",)},
                        names={"Plan": ("Unlimited_Basic",), "Region": ("US",)}, origins={"Plan": "SUB_1001.plan"})
    s = session_scope(TEL_MAP, TEL, rec, ana, "2026-05-12")
    assert s.clauses[0] == Eq(field="plan", value="Unlimited_Basic")
    assert Eq(field="market", value="consumer") in s.clauses
    with pytest.raises(ScopeFilterError, match="record says Unlimited_Basic"):
        s.check(Eq(field="plan", value="Unlimited_Plus"))
    with pytest.raises(ScopeFilterError, match="record says consumer"):
        s.check(Eq(field="market", value="business"))
    with pytest.raises(TenantError):  # market is required by the mapping
        session_scope(TEL_MAP, TEL, rec, Session(tenant_id="acme", customer_id="SUB_1001"), "2026-05-12")


def test_via_needs_its_label_and_a_property() -> None:
    from pydantic import ValidationError

    from hopweave.models.domain import AuthoritativeAttribute

    ok = AuthoritativeAttribute(entity="Product", subject_property="product", via=[{"type": "HOLDS"}],
                                via_label="Account")
    assert ok.via[0].type == "HOLDS"
    for bad in ({"entity": "Product", "subject_property": "product", "via": [{"type": "HOLDS"}]},
                {"entity": "Product", "subject_property": "product", "via_label": "Account"},
                {"entity": "Product", "session": "product", "via": [{"type": "HOLDS"}], "via_label": "Account"}):
        with pytest.raises(ValidationError):
            AuthoritativeAttribute.model_validate(bad)
