"""DeltaBank's shared vocabulary (tenant ``_global``) and per-tenant procedural memory.

Vocabulary node ids: ``TIER_<name>``, ``PRODUCT_<name>``, ``EVENTTYPE_<name>``,
``POLICYTYPE_<name>``, ``REGION_<code>``, ``CONCEPT_<slug>``. The canonical value of a vocabulary
node is its ``name`` (the same string as the chunk metadata value: tier "Platinum", product
"Platinum_Card", policy_type "LateFeeWaiver", region "US").
"""

from __future__ import annotations

from typing import Iterator

from hopweave.graph.base import Edge, Node

Item = Node | Edge

TIERS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("Platinum", 1, ("platinum", "platinum tier", "plat")),
    ("Gold", 2, ("gold", "gold tier")),
    ("Silver", 3, ("silver", "silver tier")),
    ("Standard", 4, ("standard", "standard tier", "basic", "classic")),
)
PRODUCTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Platinum_Card", "PLAT", ("Platinum Card", "platinum credit card", "platinum card")),
    ("Gold_Card", "GOLD", ("Gold Card", "gold credit card", "gold card")),
    ("Silver_Card", "SILV", ("Silver Card", "silver credit card", "silver card")),
    ("Standard_Card", "STD", ("Standard Card", "standard credit card", "classic card")),
    ("Checking", "CHK", ("checking account", "current account", "checking")),
    ("Savings", "SAV", ("savings account", "savings")),
)
#: Card product of each tier.
TIER_CARD = {"Platinum": "Platinum_Card", "Gold": "Gold_Card", "Silver": "Silver_Card", "Standard": "Standard_Card"}
EVENT_TYPES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("LateFeeCharged", ("late fee", "late charge", "late payment fee"), ("LateFeeWaiver", "FeeSchedule")),
    ("PaymentMissed", ("missed payment", "late payment"), ("LateFeeWaiver",)),
    ("Transaction", ("transaction", "payment", "purchase"), ("FeeSchedule",)),
    ("WaiverEvent", ("fee waiver", "waiver", "courtesy waiver"), ("LateFeeWaiver",)),
    ("FraudReported", ("fraud report", "reported fraud", "stolen card"), ("FraudClaim",)),
    ("UnauthorizedTransaction", ("unauthorized transaction", "unauthorised charge", "charge I didn't make"),
     ("FraudClaim",)),
    ("CreditLimitRequest", ("credit limit increase", "limit increase", "higher credit limit"), ("CreditLimit",)),
    ("CreditLimitChange", ("credit limit change", "limit change"), ("CreditLimit",)),
    ("NameChangeRequest", ("name change", "change my name", "name update"), ("NameChange",)),
)
POLICY_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("LateFeeWaiver", ("late fee waiver", "fee waiver policy", "waiver policy")),
    ("FeeSchedule", ("fee schedule", "fees", "pricing")),
    ("FraudClaim", ("fraud policy", "fraud claims", "unauthorized transactions policy")),
    ("CreditLimit", ("credit limit policy", "credit line policy")),
    ("NameChange", ("name change policy", "identity update policy")),
)
REGIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("US", ("United States", "USA", "U.S.")),
    ("EU", ("European Union", "Europe")),
    ("CA", ("Canada",)),
)
#: Concept pairs linked SYNONYM_OF both ways (lexical expansions).
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("fee waiver", "charge reversal"),
    ("late fee", "late charge"),
    ("dispute", "contest"),
    ("credit limit", "credit line"),
    ("name change", "name update"),
    ("unauthorized transaction", "fraudulent charge"),
)

GOALS = ("LateFeeDispute", "FraudClaim", "CreditLimitIncrease", "NameChange")


def concept_id(name: str) -> str:
    return "CONCEPT_" + "_".join(name.lower().split())


def vocabulary() -> Iterator[Item]:
    """Shared vocabulary nodes and SYNONYM_OF edges (write as tenant ``_global``)."""
    for name, rank, aliases in TIERS:
        yield Node(f"TIER_{name}", "Tier", {"name": name, "rank": rank, "aliases": list(aliases),
                                             "summary": f"{name} tier (rank {rank})"})
    for name, code, aliases in PRODUCTS:
        yield Node(f"PRODUCT_{name}", "Product", {"name": name, "code": code, "aliases": list(aliases),
                                                  "summary": f"Product {name.replace('_', ' ')}"})
    for name, aliases, policy_types in EVENT_TYPES:
        yield Node(f"EVENTTYPE_{name}", "EventType", {"name": name, "aliases": list(aliases),
                                                      "policy_types": list(policy_types),
                                                      "summary": f"Event type {name}"})
    for name, aliases in POLICY_TYPES:
        yield Node(f"POLICYTYPE_{name}", "PolicyType", {"name": name, "aliases": list(aliases),
                                                        "summary": f"Policy type {name}"})
    for code, aliases in REGIONS:
        yield Node(f"REGION_{code}", "Region", {"name": code, "code": code, "aliases": list(aliases),
                                                "summary": f"Region {code} ({aliases[0]})"})
    concepts = sorted({c for pair in SYNONYMS for c in pair})
    for c in concepts:
        yield Node(concept_id(c), "Concept", {"name": c, "aliases": [], "summary": f"Concept '{c}'"})
    for a, b in SYNONYMS:
        yield Edge(concept_id(a), concept_id(b), "SYNONYM_OF")
        yield Edge(concept_id(b), concept_id(a), "SYNONYM_OF")


