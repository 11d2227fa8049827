"""Months of Acme Mobile operation, simulated: generated roaming-charge disputes played through the engine.

A module at the pack's top, next to ``generate_graph.py``: this pack keeps its generator code
there, and a ``generator`` package (DeltaBank's layout) would shadow DeltaBank's own ``generator``
package when both are imported in one process (the test suite). Not part of the ``hopweave``
package; tests and benchmarks load it from its path.

Each case is a generated subscriber (``SIM_SUB_<i>``: a plan, Unlimited_Plus or Unlimited_Basic,
the two plans the pack's dispute rules name; region US, market consumer; a home service area;
a line, for some a second one; three months of home data usage; one roaming charge a few days
before the case, caused by one to four days of data roaming abroad; this year's roaming credits;
for about half a roaming charge credited last year; a SubscriberProfile ``SIMILAR_TO`` the three
previous profiles of the same plan), written into the store (tenant acme) with
``GraphStore.write``. Then, in case order:

1. a retrieval (``Engine.retrieve``) of a roaming-dispute utterance for that subscriber's session
   at the case's ``as_of`` (spread evenly over ``days`` days from 2026-03-01, inside the validity
   of the pack's 2026 rule revision and workflow);
2. a decision drawn from the pack's rules in force (:data:`RULES`, applied to the case facts the
   retrieval resolved, ``case_json`` of its trace, under the names the goal keeps), replaced with
   probability ``noise`` by one of the other outcomes chosen uniformly (the stated noise);
3. ``Engine.record_outcome`` one hour later, citing what a rule-following agent cites: the
   subscriber, plan, the line that carries the charge, the disputed charge and the usage that
   caused it, this year's roaming credits, the rule that fired, the workflow, the heuristic rows
   when it credits, the first precedent row with the same outcome, the first policy chunk, and
   the subscriber's home service area (``IN_AREA``: roaming is usage outside the home network,
   the policies' definition; a node no pattern of the goal retrieves: the planted
   cited-but-unretrieved path, Subscriber -IN_AREA-> Area).

Planted for the pattern report: ``roaming_credit_history`` (the previous two years' credits)
returns rows in about half the cases and is never cited; the home area is always cited and never
retrieved.

Same ``n``, ``seed``, ``noise``, ``days`` and store => the same cases, utterances, decisions and
citations (no wall clock, no hash order).

``holds``, ``rule_decision`` and ``recovery`` restate DeltaBank's generic helpers
(examples/deltabank/generator/simulate.py) over this pack's rules: one example pack does not
import another.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Iterator, Sequence

from hopweave.graph.base import Edge, Node

TENANT = "acme"
GOAL = "RoamingChargeDispute"
PREFIX = "SIM_"
START = datetime(2026, 3, 1, 10, 0, 0)
OUTCOMES = ("credited", "declined", "escalated")
_PLANS = (("Unlimited_Plus", 0.5), ("Unlimited_Basic", 0.5))
_AMOUNTS = (18.0, 25.0, 32.0, 45.0, 50.0, 60.0, 72.0, 84.0, 96.0, 100.0, 115.0, 140.0, 180.0)
_CREDITS = ((0, 0.5), (1, 0.3), (2, 0.15), (3, 0.05))
_AREAS = ("AREA_AUSTIN", "AREA_DALLAS", "AREA_HOUSTON")
_COUNTRIES = ("MX", "CA", "ES", "FR")
_DEVICES = ("iPhone 15", "Pixel 8", "Galaxy S23", "Moto G")
UTTERANCES = (
    "Why was I charged for roaming? I had data roaming turned off",
    "Can you credit back the international roaming fees from my trip?",
    "I got a huge roaming bill after my vacation, please remove it",
    "The roaming charges on my last statement are wrong",
    "Please reverse the international roaming charge on my line",
    "I want a refund of the roaming charges, the day pass should have applied",
)

#: The pack's RoamingChargeDispute rules in force in 2026 (graph/acme.jsonl:
#: RULE_RoamingChargeDispute_1 in its 2026 revision, _2 and _3; _4 is disabled), as the simulated
#: agent applies them: (rule node id, alternatives, outcome); a rule fires when all conditions of
#: one alternative hold. Conditions are ``(fact, op, value)`` over the facts the goal keeps
#: (``credits_this_year`` is the rules' ``roaming_credits_this_year``), op one of ``==``, ``!=``,
#: ``<=``, ``>``, ``>=``; ``x < 2`` on a count is ``x <= 1``. "Credit at the agent's discretion"
#: is ``credited``, "escalate to a supervisor" is ``escalated``. The rules leave Unlimited Basic
#: over its cap but under rule 3's (a second credit, or $50 to $100) to no rule: its policy
#: (roaming-credit-unlimited-basic-v3, sections 3.2 and 3.3) sends it to a supervisor,
#: :data:`DEFAULT`. A rule-following agent declines nothing itself (the supervisor does).
RULES: tuple[tuple[str, tuple[tuple[tuple[str, str, Any], ...], ...], str], ...] = (
    ("RULE_RoamingChargeDispute_1",
     ((("plan", "==", "Unlimited_Plus"), ("credits_this_year", "<=", 1), ("amount", "<=", 100)),), "credited"),
    ("RULE_RoamingChargeDispute_2",
     ((("plan", "==", "Unlimited_Basic"), ("credits_this_year", "<=", 0), ("amount", "<=", 50)),), "credited"),
    ("RULE_RoamingChargeDispute_3", ((("amount", ">", 100),), (("credits_this_year", ">=", 2),)), "escalated"),
)
#: The outcome when no rule of :data:`RULES` fires.
DEFAULT = "escalated"
#: The goal's kept facts (``outcomes.keep``): kept name -> case fact name.
KEEP = {"plan": "plan", "amount": "amount", "credits_this_year": "roaming_credits_this_year"}


def holds(facts: dict[str, Any], cond: tuple[str, str, Any]) -> bool:
    """Whether ``facts`` satisfy one ``(fact, op, value)`` condition (a missing fact: False).
    Raises ValueError for an unknown op."""
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
    """The rule that decides ``facts`` (kept names) and its outcome (:data:`RULES`, first match;
    no match: ``(None, DEFAULT)``)."""
    for rule, alternatives, outcome in RULES:
        if any(all(holds(facts, c) for c in conds) for conds in alternatives):
            return rule, outcome
    return None, DEFAULT


def kept(case_facts: dict[str, Any]) -> dict[str, Any]:
    """The case facts a retrieval resolved (``case_json``) under the names the goal keeps."""
    return {k: case_facts.get(v) for k, v in KEEP.items()}


@dataclass(frozen=True)
class Case:
    """One generated case: its subscriber, instant, utterance, the facts it was generated with
    (kept names, plus ``credited_last_year``, ``second_line``, ``days_roaming``, ``country``) and
    the subscriber's home area."""

    index: int
    subscriber_id: str
    as_of: datetime
    utterance: str
    facts: dict[str, Any]
    area: str


