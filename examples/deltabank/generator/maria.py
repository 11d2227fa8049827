"""Maria's case exactly as seed 004 tells it, with its precedent and its traps.

As of 2026-05-12 (:data:`AS_OF`):

- CUST_4421 Maria Lopez, Platinum since 2023-08-12, region US; account ACCT_99812 (credit,
  Platinum_Card, balance $4,250).
- LateFeeCharged $39 on 2026-05-10, CAUSED_BY PaymentMissed on 2026-05-05.
- Monthly card payments (Transaction events with ``on_time``) since 2023-09: the 24 in the last 24
  months are 22 on time + 2 late (2024-09 and 2026-05) — "22/24 months on-time, 2 misses in 2 years".
- WaiverEvents: 0 in 2026, 1 in 2024 (2024-09-12, approved, the same kind of late fee).
- Conversations: 2024-09-12 (fee waived) and 2026-02-18 (card replaced: the last outcome as of
  2026-05-12); a 2026-05-20 conversation lies after as_of (a replay trap).
- CustomerProfile SIMILAR_TO profiles whose RESULTED_IN traces are TRACE_8514, TRACE_8702 and
  TRACE_8108 (the precedent), plus traps: TRACE_8333 (Gold look-alike), TRACE_7310 (Platinum but
  a FraudClaim) and TRACE_9001 (after as_of).
- A Gold look-alike customer CUST_4412 "Mario Lopes" with a near-identical $39 late fee.
"""

from __future__ import annotations

from typing import Any, Iterator

from hopweave.graph.base import Edge, Node

Item = Node | Edge

AS_OF = "2026-05-12"
TENANT = "deltabank"
CUSTOMER_ID = "CUST_4421"
ACCOUNT_ID = "ACCT_99812"
LATE_FEE_ID = "EVT_4421_LATEFEE_20260510"
PAYMENT_MISSED_ID = "EVT_4421_MISSED_20260505"
PRECEDENT_IDS = ("TRACE_8514", "TRACE_8702", "TRACE_8108")
TRAP_TRACE_IDS = ("TRACE_8333", "TRACE_7310", "TRACE_9001")
#: Months (YYYY-MM) of Maria's late payments.
LATE_MONTHS = ("2024-09", "2026-05")


def _months(start: tuple[int, int], end: tuple[int, int]) -> list[tuple[int, int]]:
    y, m = start
    out = []
    while (y, m) <= end:
        out.append((y, m))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _event(eid: str, etype: str, ts: str, summary: str, **props: Any) -> Node:
    return Node(eid, "Event", {"type": etype, "timestamp": ts, "year": int(ts[:4]), "summary": summary, **props})


