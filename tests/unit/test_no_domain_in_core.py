"""The core package names no domain: no DeltaBank label, relationship, id format, tenant, goal,
person or file in ``src/hopweave/**/*.py`` (code and strings; comments are not scanned).

Every DeltaBank assumption is data in its pack (``examples/deltabank``). The files that still
name DeltaBank are listed in ``ALLOWED`` with how many names they hold: the list only shrinks.
A file not listed, or a count that grows, fails; a count that falls fails too, asking you to
lower it (so the list keeps shrinking and a fixed file cannot slide back).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "hopweave"

#: DeltaBank's labels, relationship types, goals, tenants, people, id formats and file names.
LABELS = ("Customer", "CustomerProfile", "Tier", "Product", "EventType", "PolicyType", "Region", "Concept",
          "Account", "Event", "Conversation", "Outcome")
RELATIONSHIPS = ("HAS_TIER", "HOLDS", "OF_PRODUCT", "HAS_EVENT", "OF_TYPE", "CAUSED_BY", "LOCATED_IN",
                 "APPLIES_TO", "OF_POLICY_TYPE", "SYNONYM_OF", "PARTICIPATED_IN", "RESULTED_IN", "HAS_PROFILE",
                 "SIMILAR_TO", "FOR_CUSTOMER", "HAS_OUTCOME")
GOALS = ("LateFeeDispute", "FraudClaim", "CreditLimitIncrease", "NameChange")
WORDS = (*LABELS, *RELATIONSHIPS, *GOALS)
#: A word (not an attribute such as ``threading.Event``), an id format, a file name.
PATTERN = re.compile(
    r"(?<![\w.])(?:" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")(?!\w)"
    r"|\b(?:NB_)?(?:CUST|ACCT|TRACE)_(?=[\d{\"'])\w*"
    r"|waiver-policy|late_fee_dispute"
)
#: Tenants and people, in any case.
CASELESS = re.compile(r"deltabank|northbank|\bmaria\b|\blopez\b", re.IGNORECASE)

#: Current offenders: file (relative to src/hopweave) -> number of DeltaBank names. Only shrinks.
ALLOWED: dict[str, int] = {
    "understand/resolver.py": 2,  # Region: the session's built-in region attribute
}


def names_in(path: Path) -> list[str]:
    """DeltaBank names in the code (identifiers) and strings of one Python file."""
    found: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type in (tokenize.NAME, tokenize.STRING):
            found += PATTERN.findall(tok.string) + CASELESS.findall(tok.string)
    return found


def scan() -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for path in sorted(SRC.rglob("*.py")):
        hits = names_in(path)
        if hits:
            out[str(path.relative_to(SRC))] = Counter(hits)
    return out


def test_no_new_domain_names_in_the_core() -> None:
    found = scan()
    problems = []
    for rel, names in sorted(found.items()):
        n, allowed = sum(names.values()), ALLOWED.get(rel, 0)
        if n > allowed:
            problems.append(f"{rel}: {n} DeltaBank names (allowed {allowed}): {dict(names.most_common(8))} -- "
                            "move the assumption into the pack (hopweave.yaml `domain:`, schema, goals) instead")
    for rel, allowed in sorted(ALLOWED.items()):
        n = sum(found.get(rel, Counter()).values())
        if n < allowed:
            problems.append(f"{rel}: now {n} DeltaBank names, the allow-list says {allowed}: lower ALLOWED "
                            f"in {Path(__file__).name} to {n}" + (" (remove the entry)" if n == 0 else ""))
    assert not problems, "\n".join(problems)


def test_the_scan_finds_what_it_should() -> None:
    assert PATTERN.findall('x = "CUST_4421"; y = "Tier"; threading.Event(); z = "HOLDS"; TRACE_ID') == [
        "CUST_4421", "Tier", "HOLDS"]
    assert PATTERN.findall('f"ACCT_{n}" + "TRACE_"') == ["ACCT_", "TRACE_"]
    assert CASELESS.findall("the DeltaBank example and Maria") == ["DeltaBank", "Maria"]
