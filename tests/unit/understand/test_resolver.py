"""EntityResolver: graph vocabulary, identifiers, money, dates, session identity wins."""

from __future__ import annotations

from datetime import datetime

import pytest
from conftest import AS_OF, MARIA_UTTERANCE
from domains import DELTABANK, DELTABANK_CALIBRATION, DELTABANK_CONFIG

from hopweave.graph.base import Node
from hopweave.models.common import Bindings, Session
from hopweave.models.schema import GLOBAL_TENANT
from hopweave.understand.resolver import EntityResolver, find_money


@pytest.fixture(scope="module")
def resolver(bank) -> EntityResolver:  # type: ignore[no-untyped-def]
    return EntityResolver(bank, DELTABANK)


def _by_type(res, t):  # type: ignore[no-untyped-def]
    return [e for e in res.entities if e.type == t]


def test_maria_seed_004_entities(resolver: EntityResolver, maria: Session) -> None:
    res = resolver.resolve(MARIA_UTTERANCE, maria, AS_OF)
    (cust,) = _by_type(res, "Customer")
    assert (cust.value, cust.source, cust.span) == ("CUST_4421", "session", None)
    (tier,) = _by_type(res, "Tier")
    assert (tier.value, tier.source, tier.text, tier.span) == ("Platinum", "utterance", "Platinum", (42, 50))
    (prod,) = _by_type(res, "Product")
    assert (prod.value, prod.text, prod.span, prod.node_id) == ("Platinum_Card", "Platinum card", (42, 55), "PRODUCT_Platinum_Card")
    (event,) = _by_type(res, "EventType")
    assert event.value == "LateFeeCharged" and event.text == "late fee" and event.properties["amount"] == 39
    (money,) = _by_type(res, "Money")
    assert money.value == 39 and MARIA_UTTERANCE[slice(*money.span)] == "$39"
    for e in res.entities:
        if e.span is not None:
            assert MARIA_UTTERANCE[e.span[0] : e.span[1]] == e.text
    assert res.mentions == []
    assert [e.type for e in res.entities[:4]] == ["Customer", "Tenant", "Region", "Channel"]


def test_a_new_vocabulary_node_is_recognised_without_code_change(fresh_store, maria: Session) -> None:  # type: ignore[no-untyped-def]
    resolver = EntityResolver(fresh_store, DELTABANK)
    text = "Does my Diamond card get a fee waiver?"
    assert _by_type(resolver.resolve(text, maria, AS_OF), "Tier") == []
    fp = resolver.vocabulary(maria.tenant_id)[0]
    fresh_store.write(GLOBAL_TENANT, [Node("TIER_Diamond", "Tier", {"name": "Diamond", "rank": 0,
                                                                  "aliases": ["diamond tier"]})])
    assert resolver.vocabulary(maria.tenant_id)[0] != fp
    # recognised at once; Tier is authoritative, so the claim is a mention, never an entity
    res = resolver.resolve(text, maria, AS_OF)
    (claim,) = [m for m in res.mentions if m.type == "Tier"]
    assert (claim.value, claim.text, claim.kind) == ("Diamond", "Diamond", "claim")
    assert _by_type(res, "Tier") == []


def test_case_and_typo_rules(resolver: EntityResolver, maria: Session) -> None:
    res = resolver.resolve("can you help us with the late charge on my platnum card", maria, AS_OF)
    assert [e.source for e in _by_type(res, "Region")] == ["session"]  # the pronoun "us" is no region
    (prod,) = _by_type(res, "Product")
    assert prod.value == "Platinum_Card" and prod.properties.get("match") == "fuzzy"
    assert _by_type(resolver.resolve("I live in the US", maria, AS_OF), "Region")[-1].text == "US"


def test_session_identity_wins_other_customer_id_is_only_a_mention(resolver: EntityResolver, maria: Session) -> None:
    res = resolver.resolve("Dispute the $39 late fee on CUST_4412's account instead of mine", maria, AS_OF)
    assert [e.value for e in _by_type(res, "Customer")] == ["CUST_4421"]
    (m,) = res.mentions
    assert (m.type, m.value, m.text) == ("Customer", "CUST_4412", "CUST_4412")
    assert "CUST_4412" not in {str(e.value) for e in res.entities}


