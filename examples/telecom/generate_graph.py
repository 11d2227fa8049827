#!/usr/bin/env python3
"""Write the Acme Mobile pack's graph data: graph/vocabulary.jsonl (tenant _shared),
graph/acme.jsonl and graph/zephyr.jsonl (docs/packs.md, "Graph data").

The output is committed and is what `hopweave load examples/telecom` reads; this script only
regenerates it (deterministic: the same --seed gives the same bytes). Standard library only.

    python examples/telecom/generate_graph.py            # rewrites graph/*.jsonl
    python examples/telecom/generate_graph.py --check    # exit 1 if the files are stale

As of 2026-05-12 (the scenarios' as_of), the stories are:

- SUB_1001 Ana Ruiz (Unlimited_Plus since 2024-06-01, US, Austin): an $84 roaming charge on
  2026-05-08 caused by four days of data roaming in Mexico; 0 roaming credits in 2026 (one in
  2025, one in 2024); one 30-hour outage in Austin on 2026-04-20 (a 14-hour one on 2026-02-03
  was credited); precedent TRACE_3101/3102/3103 (roaming), TRACE_3301/3302 (outage),
  TRACE_3401/3402 (plan change); traps TRACE_3201 (Unlimited_Basic), TRACE_3901 (after as_of),
  an outage after as_of, an interaction after as_of.
- SUB_1002 Ben Ortiz (Unlimited_Basic, US, Austin): the same $84 Mexico roaming charge; the
  look-alike plan. Precedent TRACE_3201 (roaming), TRACE_3303 (outage), TRACE_3403 (plan change).
- SUB_1003 Chloe Martin (Unlimited_Plus, CA, Montreal): the region trap.
- zephyr: ZP_SUB_1001 "Ana Ruiz", also Unlimited_Plus in Austin, with her own $84 roaming charge
  (2026-05-09) and precedent ZP_TRACE_501: the second tenant's look-alike.
- A small random population per tenant (lines, monthly data usage, charges, credits).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
Record = dict[str, Any]

PLANS = (  # name, code, rank, monthly price, aliases
    ("Unlimited_Plus", "UPLS", 1, 75.0, ["Unlimited Plus", "unlimited plus plan", "Plus plan"]),
    ("Unlimited_Basic", "UBSC", 2, 50.0, ["Unlimited Basic", "unlimited basic plan", "Basic plan"]),
    ("Prepaid_Go", "PPGO", 3, 30.0, ["Prepaid Go", "prepaid plan", "pay as you go"]),
)
CHARGE_TYPES = (  # name, aliases, policy types
    ("RoamingCharge", ["roaming charge", "roaming charges", "roaming fee", "roaming fees", "roaming bill",
                       "international roaming", "data abroad"], ["RoamingCredit", "RoamingRates"]),
    ("OverageCharge", ["overage charge", "data overage", "overage fee"], ["PlanChange"]),
    ("PlanChangeFee", ["plan change fee", "change fee", "upgrade fee", "downgrade fee"], ["PlanChange"]),
    ("MonthlyFee", ["monthly fee", "monthly charge", "plan price"], ["PlanChange"]),
)
POLICY_TYPES = (
    ("RoamingCredit", ["roaming credit policy", "roaming dispute policy"]),
    ("RoamingRates", ["roaming rates", "travel pass", "day pass"]),
    ("PlanChange", ["plan change policy", "switching plans"]),
    ("OutageCredit", ["outage credit", "outage credits", "outage compensation", "service credit"]),
)
REGIONS = (("US", ["United States", "USA", "U.S."]), ("CA", ["Canada"]), ("EU", ["European Union", "Europe"]))
SYNONYMS = (("roaming charge", "international usage charge"), ("credit", "refund"),
            ("outage", "service interruption"), ("dispute", "contest"), ("travel pass", "day pass"),
            ("downgrade", "cheaper plan"))
GOALS = ("RoamingChargeDispute", "PlanChange", "OutageCredit")
COUNTRY = {"MX": "Mexico", "CA": "Canada", "ES": "Spain", "US": "the United States", "FR": "France"}


def node(nid: str, label: str, **props: Any) -> Record:
    return {"node": nid, "label": label, "properties": props}


def edge(etype: str, a: str, b: str, **props: Any) -> Record:
    return {"edge": etype, "from": a, "to": b, "properties": props}


def money(x: float, cur: str = "USD") -> str:
    return {"USD": "$", "CAD": "CA$", "EUR": "€"}[cur] + f"{x:,.2f}"


# ---- shared vocabulary -----------------------------------------------------------------------
def vocabulary() -> Iterator[Record]:
    for name, code, rank, price, aliases in PLANS:
        yield node(f"PLAN_{name}", "Plan", name=name, code=code, rank=rank, monthly_price=price, aliases=aliases,
                   summary=f"{name.replace('_', ' ')} plan ({money(price)}/month)")
    for name, aliases, pts in CHARGE_TYPES:
        yield node(f"CHARGETYPE_{name}", "ChargeType", name=name, aliases=aliases, policy_types=pts,
                   summary=f"Charge type {name}")
    for name, aliases in POLICY_TYPES:
        yield node(f"POLICYTYPE_{name}", "PolicyType", name=name, aliases=aliases, summary=f"Policy type {name}")
    for code, aliases in REGIONS:
        yield node(f"TEL_REGION_{code}", "Region", name=code, code=code, aliases=aliases,
                   summary=f"Region {code} ({aliases[0]})")
    concepts = sorted({c for pair in SYNONYMS for c in pair})
    for c in concepts:
        yield node(concept_id(c), "Concept", name=c, aliases=[], summary=f"Concept '{c}'")
    for a, b in SYNONYMS:
        yield edge("SYNONYM_OF", concept_id(a), concept_id(b))
        yield edge("SYNONYM_OF", concept_id(b), concept_id(a))


def concept_id(name: str) -> str:
    return "TEL_CONCEPT_" + "_".join(name.lower().split())


# ---- procedural memory (per tenant) ------------------------------------------------------------
STEPS = {
    "RoamingChargeDispute": ("Verify the subscriber's identity", "Find the disputed roaming charge and the usage behind it",
                             "Check the roaming credits used this calendar year against the plan's policy",
                             "Credit the charge or escalate to a supervisor", "Record the decision and text the subscriber"),
    "PlanChange": ("Verify the subscriber's identity", "Review the current plan, lines and data usage",
                   "Explain fees, timing and perks lost under the plan change policy",
                   "Apply the plan change on every line the subscriber names", "Confirm the change by email"),
    "OutageCredit": ("Verify the subscriber's identity", "Confirm the outage in the subscriber's service area",
                     "Compute the credit from the outage duration and the plan's policy",
                     "Apply the credit or escalate", "Record the decision"),
}
#: Rule conditions are in the rule language of hopweave.models.expr; the goals' `case:` says
#: where the facts they name come from, and the engine evaluates them against the case.
#: A rule revision is another node with the dates it is in force (valid_from <= as_of <
#: valid_until): REVISIONS below; the rules here are in force from RULES_FROM unless revised.
RULES = {
    "RoamingChargeDispute": (
        ("Unlimited Plus roaming credit",
         'plan == "Unlimited_Plus" and roaming_credits_this_year < 2 and amount <= 100',
         "credit at the agent's discretion", True),
        ("Unlimited Basic roaming credit",
         'plan == "Unlimited_Basic" and roaming_credits_this_year < 1 and amount <= 50',
         "credit at the agent's discretion", True),
        ("Escalate above the cap", "amount > 100 or roaming_credits_this_year >= 2", "escalate to a supervisor", True),
        ("Legacy automatic roaming credit", 'promotion == "summer_2025"', "credit automatically", False),
    ),
    "PlanChange": (
        ("First change free", "plan_changes_24m == 0", "no plan change fee", True),
        ("Second change fee", "plan_changes_24m >= 1", "charge the $10 plan change fee", True),
        ("Early downgrade", "days_since_upgrade < 90", "repay the $30 upgrade credit", True),
        ("Legacy flat fee", "true", "charge $15", False),
    ),
    "OutageCredit": (
        ("Outage confirmed", "outages >= 1", "eligible for an outage credit", True),
        ("Annual outage limit", "outage_credits_this_year >= 2", "escalate to a supervisor", True),
        ("Legacy 48-hour threshold", "outage_hours < 48", "decline", False),
    ),
}
#: Rule revisions (goal, rule number, revision, valid_from, valid_until, condition): the rule as it
#: read in that interval. Unlimited Plus credits follow roaming-credit-unlimited-plus-v2 (one
#: credit a year up to $75) until v3 took effect on 2026-01-01 (two a year up to $100).
REVISIONS = (
    ("RoamingChargeDispute", 1, "v2", "2024-01-01", "2026-01-01",
     'plan == "Unlimited_Plus" and roaming_credits_this_year < 1 and amount <= 75'),
    ("RoamingChargeDispute", 1, "v3", "2026-01-01", None, None),
)
#: Workflow revisions: (revision, valid_from, valid_until).
WORKFLOWS = (("v1", "2024-01-01", "2026-01-01"), ("v2", "2026-01-01", None))
HEURISTICS = {
    "RoamingChargeDispute": (("First-time roamers who never acknowledged a roaming alert are usually credited", 0.84, True),
                             ("Subscribers with a Travel Pass history rarely dispute twice", 0.55, False)),
    "PlanChange": (("Subscribers downgrading over price accept a retention offer about half the time", 0.5, True),),
    "OutageCredit": (("Outages over 24 hours generate repeat contacts; credit on the first contact", 0.77, True),),
}


def _validity(valid_from: str | None, valid_until: str | None) -> dict[str, str]:
    return {k: v for k, v in (("valid_from", valid_from), ("valid_until", valid_until)) if v}


def procedural(p: str) -> Iterator[Record]:
    for goal in GOALS:
        ct = f"{p}CASETYPE_{goal}"
        yield node(ct, "CaseType", name=goal, summary=f"Case type {goal}")
        for state in ("open", "escalated"):
            yield node(f"{p}CASESTATE_{goal}_{state}", "CaseState", name=f"{goal}_{state}", case_type=goal,
                       summary=f"{goal} case, {state}")
            yield edge("HAS_STATE", ct, f"{p}CASESTATE_{goal}_{state}")
        steps = STEPS[goal]
        for rev, valid_from, valid_until in WORKFLOWS:
            version = "current" if valid_until is None else "superseded"
            wf = f"{p}WF_{goal}_{rev}"
            shown = steps if version == "current" else steps[:3]
            yield node(wf, "Workflow", name=f"{goal} workflow", case_type=goal, version=version, revision=rev,
                       **_validity(valid_from, valid_until),
                       summary=f"{goal} workflow {rev} (in force from {valid_from}"
                               + (f" until {valid_until}" if valid_until else "") + "): " + "; ".join(shown))
            yield edge("HAS_WORKFLOW", ct, wf)
            prev = None
            for i, s in enumerate(shown, start=1):
                sid = f"{wf}_STEP_{i}"
                yield node(sid, "Step", name=s, order=i, summary=f"Step {i}: {s}")
                yield edge("HAS_STEP", wf, sid)
                if prev:
                    yield edge("NEXT", prev, sid)
                prev = sid
        for i, (name, cond, action, enabled) in enumerate(RULES[goal], start=1):
            revs = [r for r in REVISIONS if r[0] == goal and r[1] == i] or [(goal, i, "", None, None, None)]
            for _, _, rev, valid_from, valid_until, revised in revs:
                rid = f"{p}RULE_{goal}_{i}" + (f"_{rev}" if revised else "")
                c = revised or cond
                yield node(rid, "Rule", name=name, condition=c, action=action, enabled=enabled,
                           **_validity(valid_from, valid_until),
                           summary=f"Rule '{name}': if {c}, {action}" + ("" if enabled else " (disabled)"))
                yield edge("MATCHES", f"{p}CASESTATE_{goal}_open", rid)
        for i, (text, conf, enabled) in enumerate(HEURISTICS[goal], start=1):
            hid = f"{p}HEUR_{goal}_{i}"
            yield node(hid, "Heuristic", text=text, confidence=conf, enabled=enabled,
                       summary=f"Heuristic ({conf:.0%}): {text}" + ("" if enabled else " (disabled)"))
            yield edge("HAS_HEURISTIC", f"{p}CASESTATE_{goal}_open", hid)


# ---- building blocks -------------------------------------------------------------------------
def subscriber(sid: str, name: str, plan: str, since: str, region: str, area: str, email: str) -> Iterator[Record]:
    yield node(sid, "Subscriber", name=name, email=email, plan=plan, plan_since=since, region=region,
               market="consumer", summary=f"{sid}, {plan} plan since {since}, region {region}")
    yield edge("ON_PLAN", sid, f"PLAN_{plan}")
    yield edge("LOCATED_IN", sid, f"TEL_REGION_{region}")
    yield edge("IN_AREA", sid, area)


def line(sid: str, lid: str, msisdn: str, device: str, activated: str) -> Iterator[Record]:
    yield node(lid, "Line", msisdn=msisdn, device=device, status="active", activated=activated,
               summary=f"Line {lid}, {device}, active since {activated}")
    yield edge("HAS_LINE", sid, lid)


def usage(lid: str, uid: str, utype: str, ts: str, volume: float, country: str | None = None) -> Iterator[Record]:
    roaming = country is not None
    unit = {"data": "MB", "voice": "min", "sms": "texts"}[utype]
    if roaming:
        what = {"data": "Data", "voice": "Voice", "sms": "SMS"}[utype]
        summary = f"{what} roaming in {COUNTRY[country]} on {ts[:10]}, {volume:,.0f} {unit}"
    else:
        summary = f"Home {utype} usage in {ts[:7]}, {volume:,.0f} {unit} on {lid}"
    props: dict[str, Any] = dict(type=utype, roaming=roaming, volume=float(volume), unit=unit, timestamp=ts,
                                 year=int(ts[:4]), summary=summary)
    if country:
        props["country"] = country
    yield node(uid, "UsageEvent", **props)
    yield edge("HAS_USAGE", lid, uid)


def charge(lid: str, cid: str, ctype: str, ts: str, amount: float, status: str, description: str,
           country: str | None = None, currency: str = "USD") -> Iterator[Record]:
    where = f" ({COUNTRY[country]})" if country else ""
    props: dict[str, Any] = dict(type=ctype, amount=float(amount), currency=currency, timestamp=ts, year=int(ts[:4]),
                                 status=status, description=description,
                                 summary=f"{ctype} {money(amount, currency)} on {ts[:10]}{where}, {description}, "
                                         f"line {lid}, {status}")
    if country:
        props["country"] = country
    yield node(cid, "Charge", **props)
    yield edge("HAS_CHARGE", lid, cid)
    yield edge("OF_CHARGE_TYPE", cid, f"CHARGETYPE_{ctype}")


def credit(sid: str, crid: str, ctype: str, ts: str, amount: float, target: str | None,
           currency: str = "USD") -> Iterator[Record]:
    yield node(crid, "Credit", type=ctype, amount=float(amount), timestamp=ts, year=int(ts[:4]), status="applied",
               summary=f"{ctype} {money(amount, currency)} on {ts[:10]}, applied")
    yield edge("HAS_CREDIT", sid, crid)
    if target:
        yield edge("COMPENSATES", crid, target)


def outage(oid: str, areas: list[str], area_name: str, cause: str, start: str, end: str, hours: float,
           severity: str) -> Iterator[Record]:
    yield node(oid, "Outage", cause=cause, severity=severity, started_at=start, ended_at=end,
               duration_hours=float(hours), status="restored",
               summary=f"Outage {oid}: {cause}, {area_name}, {start[:16].replace('T', ' ')} to "
                       f"{end[:16].replace('T', ' ')} ({hours:.0f} hours)")
    for a in areas:
        yield edge("AFFECTS", oid, a)


def interaction(sid: str, iid: str, started: str, channel: str, topic: str, result: str, ended: str,
                summary: str, name: str, about: str | None = None) -> Iterator[Record]:
    rid = iid.replace("INT_", "RES_", 1) if iid.startswith("INT_") else iid.replace("_INT_", "_RES_")
    yield node(iid, "Interaction", started_at=started, channel=channel, topic=topic,
               transcript=f"[{channel}] {name}: about {topic} ...",
               summary=f"{started[:10]} {channel} contact about {topic}")
    yield node(rid, "Resolution", result=result, timestamp=ended, summary=summary)
    yield edge("HAD_INTERACTION", sid, iid)
    yield edge("ENDED_IN", iid, rid)
    if about:
        yield edge("REGARDING", iid, about)


def plan_change(sid: str, pid: str, ts: str, frm: str, to: str, fee: float) -> Iterator[Record]:
    yield node(pid, "PlanChangeRecord", from_plan=frm, to_plan=to, timestamp=ts, year=int(ts[:4]), fee=float(fee),
               summary=f"Plan change on {ts[:10]}: {frm} to {to}, fee {money(fee)}")
    yield edge("CHANGED_PLAN", sid, pid)


def months(start: tuple[int, int], end: tuple[int, int]) -> list[str]:
    y, m = start
    out = []
    while (y, m) <= end:
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def home_data(lid: str, tag: str, rng: random.Random, start=(2024, 5), end=(2026, 4)) -> Iterator[Record]:
    """Monthly home data usage of a line (one UsageEvent per month, on the 28th)."""
    for ym in months(start, end):
        yield from usage(lid, f"USE_{tag}_{ym.replace('-', '')}", "data", f"{ym}-28T23:00:00",
                         float(rng.randrange(4000, 26000, 50)))


# ---- precedent ---------------------------------------------------------------------------------
# trace id, subscriber, case type, plan, charge type, credits this year, amount, outcome, approver,
# timestamp, summary, text
TRACES: dict[str, tuple[tuple[Any, ...], ...]] = {
    "acme": (
        ("TRACE_3101", "SUB_2001", "RoamingChargeDispute", "Unlimited_Plus", "RoamingCharge", 0, 84.0, "credited", "Sam",
         "2026-03-10T11:00:00", "Unlimited Plus, 0 roaming credits this year, $84 roaming charge (Mexico) → credited in full (approved by Sam)",
         "Subscriber disputed an $84 pay-per-use data roaming charge from a trip to Mexico; roaming alerts were not acknowledged. Unlimited Plus, 0 roaming credits used this calendar year, within the $100 cap. Decision: credited in full."),
        ("TRACE_3102", "SUB_2002", "RoamingChargeDispute", "Unlimited_Plus", "RoamingCharge", 1, 96.0, "credited", None,
         "2026-02-02T15:20:00", "Unlimited Plus, 1 roaming credit this year, $96 roaming charge → credited (second of two allowed)",
         "Subscriber disputed a $96 roaming charge after a cruise; Unlimited Plus, 1 roaming credit already used this calendar year. The policy allows two per year up to $100 each. Decision: credited."),
        ("TRACE_3103", "SUB_2003", "RoamingChargeDispute", "Unlimited_Plus", "RoamingCharge", 2, 60.0, "escalated_declined", None,
         "2025-11-20T09:40:00", "Unlimited Plus, 2 roaming credits this year, $60 roaming charge → escalated, declined",
         "Subscriber disputed a $60 roaming charge; Unlimited Plus with both roaming credits of the calendar year already used. Escalated to a supervisor, who declined."),
        ("TRACE_3201", "SUB_2004", "RoamingChargeDispute", "Unlimited_Basic", "RoamingCharge", 0, 84.0, "partially_credited", "Sam",
         "2026-04-01T10:10:00", "Unlimited Basic, 0 roaming credits this year, $84 roaming charge → $50 credited (plan cap)",
         "Subscriber disputed an $84 roaming charge from Mexico; Unlimited Basic allows one credit per year up to $50. Decision: $50 credited, the rest stands."),
        ("TRACE_3901", "SUB_2001", "RoamingChargeDispute", "Unlimited_Plus", "RoamingCharge", 1, 70.0, "credited", "Sam",
         "2026-06-02T12:00:00", "Unlimited Plus, 1 roaming credit this year, $70 roaming charge → credited (after as_of)",
         "Subscriber disputed a $70 roaming charge; credited. Recorded after the scenarios' as_of."),
        ("TRACE_3301", "SUB_2005", "OutageCredit", "Unlimited_Plus", None, 0, 30.0, "credited", None,
         "2026-04-25T16:00:00", "Unlimited Plus, 30-hour outage, 0 outage credits this year → $30 credited",
         "Subscriber had no service for 30 hours during a confirmed fiber cut in the service area. Unlimited Plus: $10 per started 12 hours. Decision: $30 credited."),
        ("TRACE_3302", "SUB_2002", "OutageCredit", "Unlimited_Plus", None, 1, 20.0, "credited", None,
         "2026-02-05T13:30:00", "Unlimited Plus, 14-hour outage, 1 outage credit this year → $20 credited",
         "Subscriber lost service for 14 hours in a confirmed outage; Unlimited Plus credits $10 per started 12 hours after 12 hours. Decision: $20 credited."),
        ("TRACE_3303", "SUB_2004", "OutageCredit", "Unlimited_Basic", None, 0, 5.0, "credited", None,
         "2026-04-26T10:00:00", "Unlimited Basic, 30-hour outage, 0 outage credits this year → $5 credited",
         "Subscriber lost service for 30 hours; Unlimited Basic credits $5 per full 24 hours after 24 hours. Decision: $5 credited."),
        ("TRACE_3401", "SUB_2003", "PlanChange", "Unlimited_Plus", "PlanChangeFee", 0, 30.0, "downgraded_credit_repaid", None,
         "2026-03-15T14:00:00", "Unlimited Plus → Unlimited Basic within 90 days of upgrading → $30 upgrade credit repaid",
         "Subscriber downgraded from Unlimited Plus to Unlimited Basic 60 days after upgrading; the $30 upgrade credit was repaid on the next bill, no plan change fee."),
        ("TRACE_3402", "SUB_2005", "PlanChange", "Unlimited_Plus", "PlanChangeFee", 0, 0.0, "downgraded_no_fee", None,
         "2026-01-12T09:00:00", "Unlimited Plus → Unlimited Basic, first change in 12 months → no fee, effective next cycle",
         "Subscriber downgraded from Unlimited Plus to Unlimited Basic; first plan change in 12 months, so no fee; effective at the next billing cycle."),
        ("TRACE_3403", "SUB_2004", "PlanChange", "Unlimited_Basic", "PlanChangeFee", 0, 0.0, "upgraded", None,
         "2026-02-20T11:00:00", "Unlimited Basic → Unlimited Plus upgrade → free, immediate, $30 upgrade credit",
         "Subscriber upgraded from Unlimited Basic to Unlimited Plus; free and immediate, with the $30 upgrade credit."),
    ),
    "zephyr": (
        ("ZP_TRACE_501", "ZP_SUB_2001", "RoamingChargeDispute", "Unlimited_Plus", "RoamingCharge", 0, 84.0, "credited", "Kim",
         "2026-04-12T10:00:00", "Zephyr Unlimited Plus, 0 roaming credits this year, $84 roaming charge → credited (approved by Kim)",
         "Zephyr subscriber disputed an $84 roaming charge from Mexico; Zephyr Unlimited Plus allows three credits per year up to $150. Decision: credited."),
    ),
}
PRECEDENT_PEOPLE = {
    "acme": (("SUB_2001", "Grace Lee", "Unlimited_Plus"), ("SUB_2002", "Omar Haddad", "Unlimited_Plus"),
             ("SUB_2003", "Lena Vogel", "Unlimited_Plus"), ("SUB_2004", "Raj Mehta", "Unlimited_Basic"),
             ("SUB_2005", "Tom Weber", "Unlimited_Plus")),
    "zephyr": (("ZP_SUB_2001", "Mia Novak", "Unlimited_Plus"),),
}


def precedent(tenant: str, p: str, area: str, subjects: list[tuple[str, str, int]]) -> Iterator[Record]:
    """Precedent subscribers, their profiles, the subjects' profiles SIMILAR_TO them, and traces."""
    for i, (sid, name, plan) in enumerate(PRECEDENT_PEOPLE[tenant], start=1):
        yield from subscriber(sid, name, plan, "2022-01-15", "US", area, f"{sid.lower()}@example.com")
        yield from line(sid, f"{p}LINE_55590{i:02d}", f"+1-512-559-00{i:02d}", "Pixel 7", "2022-01-15")
        yield node(f"PROFILE_{sid}", "SubscriberProfile", plan=plan, credits_this_year=0, tenure_years=4,
                   summary=f"{plan}, tenure 4 years")
        yield edge("HAS_PROFILE", sid, f"PROFILE_{sid}")
    for sid, plan, credits in subjects:
        yield node(f"PROFILE_{sid}", "SubscriberProfile", plan=plan, credits_this_year=credits, tenure_years=2,
                   summary=f"{plan}, {credits} roaming credits this year")
        yield edge("HAS_PROFILE", sid, f"PROFILE_{sid}")
        for other, _, _ in PRECEDENT_PEOPLE[tenant]:
            yield edge("SIMILAR_TO", f"PROFILE_{sid}", f"PROFILE_{other}")
    for t in TRACES[tenant]:
        tid, sid, case, plan, ctype, credits, amount, outcome, approver, ts, summary, text = t
        props: dict[str, Any] = dict(kind="precedent", case_type=case, goal=case, plan=plan, credits_this_year=credits,
                                     amount=amount, outcome=outcome, timestamp=ts, customer_id=sid, text=text,
                                     summary=summary)
        if ctype:
            props["charge_type"] = ctype
        if approver:
            props["approved_by"] = approver
        yield node(tid, "DecisionTrace", **props)
        yield edge("DECIDED", f"PROFILE_{sid}", tid)
        yield edge("FOR_SUBSCRIBER", tid, sid)
        yield edge("REGARDING", tid, f"{p}CASETYPE_{case}")


