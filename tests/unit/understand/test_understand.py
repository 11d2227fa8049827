"""Understander: Maria end to end, determinism, input robustness."""

from __future__ import annotations

import pytest
from conftest import AS_OF, MARIA_UTTERANCE

from hopweave.errors import InputError, TenantError
from hopweave.models.common import Session
from hopweave.understand import Understander, Understanding


def test_maria_end_to_end(understander: Understander, maria: Session) -> None:
    u = understander.understand(MARIA_UTTERANCE, maria, AS_OF)
    assert isinstance(u, Understanding)
    assert u.goal == "LateFeeDispute" and u.confidence >= 0.9 and not u.abstained
    seed = {(e.type, e.value, e.source) for e in u.entities}
    assert {("Customer", "CUST_4421", "session"), ("Tier", "Platinum", "utterance"),
            ("Product", "Platinum_Card", "utterance"), ("EventType", "LateFeeCharged", "utterance")} <= seed
    assert next(e for e in u.entities if e.type == "EventType").properties["amount"] == 39
    at = "2026-05-12T23:59:59Z"  # a date-only as_of is the end of that day
    assert u.filter_display() == {"tier": "Platinum", "product": "Platinum_Card",
                                  "policy_type": ["LateFeeWaiver", "FeeSchedule"], "region": "US",
                                  "tenant_id": "deltabank",
                                  "where": [f"valid_from is empty or valid_from <= {at}",
                                            f"valid_until > {at} or (valid_until is empty and status = active)"]}
    assert u.documents_at == at
    b = u.entity_bindings()
    assert b["Customer"] == "CUST_4421" and b["Tier"] == "Platinum" and b["Region"] == "US"
    assert set(u.revisions) == {"metagraph", "vocabulary", "filter_mapping", "calibration"}
    assert u.lexical.query and not u.lexical.fallback


def test_same_input_same_bytes(understander: Understander, maria: Session) -> None:
    a = understander.understand(MARIA_UTTERANCE, maria, AS_OF).model_dump_json()
    assert understander.understand(MARIA_UTTERANCE, maria, AS_OF).model_dump_json() == a


def test_abstention_is_a_result_with_a_note(understander: Understander, maria: Session) -> None:
    u = understander.understand("What's the weather like tomorrow in Chicago?", maria, AS_OF)
    assert u.goal is None and u.abstained and u.classification.best is not None
    assert any("no confident goal" in n for n in u.notes)
    # the filter still scopes the tenant and lifecycle
    assert {"tenant_id", "where"} <= set(u.filter_display())


@pytest.mark.parametrize("bad", ["", "   ", "\n\t  \r\n", "\x00\x01", "x" * 100_000, None, 42])
def test_bad_utterances_are_typed_input_errors(understander: Understander, maria: Session, bad: object) -> None:
    with pytest.raises(InputError):
        understander.understand(bad, maria, AS_OF)  # type: ignore[arg-type]


def test_long_but_allowed_utterance(understander: Understander, maria: Session) -> None:
    text = "I want to dispute this $39 late fee on my Platinum card. " + "Thanks for your help. " * 170
    assert 3_700 < len(text) <= 4_000
    u = understander.understand(text, maria, AS_OF)
    assert u.goal == "LateFeeDispute"


def test_over_the_documented_limit_is_an_input_error(understander: Understander, maria: Session) -> None:
    with pytest.raises(InputError, match="limit is 4,000"):
        understander.understand("late fee " * 445, maria, AS_OF)


@pytest.mark.parametrize(
    "text",
    ["Quiero disputar este cargo por pago atrasado de 39 dólares en mi tarjeta Platinum",
     "我想对我的白金卡上的39美元滞纳金提出异议",
     "Ich möchte diese Verspätungsgebühr von 39 Dollar anfechten"],
)
def test_non_english_gets_a_clear_result(understander: Understander, maria: Session, text: str) -> None:
    u = understander.understand(text, maria, AS_OF)
    assert any("English" in n for n in u.notes)
    assert 0.0 <= u.confidence <= 1.0
    assert u.lexical.terms or text.strip()  # never a crash; lexical plan from whatever was found


def test_emoji_and_control_characters(understander: Understander, maria: Session) -> None:
    u = understander.understand("late fee 😡\x07 on my Platinum card!!", maria, AS_OF)
    assert u.goal == "LateFeeDispute"
    tier = next(e for e in u.entities if e.type == "Tier")
    assert u.utterance[tier.span[0]:tier.span[1]] == "Platinum"


def test_session_and_as_of_are_checked(understander: Understander) -> None:
    with pytest.raises(InputError):
        understander.understand("late fee", {"tenant_id": "deltabank"}, AS_OF)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        understander.understand("late fee", Session(tenant_id="deltabank"), "not-a-date")
    with pytest.raises(TenantError):
        Session(tenant_id="")


def test_other_tenant_sees_its_own_customer(understander: Understander) -> None:
    nb = Session(tenant_id="northbank", customer_id="NB_CUST_4421", region="US")
    u = understander.understand("Dispute the late fee for CUST_4421 please", nb, AS_OF)
    assert u.entity_bindings()["Customer"] == "NB_CUST_4421"
    assert [m.value for m in u.mentions] == ["CUST_4421"]
    assert u.filter_display()["tenant_id"] == "northbank"