# ---- procedural memory (per tenant) --------------------------------------------------------------
_STEPS = {
    "LateFeeDispute": ("Verify the customer's identity", "Review the fee event and the payment history",
                       "Check waiver eligibility against the current waiver policy",
                       "Waive the fee or escalate to a supervisor", "Record the decision and tell the customer"),
    "FraudClaim": ("Verify the customer's identity", "Block the affected card",
                   "List the disputed transactions with the customer", "Open a fraud case and issue provisional credit",
                   "Order a replacement card"),
    "CreditLimitIncrease": ("Verify the customer's identity", "Review payment history and utilisation",
                            "Check eligibility against the credit limit policy", "Approve, counter-offer or decline"),
    "NameChange": ("Verify the customer's identity", "Collect the legal name change document",
                   "Update the name on every account and card", "Order new cards with the new name"),
}
#: Workflow revisions per goal: (revision, valid_from, valid_until, step 3 text or None = the
#: goal's own). Dates are data: a pattern run at as_of sees the revision in force then
#: (valid_from <= as_of < valid_until; metagraph/base_schema.yaml). LateFeeDispute's revisions
#: follow the waiver policy (waiver-policy-v2/v3/v4 took effect 2024-01-01 / 2026-01-01 /
#: 2026-09-01); v1 stands for the 2021 policy.
_WORKFLOWS: dict[str, tuple[tuple[str, str, str | None, str | None], ...]] = {
    "LateFeeDispute": (
        ("v1", "2021-03-01", "2026-01-01",
         "Check waiver eligibility: two waivers per calendar year, up to $35 each"),
        ("v2", "2026-01-01", "2026-09-01", None),
        ("v3", "2026-09-01", None,
         "Check waiver eligibility: one waiver in any rolling 12 months, up to $75"),
    ),
}
_DEFAULT_WORKFLOWS = (("v1", "2021-03-01", "2024-01-01", None), ("v2", "2024-01-01", None, None))

#: Rules per goal: (name, condition in the rule language of hopweave.models.expr, action,
#: enabled, the case states it applies in, valid_from, valid_until, id suffix ("" = its number)).
#: The goal's `case:` (goals/*.yaml) says where the facts the conditions name come from; the
#: engine evaluates them against the case. A rule revision is a new node (``RULE_<goal>_1_v2``:
#: rule 1 as of waiver-policy-v2) with the dates it is in force; the other revisions keep theirs
#: (history is never rewritten).
_RULES = {
    "LateFeeDispute": (
        ("Platinum courtesy waiver", 'tier == "Platinum" and waivers_this_year == 0 and amount <= 50',
         "waive at the agent's discretion without escalation", True, ("open",), "2026-01-01", "2026-09-01", ""),
        ("Escalate large fees", "amount > 50", "escalate to a supervisor", True, ("open", "escalated"),
         None, None, ""),
        ("One waiver per calendar year", "waivers_this_year >= 1", "decline or escalate", True, ("open", "escalated"),
         "2026-01-01", "2026-09-01", ""),
        ("Legacy auto-waive first fee", "late_fees_ever == 1", "auto-waive", False, ("open",), None, None, ""),
        ("Supervisor review of large fees", "amount > 50 and on_time_percent >= 90",
         "a supervisor may waive up to the fee amount", True, ("escalated",), None, None, ""),
        # the revisions before and after waiver-policy-v3 (2026-01-01 .. 2026-09-01)
        ("Platinum courtesy waiver", 'tier == "Platinum" and waivers_this_year <= 1 and amount <= 35',
         "waive at the agent's discretion without escalation", True, ("open",), "2024-01-01", "2026-01-01",
         "1_v2"),
        ("Two waivers per calendar year", "waivers_this_year >= 2", "decline or escalate", True,
         ("open", "escalated"), "2024-01-01", "2026-01-01", "3_v2"),
        ("Platinum courtesy waiver", 'tier == "Platinum" and waivers_last_12_months == 0 and amount <= 75',
         "waive at the agent's discretion without escalation", True, ("open",), "2026-09-01", None, "1_v4"),
        ("One waiver per rolling 12 months", "waivers_last_12_months >= 1", "decline or escalate", True,
         ("open", "escalated"), "2026-09-01", None, "3_v4"),
    ),
    "FraudClaim": (
        ("Block card first", "true", "block the card immediately", True, ("open", "escalated"), None, None, ""),
        ("Provisional credit", "disputed_amount <= 500", "issue provisional credit within 1 business day", True,
         ("open",), None, None, ""),
        ("Manual review", "disputed_amount > 500", "route to the fraud team", True, ("open", "escalated"),
         None, None, ""),
    ),
    "CreditLimitIncrease": (
        ("Good standing required", "on_time_percent >= 90", "eligible for an increase", True, ("open",),
         None, None, ""),
        ("Cap increase", "requested_increase_percent > 50", "counter-offer at 50%", True, ("open",), None, None, ""),
        ("Legacy instant increase", 'tier == "Platinum"', "approve instantly", False, ("open",), None, None, ""),
    ),
    "NameChange": (
        ("Legal document required", "true", "require a marriage certificate, decree or court order", True,
         ("open",), None, None, ""),
        ("Joint accounts", "co_holders > 0", "require the co-holder's consent", True, ("open",), None, None, ""),
    ),
}
_HEURISTICS = {
    "LateFeeDispute": (("Platinum customers with >90% on-time and 0 waivers this year auto-approve", 0.92, True),
                       ("Customers disputing twice in 90 days are usually declined", 0.61, False)),
    "FraudClaim": (("Foreign transactions within an hour of a domestic one are likely fraud", 0.8, True),),
    "CreditLimitIncrease": (("Customers with 12/12 on-time payments accept counter-offers", 0.7, True),),
    "NameChange": (("Name changes after marriage rarely need a second document", 0.75, True),),
}