# ---- acme's stories ----------------------------------------------------------------------------
def ana(rng: random.Random) -> Iterator[Record]:
    s, l1, l2 = "SUB_1001", "LINE_5550101", "LINE_5550102"
    yield from subscriber(s, "Ana Ruiz", "Unlimited_Plus", "2024-06-01", "US", "AREA_AUSTIN", "ana.ruiz@example.com")
    yield from line(s, l1, "+1-512-555-0101", "iPhone 15", "2021-06-14")
    yield from line(s, l2, "+1-512-555-0102", "iPad Air", "2023-02-01")
    yield from home_data(l1, "1001A", rng)
    yield from home_data(l2, "1001B", rng)
    # the disputed charge: four days of pay-per-use data roaming in Mexico, plus a call
    cause = []
    for day, mb in (("02", 310), ("03", 420), ("04", 515), ("05", 280)):
        uid = f"USE_1001_MX_202605{day}"
        cause.append(uid)
        yield from usage(l1, uid, "data", f"2026-05-{day}T20:00:00", mb, "MX")
    yield from usage(l1, "USE_1001_MXV_20260503", "voice", "2026-05-03T18:30:00", 22, "MX")
    yield from charge(l1, "CHG_1001_20260508", "RoamingCharge", "2026-05-08T06:00:00", 84.0, "billed",
                      "pay-per-use data roaming", "MX")
    for uid in cause:
        yield edge("CAUSED_BY", "CHG_1001_20260508", uid)
    # Canada, August 2025: charged, disputed, credited
    for day, mb in (("14", 150), ("15", 95), ("16", 60)):
        yield from usage(l1, f"USE_1001_CA_202508{day}", "data", f"2025-08-{day}T12:00:00", mb, "CA")
    yield from charge(l1, "CHG_1001_20250820", "RoamingCharge", "2025-08-20T06:00:00", 45.0, "credited",
                      "pay-per-use data roaming", "CA")
    yield from credit(s, "CRED_1001_20250902", "RoamingCredit", "2025-09-02T10:20:00", 45.0, "CHG_1001_20250820")
    # Spain, November 2024 (outside the 12-month window): credited in December
    for day, mb in (("09", 200), ("10", 130)):
        yield from usage(l1, f"USE_1001_ES_202411{day}", "data", f"2024-11-{day}T12:00:00", mb, "ES")
    yield from charge(l1, "CHG_1001_20241115", "RoamingCharge", "2024-11-15T06:00:00", 38.0, "credited",
                      "pay-per-use data roaming", "ES")
    yield from credit(s, "CRED_1001_20241201", "RoamingCredit", "2024-12-01T09:00:00", 38.0, "CHG_1001_20241115")
    # an overage on the tablet and the outage credit of February 2026
    yield from charge(l2, "CHG_1001_20260131", "OverageCharge", "2026-01-31T06:00:00", 15.0, "billed",
                      "data overage on the tablet line")
    yield from credit(s, "CRED_1001_20260210", "OutageCredit", "2026-02-10T11:00:00", 20.0, "OUT_AUSTIN_20260203")
    yield from plan_change(s, "PCHG_1001_20240601", "2024-06-01T09:00:00", "Unlimited_Basic", "Unlimited_Plus", 0.0)
    yield from interaction(s, "INT_1001_20250902", "2025-09-02T10:00:00", "chat", "roaming charge dispute", "credited",
                           "2025-09-02T10:20:00", "2025-09-02: $45 Canada roaming charge credited", "Ana Ruiz",
                           "CHG_1001_20250820")
    yield from interaction(s, "INT_1001_20260210", "2026-02-10T10:40:00", "phone", "outage credit", "credited",
                           "2026-02-10T11:00:00", "2026-02-10: $20 outage credit for the February outage", "Ana Ruiz",
                           "OUT_AUSTIN_20260203")
    yield from interaction(s, "INT_1001_20260402", "2026-04-02T17:00:00", "chat", "travel pass question", "resolved",
                           "2026-04-02T17:10:00", "2026-04-02: Travel Pass explained, resolved", "Ana Ruiz")
    yield from interaction(s, "INT_1001_20260520", "2026-05-20T09:00:00", "phone", "roaming follow-up", "credited",
                           "2026-05-20T09:30:00", "2026-05-20: roaming follow-up (after the 2026-05-12 as_of)",
                           "Ana Ruiz", "CHG_1001_20260508")


