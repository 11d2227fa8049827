"""Entities -> FilterTree from the graph's FilterMapping node (seed 004's filter)."""

from __future__ import annotations

import json

import pytest
from conftest import AS_OF, MARIA_UTTERANCE
from domains import DELTABANK, FILTERS_FILE
from pydantic import ValidationError

from hopweave.errors import ConfigError, FilterError, SchemaError, TenantError
from hopweave.models.common import Session
from hopweave.models.filters import And, Eq, In, IsEmpty, Or, Range, matches
from hopweave.models.schema import GLOBAL_TENANT
from hopweave.understand.filter_map import (
    FILTER_MAPPING_ID,
    FilterMapping,
    compile_filter,
    read_filter_mapping,
    read_mapping_file,
    write_filter_mapping,
)
from hopweave.understand.models import Entity
from hopweave.understand.resolver import EntityResolver

AT = "2026-05-12T23:59:59Z"  # a date-only as_of is the end of that day
#: seed 004's `status = active, version = current` became "in force at as_of" (issue 14)
IN_FORCE = And(clauses=(
    Or(clauses=(IsEmpty(field="valid_from"), Range(field="valid_from", lte=AT))),
    Or(clauses=(Range(field="valid_until", gt=AT),
                And(clauses=(IsEmpty(field="valid_until"), Eq(field="status", value="active"))))),
))


def _maria_filter(store, session):  # type: ignore[no-untyped-def]
    res = EntityResolver(store, DELTABANK).resolve(MARIA_UTTERANCE, session, AS_OF)
    return compile_filter(read_filter_mapping(store, session.tenant_id), res.entities, session, store, store.schema,
                          as_of=AS_OF)


def _by_field(tree):  # type: ignore[no-untyped-def]
    return {c.field: c for c in tree.clauses if hasattr(c, "field")}