def _validity(valid_from: str | None, valid_until: str | None) -> dict[str, str]:
    return {k: v for k, v in (("valid_from", valid_from), ("valid_until", valid_until)) if v}


def procedural(prefix: str = "") -> Iterator[Item]:
    """CaseType / CaseState / Workflow (current + superseded) / Step / Rule / Heuristic nodes for
    every goal, ids prefixed with ``prefix`` (tenants must not share node ids)."""
    for goal in GOALS:
        ct = f"{prefix}CASETYPE_{goal}"
        yield Node(ct, "CaseType", {"name": goal, "summary": f"Case type {goal}"})
        states = []
        for state in ("open", "escalated"):
            sid = f"{prefix}CASESTATE_{goal}_{state}"
            states.append(sid)
            yield Node(sid, "CaseState", {"name": f"{goal}_{state}", "case_type": goal,
                                           "summary": f"{goal} case, {state}"})
            yield Edge(ct, sid, "HAS_STATE")
        for rev, valid_from, valid_until, step3 in _WORKFLOWS.get(goal, _DEFAULT_WORKFLOWS):
            steps = _STEPS[goal] if step3 is None else _STEPS[goal][:2] + (step3,) + _STEPS[goal][3:]
            wf = f"{prefix}WF_{goal}_{rev}"
            version = "current" if valid_until is None else "superseded"
            until = f" until {valid_until}" if valid_until else ""
            yield Node(wf, "Workflow", {"name": f"{goal} workflow", "case_type": goal, "version": version,
                                        "revision": rev, **_validity(valid_from, valid_until),
                                        "summary": f"{goal} workflow {rev}, in force from {valid_from}{until}: "
                                                   f"{len(steps)} steps"})
            yield Edge(ct, wf, "HAS_WORKFLOW")
            prev = None
            for i, text in enumerate(steps, start=1):
                st = f"{wf}_STEP_{i}"
                yield Node(st, "Step", {"name": text, "order": i, "summary": f"Step {i}: {text}"})
                yield Edge(wf, st, "HAS_STEP")
                if prev:
                    yield Edge(prev, st, "NEXT")
                prev = st
        for i, (name, cond, action, enabled, in_states, valid_from, valid_until, suffix) in enumerate(
                _RULES[goal], start=1):
            rid = f"{prefix}RULE_{goal}_{suffix or i}"
            state = "" if enabled else " (disabled)"
            yield Node(rid, "Rule", {"name": name, "condition": cond, "action": action, "enabled": enabled,
                                      **_validity(valid_from, valid_until),
                                      "summary": f"Rule '{name}'{state}: if {cond} then {action}"})
            for sid, st in zip(states, ("open", "escalated")):
                if st in in_states:
                    yield Edge(sid, rid, "MATCHES")
        for i, (text, conf, enabled) in enumerate(_HEURISTICS[goal], start=1):
            hid = f"{prefix}HEURISTIC_{goal}_{i}"
            yield Node(hid, "Heuristic", {"text": text, "confidence": conf, "enabled": enabled,
                                           "summary": f"Heuristic (confidence {conf:.2f}): {text}"})
            yield Edge(states[0], hid, "HAS_HEURISTIC")