def ben(rng: random.Random) -> Iterator[Record]:
    s, l1 = "SUB_1002", "LINE_5550201"
    yield from subscriber(s, "Ben Ortiz", "Unlimited_Basic", "2022-09-15", "US", "AREA_AUSTIN", "ben.ortiz@example.com")
    yield from line(s, l1, "+1-512-555-0201", "Pixel 8", "2022-09-15")
    yield from home_data(l1, "1002A", rng)
    cause = []
    for day, mb in (("01", 260), ("02", 240), ("03", 180)):
        uid = f"USE_1002_MX_202605{day}"
        cause.append(uid)
        yield from usage(l1, uid, "data", f"2026-05-{day}T21:00:00", mb, "MX")
    yield from charge(l1, "CHG_1002_20260507", "RoamingCharge", "2026-05-07T06:00:00", 84.0, "billed",
                      "pay-per-use data roaming", "MX")
    for uid in cause:
        yield edge("CAUSED_BY", "CHG_1002_20260507", uid)
    yield from interaction(s, "INT_1002_20260115", "2026-01-15T12:00:00", "phone", "bill explanation", "resolved",
                           "2026-01-15T12:12:00", "2026-01-15: January bill explained, resolved", "Ben Ortiz")


def chloe(rng: random.Random) -> Iterator[Record]:
    s, l1 = "SUB_1003", "LINE_5550301"
    yield from subscriber(s, "Chloe Martin", "Unlimited_Plus", "2025-01-10", "CA", "AREA_MONTREAL",
                          "chloe.martin@example.com")
    yield from line(s, l1, "+1-514-555-0301", "iPhone 14", "2025-01-10")
    yield from home_data(l1, "1003A", rng, start=(2025, 1))
    cause = []
    for day, mb in (("28", 330), ("29", 410)):
        uid = f"USE_1003_US_202604{day}"
        cause.append(uid)
        yield from usage(l1, uid, "data", f"2026-04-{day}T19:00:00", mb, "US")
    yield from charge(l1, "CHG_1003_20260503", "RoamingCharge", "2026-05-03T06:00:00", 96.0, "billed",
                      "pay-per-use data roaming", "US", currency="CAD")
    for uid in cause:
        yield edge("CAUSED_BY", "CHG_1003_20260503", uid)


