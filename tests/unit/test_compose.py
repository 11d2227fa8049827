"""docker-compose.yml is validated without a container engine: against the Compose Specification
JSON schema (vendored from Debian's docker-compose package, see tests/data/README.md) plus the
checks the schema cannot express (ports, auth from the environment, volumes, healthchecks)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "data" / "compose_spec.json"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


def test_compose_file_matches_the_compose_spec(compose: dict) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft201909Validator(
        schema, format_checker=jsonschema.Draft201909Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # the validator is real: a typo'd key is rejected
    broken = {
        **compose,
        "services": {**compose["services"], "neo4j": {**compose["services"]["neo4j"], "portz": []}},
    }
    assert any(True for _ in validator.iter_errors(broken))


def test_neo4j_service(compose: dict) -> None:
    neo4j = compose["services"]["neo4j"]
    assert re.match(r"^neo4j:\$\{NEO4J_VERSION:-5\.[0-9.]+-community\}$", neo4j["image"])
    assert {p.split(":")[0] for p in neo4j["ports"]} == {"7474", "7687"}
    auth = neo4j["environment"]["NEO4J_AUTH"]
    assert auth.startswith("neo4j/${NEO4J_PASSWORD:?"), (
        "the password must come from the environment, no default"
    )
    assert any(v.endswith(":/data") for v in neo4j["volumes"])
    assert "cypher-shell" in " ".join(neo4j["healthcheck"]["test"])
    # NEO4J_* variables are Neo4j settings (strict validation): no stray ones like NEO4J_PASSWORD
    for key in neo4j["environment"]:
        assert key == "NEO4J_AUTH" or key.startswith(("NEO4J_server_", "NEO4J_db_", "NEO4J_dbms_")), key


def test_qdrant_service(compose: dict) -> None:
    qdrant = compose["services"]["qdrant"]
    assert qdrant["image"].startswith("qdrant/qdrant:")
    assert {p.split(":")[0] for p in qdrant["ports"]} == {"6333", "6334"}
    assert any(v.endswith(":/qdrant/storage") for v in qdrant["volumes"])
    assert "/readyz" in " ".join(qdrant["healthcheck"]["test"])


def test_named_volumes_are_declared(compose: dict) -> None:
    used = {v.split(":")[0] for s in compose["services"].values() for v in s.get("volumes", [])}
    assert used <= set(compose["volumes"])


def test_settings_point_at_the_compose_services(monkeypatch: pytest.MonkeyPatch) -> None:
    from hopweave.config import HopweaveSettings, load_settings

    for k in list(os.environ):
        if k.startswith("HOPWEAVE_"):
            monkeypatch.delenv(k)
    assert HopweaveSettings().backend == "networkx"
    monkeypatch.setenv("HOPWEAVE_NEO4J_URI", "bolt://localhost:7687")
    monkeypatch.setenv("HOPWEAVE_NEO4J_PASSWORD", "secret-pw")
    monkeypatch.setenv("HOPWEAVE_QDRANT_URL", "http://localhost:6333")
    cfg = HopweaveSettings()
    assert cfg.backend == "neo4j" and cfg.neo4j_auth() == ("neo4j", "secret-pw")
    assert cfg.qdrant_url == "http://localhost:6333"
    assert "secret-pw" not in repr(cfg)
    from hopweave.errors import ConfigError

    with pytest.raises(ConfigError):
        load_settings(neo4j_uri="http://localhost:7474")
    monkeypatch.delenv("HOPWEAVE_NEO4J_PASSWORD")
    with pytest.raises(ConfigError):
        HopweaveSettings().neo4j_auth()
