"""Months of DeltaBank operation, simulated: generated late-fee cases played through the engine.

Each case is a generated customer (``SIM_CUST_<i>``: a tier, a card account with 12 monthly
payments, one late fee a few days before the case, this year's and last year's waivers, a
CustomerProfile ``SIMILAR_TO`` the three previous profiles of the same tier, and for some a
checking account), written into the store with ``GraphStore.write``. Then, in case order:

1. a retrieval (``Engine.retrieve``) of a late-fee utterance for that customer's session at the
   case's ``as_of`` (spread evenly over ``days`` days from 2026-02-01, inside the validity of the
   pack's 2026 rules);
2. a decision drawn from the pack's rules in force (:data:`RULES`, applied to the case facts the
   retrieval resolved, ``case_json`` of its trace), replaced with probability ``noise`` by one of
   the other outcomes chosen uniformly (the stated noise);
3. ``Engine.record_outcome`` one hour later, citing what a rule-following agent cites: the
   customer, tier and account rows, the disputed fee and its cause, the late payments (or the
   latest payment), this year's waivers, the rule that fired, the workflow, the heuristic rows
   when it waives, the first precedent row with the same outcome, the first policy chunk, and the
   card product the account is ``OF_PRODUCT`` (a node no pattern of the goal retrieves: the
   planted cited-but-unretrieved path, Customer -HOLDS-> Account -OF_PRODUCT-> Product, credit
   accounts only).

Planted for the pattern report: ``waiver_history`` (last year's waivers) returns rows in about
half the cases and is never cited; the card product is always cited and never retrieved.

Same ``n``, ``seed``, ``noise``, ``days`` and store => the same cases, utterances, decisions and
citations (no wall clock, no hash order).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator, Sequence

from hopweave.graph.base import Edge, Node

from .vocabulary import TIER_CARD

TENANT = "deltabank"
GOAL = "LateFeeDispute"
PREFIX = "SIM_"
START = datetime(2026, 2, 1, 10, 0, 0)
OUTCOMES = ("fee_waived", "declined", "escalated")
_TIERS = (("Platinum", 0.30), ("Gold", 0.25), ("Silver", 0.25), ("Standard", 0.20))
_AMOUNTS = (25.0, 29.0, 35.0, 39.0, 45.0, 50.0, 55.0, 65.0, 75.0, 120.0)
_WAIVERS = ((0, 0.6), (1, 0.3), (2, 0.1))
_ON_TIME = (0.75, 0.85, 0.95, 1.0)
UTTERANCES = (
    "Can you waive the late payment fee on my account?",
    "Why was I charged a late fee? I paid on time.",
    "Please refund the late charge on my last statement",
    "I was hit with a late payment penalty and I think it's unfair",
    "I've never missed a payment before, can you remove this late fee?",
    "Is there any way to get the late fee credited back?",
)

#: The pack's LateFeeDispute rules in force in 2026 (RULE_LateFeeDispute_1..3, 5), as the
#: simulated agent applies them, first match wins: (rule node id, conditions, outcome).
#: Conditions are ``(fact, op, value)`` with op one of ``==``, ``!=``, ``<=``, ``>``, ``>=``.
RULES: tuple[tuple[str | None, tuple[tuple[str, str, Any], ...], str], ...] = (
    ("RULE_LateFeeDispute_2", (("amount", ">", 50),), "escalated"),
    ("RULE_LateFeeDispute_3", (("amount", "<=", 50), ("waivers_this_year", ">=", 1)), "declined"),
    ("RULE_LateFeeDispute_1", (("amount", "<=", 50), ("waivers_this_year", "<=", 0), ("tier", "==", "Platinum")),
     "fee_waived"),
    (None, (("amount", "<=", 50), ("waivers_this_year", "<=", 0), ("tier", "!=", "Platinum")), "declined"),
)


def holds(facts: dict[str, Any], cond: tuple[str, str, Any]) -> bool:
    """Whether ``facts`` satisfy one ``(fact, op, value)`` condition (a missing fact: False)."""
    name, op, value = cond
    v = facts.get(name)
    if v is None:
        return False
    if op == "==":
        return bool(v == value)
    if op == "!=":
        return bool(v != value)
    if op == "<=":
        return bool(v <= value)
    if op == ">":
        return bool(v > value)
    if op == ">=":
        return bool(v >= value)
    raise ValueError(f"unknown op {op!r}")


def rule_decision(facts: dict[str, Any]) -> tuple[str | None, str]:
    """The rule that decides ``facts`` and its outcome (:data:`RULES`, first match)."""
    for rule, conds, outcome in RULES:
        if all(holds(facts, c) for c in conds):
            return rule, outcome
    return None, "declined"


@dataclass(frozen=True)
class Case:
    """One generated case: its customer, instant, utterance and the facts it was generated with."""

    index: int
    customer_id: str
    as_of: datetime
    utterance: str
    facts: dict[str, Any]
    product: str


@dataclass
class Played:
    """What :func:`play` did for one case."""

    case: Case
    trace_id: str
    case_facts: dict[str, Any]
    rule: str | None
    truth: str
    outcome: str
    noisy: bool
    cited: tuple[str, ...]
    #: The outcomes of the top-3 ranked precedent traces the retrieval offered.
    precedent_outcomes: tuple[str, ...] = ()
    decided_id: str = ""


@dataclass
class Simulation:
    """All played cases, in order, and counters."""

    played: list[Played] = field(default_factory=list)
    fact_mismatches: int = 0

    def decided(self) -> list[Played]:
        return [p for p in self.played if p.decided_id]


def _pick(rng: random.Random, weighted: Sequence[tuple[Any, float]]) -> Any:
    r, acc = rng.random(), 0.0
    for value, w in weighted:
        acc += w
        if r < acc:
            return value
    return weighted[-1][0]


def _months_back(t: datetime, m: int) -> datetime:
    y, mo = t.year, t.month - m
    while mo <= 0:
        mo += 12
        y -= 1
    return t.replace(year=y, month=mo, day=4, hour=9, minute=0, second=0)


def cases(n: int, seed: int = 4421, *, days: int = 180) -> list[Case]:
    """The ``n`` generated cases (deterministic by ``seed``), ``as_of`` spread over ``days``."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tier = _pick(rng, _TIERS)
        facts = {"tier": tier, "amount": rng.choice(_AMOUNTS), "waivers_this_year": _pick(rng, _WAIVERS),
                 "p_on_time": rng.choice(_ON_TIME), "waived_last_year": rng.random() < 0.5,
                 "checking": rng.random() < 0.3}
        at = START + timedelta(days=(i * days) // max(n, 1), minutes=i % 600)
        out.append(Case(i, f"{PREFIX}CUST_{i}", at, rng.choice(UTTERANCES), facts, f"PRODUCT_{TIER_CARD[tier]}"))
    return out


def case_items(case: Case, rng: random.Random, profiles: dict[str, list[str]], *,
               pool: bool = True) -> Iterator[Node | Edge]:
    """The graph items of one case's customer (``rng`` draws the payments' on-time flags); its
    profile joins the tier's pool of profiles later cases are similar to when ``pool``."""
    i, cid, f, at = case.index, case.customer_id, case.facts, case.as_of
    tier = f["tier"]
    yield Node(cid, "Customer", {"name": f"Sim Customer {i}", "tier": tier, "tier_since": "2024-01-15",
                                 "region": "US", "segment": "retail", "summary": f"{cid}, {tier} tier since 2024-01-15"})
    yield Edge(cid, f"TIER_{tier}", "HAS_TIER")
    yield Edge(cid, "REGION_US", "LOCATED_IN")
    acct = f"{PREFIX}ACCT_{i}_0"
    yield Node(acct, "Account", {"type": "credit", "product": TIER_CARD[tier], "balance": 1200.0, "currency": "USD",
                                 "opened": "2024-01-15", "status": "active", "summary": f"Account {acct}, credit"})
    yield Edge(cid, acct, "HOLDS")
    yield Edge(acct, case.product, "OF_PRODUCT")
    if f["checking"]:
        chk = f"{PREFIX}ACCT_{i}_1"
        yield Node(chk, "Account", {"type": "checking", "product": "Checking", "balance": 800.0, "currency": "USD",
                                    "opened": "2024-01-15", "status": "active", "summary": f"Account {chk}, checking"})
        yield Edge(cid, chk, "HOLDS")
        yield Edge(chk, "PRODUCT_Checking", "OF_PRODUCT")

    def event(eid: str, etype: str, ts: datetime, summary: str, **props: Any) -> Node:
        return Node(eid, "Event", {"type": etype, "timestamp": ts.isoformat(), "year": ts.year, "summary": summary,
                                   **props})

    for m in range(1, 13):
        ts = _months_back(at, m)
        on_time = rng.random() < f["p_on_time"]
        eid = f"{acct}_PAY_{m}"
        yield event(eid, "Transaction", ts if on_time else ts + timedelta(days=8),
                    f"Payment on {ts.date()}, {'on time' if on_time else 'late'}", amount=250.0, on_time=on_time,
                    status="posted", description="Monthly card payment")
        yield Edge(acct, eid, "HAS_EVENT")
    miss, fee = f"{acct}_MISSED", f"{acct}_LATEFEE"
    yield event(miss, "PaymentMissed", at - timedelta(days=8), "PaymentMissed", amount=250.0, status="missed")
    yield event(fee, "LateFeeCharged", at - timedelta(days=3), f"LateFeeCharged ${f['amount']:.0f}",
                amount=f["amount"], status="charged")
    yield Edge(acct, miss, "HAS_EVENT")
    yield Edge(acct, fee, "HAS_EVENT")
    yield Edge(fee, miss, "CAUSED_BY")
    for k in range(f["waivers_this_year"]):
        w = f"{acct}_WAIVER_{k}"
        yield event(w, "WaiverEvent", at - timedelta(days=10 + k), "Waiver (approved)", amount=29.0, status="approved")
        yield Edge(acct, w, "HAS_EVENT")
    if f["waived_last_year"]:
        w = f"{acct}_WAIVER_LY"
        yield event(w, "WaiverEvent", datetime(at.year - 1, 6, 15, 11, 0), "Waiver (approved)", amount=29.0,
                    status="approved")
        yield Edge(acct, w, "HAS_EVENT")
    pid = f"{PREFIX}PROFILE_{i}"
    yield Node(pid, "CustomerProfile", {"tier": tier, "segment": "retail", "summary": f"{tier} profile"})
    yield Edge(cid, pid, "HAS_PROFILE")
    for other in profiles[tier][-3:]:
        yield Edge(pid, other, "SIMILAR_TO")
    if pool:
        profiles[tier].append(pid)


def write_cases(graph: Any, all_cases: Sequence[Case], seed: int = 4421, batch: int = 200,
                held_from: int | None = None) -> int:
    """Write every case's customer into ``graph`` (tenant deltabank), ``batch`` customers per
    write. Cases from index ``held_from`` on are held back: their profiles are similar to earlier
    (decided) cases' profiles and never join the pool. Returns the number of nodes written."""
    rng = random.Random(seed + 7)
    profiles: dict[str, list[str]] = {t: [] for t, _ in _TIERS}
    written = 0
    for start in range(0, len(all_cases), batch):
        nodes: list[Node] = []
        edges: list[Edge] = []
        for c in all_cases[start:start + batch]:
            for it in case_items(c, rng, profiles, pool=held_from is None or c.index < held_from):
                (nodes if isinstance(it, Node) else edges).append(it)  # type: ignore[arg-type]
        graph.write(TENANT, nodes, edges)
        written += len(nodes)
    return written


def _rows(result: Any, pattern: str) -> list[Any]:
    for f in result.facts:
        if f.pattern == pattern:
            return list(f.rows)
    return []


def citations(result: Any, case: Case, rule: str | None, outcome: str) -> tuple[str, ...]:
    """What a rule-following agent cites for ``outcome`` on ``result`` (the module docstring)."""
    cited: list[str] = []
    for name in ("customer", "customer_tier", "customer_account", "fee_event_cause", "waiver_events_this_year",
                 "applicable_workflow"):
        cited += [r.node_id for r in _rows(result, name)]
    cited += [r.node_id for r in _rows(result, "disputed_fee_event")[:1]]
    pays = _rows(result, "recent_transactions")
    late = [r.node_id for r in pays if r.properties.get("on_time") is False]
    cited += late or [r.node_id for r in pays[:1]]
    if rule is not None:
        cited += [r.node_id for r in _rows(result, "applicable_rules") if r.node_id == rule]
    if outcome == "fee_waived":
        cited += [r.node_id for r in _rows(result, "applicable_heuristics")]
    same = [r.node_id for r in _rows(result, "comparable_precedent") if r.properties.get("outcome") == outcome]
    cited += same[:1]
    chunks = [c.chunk_id for c in result.chunks if c.in_context]
    cited += chunks[:1]
    cited.append(case.product)
    return tuple(sorted(set(cited)))


def play(engine: Any, all_cases: Sequence[Case], *, seed: int = 4421, noise: float = 0.05,
         session_of: Callable[[str], dict[str, Any]] | None = None, decide: bool = True,
         progress: Callable[[int], None] | None = None) -> Simulation:
    """Play ``all_cases`` through ``engine`` in order (retrieve, decide, record the outcome; with
    ``decide=False`` only retrieve and draw the decision, for held-back cases). ``noise`` is the
    probability that the decision is replaced by another outcome. Returns the Simulation."""
    rng = random.Random(seed + 13)
    sim = Simulation()
    for k, c in enumerate(all_cases):
        session = session_of(c.customer_id) if session_of else {"tenant_id": TENANT, "customer_id": c.customer_id,
                                                                "channel": "chat"}
        res = engine.retrieve(c.utterance, session=session, as_of=c.as_of.isoformat())
        node = engine.graph.get_node(TENANT, res.trace_id)
        raw = node.props.get("case_json") if node is not None else None
        facts = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
        if facts.get("tier") != c.facts["tier"] or facts.get("amount") != c.facts["amount"] or \
                facts.get("waivers_this_year") != c.facts["waivers_this_year"]:
            sim.fact_mismatches += 1
        rule, truth = rule_decision(facts)
        noisy = rng.random() < noise
        outcome = rng.choice([o for o in OUTCOMES if o != truth]) if noisy else truth
        cited = citations(res, c, rule, outcome)
        prec = tuple(str(p.properties.get("outcome")) for p in sorted(res.precedent, key=lambda p: p.rank)[:3])
        played = Played(c, res.trace_id, facts, rule, truth, outcome, noisy, cited, prec)
        if decide and res.recorded:
            rec = engine.record_outcome(res.trace_id, session=session, outcome=outcome,
                                        decided_by=f"sim-agent-{k % 7}", cited=cited,
                                        as_of=(c.as_of + timedelta(hours=1)).isoformat())
            played.decided_id = rec.decided_id
        sim.played.append(played)
        if progress is not None:
            progress(k + 1)
    return sim


def recovery(mined: Sequence[Any], played: Sequence[Played], share: float = 0.9) -> dict[str, Any]:
    """How well ``mined`` heuristics (objects with ``covers(facts)`` and ``outcome``) recover
    :data:`RULES` over the ``played`` cases' facts, judged on the noise-free rule outcome:

    - a heuristic is **correct** when at least ``share`` of the cases it covers have its outcome
      as their rule outcome; precision = correct / mined;
    - a rule is **recovered** when the correct heuristics with its outcome cover at least
      ``share`` of the cases the rule decides; recall = recovered / rules (those deciding a case).
    """
    facts = [(p.case_facts, p.truth, rule_decision(p.case_facts)[0], i) for i, p in enumerate(played)]
    correct = []
    for h in mined:
        cov = [t for f, t, _, _ in facts if h.covers(f)]
        if cov and sum(t == h.outcome for t in cov) / len(cov) >= share:
            correct.append(h)
    recovered, rules = [], 0
    for rule, _conds, outcome in RULES:
        mine_ = [i for f, _t, r, i in facts if (r, rule_decision(f)[1]) == (rule, outcome)]
        if not mine_:
            continue
        rules += 1
        hit = [i for i in mine_ if any(h.outcome == outcome and h.covers(played[i].case_facts) for h in correct)]
        if len(hit) / len(mine_) >= share:
            recovered.append(rule or f"default ({outcome})")
    return {"mined": len(mined), "correct": len(correct), "precision": len(correct) / len(mined) if mined else 0.0,
            "rules": rules, "recovered": recovered, "recall": len(recovered) / rules if rules else 0.0}