AREAS = {"acme": (("AREA_AUSTIN", "Austin"), ("AREA_DALLAS", "Dallas"), ("AREA_HOUSTON", "Houston"),
                  ("AREA_MONTREAL", "Montreal")),
         "zephyr": (("ZP_AREA_AUSTIN", "Austin"), ("ZP_AREA_DENVER", "Denver"))}
OUTAGES = {
    "acme": (
        ("OUT_AUSTIN_20250708", ["AREA_AUSTIN"], "Austin", "power failure at a switching site", "2025-07-08T02:00:00", "2025-07-08T08:00:00", 6, "minor"),
        ("OUT_AUSTIN_20260203", ["AREA_AUSTIN"], "Austin", "core router fault", "2026-02-03T05:00:00", "2026-02-03T19:00:00", 14, "major"),
        ("OUT_AUSTIN_20260420", ["AREA_AUSTIN"], "Austin", "fiber cut", "2026-04-20T06:00:00", "2026-04-21T12:00:00", 30, "major"),
        ("OUT_AUSTIN_20260515", ["AREA_AUSTIN"], "Austin", "planned maintenance overrun", "2026-05-15T01:00:00", "2026-05-15T05:00:00", 4, "minor"),
        ("OUT_DALLAS_20260425", ["AREA_DALLAS"], "Dallas", "storm damage", "2026-04-25T14:00:00", "2026-04-27T02:00:00", 36, "major"),
        ("OUT_HOUSTON_20260111", ["AREA_HOUSTON"], "Houston", "software update failure", "2026-01-11T03:00:00", "2026-01-11T09:00:00", 6, "minor"),
        ("OUT_MONTREAL_20260402", ["AREA_MONTREAL"], "Montreal", "ice storm", "2026-04-02T08:00:00", "2026-04-03T04:00:00", 20, "major"),
    ),
    "zephyr": (
        ("ZP_OUT_AUSTIN_20260428", ["ZP_AREA_AUSTIN"], "Austin", "zephyr tower fire", "2026-04-28T10:00:00", "2026-04-29T06:00:00", 20, "major"),
    ),
}
DEVICES = ("iPhone 13", "iPhone 15", "Galaxy S23", "Pixel 8", "Moto G", "Galaxy A54")
FIRST = ("Liam", "Noah", "Emma", "Olivia", "Ava", "Lucas", "Mia", "Ethan", "Zoe", "Leo", "Nora", "Ivan")
LAST = ("Garcia", "Smith", "Nguyen", "Kowalski", "Dubois", "Rossi", "Khan", "Silva", "Brown", "Tanaka")


