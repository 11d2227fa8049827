"""Deterministic scale corpus for the DeltaBank example: ~50,000 policy and knowledge chunks.

:func:`scale_documents` returns :class:`~hopweave.models.documents.Document` s (markdown with one
numbered section per chunk) across tenants, tiers, products, policy types, regions, lifecycle
versions (current / superseded revisions of one document) and status (active / retired). The
corpus is shaped so that Maria's filter (:func:`maria_filter`: tenant deltabank, tier Platinum,
product Platinum_Card, policy_type in [LateFeeWaiver, FeeSchedule], status active, version current,
region US) keeps exactly ``round(chunks * maria_share)`` of the generated chunks (8,000 of 50,000
by default). Most of the rest are *near misses* that differ from Maria's filter in one field (a
Gold-tier twin, a superseded revision, a retired promotion, another region, another tenant,
another policy type): semantically almost identical text that only the filter tells apart.

Text is templated sentences over the vocabulary (topics per policy type, fillers, amounts,
reference codes), so both BM25 and the dense channel have something to rank. Every section
heading names its topic (:func:`topic_of_heading`), which gives the benchmark a ground truth:
a chunk is relevant to a :func:`quality_queries` query when it passes Maria's filter and has the
query's topic.

Same ``chunks`` + ``seed`` => the same documents in the same order (one ``random.Random``).
Benchmark stores are built from it by :mod:`generator.scale_store`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Iterator

from hopweave.errors import InputError
from hopweave.models.documents import CURRENT, SUPERSEDED, Document
from hopweave.models.filters import And, Eq, FilterTree, In

#: Bumped whenever the generated text or metadata changes (benchmark stores are rebuilt).
#: 3: every document declares a ``doc_type`` with realistic shares (few authoritative policies,
#: many FAQs / agent notes / templates restating them), restatements dated over three years.
#: 4: the example pack's tenant gets no second authoritative document for a cell: its generated
#: policies and fee schedules are declared ``draft`` and dated a year back (same text, same
#: filter fields: as hard to tell apart as before, but no longer a rival current policy).
GENERATOR_VERSION = 4
DEFAULT_CHUNKS = 50_000
DEFAULT_SEED = 4421
#: Share of the generated chunks that pass Maria's filter (8,000 of 50,000).
MARIA_SHARE = 0.16
TENANT = "deltabank"
OTHER_TENANTS = ("northbank",)
MARIA_POLICY_TYPES = ("LateFeeWaiver", "FeeSchedule")
#: Doc-id prefix of generated documents (so they never collide with the example corpus).
PREFIX = "kb"

TIER_CARD = {"Platinum": "Platinum_Card", "Gold": "Gold_Card", "Silver": "Silver_Card", "Standard": "Standard_Card"}
CARD_NAME = {"Platinum_Card": "Platinum Card", "Gold_Card": "Gold Card", "Silver_Card": "Silver Card",
             "Standard_Card": "Standard Card", "Checking": "checking account", "Savings": "savings account"}
REGION_NAME = {"US": "the United States", "EU": "the European Union", "CA": "Canada"}
CURRENCY = {"US": "$", "EU": "€", "CA": "C$"}
POLICY_TITLE = {"LateFeeWaiver": "Late Fee Waiver", "FeeSchedule": "Fee Schedule", "FraudClaim": "Fraud Claims",
                "CreditLimit": "Credit Limit", "NameChange": "Name Change"}


#: Document types and their shares of generated documents: a knowledge base holds few
#: authoritative documents (policies, fee schedules) and many restatements of them.
DOC_TYPES: tuple[tuple[str, int], ...] = (("policy", 4), ("fee_schedule", 2), ("procedure", 10), ("faq", 34),
                                          ("note", 30), ("template", 20))
#: Types the example corpus holds the authoritative documents of, for its own tenant.
AUTHORITATIVE_TYPES = ("policy", "fee_schedule")
#: What a generated authoritative document of the example tenant is declared as instead.
DRAFT_TYPE = "draft"
#: Title prefix per document type ({p}: policy title, {f}: family number).
_TYPE_TITLE = {
    "policy": "{p} Policy {f}", "fee_schedule": "Fee Schedule {f}", "procedure": "{p} Procedure {f}",
    "faq": "FAQ {f}: {p}", "note": "Agent note {f}: {p}", "template": "Email template {f}: {p}",
}


@dataclass(frozen=True)
class Topic:
    key: str
    heading: str
    sentences: tuple[str, ...]


def _t(key: str, heading: str, *sentences: str) -> Topic:
    return Topic(key, heading, sentences)


#: Topics per policy type. Placeholders: tier, card, region, cur, amount, days, count, pct, channel.
TOPICS: dict[str, tuple[Topic, ...]] = {
    "LateFeeWaiver": (
        _t("courtesy_waiver", "Annual courtesy waiver",
           "{tier} customers in good standing may receive {count} courtesy waiver per calendar year at the agent's discretion.",
           "A courtesy waiver reverses one late fee of up to {cur}{amount} on the {card} without escalation.",
           "Agents check the waiver history for the current calendar year before granting a courtesy waiver.",
           "The annual courtesy waiver resets on January 1 and unused waivers do not carry over.",
           "A customer disputing a late fee is offered the courtesy waiver first when it is still available."),
        _t("good_standing", "Good standing",
           "An account is in good standing when it is open, not charged off and not in collections.",
           "Good standing allows at most {count} missed payment(s) in the last 24 months.",
           "Agents confirm good standing from the payment history before any fee reversal.",
           "A missed payment that was made up within {days} days still counts toward the standing test."),
        _t("eligibility_window", "Eligibility window",
           "A fee can be considered for a waiver when the customer raises it within {days} days of the statement date.",
           "Late fee disputes raised after the {days}-day window are declined unless a supervisor approves.",
           "The missed payment must have been made up before the waiver request is approved.",
           "Agents note the statement date and the dispute date on the case before deciding."),
        _t("escalation", "Escalation to a supervisor",
           "Waivers above {cur}{amount} or a second waiver in one year require a supervisor's approval.",
           "Agents escalate a fee dispute through the {channel} queue when the customer disagrees with the decision.",
           "The supervisor records the reason for approving or declining the escalated waiver.",
           "Escalated late fee disputes are answered within {days} business days."),
        _t("hardship", "Financial hardship",
           "Customers reporting financial hardship may have late fees reversed for up to {count} statement cycles.",
           "Hardship reversals require a hardship plan opened by the collections team.",
           "Agents do not ask for proof of hardship during the first call; the plan team follows up.",
           "A hardship reversal does not count against the annual courtesy waiver."),
        _t("documentation", "Recording the decision",
           "Every waiver decision is recorded as a decision trace with the policy section that justified it.",
           "Agents cite the policy revision and section number in the case notes.",
           "The fee reversal is posted to the {card} account within {days} business days.",
           "Customers receive a confirmation of the reversed fee by {channel}."),
    ),
    "FeeSchedule": (
        _t("late_fee_amount", "Late payment fee",
           "A late payment fee of {cur}{amount} is charged when the minimum payment is not received by the due date.",
           "The late fee on the {card} is never higher than the minimum payment that was due.",
           "No late fee is charged when the payment arrives within the {days}-day grace period.",
           "{tier} cardholders in {region} see the late fee itemised on the next statement."),
        _t("annual_fee", "Annual fee",
           "The {card} carries an annual fee of {cur}{amount}, billed on the account anniversary.",
           "{tier} customers may have the annual fee refunded within {days} days of the charge when they close the card.",
           "The annual fee is not waived by a courtesy waiver."),
        _t("foreign_transaction_fee", "Foreign transaction fee",
           "Purchases in a foreign currency carry a fee of {pct}% of the converted amount on the {card}.",
           "{tier} cardholders pay no foreign transaction fee on purchases in {region}.",
           "The conversion rate is the network rate on the posting date."),
        _t("cash_advance_fee", "Cash advance fee",
           "A cash advance costs {pct}% of the amount or {cur}{amount}, whichever is greater.",
           "Interest on cash advances starts on the day of the advance; there is no grace period.",
           "Cash advances count toward the {card} credit limit."),
        _t("returned_payment_fee", "Returned payment fee",
           "A returned payment fee of {cur}{amount} is charged when a payment is rejected by the paying bank.",
           "A returned payment also counts as a missed payment when it is not replaced within {days} days.",
           "Agents may reverse a returned payment fee once per year for {tier} customers."),
    ),
    "FraudClaim": (
        _t("provisional_credit", "Provisional credit",
           "A provisional credit for the disputed charge is posted within {days} business days of the claim.",
           "The provisional credit becomes final when the investigation finds the charge unauthorized."),
        _t("reporting_window", "Reporting an unauthorized charge",
           "Customers report an unauthorized charge within {days} days of the statement that shows it.",
           "Zero liability applies to {card} charges reported on time."),
        _t("card_replacement", "Card replacement",
           "A compromised {card} is blocked at once and a replacement ships within {days} days.",
           "Recurring payments are moved to the new card number by the customer."),
    ),
    "CreditLimit": (
        _t("limit_review", "Credit limit review",
           "A credit limit increase on the {card} is reviewed after {count} months of on-time payments.",
           "{tier} customers may request a review once every {days} days."),
        _t("income_verification", "Income verification",
           "An increase above {cur}{amount} requires proof of income.",
           "Agents never promise an increase before the review completes."),
    ),
    "NameChange": (
        _t("documents_required", "Documents required",
           "A legal name change requires a government-issued document showing the new name.",
           "Marriage certificates and court orders are accepted in {region}."),
        _t("account_update", "Updating the account",
           "The new name appears on the {card} and statements within {days} days.",
           "A new card is issued automatically after a name change."),
    ),
}

FILLERS: tuple[str, ...] = (
    "Exceptions require a supervisor's approval recorded in the case file.",
    "This section applies to calls, chats and branch visits alike.",
    "Agents read the customer's tier and account state from the profile before answering.",
    "Where this section and a promotion disagree, this section prevails.",
    "Questions about this section go to the policy owner listed on the cover page.",
    "The customer is told the outcome before the interaction ends.",
    "Amounts are shown in the account currency.",
    "The decision and its reason are visible to the customer in online banking.",
)
CHANNELS = ("phone", "chat", "email", "branch", "secure message")

#: Customer-style questions with the topic they ask about (quality ground truth).
QUALITY_QUERIES: tuple[tuple[str, str], ...] = (
    ("I want to dispute this $39 late fee on my Platinum card", "courtesy_waiver"),
    ("can my late payment charge be reversed as a one-time courtesy this year", "courtesy_waiver"),
    ("what counts as good standing for a fee waiver, how many missed payments are allowed", "good_standing"),
    ("how long after the statement can I still ask for the late fee to be waived", "eligibility_window"),
    ("who approves a second fee waiver in the same year", "escalation"),
    ("I lost my job and cannot pay, can you remove the late charges", "hardship"),
    ("how is a fee reversal recorded and when will I see it on my account", "documentation"),
    ("how much is the late payment fee and is there a grace period", "late_fee_amount"),
    ("is there a yearly fee on the platinum credit card", "annual_fee"),
    ("do I pay extra for purchases abroad in another currency", "foreign_transaction_fee"),
    ("what does it cost to withdraw cash with my card", "cash_advance_fee"),
    ("my payment bounced, what fee do I get charged", "returned_payment_fee"),
)


def topic_of_heading(heading: str | None) -> str | None:
    """The topic key of a generated section heading ("Annual courtesy waiver (2)" ->
    "courtesy_waiver"), or None for a heading the generator did not write."""
    if not heading:
        return None
    base = heading.split(" (")[0].strip()
    return _HEADING_TOPIC.get(base)


_HEADING_TOPIC = {t.heading: t.key for ts in TOPICS.values() for t in ts}


def maria_filter(tenant_id: str = TENANT) -> FilterTree:
    """Maria's filter (seed 004) as a FilterTree over the chunk fields."""
    return And(clauses=(
        Eq(field="tenant_id", value=tenant_id),
        Eq(field="tier", value="Platinum"),
        Eq(field="product", value="Platinum_Card"),
        In(field="policy_type", values=MARIA_POLICY_TYPES),
        Eq(field="status", value="active"),
        Eq(field="version", value=CURRENT),
        Eq(field="region", value="US"),
    ))