def maria() -> Iterator[Item]:
    """Maria's customer, account, events and conversations (tenant deltabank)."""
    yield Node(CUSTOMER_ID, "Customer", {
        "name": "Maria Lopez", "email": "maria.lopez@example.com", "phone": "+1-555-0142",
        "tier": "Platinum", "tier_since": "2023-08-12", "region": "US", "segment": "retail",
        "summary": "CUST_4421, Platinum tier since 2023-08-12, region US",
    })
    yield Edge(CUSTOMER_ID, "TIER_Platinum", "HAS_TIER")
    yield Edge(CUSTOMER_ID, "REGION_US", "LOCATED_IN")
    yield Node(ACCOUNT_ID, "Account", {
        "type": "credit", "product": "Platinum_Card", "balance": 4250.0, "currency": "USD",
        "opened": "2023-08-12", "status": "active", "summary": "Account ACCT_99812, credit, balance $4,250",
    })
    yield Edge(CUSTOMER_ID, ACCOUNT_ID, "HOLDS")
    yield Edge(ACCOUNT_ID, "PRODUCT_Platinum_Card", "OF_PRODUCT")
    # monthly payments 2023-09 .. 2026-05 (due on the 5th)
    amounts = (412.0, 388.5, 505.25, 290.0, 615.4, 350.0, 472.8)
    for i, (y, m) in enumerate(_months((2023, 9), (2026, 5))):
        ym = f"{y:04d}-{m:02d}"
        amount = amounts[i % len(amounts)]
        if ym in LATE_MONTHS:
            day = "11" if ym == "2026-05" else "10"
            ts = f"{ym}-{day}T15:30:00"
            summary = f"Payment ${amount:,.2f} on {ym}-{day}, late (due {ym}-05)"
            on_time = False
        else:
            ts = f"{ym}-04T09:00:00"
            summary = f"Payment ${amount:,.2f} on {ym}-04, on time"
            on_time = True
        eid = f"EVT_4421_PAY_{y:04d}{m:02d}"
        yield _event(eid, "Transaction", ts, summary, amount=amount, on_time=on_time,
                     status="posted", description="Monthly card payment")
        yield Edge(ACCOUNT_ID, eid, "HAS_EVENT")
    # the disputed fee and its cause
    yield _event(PAYMENT_MISSED_ID, "PaymentMissed", "2026-05-05T23:59:00",
                 "PaymentMissed on 2026-05-05 (minimum payment $35.00 due)", amount=35.0, status="missed")
    yield _event(LATE_FEE_ID, "LateFeeCharged", "2026-05-10T08:00:00",
                 "LateFeeCharged $39 on 2026-05-10, caused by PaymentMissed on 2026-05-05",
                 amount=39.0, status="charged", description="Late payment fee")
    # 2024: the earlier miss, its fee and the waiver
    missed24, fee24, waiver24 = "EVT_4421_MISSED_20240905", "EVT_4421_LATEFEE_20240908", "EVT_4421_WAIVER_20240912"
    yield _event(missed24, "PaymentMissed", "2024-09-05T23:59:00", "PaymentMissed on 2024-09-05",
                 amount=35.0, status="missed")
    yield _event(fee24, "LateFeeCharged", "2024-09-08T08:00:00",
                 "LateFeeCharged $39 on 2024-09-08, caused by PaymentMissed on 2024-09-05",
                 amount=39.0, status="waived")
    yield _event(waiver24, "WaiverEvent", "2024-09-12T14:20:00",
                 "Waiver of the $39 late fee on 2024-09-12 (approved, similar context)",
                 amount=39.0, status="approved", description="Courtesy late fee waiver")
    for eid, etype in ((PAYMENT_MISSED_ID, "PaymentMissed"), (LATE_FEE_ID, "LateFeeCharged"),
                       (missed24, "PaymentMissed"), (fee24, "LateFeeCharged"), (waiver24, "WaiverEvent")):
        yield Edge(ACCOUNT_ID, eid, "HAS_EVENT")
        yield Edge(eid, f"EVENTTYPE_{etype}", "OF_TYPE")
    yield Edge(LATE_FEE_ID, PAYMENT_MISSED_ID, "CAUSED_BY")
    yield Edge(fee24, missed24, "CAUSED_BY")
    # conversations and outcomes
    convs = (
        ("CONV_4421_20240912", "2024-09-12T14:00:00", "phone", "late fee dispute", "fee_waived",
         "2024-09-12T14:20:00", "2024-09-12: late fee $39 waived as a courtesy (approved)"),
        ("CONV_4421_20260218", "2026-02-18T10:00:00", "chat", "card replacement", "resolved",
         "2026-02-18T10:15:00", "2026-02-18: replacement card issued, resolved"),
        ("CONV_4421_20260520", "2026-05-20T09:00:00", "phone", "late fee follow-up", "fee_waived",
         "2026-05-20T09:30:00", "2026-05-20: late fee follow-up (after the 2026-05-12 as_of)"),
    )
    for cid, started, channel, topic, result, ts, summary in convs:
        oid = cid.replace("CONV_", "OUTCOME_")
        yield Node(cid, "Conversation", {"started_at": started, "channel": channel, "topic": topic,
                                          "transcript": f"[{channel}] Maria Lopez: about {topic} ...",
                                          "summary": f"{started[:10]} {channel} conversation about {topic}"})
        yield Node(oid, "Outcome", {"result": result, "timestamp": ts, "summary": summary})
        yield Edge(CUSTOMER_ID, cid, "PARTICIPATED_IN")
        yield Edge(cid, oid, "RESULTED_IN")
    yield Edge("CONV_4421_20240912", fee24, "ABOUT")