def population(rng: random.Random, tenant: str, p: str, n: int, first_id: int) -> Iterator[Record]:
    """Background subscribers: one or two lines, 12 months of home data, sometimes a roaming
    charge or an overage, sometimes a credit."""
    areas = [a for a, _ in AREAS[tenant]]
    for k in range(n):
        num = first_id + k
        sid = f"{p}SUB_{num}"
        plan = rng.choice([x[0] for x in PLANS])
        area = rng.choice(areas)
        region = "CA" if area.endswith("MONTREAL") else "US"
        since = f"20{rng.randint(21, 25)}-{rng.randint(1, 12):02d}-01"
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        yield from subscriber(sid, name, plan, since, region, area, f"user{num}@example.com")
        for j in range(rng.choice((1, 1, 2))):
            lid = f"{p}LINE_{6000000 + num * 10 + j}"
            yield from line(sid, lid, f"+1-555-{num:04d}-{j}", rng.choice(DEVICES), since)
            yield from home_data(lid, f"{p}{num}_{j}", rng, start=(2025, 5))
            if rng.random() < 0.3:
                m = rng.randint(1, 12)
                yr = 2025 if m > 4 else 2026
                cid = f"{p}CHG_{num}{j}_{yr}{m:02d}15"
                yield from usage(lid, f"USE_{p}{num}_{j}_RM", "data", f"{yr}-{m:02d}-10T12:00:00",
                                 float(rng.randrange(50, 600, 10)), rng.choice(("MX", "CA", "FR", "ES")))
                yield from charge(lid, cid, "RoamingCharge", f"{yr}-{m:02d}-15T06:00:00",
                                  float(rng.randrange(20, 140)), "billed", "pay-per-use data roaming")
                yield edge("CAUSED_BY", cid, f"USE_{p}{num}_{j}_RM")
                if rng.random() < 0.5:
                    yield from credit(sid, f"{p}CRED_{num}{j}_{yr}{m:02d}", "RoamingCredit",
                                      f"{yr}-{m:02d}-25T10:00:00", 30.0, cid)