def test_a_user_cannot_reach_another_customers_data_by_naming_their_id(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    """Run the real customer_account pattern with the bindings the resolver produces."""
    from hopweave.understand import Understander

    pattern = next(p for p in bank.patterns("LateFeeDispute") if p.name == "customer_account")
    und = Understander(bank, classifier_config=DELTABANK_CONFIG, calibration=DELTABANK_CALIBRATION,
                       settings=DELTABANK)
    for text in ("Show me the account of CUST_4412", "I am cust_4412, dispute my late fee on ACCT_4412001",
                 "my customer id is CUST-4412"):
        res = und.resolver.resolve(text, maria, AS_OF)
        ents = {e.type: e.value for e in res.entities}
        assert ents["Customer"] == "CUST_4421" and any(m.value == "CUST_4412" for m in res.mentions)
        bindings = Bindings(session=maria, as_of=datetime(2026, 5, 12), entities=ents)
        rows = bank.run_pattern(maria.tenant_id, pattern, bindings).rows
        assert rows and {r.node_id for r in rows} == {"ACCT_99812"}
    # an anonymous session gets no customer from the utterance either
    anon = Session(tenant_id="deltabank", region="US")
    res = und.resolver.resolve("I am CUST_4421, dispute my late fee", anon, AS_OF)
    assert _by_type(res, "Customer") == [] and res.mentions[0].value == "CUST_4421"


def test_account_ids_are_entities_only_when_the_session_customer_holds_them(bank, resolver: EntityResolver,
                                                                            maria: Session) -> None:  # type: ignore[no-untyped-def]
    other = next(n.id for n in bank.find_nodes("deltabank", "Account") if n.id != "ACCT_99812")
    res = resolver.resolve(f"move the fee from ACCT_99812 to {other}", maria, AS_OF)
    assert [e.value for e in _by_type(res, "Account")] == ["ACCT_99812"]
    assert [m.value for m in res.mentions] == [other]
    # another tenant's session can't claim DeltaBank's account
    nb = Session(tenant_id="northbank", customer_id="NB_CUST_4421", region="US")
    res = resolver.resolve("late fee on ACCT_99812 for CUST_4421", nb, AS_OF)
    assert _by_type(res, "Account") == [] and {m.value for m in res.mentions} == {"ACCT_99812", "CUST_4421"}


def test_tier_from_the_graph_when_not_said(resolver: EntityResolver, maria: Session) -> None:
    res = resolver.resolve("Can you take the late payment charge off my credit card bill?", maria, AS_OF)
    (tier,) = _by_type(res, "Tier")
    assert (tier.value, tier.source) == ("Platinum", "graph")
    plain = EntityResolver(resolver.store, DELTABANK, enrich_from_graph=False)
    assert _by_type(plain.resolve("Can you take the late payment charge off?", maria, AS_OF), "Tier") == []


@pytest.mark.parametrize(
    "text,amounts",
    [("$39", [39]), ("a $1,250.50 charge", [1250.5]), ("39 dollars, 20 bucks", [39, 20]),
     ("€5 and 12 EUR", [5, 12]), ("$39, please", [39]), ("ACCT_99812 and 2026", [])],
)
def test_money(text: str, amounts: list[float]) -> None:
    assert [m.amount for m in find_money(text)] == amounts


def test_relative_dates_use_the_requests_as_of(resolver: EntityResolver, maria: Session) -> None:
    text = "the late fee from last month and another one this year"
    a = [e.value for e in _by_type(resolver.resolve(text, maria, "2026-05-12"), "Date")]
    b = [e.value for e in _by_type(resolver.resolve(text, maria, "2025-02-03"), "Date")]
    assert a == ["2026-04-01/2026-04-30", "2026-01-01/2026-05-12"]
    assert b == ["2025-01-01/2025-01-31", "2025-01-01/2025-02-03"]
    (d,) = _by_type(resolver.resolve("charged on May 10th, 2026 or 05/03/2026?", maria, AS_OF), "Date")[:1]
    assert d.value == "2026-05-10"


def test_as_of_is_required(resolver: EntityResolver, maria: Session) -> None:
    from hopweave.errors import InputError

    with pytest.raises(InputError, match="as_of"):
        resolver.resolve("late fee", maria, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("run", ["!" * 3000, ")$" * 1500, "\U0001F600" * 3000])
def test_a_long_symbol_run_keeps_the_entities_and_their_spans(resolver: EntityResolver, maria: Session,
                                                               run: str) -> None:
    base = resolver.resolve(MARIA_UTTERANCE, maria, AS_OF).entities
    text = MARIA_UTTERANCE + " " + run + " thanks"
    got = resolver.resolve(text, maria, AS_OF).entities
    assert [(e.type, e.value, e.span) for e in got] == [(e.type, e.value, e.span) for e in base]
    for e in got:
        if e.span is not None:
            assert text[e.span[0] : e.span[1]] == e.text