@dataclass(frozen=True)
class _Cell:
    tenant: str
    tier: str
    product: str
    policy_type: str
    region: str
    status: str

    def is_maria(self) -> bool:
        return (self.tenant == TENANT and self.tier == "Platinum" and self.product == "Platinum_Card"
                and self.policy_type in MARIA_POLICY_TYPES and self.region == "US" and self.status == "active")


_TIERS = ("Platinum", "Gold", "Silver", "Standard")
_PRODUCTS = tuple(CARD_NAME)
_POLICIES = tuple(TOPICS)
_REGIONS = ("US", "EU", "CA")
#: Kinds of near miss (weights) for the chunks outside Maria's filter.
_MISS_KINDS = (("tier", 25), ("region", 10), ("retired", 5), ("tenant", 10), ("policy", 15), ("product", 5),
               ("random", 30))


def _maria_cell(rng: random.Random) -> _Cell:
    return _Cell(TENANT, "Platinum", "Platinum_Card", rng.choice(MARIA_POLICY_TYPES), "US", "active")


def _miss_cell(rng: random.Random) -> _Cell:
    kind = rng.choices([k for k, _ in _MISS_KINDS], weights=[w for _, w in _MISS_KINDS])[0]
    base = _maria_cell(rng)
    if kind == "tier":
        tier = rng.choice(_TIERS[1:])
        return _Cell(TENANT, tier, TIER_CARD[tier], base.policy_type, "US", "active")
    if kind == "region":
        return _Cell(TENANT, "Platinum", "Platinum_Card", base.policy_type, rng.choice(_REGIONS[1:]), "active")
    if kind == "retired":
        return _Cell(TENANT, "Platinum", "Platinum_Card", base.policy_type, "US", "retired")
    if kind == "tenant":
        return _Cell(rng.choice(OTHER_TENANTS), "Platinum", "Platinum_Card", base.policy_type, "US", "active")
    if kind == "policy":
        return _Cell(TENANT, "Platinum", "Platinum_Card", rng.choice(_POLICIES[2:]), "US", "active")
    if kind == "product":
        return _Cell(TENANT, "Platinum", rng.choice(("Checking", "Savings")), base.policy_type, "US", "active")
    while True:
        tier = rng.choice(_TIERS)
        cell = _Cell(rng.choice((TENANT, TENANT, TENANT) + OTHER_TENANTS), tier,
                     rng.choice((TIER_CARD[tier], rng.choice(_PRODUCTS))), rng.choice(_POLICIES),
                     rng.choice(_REGIONS), rng.choice(("active",) * 9 + ("retired",)))
        if not cell.is_maria():
            return cell


