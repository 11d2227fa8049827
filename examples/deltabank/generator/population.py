"""The rest of DeltaBank: seeded random customers with accounts, events, conversations,
profiles and decision traces, streamed (no lists held) so a million nodes load in seconds.

Per customer (on average ~20 nodes): the customer (HAS_TIER, LOCATED_IN), one or two accounts
(OF_PRODUCT), 6–24 monthly payment Transactions per card account plus occasional late fees
(CAUSED_BY a PaymentMissed), waivers, fraud reports, credit-limit and name-change requests, a
conversation with its outcome, a CustomerProfile SIMILAR_TO three earlier profiles of the same
tier, and for ~20% a precedent DecisionTrace. Times are relative to the as_of date 2026-05-12,
never the wall clock.
"""

from __future__ import annotations

import random
from typing import Iterator

from hopweave.graph.base import Edge, Node

from .vocabulary import GOALS, TIER_CARD

Item = Node | Edge

_FIRST = ("James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
          "Wei", "Fatima", "Carlos", "Ana", "Hiroshi", "Priya", "Olga", "Kwame", "Sofia", "Lucas")
_LAST = ("Smith", "Johnson", "Williams", "Brown", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Chen",
         "Nguyen", "Patel", "Kim", "Okafor", "Rossi", "Novak", "Silva", "Cohen", "Haddad", "Larsen")
_TIER_WEIGHTS = (("Platinum", 0.10), ("Gold", 0.25), ("Silver", 0.30), ("Standard", 0.35))
_REGIONS = (("US", 0.70), ("CA", 0.15), ("EU", 0.15))
_OUTCOMES = ("fee_waived", "fee_waived", "declined", "escalated_declined", "refunded", "approved")

#: Months before 2026-05 -> "YYYY-MM" (precomputed, shared strings).
_YM = []
for _back in range(0, 40):
    _m = 5 - _back
    _y = 2026
    while _m <= 0:
        _m += 12
        _y -= 1
    _YM.append(f"{_y:04d}-{_m:02d}")


def _pick(rng: random.Random, weighted: tuple[tuple[str, float], ...]) -> str:
    r = rng.random()
    acc = 0.0
    for value, w in weighted:
        acc += w
        if r < acc:
            return value
    return weighted[-1][0]