# (trace id, customer id, customer name, tier, waivers this year, on-time ratio, amount, outcome,
#  approved_by, timestamp, case type, summary)
_TRACES: tuple[tuple[Any, ...], ...] = (
    ("TRACE_8514", "CUST_5104", "Daniel Kim", "Platinum", 0, 0.95, 39.0, "fee_waived", "Janet",
     "2026-03-03T11:00:00", "LateFeeDispute", "Platinum, 0/year, 95% on-time, $39 fee → waived (approved by Janet)"),
    ("TRACE_8702", "CUST_6230", "Aisha Rahman", "Platinum", 0, 0.88, 45.0, "fee_waived", None,
     "2026-01-20T16:40:00", "LateFeeDispute", "Platinum, 0/year, 88% on-time, $45 fee → waived"),
    ("TRACE_8108", "CUST_3307", "Tom Becker", "Platinum", 1, 0.76, 39.0, "escalated_declined", None,
     "2025-11-04T13:15:00", "LateFeeDispute", "Platinum, 1/year, 76% on-time, $39 fee → escalated, declined"),
    # traps
    ("TRACE_8333", "CUST_4412", "Mario Lopes", "Gold", 0, 0.96, 39.0, "fee_waived", "Janet",
     "2026-04-02T10:05:00", "LateFeeDispute", "Gold, 0/year, 96% on-time, $39 fee → waived (approved by Janet)"),
    ("TRACE_7310", "CUST_5104", "Daniel Kim", "Platinum", 0, 0.95, 250.0, "refunded", "Priya",
     "2026-02-11T09:00:00", "FraudClaim", "Platinum fraud claim, $250 unauthorized charge → refunded"),
    ("TRACE_9001", "CUST_6230", "Aisha Rahman", "Platinum", 0, 0.9, 39.0, "fee_waived", "Janet",
     "2026-06-01T12:00:00", "LateFeeDispute", "Platinum, 0/year, 90% on-time, $39 fee → waived (after as_of)"),
)
_OUTCOME_TEXT = {"fee_waived": "waived the fee", "escalated_declined": "escalated; the supervisor declined",
                 "refunded": "refunded the charge"}


def _trace_text(t: tuple[Any, ...]) -> str:
    _tid, _cid, _name, tier, waivers, ratio, amount, outcome, approver, _ts, case_type, _s = t
    if case_type == "FraudClaim":
        return (f"{tier} customer reported an unauthorized ${amount:.0f} card charge. Card blocked, fraud case "
                f"opened, provisional credit issued. Outcome: {_OUTCOME_TEXT[outcome]}.")
    text = (f"Customer disputed a ${amount:.0f} late fee on a {tier} card. {tier} tier, {waivers} waivers used "
            f"this calendar year, {ratio:.0%} of payments on time over 24 months. The waiver policy allows "
            f"one courtesy waiver per calendar year for customers in good standing. Decision: "
            f"{_OUTCOME_TEXT[outcome]}.")
    if approver:
        text += f" Approved by {approver}."
    return text