def _section_text(rng: random.Random, topic: Topic, cell: _Cell, ref: str) -> str:
    card, region = CARD_NAME[cell.product], REGION_NAME[cell.region]
    slots = {
        "tier": cell.tier, "card": card, "region": region,
        "cur": CURRENCY[cell.region], "amount": rng.choice((15, 25, 29, 35, 39, 40, 50, 75, 95, 150)),
        "days": rng.choice((5, 10, 14, 21, 30, 45, 60, 90)), "count": rng.choice(("one", "two", "three")),
        "pct": rng.choice(("1", "2", "2.5", "3", "5")), "channel": rng.choice(CHANNELS),
    }
    k = min(len(topic.sentences), rng.choice((1, 2, 2)))
    parts = [s.format(**slots) for s in rng.sample(topic.sentences, k)]
    if rng.random() < 0.4:
        parts.append(rng.choice(FILLERS))
    parts.append(f"Applies to {cell.tier} customers with the {card} in {region}; ref {ref}.")
    return " ".join(parts)


_Section = tuple[str, Topic, str, str]  # heading, topic, ref, text


def _sections(rng: random.Random, cell: _Cell, family: int, n: int) -> list[_Section]:
    topics = list(TOPICS[cell.policy_type])
    rng.shuffle(topics)
    out: list[_Section] = []
    for i in range(n):
        topic = topics[i % len(topics)]
        heading = topic.heading if i < len(topics) else f"{topic.heading} ({i // len(topics) + 1})"
        ref = f"{cell.policy_type[:3].upper()}-{cell.tier[:4].upper()}-{cell.region}-{family}.{i + 1}"
        out.append((heading, topic, ref, _section_text(rng, topic, cell, ref)))
    return out