def population(
    tenant_prefix: str, count: int | None, rng: random.Random, *, node_budget: int | None = None,
    start_index: int = 100_000,
) -> Iterator[Item]:
    """Customers ``start_index``.. with their subgraphs; stops after ``count`` customers or once
    ``node_budget`` nodes were yielded (whichever is given). Ids are prefixed ``tenant_prefix``."""
    P = tenant_prefix
    recent_profiles: dict[str, list[str]] = {t: [] for t, _ in _TIER_WEIGHTS}
    nodes = 0
    i = start_index
    while True:
        if count is not None and i - start_index >= count:
            return
        if node_budget is not None and nodes >= node_budget:
            return
        cid = f"{P}CUST_{i}"
        tier = _pick(rng, _TIER_WEIGHTS)
        region = _pick(rng, _REGIONS)
        since_back = rng.randrange(6, 38)
        since = f"{_YM[since_back]}-{rng.randrange(1, 28):02d}"
        yield Node(cid, "Customer", {
            "name": f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", "tier": tier, "tier_since": since,
            "region": region, "segment": "retail", "summary": f"{cid}, {tier} tier since {since}, region {region}",
        })
        nodes += 1
        yield Edge(cid, f"TIER_{tier}", "HAS_TIER")
        yield Edge(cid, f"REGION_{region}", "LOCATED_IN")
        card = TIER_CARD[tier]
        accounts = [("credit", card)] + ([("checking", "Checking")] if rng.random() < 0.2 else [])
        on_time_n = total_n = 0
        for a, (atype, product) in enumerate(accounts):
            acct = f"{P}ACCT_{i}_{a}"
            balance = float(rng.randrange(0, 1_500_000)) / 100
            yield Node(acct, "Account", {"type": atype, "product": product, "balance": balance, "currency": "USD",
                                          "opened": since, "status": "active",
                                          "summary": f"Account {acct}, {atype}, balance ${balance:,.2f}"})
            nodes += 1
            yield Edge(cid, acct, "HOLDS")
            yield Edge(acct, f"PRODUCT_{product}", "OF_PRODUCT")
            if atype != "credit":
                for k in range(rng.randrange(1, 4)):
                    ym = _YM[rng.randrange(0, 12)]
                    eid = f"{acct}_TX_{k}"
                    amount = float(rng.randrange(500, 20000)) / 100
                    yield Node(eid, "Event", {"type": "Transaction", "amount": amount, "timestamp": f"{ym}-15T12:00:00",
                                               "year": int(ym[:4]), "status": "posted",
                                               "summary": f"Purchase ${amount:,.2f} on {ym}-15"})
                    yield Edge(acct, eid, "HAS_EVENT")
                    nodes += 1
                continue
            months = min(rng.randrange(6, 25), since_back)
            for back in range(months):
                ym = _YM[back]
                on_time = rng.random() < 0.93
                amount = float(rng.randrange(2500, 90000)) / 100
                eid = f"{acct}_PAY_{back}"
                day = "04" if on_time else "12"
                yield Node(eid, "Event", {
                    "type": "Transaction", "amount": amount, "timestamp": f"{ym}-{day}T09:00:00", "year": int(ym[:4]),
                    "on_time": on_time, "status": "posted", "description": "Monthly card payment",
                    "summary": f"Payment ${amount:,.2f} on {ym}-{day}, {'on time' if on_time else 'late'}",
                })
                yield Edge(acct, eid, "HAS_EVENT")
                nodes += 1
                total_n += 1
                on_time_n += on_time
                if not on_time and rng.random() < 0.7:
                    miss, fee = f"{eid}_MISSED", f"{eid}_LATEFEE"
                    fee_amt = rng.choice((29.0, 35.0, 39.0, 45.0))
                    yield Node(miss, "Event", {"type": "PaymentMissed", "amount": 35.0, "timestamp": f"{ym}-05T23:59:00",
                                                "year": int(ym[:4]), "status": "missed",
                                                "summary": f"PaymentMissed on {ym}-05"})
                    yield Node(fee, "Event", {"type": "LateFeeCharged", "amount": fee_amt,
                                               "timestamp": f"{ym}-10T08:00:00", "year": int(ym[:4]),
                                               "status": "charged",
                                               "summary": f"LateFeeCharged ${fee_amt:.0f} on {ym}-10, caused by PaymentMissed on {ym}-05"})
                    yield Edge(acct, miss, "HAS_EVENT")
                    yield Edge(acct, fee, "HAS_EVENT")
                    yield Edge(fee, miss, "CAUSED_BY")
                    nodes += 2
                    if rng.random() < 0.4:
                        w = f"{eid}_WAIVER"
                        yield Node(w, "Event", {"type": "WaiverEvent", "amount": fee_amt,
                                                 "timestamp": f"{ym}-14T11:00:00", "year": int(ym[:4]),
                                                 "status": "approved",
                                                 "summary": f"Waiver of the ${fee_amt:.0f} late fee on {ym}-14 (approved)"})
                        yield Edge(acct, w, "HAS_EVENT")
                        nodes += 1
            r = rng.random()
            if r < 0.08:
                etype = ("FraudReported", "UnauthorizedTransaction", "CreditLimitRequest", "CreditLimitChange",
                         "NameChangeRequest")[int(r / 0.016)]
                ym = _YM[rng.randrange(0, 30)]
                eid = f"{acct}_{etype.upper()}"
                amount = float(rng.randrange(1000, 200000)) / 100
                yield Node(eid, "Event", {"type": etype, "amount": amount, "timestamp": f"{ym}-20T10:00:00",
                                           "year": int(ym[:4]), "status": "open",
                                           "summary": f"{etype} ${amount:,.2f} on {ym}-20"})
                yield Edge(acct, eid, "HAS_EVENT")
                nodes += 1
        # a conversation and its outcome
        conv, out = f"{P}CONV_{i}", f"{P}OUTCOME_{i}"
        ym = _YM[rng.randrange(0, 24)]
        topic = rng.choice(("late fee dispute", "card replacement", "balance question", "fraud alert",
                            "credit limit", "address change"))
        result = rng.choice(("resolved", "fee_waived", "escalated", "declined"))
        yield Node(conv, "Conversation", {"started_at": f"{ym}-08T10:00:00", "channel": rng.choice(("phone", "chat")),
                                           "topic": topic, "summary": f"{ym}-08 conversation about {topic}"})
        yield Node(out, "Outcome", {"result": result, "timestamp": f"{ym}-08T10:20:00",
                                     "summary": f"{ym}-08: {topic}, {result}"})
        yield Edge(cid, conv, "PARTICIPATED_IN")
        yield Edge(conv, out, "RESULTED_IN")
        nodes += 2
        # profile + similarity
        ratio = round(on_time_n / total_n, 2) if total_n else 1.0
        pid = f"{P}PROFILE_{i}"
        waivers = 1 if rng.random() < 0.15 else 0
        yield Node(pid, "CustomerProfile", {"tier": tier, "segment": "retail", "on_time_ratio": ratio,
                                             "waivers_this_year": waivers,
                                             "summary": f"{tier}, {waivers} waivers this year, {ratio:.0%} on-time"})
        yield Edge(cid, pid, "HAS_PROFILE")
        nodes += 1
        pool = recent_profiles[tier]
        for other in sorted(set(rng.sample(pool, min(3, len(pool))))):
            yield Edge(pid, other, "SIMILAR_TO")
        pool.append(pid)
        if len(pool) > 500:
            del pool[:250]
        # precedent trace
        if rng.random() < 0.2:
            tid = f"{P}TRACE_{i}"
            case_type = GOALS[0] if rng.random() < 0.5 else rng.choice(GOALS)
            outcome = rng.choice(_OUTCOMES)
            amount = rng.choice((29.0, 35.0, 39.0, 45.0, 120.0, 250.0))
            ts = f"{_YM[rng.randrange(0, 24)]}-{rng.randrange(1, 28):02d}T12:00:00"
            summary = f"{tier}, {waivers}/year, {ratio:.0%} on-time, ${amount:.0f} {case_type} → {outcome.replace('_', ' ')}"
            yield Node(tid, "DecisionTrace", {
                "kind": "precedent", "case_type": case_type, "goal": case_type, "tier": tier,
                "event_type": "LateFeeCharged" if case_type == "LateFeeDispute" else "Transaction",
                "outcome": outcome, "amount": amount, "waivers_this_year": waivers, "on_time_ratio": ratio,
                "timestamp": ts, "customer_id": cid, "summary": summary,
                "text": f"{tier} customer, {case_type}, ${amount:.0f}, {waivers} waivers this year, "
                        f"{ratio:.0%} on time. Outcome: {outcome.replace('_', ' ')}.",
            })
            yield Edge(pid, tid, "RESULTED_IN")
            yield Edge(tid, cid, "FOR_CUSTOMER")
            yield Edge(tid, f"{P}CASETYPE_{case_type}", "ABOUT")
            nodes += 1
        i += 1
