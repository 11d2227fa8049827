"""The format reference of docs/packs.md is generated from the pack JSON Schemas and in sync,
and every key the example packs use (manifest, domain, schema, filters, goal files and their
patterns, classifier, scenarios, sessions) is declared by its file's schema and listed there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from hopweave.fileio import read_yaml
from hopweave.pack.json_schemas import REFERENCE_FILES, pack_json_schemas, reference_markdown, schema_keys

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "packs.md"
PACKS = [ROOT / "examples" / "deltabank", ROOT / "examples" / "telecom"]


def _files(pack: Path) -> Iterator[tuple[str, str, Any]]:
    """(schema name, where, data) for every part of the pack's files a schema describes."""
    def y(p: Path) -> Any:
        return read_yaml(p, "pack file")  # the loader's YAML (`on:` is a key, not True)

    manifest = y(pack / "hopweave.yaml")
    yield "hopweave.schema.json", "hopweave.yaml", manifest
    yield "domain.schema.json", "hopweave.yaml domain", manifest.get("domain", {})
    yield "schema.schema.json", "schema.yaml", y(pack / "schema.yaml")
    yield "filters.schema.json", "filters.yaml", y(pack / "filters.yaml")
    yield "classifier.schema.json", "classifier.yaml", y(pack / "classifier.yaml")
    for f in sorted((pack / "goals").glob("*.yaml")):
        doc = y(f)
        yield "goal.schema.json", f"{f.name} goal", doc["goal"]
        yield "pattern.schema.json", f"{f.name} defaults", doc.get("defaults") or {}
        for i, p in enumerate(doc.get("patterns") or []):
            yield "pattern.schema.json", f"{f.name} patterns[{i}]", p
    for f in sorted((pack / "scenarios").glob("*.yaml")):
        yield "scenario.schema.json", f.name, y(f)
    for f in sorted((pack / "sessions").glob("*.json")):
        yield "session.schema.json", f.name, json.loads(f.read_text(encoding="utf-8"))


def _unknown(data: Any, path: str, known: set[str]) -> Iterator[str]:
    """Keys of ``data`` (at key path ``path``) its schema does not declare."""
    if isinstance(data, list):
        for item in data:
            yield from _unknown(item, path + "[]", known)
        return
    if not isinstance(data, dict):
        return
    prefix = f"{path}." if path else ""
    children = {k[len(prefix):].split(".")[0].split("[")[0] for k in known if k.startswith(prefix)}
    if not children:
        return  # a free-form mapping (a session inline, pattern_overrides, forbidden_metadata)
    if "{name}" in children:
        for v in data.values():
            yield from _unknown(v, prefix + "{name}", known)
        return
    for k, v in data.items():
        k = "on" if k is True else k  # YAML 1.1 reads a predicate's `on:` as True; the loader maps it back
        if k not in children:
            yield prefix + str(k)
        else:
            yield from _unknown(v, prefix + str(k), known)


def test_the_reference_in_docs_is_generated_and_in_sync() -> None:
    assert reference_markdown().rstrip("\n") in DOC.read_text(encoding="utf-8"), (
        "docs/packs.md's format reference is stale: run python -m hopweave.pack.json_schemas")
    assert set(REFERENCE_FILES) <= set(pack_json_schemas())


@pytest.mark.parametrize("pack", PACKS, ids=lambda p: p.name)
def test_every_key_the_example_packs_use_is_in_the_schemas_and_the_docs(pack: Path) -> None:
    schemas = pack_json_schemas()
    doc = DOC.read_text(encoding="utf-8")
    missing, used = [], 0
    for name, where, data in _files(pack):
        known = {k for k, _, _ in schema_keys(schemas[name])}
        missing += [f"{where}: {k}" for k in _unknown(data, "", known)]
        for k in known:
            used += 1
            assert f"`{k}`" in doc, f"{name} key {k} is not in docs/packs.md"
    assert not missing, "\n".join(missing)
    assert used > 300


def test_an_unknown_key_is_found() -> None:
    known = {k for k, _, _ in schema_keys(pack_json_schemas()["scenario.schema.json"])}
    assert list(_unknown({"name": "x", "expect": {"fact": ["typo"]}}, "", known)) == ["expect.fact"]