def tenant_records(tenant: str, seed: int) -> Iterator[Record]:
    rng = random.Random(f"{seed}:{tenant}")
    p = "" if tenant == "acme" else "ZP_"
    yield from procedural(p)
    for aid, name in AREAS[tenant]:
        yield node(aid, "Area", name=name, summary=f"Service area {name}")
    for o in OUTAGES[tenant]:
        yield from outage(*o)
    if tenant == "acme":
        yield from ana(rng)
        yield from ben(rng)
        yield from chloe(rng)
        yield from precedent(tenant, p, "AREA_DALLAS", [("SUB_1001", "Unlimited_Plus", 0),
                                                        ("SUB_1002", "Unlimited_Basic", 0),
                                                        ("SUB_1003", "Unlimited_Plus", 0)])
        yield from population(rng, tenant, p, 40, 3001)
    else:
        yield from zephyr_ana(rng)
        yield from precedent(tenant, p, "ZP_AREA_DENVER", [("ZP_SUB_1001", "Unlimited_Plus", 0)])
        yield from population(rng, tenant, p, 12, 3001)


def zephyr_ana(rng: random.Random) -> Iterator[Record]:
    s, l1 = "ZP_SUB_1001", "ZP_LINE_5550101"
    yield from subscriber(s, "Ana Ruiz", "Unlimited_Plus", "2023-11-01", "US", "ZP_AREA_AUSTIN", "ana.ruiz@example.com")
    yield from line(s, l1, "+1-512-555-0101", "Galaxy S24", "2023-11-01")
    yield from home_data(l1, "ZP1001A", rng)
    yield from usage(l1, "ZP_USE_1001_MX_20260504", "data", "2026-05-04T20:00:00", 700, "MX")
    yield from charge(l1, "ZP_CHG_1001_20260509", "RoamingCharge", "2026-05-09T06:00:00", 84.0, "billed",
                      "pay-per-use data roaming (zephyr)", "MX")
    yield edge("CAUSED_BY", "ZP_CHG_1001_20260509", "ZP_USE_1001_MX_20260504")
    yield from interaction(s, "ZP_INT_1001_20260301", "2026-03-01T09:00:00", "chat", "zephyr bill question", "resolved",
                           "2026-03-01T09:05:00", "2026-03-01: zephyr bill question, resolved", "Ana Ruiz")