def _document(cell: _Cell, family: int, revision: int, version: str, sections: list[_Section],
              doc_type: str, age: int, declared: str | None = None) -> Document:
    """One revision of a generated document. Authoritative types (policy, fee schedule,
    procedure) number their sections ("## 1.2 Heading"); restatements use the bare heading.
    ``age`` (years, 0-2) dates a restatement back from the current policy year; ``declared`` is
    the ``doc_type`` written in the metadata when it differs from the layout's type (a draft
    laid out as the policy it drafts)."""
    pt = cell.policy_type
    region = cell.region
    doc_id = f"{PREFIX}-{cell.tenant[:2]}-{pt.lower()}-{cell.tier.lower()}-{region.lower()}-{family:06d}"
    rev = f"v{revision}"
    card = CARD_NAME[cell.product]
    kind = "policy" if doc_type in ("policy", "fee_schedule", "procedure") else "knowledge"
    head = _TYPE_TITLE[doc_type].format(p=POLICY_TITLE[pt], f=family)
    title = f"{head}: {card}, {cell.tier} ({region})" if kind == "policy" else f"{head}, {card} ({region})"
    if kind == "policy":
        body = [f"## {i // 4 + 1}.{i % 4 + 1} {h}\n\n{text}\n" for i, (h, _, _, text) in enumerate(sections)]
    else:
        body = [f"## {h}\n\n{text}\n" for h, _, _, text in sections]
    year = 2026 - (3 - revision if version == SUPERSEDED else 0) - age
    meta: dict[str, Any] = {
        "document": f"{doc_id}-{rev}.pdf", "tier": cell.tier, "product": cell.product, "policy_type": pt,
        "status": cell.status, "region": region, "language": "en", "kind": kind, "doc_type": declared or doc_type,
        "valid_from": f"{min(year, 2026) - 1}-{1 + family % 12:02d}-01",
        "source_uri": f"https://docs.{cell.tenant}.example/kb/{doc_id}-{rev}.pdf",
    }
    if version == SUPERSEDED:
        meta["valid_until"] = f"{min(year, 2026) - 1}-12-31"
    return Document(document_id=doc_id, tenant_id=cell.tenant, text="\n".join(body), title=title, revision=rev,
                    version=version, metadata=meta)