def test_maria_compiles_to_exactly_seed_004_plus_tenant(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    tree, notes = _maria_filter(bank, maria)
    assert tree == And(clauses=(
        Eq(field="tier", value="Platinum"),
        Eq(field="product", value="Platinum_Card"),
        In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")),
        *IN_FORCE.clauses,  # flattened into the conjunction
        Eq(field="region", value="US"),
        Eq(field="tenant_id", value="deltabank"),
    ))
    assert notes == []


def test_compiled_qdrant_filter(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    from hopweave.search.qdrant_filter import to_qdrant

    tree, _ = _maria_filter(bank, maria)
    ranges = [c for c in to_qdrant(tree, {f.name: f.type for f in bank.schema.chunk_fields}).must
              if getattr(c, "should", None)]
    assert len(ranges) == 2  # valid_from <= as_of, as_of < valid_until (or open-ended while active)
    q = to_qdrant(tree, {f.name: f.type for f in bank.schema.chunk_fields}).model_dump(mode="json", exclude_none=True)
    must = {c["key"]: c["match"] for c in q["must"] if "key" in c}
    assert must == {
        "tier": {"value": "Platinum"}, "product": {"value": "Platinum_Card"},
        "policy_type": {"any": ["LateFeeWaiver", "FeeSchedule"]}, "region": {"value": "US"},
        "tenant_id": {"value": "deltabank"},
    }
    chunk = {"tier": "Platinum", "product": "Platinum_Card", "policy_type": "LateFeeWaiver", "status": "active",
             "version": "current", "region": "US", "tenant_id": "deltabank", "valid_from": "2026-01-01"}
    assert matches(tree, chunk)
    assert matches(tree, {**chunk, "version": "superseded", "valid_until": "2026-09-01"})  # still in force
    for field, wrong in (("tier", "Gold"), ("status", "retired"), ("region", "CA"), ("valid_from", "2026-06-01"),
                         ("tenant_id", "northbank"), ("policy_type", "FraudClaim"), ("valid_until", "2026-05-12")):
        assert not matches(tree, {**chunk, field: wrong})


def test_the_mapping_is_read_from_the_graph(fresh_store, maria: Session) -> None:  # type: ignore[no-untyped-def]
    tree, _ = _maria_filter(fresh_store, maria)
    assert "policy_type" in _by_field(tree)
    # change the data, not the code: drop the EventType rule and add an always-on language clause
    shipped = read_mapping_file(FILTERS_FILE)
    changed = shipped.model_copy(update={
        "version": 2,
        "entities": tuple(r for r in shipped.entities if r.entity != "EventType"),
        "always_on": (*shipped.always_on, *FilterMapping.model_validate(
            {"version": 1, "always_on": [{"field": "language", "value": "en"}]}).always_on),
    })
    write_filter_mapping(fresh_store, changed)
    tree, _ = _maria_filter(fresh_store, maria)
    fields = list(_by_field(tree))
    assert "policy_type" not in fields and fields[-1] == "language"


def test_the_mapping_is_parsed_once_per_revision(fresh_store, maria: Session) -> None:  # type: ignore[no-untyped-def]
    # every caller (understanding, agentic rounds, the agent tool) shares one parse per revision
    first = read_filter_mapping(fresh_store, maria.tenant_id)
    assert read_filter_mapping(fresh_store, maria.tenant_id) is first
    changed = first.model_copy(update={"version": first.version + 1})
    write_filter_mapping(fresh_store, changed)
    again = read_filter_mapping(fresh_store, maria.tenant_id)
    assert again is not first and again.version == first.version + 1
    assert read_filter_mapping(fresh_store, maria.tenant_id) is again


def test_missing_mapping_node_is_a_config_error(maria: Session) -> None:
    from hopweave.graph.networkx_store import NetworkxGraphStore

    with pytest.raises(ConfigError, match="FilterMapping"):
        read_filter_mapping(NetworkxGraphStore(None), maria.tenant_id)


def test_mapping_is_validated_against_the_schema(bank) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError):
        FilterMapping.model_validate({"version": 1, "entities": [{"entity": "Tier", "field": "colour"}]}).check(bank.schema)
    with pytest.raises(SchemaError):
        FilterMapping.model_validate({"version": 1, "entities": [{"entity": "Planet", "field": "tier"}]}).check(bank.schema)
    with pytest.raises(ValidationError):
        FilterMapping.model_validate({"version": 1, "always_on": [{"field": "status"}]})


def test_session_region_wins_and_several_values_become_in(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    mapping = read_filter_mapping(bank, "deltabank")
    ents = [
        Entity(type="Tier", value="Gold", source="utterance", span=(0, 4)),
        Entity(type="Tier", value="Platinum", source="utterance", span=(9, 17)),
        Entity(type="Region", value="CA", source="utterance", span=(20, 26)),
        Entity(type="PolicyType", value="FeeSchedule", source="utterance", span=(30, 40), node_id="POLICYTYPE_FeeSchedule"),
    ]
    tree, notes = compile_filter(mapping, ents, maria, bank, bank.schema, as_of=AS_OF)
    by = _by_field(tree)
    assert by["tier"] == In(field="tier", values=("Gold", "Platinum"))
    assert by["region"] == Eq(field="region", value="US")
    assert by["policy_type"] == Eq(field="policy_type", value="FeeSchedule")
    assert any("Region 'CA'" in n for n in notes)


def test_tenant_is_always_on_and_required(bank) -> None:  # type: ignore[no-untyped-def]
    mapping = read_filter_mapping(bank, "northbank")
    nb = Session(tenant_id="northbank", customer_id="NB_CUST_4421")
    tree, _ = compile_filter(mapping, [], nb, bank, bank.schema, as_of=AS_OF)
    assert tree == And(clauses=(*IN_FORCE.clauses, Eq(field="tenant_id", value="northbank")))
    broken = FilterMapping.model_validate({"version": 1, "always_on": [{"field": "tenant_id", "session": "customer_id",
                                                                        "required": True}]})
    with pytest.raises(TenantError):
        compile_filter(broken, [], Session(tenant_id="deltabank"))


def test_node_is_written_as_shared_json(bank) -> None:  # type: ignore[no-untyped-def]
    node = bank.get_node("deltabank", FILTER_MAPPING_ID)
    assert node is not None and node.tenant_id == GLOBAL_TENANT and node.label == "FilterMapping"
    assert FilterMapping.model_validate(json.loads(node.props["definition"])) == read_mapping_file(FILTERS_FILE)


def test_in_force_clause_is_data_and_needs_as_of(bank) -> None:  # type: ignore[no-untyped-def]
    m = FilterMapping.model_validate({"version": 1, "always_on": [
        {"in_force": {"from": "valid_from", "until": "valid_until", "status": "status"}},
        {"field": "tenant_id", "session": "tenant_id", "required": True}]}).check(bank.schema)
    assert m.in_force is not None and m.in_force.fields == ("valid_from", "valid_until", "status")
    assert FilterMapping.model_validate(json.loads(m.canonical_json())) == m  # `from` survives the graph node
    with pytest.raises(FilterError, match="as_of"):
        compile_filter(m, [], Session(tenant_id="deltabank"))
    with pytest.raises(FilterError, match="date"):
        FilterMapping.model_validate({"version": 1, "always_on": [
            {"in_force": {"from": "valid_from", "until": "revision"}}]}).check(bank.schema)
    with pytest.raises(ValidationError):
        FilterMapping.model_validate({"version": 1, "always_on": [{"field": "status", "in_force": {}}]})


@pytest.mark.parametrize("doc, at, expected", [
    ({"valid_from": "2024-01-01", "valid_until": "2026-01-01", "status": "active"}, "2025-12-31T23:59:59Z", True),
    ({"valid_from": "2024-01-01", "valid_until": "2026-01-01", "status": "active"}, "2026-01-01T00:00:00Z", False),
    ({"valid_from": "2026-01-01", "status": "active"}, "2026-01-01T00:00:00Z", True),
    ({"valid_from": "2026-01-01", "status": "active"}, "2025-12-31", False),  # the end of Dec 31
    ({"valid_from": "2026-01-01", "status": "active"}, "2025-12-31T23:59:59+00:00", False),
    ({"valid_from": "2026-01-01", "status": "active"}, "2026-01-01T00:30:00+01:00", False),  # 23:30 UTC the day before
    ({"valid_from": "2025-11-15", "valid_until": "2026-01-01", "status": "retired"}, "2025-12-31", True),
    ({"valid_from": "2025-11-15", "valid_until": "2026-01-01", "status": "retired"}, "2026-05-12", False),
    ({"valid_from": "2025-11-15", "status": "retired"}, "2026-05-12", False),  # retired, no date: never
    ({"status": "active"}, "1999-01-01", True),  # no valid_from: since ever
])
def test_in_force_semantics(doc, at, expected) -> None:  # type: ignore[no-untyped-def]
    from hopweave.understand.filter_map import InForce, instant

    rule = InForce.model_validate({"from": "valid_from", "until": "valid_until", "status": "status"})
    assert matches(rule.clause(instant(at)), doc) is expected