@dataclass
class Played:
    """What :func:`play` did for one case (``case_facts`` under the kept names)."""

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
    #: The rule rows the engine's own evaluation of the case says fire (``verdict``).
    engine_fired: tuple[str, ...] = ()
    decided_id: str = ""


@dataclass
class Simulation:
    """All played cases, in order, and counters."""

    played: list[Played] = field(default_factory=list)
    fact_mismatches: int = 0

    def decided(self) -> list[Played]:
        """The played cases whose outcome was recorded."""
        return [p for p in self.played if p.decided_id]


def _pick(rng: random.Random, weighted: Sequence[tuple[Any, float]]) -> Any:
    r, acc = rng.random(), 0.0
    for value, w in weighted:
        acc += w
        if r < acc:
            return value
    return weighted[-1][0]


def session_of(subscriber_id: str) -> dict[str, Any]:
    """The consumer-desk session of a generated subscriber (region US, market consumer)."""
    return {"tenant_id": TENANT, "customer_id": subscriber_id, "region": "US", "channel": "chat",
            "attributes": {"market": "consumer"}}


def cases(n: int, seed: int = 5170, *, days: int = 180) -> list[Case]:
    """The ``n`` generated cases (deterministic by ``seed``), ``as_of`` spread over ``days``."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        facts = {"plan": _pick(rng, _PLANS), "amount": rng.choice(_AMOUNTS), "credits_this_year": _pick(rng, _CREDITS),
                 "credited_last_year": rng.random() < 0.5, "second_line": rng.random() < 0.3,
                 "days_roaming": rng.randint(1, 4), "country": rng.choice(_COUNTRIES)}
        at = START + timedelta(days=(i * days) // max(n, 1), minutes=i % 600)
        out.append(Case(i, f"{PREFIX}SUB_{i}", at, rng.choice(UTTERANCES), facts, rng.choice(_AREAS)))
    return out


def case_items(case: Case, rng: random.Random, profiles: dict[str, list[str]], *,
               pool: bool = True) -> Iterator[Node | Edge]:
    """The graph items of one case's subscriber (``rng`` draws usage volumes); its profile joins
    the plan's pool of profiles later cases are similar to when ``pool``."""
    i, sid, f, at = case.index, case.subscriber_id, case.facts, case.as_of
    plan = f["plan"]
    yield Node(sid, "Subscriber", {"name": f"Sim Subscriber {i}", "plan": plan, "plan_since": "2024-03-01",
                                   "region": "US", "market": "consumer",
                                   "summary": f"{sid}, {plan} plan since 2024-03-01, region US"})
    yield Edge(sid, f"PLAN_{plan}", "ON_PLAN")
    yield Edge(sid, "TEL_REGION_US", "LOCATED_IN")
    yield Edge(sid, case.area, "IN_AREA")

    def stamp(ts: datetime) -> str:
        return ts.isoformat(timespec="seconds")

    lines = [f"{PREFIX}LINE_{i}_0"] + ([f"{PREFIX}LINE_{i}_1"] if f["second_line"] else [])
    for j, lid in enumerate(lines):
        device = _DEVICES[(i + j) % len(_DEVICES)]
        yield Node(lid, "Line", {"msisdn": f"+1-555-7{i:05d}-{j}", "device": device, "status": "active",
                                 "activated": "2024-03-01", "summary": f"Line {lid}, {device}, active since 2024-03-01"})
        yield Edge(sid, lid, "HAS_LINE")
        for m in range(1, 4):
            ts = (at - timedelta(days=30 * m)).replace(hour=23, minute=0, second=0)
            uid = f"{lid}_HOME_{m}"
            mb = float(rng.randrange(4000, 26000, 50))
            yield Node(uid, "UsageEvent", {"type": "data", "roaming": False, "volume": mb, "unit": "MB",
                                           "timestamp": stamp(ts), "year": ts.year,
                                           "summary": f"Home data usage in {ts:%Y-%m}, {mb:,.0f} MB on {lid}"})
            yield Edge(lid, uid, "HAS_USAGE")
    line0, country = lines[0], f["country"]

    def roaming_trip(tag: str, first: datetime, ndays: int, amount: float, status: str) -> Iterator[Node | Edge]:
        cid = f"{PREFIX}CHG_{i}_{tag}"
        billed = first + timedelta(days=ndays + 1)
        yield Node(cid, "Charge", {"type": "RoamingCharge", "amount": amount, "currency": "USD",
                                   "timestamp": stamp(billed), "year": billed.year, "status": status,
                                   "description": "pay-per-use data roaming", "country": country,
                                   "summary": f"RoamingCharge ${amount:,.2f} on {billed.date()} ({country}), "
                                              f"pay-per-use data roaming, line {line0}, {status}"})
        yield Edge(line0, cid, "HAS_CHARGE")
        yield Edge(cid, "CHARGETYPE_RoamingCharge", "OF_CHARGE_TYPE")
        for d in range(ndays):
            ts = first + timedelta(days=d)
            uid = f"{PREFIX}USE_{i}_{tag}_{d}"
            mb = float(rng.randrange(50, 600, 10))
            yield Node(uid, "UsageEvent", {"type": "data", "roaming": True, "country": country, "volume": mb,
                                           "unit": "MB", "timestamp": stamp(ts), "year": ts.year,
                                           "summary": f"Data roaming in {country} on {ts.date()}, {mb:,.0f} MB"})
            yield Edge(line0, uid, "HAS_USAGE")
            yield Edge(cid, uid, "CAUSED_BY")

    # the disputed charge: billed three days before the case, after the roaming days
    ndays = f["days_roaming"]
    yield from roaming_trip("DISPUTED", (at - timedelta(days=4 + ndays)).replace(hour=20, minute=0, second=0),
                            ndays, f["amount"], "billed")

    def credit(crid: str, ts: datetime, amount: float) -> Node:
        return Node(crid, "Credit", {"type": "RoamingCredit", "amount": amount, "timestamp": stamp(ts),
                                     "year": ts.year, "status": "applied",
                                     "summary": f"RoamingCredit ${amount:,.2f} on {ts.date()}, applied"})

    for k in range(f["credits_this_year"]):  # dated this year, before the disputed trip
        yield credit(f"{PREFIX}CRED_{i}_{k}", at - timedelta(days=12 + 5 * k), 30.0)
        yield Edge(sid, f"{PREFIX}CRED_{i}_{k}", "HAS_CREDIT")
    if f["credited_last_year"]:  # a trip last June, credited: the previous years' history
        yield from roaming_trip("LY", datetime(at.year - 1, 6, 10, 12, 0), 2, 40.0, "credited")
        crid = f"{PREFIX}CRED_{i}_LY"
        yield credit(crid, datetime(at.year - 1, 6, 25, 10, 0), 40.0)
        yield Edge(sid, crid, "HAS_CREDIT")
        yield Edge(crid, f"{PREFIX}CHG_{i}_LY", "COMPENSATES")
    pid = f"{PREFIX}PROFILE_{i}"
    n = f["credits_this_year"]
    yield Node(pid, "SubscriberProfile", {"plan": plan, "credits_this_year": n, "tenure_years": 2,
                                          "summary": f"{plan}, {n} roaming credits this year"})
    yield Edge(sid, pid, "HAS_PROFILE")
    for other in profiles[plan][-3:]:
        yield Edge(pid, other, "SIMILAR_TO")
    if pool:
        profiles[plan].append(pid)