def _family(rng: random.Random, cell: _Cell, family: int, sections: int, history: int) -> Iterator[Document]:
    """Superseded revisions first (v1..), then the current one (the highest revision). Each older
    revision is the next newer one with about a third of its sections reworded (different
    amounts / sentences) and sometimes one section fewer, like a real policy history: the
    unchanged sections are byte-identical across revisions (and embed once)."""
    doc_type = rng.choices([t for t, _ in DOC_TYPES], weights=[w for _, w in DOC_TYPES])[0]
    age = 0 if doc_type in ("policy", "fee_schedule") else rng.choice((0, 0, 1, 2))
    revisions = [_sections(rng, cell, family, sections)]
    for _ in range(history):
        newer = revisions[-1]
        older = [(h, t, ref, _section_text(rng, t, cell, ref) if rng.random() < 0.35 else text)
                 for h, t, ref, text in newer]
        if len(older) > 2 and rng.random() < 0.3:
            older = older[:-1]
        revisions.append(older)
    revisions.reverse()
    last = len(revisions) - 1
    declared = None
    if cell.tenant == TENANT and doc_type in AUTHORITATIVE_TYPES:
        # the example corpus holds this tenant's policies: a generated one is an older draft
        # (after every draw from rng, so the texts of the whole corpus stay as in version 3)
        declared, age = DRAFT_TYPE, age + 1
    for i, secs in enumerate(revisions):
        yield _document(cell, family, i + 1, CURRENT if i == last else SUPERSEDED, secs, doc_type, age, declared)