# ---- output --------------------------------------------------------------------------------------
def render(records: Iterator[Record], header: str) -> str:
    lines = [f"# {header}", "# Generated by examples/telecom/generate_graph.py; do not edit by hand."]
    lines += [json.dumps(r, ensure_ascii=False, sort_keys=False) for r in records]
    return "\n".join(lines) + "\n"


def outputs(seed: int) -> dict[str, str]:
    return {
        "vocabulary.jsonl": render(vocabulary(), "Shared vocabulary of the telecom domain (tenant _shared)"),
        "acme.jsonl": render(tenant_records("acme", seed), "Tenant acme: Acme Mobile"),
        "zephyr.jsonl": render(tenant_records("zephyr", seed), "Tenant zephyr: Zephyr Wireless (isolation)"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "graph")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--check", action="store_true", help="exit 1 if the files on disk differ from the output")
    args = ap.parse_args(argv)
    files = outputs(args.seed)
    if args.check:
        stale = [n for n, text in files.items()
                 if not (args.out / n).is_file() or (args.out / n).read_text(encoding="utf-8") != text]
        if stale:
            print(f"stale: {stale}; run python examples/telecom/generate_graph.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (args.out / n).write_text(text, encoding="utf-8")
        print(f"{args.out / n}: {text.count(chr(10)) - 2} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
