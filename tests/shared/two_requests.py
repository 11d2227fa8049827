"""Two-request utterances over the shipped example packs, and the check that none of their
requests is dropped in silence: each names the goals its parts must have and a word of every
request no goal of the pack handles (which must come back in ``unhandled``). Many have no
"please", "can you" or "?"; several join the requests with a plain "and"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: (utterance, goals of the parts, a word of each request no goal handles)
DELTABANK_TWO: list[tuple[str, list[str], list[str]]] = [
    ("I want to dispute this $39 late fee and also change my address", ["LateFeeDispute"], ["address"]),
    ("I want to dispute this $39 late fee and change my address", ["LateFeeDispute"], ["address"]),
    ("Waive the late fee on my card and reset my password", ["LateFeeDispute"], ["password"]),
    ("Remove the late charge, and I need new checks", ["LateFeeDispute"], ["checks"]),
    ("The late fee should be reversed. Also what's my balance", ["LateFeeDispute"], ["balance"]),
    ("I was charged a late fee I want removed and I want to open a joint account", ["LateFeeDispute"], ["joint"]),
    ("Take the late fee off my bill and update my phone number", ["LateFeeDispute"], ["phone"]),
    ("I want to report fraud on my card and change my email address", ["FraudClaim"], ["email"]),
    ("Someone used my card without permission and I need a new PIN", ["FraudClaim"], ["PIN"]),
    ("I got married and need to change my last name and also close my savings account", ["NameChange"], ["close"]),
    ("Can I get a higher credit limit and how do I set up direct deposit", ["CreditLimitIncrease"], ["deposit"]),
    ("Dispute the late fee, then tell me the branch hours", ["LateFeeDispute"], ["branch"]),
    ("I want the late fee waived and can you also tell me my due date?", ["LateFeeDispute"], ["due date"]),
    ("Change my phone number and waive the late fee on my card", ["LateFeeDispute"], ["phone"]),
    ("I'd like to increase my credit limit and also dispute this late fee", ["CreditLimitIncrease", "LateFeeDispute"], []),
    ("Waive my $39 late fee and raise my credit limit", ["LateFeeDispute", "CreditLimitIncrease"], []),
    ("I need to change my surname after my wedding and report a stolen card", ["NameChange", "FraudClaim"], []),
    ("There is a purchase I never made and my late fee should be waived", ["FraudClaim", "LateFeeDispute"], []),
    ("Please remove the late fee, and also what is my credit limit increase policy?",
     ["LateFeeDispute", "CreditLimitIncrease"], []),
    ("Waive this late fee please. By the way, my card was stolen yesterday, how do I report it?",
     ["LateFeeDispute", "FraudClaim"], []),
    ("My card was stolen and there are charges I did not make. Also, I got married and need to change my name",
     ["FraudClaim", "NameChange"], []),
]

TELECOM_TWO: list[tuple[str, list[str], list[str]]] = [
    ("I want to dispute this $84 roaming charge and also change my billing address", ["RoamingChargeDispute"],
     ["address"]),
    ("Credit the roaming charge and reset my voicemail PIN", ["RoamingChargeDispute"], ["voicemail"]),
    ("The roaming fee is wrong and I need a replacement SIM", ["RoamingChargeDispute"], ["SIM"]),
    ("There was an outage in my area and I want to port my number out", ["OutageCredit"], ["port"]),
    ("Switch me to Unlimited Basic and update my email on file", ["PlanChange"], ["email"]),
    ("Change my address and credit the roaming charge", ["RoamingChargeDispute"], ["address"]),
    ("Can I get a credit for the outage and when is my bill due", ["OutageCredit"], ["due"]),
    ("I want to downgrade my plan, also how do I set up autopay", ["PlanChange"], ["autopay"]),
    ("The roaming charge from Mexico is wrong. Also, my phone screen is cracked", ["RoamingChargeDispute"],
     ["screen"]),
    ("Refund the roaming fee and tell me how much data I have left", ["RoamingChargeDispute"], ["data"]),
    ("Credit the roaming charge and switch me to Unlimited Basic", ["RoamingChargeDispute", "PlanChange"], []),
    ("I want to downgrade my plan and get a credit for the outage", ["PlanChange", "OutageCredit"], []),
    ("I want to dispute this $84 roaming charge and also can I switch my plan to Unlimited Basic?",
     ["RoamingChargeDispute", "PlanChange"], []),
    ("The roaming fee from my trip is wrong. By the way, how do outage credits work?",
     ["RoamingChargeDispute", "OutageCredit"], []),
]


def silent_drops(engine: Any, utterance: str, session: Any, goals: list[str],
                 unhandled: list[str]) -> list[str]:
    """What is wrong with how ``engine`` divides ``utterance`` ([] when its parts have
    ``goals`` and each word of ``unhandled`` is in a clause it names as not handled)."""
    from hopweave.engine.boundary import check_request
    from hopweave.engine.multi_intent import split_intents

    req = check_request(utterance, session=session, as_of="2026-05-12", budget_ms=None, profile=None,
                        token_budget=None, record=False, pattern_overrides=None)
    split = split_intents(engine.pipeline().deps, req)
    if split is None:
        return [f"{utterance!r}: not split"]
    got = [g for _, g in split.parts]
    named = [s.text for s, _ in split.unhandled]
    wrong = [] if got == goals else [f"{utterance!r}: parts {got}, expected {goals}"]
    wrong += [f"{utterance!r}: {w!r} not named (unhandled: {named})" for w in unhandled
              if not any(w.lower() in n.lower() for n in named)]
    if len(named) != len(unhandled):
        wrong.append(f"{utterance!r}: unhandled {named}, expected {len(unhandled)}")
    return wrong


def single_request_utterances(scenarios: Path) -> list[tuple[str, Any]]:
    """(utterance, session) of each scenario of ``scenarios`` that expects no split (no ``intents``)."""
    from hopweave.engine.replay import load_scenario, scenario_paths

    scs = [load_scenario(p) for p in scenario_paths([scenarios])]
    return [(sc.utterance, sc.resolved_session()) for sc in scs if not sc.expect.intents]
