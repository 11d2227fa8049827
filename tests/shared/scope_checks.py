"""An oracle for the session's scope, read from a pack's own files (not from hopweave's code):
which documents a session may be shown at an ``as_of``.

- the subject's authoritative values from the graph files (``subject_property`` of the subject
  node, or of the nodes reached over the ``via`` edges): tier / plan / product ...;
- the session's region (and pack-declared session attributes such as ``market``) and tenant;
- the document's front matter: in force at ``as_of`` (``valid_from <= as_of < valid_until``, an
  open end only while ``status`` is ``active``).

:func:`violations` names every reason a document is out of scope (empty: in scope).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Mapping

import yaml

from hopweave.pack.manifest import read_manifest

REPO = Path(__file__).resolve().parents[2]
PACKS = {"deltabank": REPO / "examples" / "deltabank", "telecom": REPO / "examples" / "telecom"}


@cache
def _manifest(pack: str) -> Any:
    return read_manifest(PACKS[pack])


@cache
def fronts(pack: str) -> dict[str, dict[str, Any]]:
    """document file name -> its front matter, for every corpus file of ``pack``."""
    out = {}
    for p in sorted((PACKS[pack] / "corpus").rglob("*.md")):
        parts = p.read_text(encoding="utf-8").split("---")
        if len(parts) < 3:
            continue
        front = yaml.safe_load(parts[1])
        if isinstance(front, dict) and front.get("document"):
            out[str(front["document"])] = front
    return out


@cache
def _graph(pack: str) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], list[str]]]:
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str], list[str]] = {}
    for f in sorted((PACKS[pack] / "graph").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if "node" in d:
                nodes[d["node"]] = {"label": d["label"], **(d.get("properties") or {})}
            else:
                edges.setdefault((d["edge"], d["from"]), []).append(d["to"])
    return nodes, edges


def sessions(pack: str) -> dict[str, dict[str, Any]]:
    """session file stem -> session, for every session file of ``pack``."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((PACKS[pack] / "sessions").glob("*.json"))}


def record(pack: str, session: Mapping[str, Any]) -> dict[str, set[str]]:
    """authoritative chunk field (tier, product, plan...) -> the values on record for the
    session's subject, from the graph files (missing: no value on record)."""
    settings = _manifest(pack).domain_settings()
    mapping = yaml.safe_load((PACKS[pack] / "filters.yaml").read_text(encoding="utf-8"))
    field_of = {r["entity"]: r["field"] for r in mapping["entities"]}
    nodes, edges = _graph(pack)
    out: dict[str, set[str]] = {}
    subject = session.get("customer_id")
    for a in settings.authoritative:
        if a.session is not None or subject is None or a.entity not in field_of:
            continue
        holders = [subject]
        for step in a.via:
            assert step.direction == "out"
            holders = [t for h in holders for t in edges.get((step.type, h), [])]
        vals = {nodes[h].get(a.subject_property or "") for h in holders if h in nodes}
        vals = {v for v in vals if isinstance(v, str) and v}
        if vals:
            out[field_of[a.entity]] = vals
    return out


def _as_list(v: Any) -> list[str]:
    if v is None or v == "":
        return []
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def _day(v: Any) -> str | None:
    return None if v in (None, "") else str(v)[:10]


def violations(pack: str, session: Mapping[str, Any], document: str, as_of: str | None) -> list[str]:
    """Why ``document`` is out of ``session``'s scope at ``as_of`` (None: today's documents,
    i.e. active ones): another tier / plan / product than on record, another region or market,
    another tenant, not in force. Empty when it is in scope."""
    front = fronts(pack).get(document)
    if front is None:
        return [f"{document}: not a corpus document of {pack}"]
    bad = []
    rec = record(pack, session)
    for f, allowed in rec.items():
        have = _as_list(front.get(f))
        if have and not set(have) & allowed:
            bad.append(f"{document}: {f} {have} not on record {sorted(allowed)}")
    for f in ("tier", "plan", "product"):
        if f not in rec and session.get("customer_id") is None and _as_list(front.get(f)) and f in _authoritative(pack):
            bad.append(f"{document}: {f} {front.get(f)} for an anonymous session")
    region = session.get("region")
    if region and _as_list(front.get("region")) and region not in _as_list(front.get("region")):
        bad.append(f"{document}: region {front.get('region')} != {region}")
    market = (session.get("attributes") or {}).get("market")
    if market and front.get("market") and front["market"] != market:
        bad.append(f"{document}: market {front['market']} != {market}")
    tenant = front.get("tenant_id") or _manifest(pack).corpus.tenant
    if tenant != session["tenant_id"]:
        bad.append(f"{document}: tenant {tenant}")
    if as_of is None:
        if front.get("status", "active") != "active":
            bad.append(f"{document}: status {front.get('status')}")
    else:
        day = as_of[:10]
        start, until = _day(front.get("valid_from")), _day(front.get("valid_until"))
        if start is not None and start > day:
            bad.append(f"{document}: in force from {start}, after {day}")
        if until is not None and until <= day:
            bad.append(f"{document}: in force until {until}, not on {day}")
        if until is None and front.get("status", "active") != "active":
            bad.append(f"{document}: {front.get('status')} without an end date")
    return bad


def out_of_scope(pack: str, session: Mapping[str, Any], documents: list[str], as_of: str | None) -> list[str]:
    """Every :func:`violations` reason of every one of ``documents`` (empty: all in scope)."""
    return [v for d in documents for v in violations(pack, session, d, as_of)]


def foreign(pack: str, documents: list[str], region: str) -> list[str]:
    """Those of ``documents`` whose front matter names a region other than ``region``."""
    regions = {d: f.get("region") for d, f in fronts(pack).items()}
    return [d for d in documents if regions.get(d) not in (None, region)]


@cache
def _authoritative(pack: str) -> frozenset[str]:
    settings = _manifest(pack).domain_settings()
    mapping = yaml.safe_load((PACKS[pack] / "filters.yaml").read_text(encoding="utf-8"))
    field_of = {r["entity"]: r["field"] for r in mapping["entities"]}
    return frozenset(field_of[a.entity] for a in settings.authoritative
                     if a.entity in field_of and a.anonymous == "unscoped")