def precedent() -> Iterator[Item]:
    """Maria's profile, the similar profiles and their decision traces (precedent and traps)."""
    mp = f"PROFILE_{CUSTOMER_ID}"
    yield Node(mp, "CustomerProfile", {"tier": "Platinum", "segment": "retail", "on_time_ratio": 0.917,
                                        "waivers_this_year": 0,
                                        "summary": "Platinum, 0 waivers this year, 92% on-time"})
    yield Edge(CUSTOMER_ID, mp, "HAS_PROFILE")
    customers_done: set[str] = set()
    for t in _TRACES:
        tid, cid, name, tier, waivers, ratio, amount, outcome, approver, ts, case_type, summary = t
        pid = f"PROFILE_{cid}"
        if cid not in customers_done:
            customers_done.add(cid)
            acct = f"ACCT_{cid[5:]}"
            lookalike = cid == "CUST_4412"
            yield Node(cid, "Customer", {
                "name": name, "tier": tier, "tier_since": "2022-03-01", "region": "US", "segment": "retail",
                "summary": f"{cid}, {tier} tier since 2022-03-01, region US"
                + (" (look-alike of CUST_4421)" if lookalike else ""),
            })
            yield Edge(cid, f"TIER_{tier}", "HAS_TIER")
            yield Edge(cid, "REGION_US", "LOCATED_IN")
            card = f"{tier}_Card"
            yield Node(acct, "Account", {"type": "credit", "product": card, "balance": 3900.0, "currency": "USD",
                                          "opened": "2022-03-01", "status": "active",
                                          "summary": f"Account {acct}, credit, balance $3,900"})
            yield Edge(cid, acct, "HOLDS")
            yield Edge(acct, f"PRODUCT_{card}", "OF_PRODUCT")
            if lookalike:
                fee = "EVT_4412_LATEFEE_20260509"
                yield _event(fee, "LateFeeCharged", "2026-05-09T08:00:00", "LateFeeCharged $39 on 2026-05-09",
                             amount=39.0, status="charged")
                yield Edge(acct, fee, "HAS_EVENT")
            yield Node(pid, "CustomerProfile", {"tier": tier, "segment": "retail", "on_time_ratio": ratio,
                                                 "waivers_this_year": waivers,
                                                 "summary": f"{tier}, {waivers} waivers this year, {ratio:.0%} on-time"})
            yield Edge(cid, pid, "HAS_PROFILE")
            yield Edge(mp, pid, "SIMILAR_TO")
        oid = f"OUTCOME_{tid}"
        yield Node(oid, "Outcome", {"result": outcome, "timestamp": ts, "summary": f"{tid}: {summary}"})
        props: dict[str, Any] = {
            "kind": "precedent", "case_type": case_type, "goal": case_type, "tier": tier,
            "event_type": "LateFeeCharged" if case_type == "LateFeeDispute" else "UnauthorizedTransaction",
            "outcome": outcome, "amount": amount, "waivers_this_year": waivers, "on_time_ratio": ratio,
            "timestamp": ts, "customer_id": cid, "text": _trace_text(t), "summary": summary,
        }
        if approver:
            props["approved_by"] = approver
        yield Node(tid, "DecisionTrace", props)
        yield Edge(pid, tid, "RESULTED_IN")
        yield Edge(tid, cid, "FOR_CUSTOMER")
        yield Edge(tid, oid, "HAS_OUTCOME")
        yield Edge(tid, f"CASETYPE_{case_type}", "ABOUT")
        steps = (("Check the fee and the customer's standing", f"{tier}, {waivers} waivers this year, {ratio:.0%} on time"),
                 ("Apply the waiver policy", _OUTCOME_TEXT[outcome]))
        for i, (thought, obs) in enumerate(steps, start=1):
            sid = f"{tid}_STEP_{i}"
            yield Node(sid, "TraceStep", {"idx": i, "thought": thought, "observation": obs,
                                           "summary": f"{thought}: {obs}"})
            yield Edge(tid, sid, "HAS_TRACE_STEP")


def expected_facts() -> dict[str, Any]:
    """What Maria's LateFeeDispute patterns must return at :data:`AS_OF` (used by the tests)."""
    return {
        "customer_tier": ["TIER_Platinum"],
        "customer_account": [ACCOUNT_ID],
        "recent_transactions_count": 24,
        "recent_transactions_on_time": 22,
        "waiver_events_this_year": [],
        "waiver_history": ["EVT_4421_WAIVER_20240912"],
        "last_conversation_outcome": ["OUTCOME_4421_20260218"],
        "comparable_precedent": list(PRECEDENT_IDS),
        "applicable_workflow": ["WF_LateFeeDispute_v2"],
        "applicable_rules": ["RULE_LateFeeDispute_1", "RULE_LateFeeDispute_2", "RULE_LateFeeDispute_3"],
        "disputed_fee_event": [LATE_FEE_ID],
        "fee_event_cause": [PAYMENT_MISSED_ID],
        "customer": [CUSTOMER_ID],
    }