def write_cases(graph: Any, all_cases: Sequence[Case], seed: int = 5170, batch: int = 200,
                held_from: int | None = None) -> int:
    """Write every case's subscriber into ``graph`` (tenant acme), ``batch`` subscribers per
    write. Cases from index ``held_from`` on are held back: their profiles are similar to earlier
    (decided) cases' profiles and never join the pool. Returns the number of nodes written."""
    rng = random.Random(seed + 7)
    profiles: dict[str, list[str]] = {p: [] for p, _ in _PLANS}
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
    for name in ("roaming_subscriber", "roaming_plan", "roaming_charge_cause", "roaming_credits_this_year",
                 "roaming_workflow"):
        cited += [r.node_id for r in _rows(result, name)]
    cited += [r.node_id for r in _rows(result, "roaming_disputed_charge")[:1]]
    cited += [r.node_id for r in _rows(result, "roaming_lines") if r.node_id == f"{PREFIX}LINE_{case.index}_0"]
    if rule is not None:
        cited += [r.node_id for r in _rows(result, "roaming_rules") if r.node_id == rule]
    if outcome == "credited":
        cited += [r.node_id for r in _rows(result, "roaming_heuristics")]
    same = [r.node_id for r in _rows(result, "roaming_precedent") if r.properties.get("outcome") == outcome]
    cited += same[:1]
    chunks = [c.chunk_id for c in result.chunks if c.in_context]
    cited += chunks[:1]
    cited.append(case.area)
    return tuple(sorted(set(cited)))


