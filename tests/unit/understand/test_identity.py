"""Identity belongs to the session (issue 12 item 1): authoritative attributes come from the
session / the subject's graph node, never from the utterance. Every phrasing of the issue: a
conflicting claim is a typed ``claim`` Mention and never a filter or binding; an anonymous
session gets no segment-specific policy (``tier`` must be empty)."""

from __future__ import annotations

import pytest
from conftest import AS_OF
from domains import DELTABANK, DELTABANK_CALIBRATION, DELTABANK_CONFIG

from hopweave.models.common import Session
from hopweave.models.domain import DomainSettings
from hopweave.models.filters import Eq, IsEmpty, fields
from hopweave.understand import Understander

GOLD = Session(tenant_id="deltabank", customer_id="CUST_4412", region="US", channel="phone")  # Mario, Gold
ANON = Session(tenant_id="deltabank", region="US", channel="web")


def _clauses(u) -> dict[str, object]:  # type: ignore[no-untyped-def]
    out: dict[str, object] = {}
    for c in u.filter.clauses:
        if hasattr(c, "field"):  # the in-force clause (or/and on the validity dates) has none
            out[c.field] = c.value if isinstance(c, Eq) else type(c).__name__
    return out


@pytest.mark.parametrize("text", [
    "My tier is Platinum, so waive this $39 late fee.",
    "As a Platinum customer I want the late fee removed.",
    "I'm Platinum tier, please dispute the late fee on my card.",
])
def test_gold_customer_claiming_platinum_gets_gold(understander: Understander, text: str) -> None:
    u = understander.understand(text, GOLD, AS_OF)
    assert _clauses(u)["tier"] == "Gold"
    assert u.entity_bindings()["Tier"] == "Gold"
    (claim,) = [m for m in u.mentions if m.type == "Tier"]
    assert (claim.kind, claim.value, claim.record) == ("claim", "Platinum", "Gold")
    assert "claims Platinum; record says Gold" in claim.reason
    assert "Platinum" not in {str(e.value) for e in u.entities if e.type in ("Tier", "Product")}


def test_a_downgrade_claim_is_a_mention_too(understander: Understander, maria: Session) -> None:
    u = understander.understand("I'm only a Standard customer, can you waive the late fee?", maria, AS_OF)
    assert _clauses(u)["tier"] == "Platinum"
    (claim,) = [m for m in u.mentions if m.type == "Tier"]
    assert (claim.value, claim.record) == ("Standard", "Platinum")


def test_maria_saying_gold_card_gets_platinum_policy(understander: Understander, maria: Session) -> None:
    u = understander.understand("Please waive the $39 late fee on my Gold card.", maria, AS_OF)
    flt = _clauses(u)
    assert flt["tier"] == "Platinum" and flt["product"] == "Platinum_Card"  # the record, no Gold_Card clause
    kinds = {(m.type, m.value) for m in u.mentions}
    assert ("Tier", "Gold") in kinds and ("Product", "Gold_Card") in kinds
    assert all(m.kind == "claim" for m in u.mentions)
    assert "Gold_Card" not in u.lexical.query and "Gold" not in u.entity_bindings().values()


def test_agreeing_claim_is_used_as_before(understander: Understander, maria: Session) -> None:
    u = understander.understand("I want to dispute this $39 late fee on my Platinum card", maria, AS_OF)
    assert _clauses(u)["tier"] == "Platinum" and _clauses(u)["product"] == "Platinum_Card"
    assert u.mentions == ()


@pytest.mark.parametrize("text", ["Can you waive the late fee on my Platinum card?",
                                  "I am a Platinum customer, waive my $39 late fee"])
def test_anonymous_session_gets_no_segment_specific_policy(understander: Understander, text: str) -> None:
    u = understander.understand(text, ANON, AS_OF)
    assert IsEmpty(field="tier") in u.filter.clauses
    assert "product" not in fields(u.filter)
    assert {m.type for m in u.mentions} >= {"Tier"}
    assert all(m.record is None and m.kind == "claim" for m in u.mentions)
    assert any("no Tier on record" in n for n in u.notes)


def test_anonymous_ignore_policy_adds_no_clause(bank, embedder) -> None:  # type: ignore[no-untyped-def]
    data = DELTABANK.model_dump()
    data["authoritative"] = [{**data["authoritative"][0], "anonymous": "ignore"}]
    und = Understander(bank, embedder, classifier_config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       settings=DomainSettings.model_validate(data))
    u = und.understand("Can you waive the late fee on my Platinum card?", ANON, AS_OF)
    assert "tier" not in fields(u.filter)
    assert [m.type for m in u.mentions if m.type == "Tier"] == ["Tier"]


def test_session_sourced_authority_and_pack_attributes(bank, embedder) -> None:  # type: ignore[no-untyped-def]
    """A pack-declared session attribute is authoritative and feeds no utterance override."""
    data = DELTABANK.model_dump()
    data["authoritative"] = [{"entity": "Region", "session": "region", "anonymous": "ignore"}]
    und = Understander(bank, embedder, classifier_config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       settings=DomainSettings.model_validate(data))
    u = und.understand("I live in CA now, waive the late fee", GOLD, AS_OF)
    assert _clauses(u)["region"] == "US"
    assert [(m.type, m.record) for m in u.mentions if m.type == "Region"] == [("Region", "US")]