def count_chunks(doc: Document) -> int:
    """Chunks a generated document is cut into (one per section; the generator keeps each
    section far below the chunker's 180-word cap)."""
    return doc.text.count("\n## ") + (1 if doc.text.startswith("## ") else 0)


def scale_documents(chunks: int = DEFAULT_CHUNKS, seed: int = DEFAULT_SEED,
                    maria_share: float = MARIA_SHARE) -> list[Document]:
    """The scale corpus: documents that chunk into exactly ``chunks`` chunks, of which
    ``round(chunks * maria_share)`` pass :func:`maria_filter`.

    Returns:
        Documents in generation order (per family: superseded revisions, then the current one).

    Raises:
        InputError: ``chunks`` < 100 or ``maria_share`` outside (0, 0.5].
    """
    if chunks < 100:
        raise InputError(f"chunks must be >= 100, got {chunks}")
    if not 0 < maria_share <= 0.5:
        raise InputError(f"maria_share must be in (0, 0.5], got {maria_share}")
    rng = random.Random(f"hopweave-scale-{seed}")
    target = round(chunks * maria_share)
    docs: list[Document] = []
    total = eligible = 0
    family = 0
    # 1. Maria's cell: exactly `target` current+active chunks (their history is near misses).
    while eligible < target:
        family += 1
        sec = min(rng.randint(5, 11), target - eligible)
        history = rng.choice((0, 0, 1, 2))
        fam = list(_family(rng, _maria_cell(rng), family, sec, history))
        hist_chunks = sum(count_chunks(d) for d in fam[:-1])
        if total + sec + hist_chunks > chunks:  # tiny corpora: drop the history
            fam = fam[-1:]
            hist_chunks = 0
        docs.extend(fam)
        eligible += sec
        total += sec + hist_chunks
    # 2. Near misses and unrelated documents up to `chunks`.
    while total < chunks:
        family += 1
        cell = _miss_cell(rng)
        room = chunks - total
        sec = rng.randint(4, 11)
        history = rng.choice((0, 0, 0, 1, 2))
        if sec * (history + 1) + 4 > room:
            history, sec = 0, min(sec, room)
        for d in _family(rng, cell, family, sec, history):
            n = count_chunks(d)
            if n > chunks - total:
                continue
            docs.append(d)
            total += n
    return docs


def corpus_stats(docs: list[Document]) -> dict[str, Any]:
    """Summary of a generated corpus: documents, chunks, chunks passing Maria's filter, and
    chunk counts per tenant / tier / policy type / version / status / region."""
    out: dict[str, Any] = {"documents": len(docs), "chunks": 0, "maria_eligible": 0}
    by: dict[str, dict[str, int]] = {k: {} for k in ("tenant_id", "tier", "policy_type", "version", "status",
                                                     "region", "kind", "doc_type")}
    for d in docs:
        n = count_chunks(d)
        out["chunks"] += n
        m = d.metadata
        vals = {"tenant_id": d.tenant_id, "version": d.version, **{k: m.get(k) for k in by if k in m}}
        for k, v in vals.items():
            by[k][str(v)] = by[k].get(str(v), 0) + n
        if (d.tenant_id == TENANT and m.get("tier") == "Platinum" and m.get("product") == "Platinum_Card"
                and m.get("policy_type") in MARIA_POLICY_TYPES and m.get("status") == "active"
                and d.version == CURRENT and m.get("region") == "US"):
            out["maria_eligible"] += n
    out["by"] = {k: dict(sorted(v.items())) for k, v in by.items()}
    return out