def play(engine: Any, all_cases: Sequence[Case], *, seed: int = 5170, noise: float = 0.05, decide: bool = True,
         progress: Callable[[int], None] | None = None) -> Simulation:
    """Play ``all_cases`` through ``engine`` in order (retrieve, decide, record the outcome; with
    ``decide=False`` only retrieve and draw the decision, for held-back cases). ``noise`` is the
    probability that the decision is replaced by another outcome. Returns the Simulation."""
    rng = random.Random(seed + 13)
    sim = Simulation()
    for k, c in enumerate(all_cases):
        session = session_of(c.subscriber_id)
        res = engine.retrieve(c.utterance, session=session, as_of=c.as_of.isoformat())
        node = engine.graph.get_node(TENANT, res.trace_id)
        raw = node.props.get("case_json") if node is not None else None
        facts = kept(json.loads(raw) if isinstance(raw, str) else dict(raw or {}))
        if any(facts.get(k_) != c.facts[k_] for k_ in KEEP):
            sim.fact_mismatches += 1
        rule, truth = rule_decision(facts)
        noisy = rng.random() < noise
        outcome = rng.choice([o for o in OUTCOMES if o != truth]) if noisy else truth
        cited = citations(res, c, rule, outcome)
        prec = tuple(str(p.properties.get("outcome")) for p in sorted(res.precedent, key=lambda p: p.rank)[:3])
        fired = tuple(r.node_id for r in _rows(res, "roaming_rules") if r.properties.get("verdict") == "fires")
        played = Played(c, res.trace_id, facts, rule, truth, outcome, noisy, cited, prec, fired)
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
    :data:`RULES` (and :data:`DEFAULT`) over the ``played`` cases' facts, judged on the noise-free
    rule outcome:

    - a heuristic is **correct** when at least ``share`` of the cases it covers have its outcome
      as their rule outcome; precision = correct / mined;
    - a rule is **recovered** when the correct heuristics with its outcome cover at least
      ``share`` of the cases the rule decides; recall = recovered / rules (those deciding a case).
    """
    decided = [(p.case_facts, rule_decision(p.case_facts)) for p in played]
    correct = []
    for h in mined:
        cov = [t for f, (_r, t) in decided if h.covers(f)]
        if cov and sum(t == h.outcome for t in cov) / len(cov) >= share:
            correct.append(h)
    recovered, rules = [], 0
    for rule, outcome in [(r, o) for r, _a, o in RULES] + [(None, DEFAULT)]:
        mine_ = [f for f, d in decided if d == (rule, outcome)]
        if not mine_:
            continue
        rules += 1
        hit = [f for f in mine_ if any(h.outcome == outcome and h.covers(f) for h in correct)]
        if len(hit) / len(mine_) >= share:
            recovered.append(rule or f"default ({outcome})")
    return {"mined": len(mined), "correct": len(correct), "precision": len(correct) / len(mined) if mined else 0.0,
            "rules": rules, "recovered": recovered, "recall": len(recovered) / rules if rules else 0.0}
