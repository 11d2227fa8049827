"""Entities -> FilterTree from the graph's FilterMapping node (seed 004's filter)."""

from __future__ import annotations

import json

import pytest

from conftest import AS_OF, MARIA_UTTERANCE
from domains import DELTABANK
from hopweave.errors import ConfigError, FilterError, SchemaError, TenantError
from hopweave.models.common import Session
from hopweave.models.filters import And, Eq, In, matches
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

SEED_004 = {
    "tier": "Platinum",
    "product": "Platinum_Card",
    "policy_type": ["LateFeeWaiver", "FeeSchedule"],
    "status": "active",
    "version": "current",
    "region": "US",
}


def _maria_filter(store, session):  # type: ignore[no-untyped-def]
    res = EntityResolver(store, DELTABANK).resolve(MARIA_UTTERANCE, session, AS_OF)
    return compile_filter(read_filter_mapping(store, session.tenant_id), res.entities, session, store, store.schema)


def test_maria_compiles_to_exactly_seed_004_plus_tenant(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    tree, notes = _maria_filter(bank, maria)
    assert tree == And(clauses=(
        Eq(field="tier", value="Platinum"),
        Eq(field="product", value="Platinum_Card"),
        In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")),
        Eq(field="status", value="active"),
        Eq(field="version", value="current"),
        Eq(field="region", value="US"),
        Eq(field="tenant_id", value="deltabank"),
    ))
    from hopweave.models.filters import to_display

    assert to_display(tree) == {**SEED_004, "tenant_id": "deltabank"}
    assert notes == []


def test_compiled_qdrant_filter(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    from hopweave.search.qdrant_filter import to_qdrant

    tree, _ = _maria_filter(bank, maria)
    q = to_qdrant(tree).model_dump(mode="json", exclude_none=True)
    must = {c["key"]: c["match"] for c in q["must"]}
    assert must == {
        "tier": {"value": "Platinum"}, "product": {"value": "Platinum_Card"},
        "policy_type": {"any": ["LateFeeWaiver", "FeeSchedule"]}, "status": {"value": "active"},
        "version": {"value": "current"}, "region": {"value": "US"}, "tenant_id": {"value": "deltabank"},
    }
    chunk = {"tier": "Platinum", "product": "Platinum_Card", "policy_type": "LateFeeWaiver", "status": "active",
             "version": "current", "region": "US", "tenant_id": "deltabank"}
    assert matches(tree, chunk)
    for field, wrong in (("tier", "Gold"), ("version", "superseded"), ("status", "retired"), ("region", "CA"),
                         ("tenant_id", "northbank"), ("policy_type", "FraudClaim")):
        assert not matches(tree, {**chunk, field: wrong})


def test_the_mapping_is_read_from_the_graph(fresh_store, maria: Session) -> None:  # type: ignore[no-untyped-def]
    tree, _ = _maria_filter(fresh_store, maria)
    assert "policy_type" in {c.field for c in tree.clauses}
    # change the data, not the code: drop the EventType rule and add an always-on language clause
    shipped = read_mapping_file()
    changed = shipped.model_copy(update={
        "version": 2,
        "entities": tuple(r for r in shipped.entities if r.entity != "EventType"),
        "always_on": (*shipped.always_on, *FilterMapping.model_validate(
            {"version": 1, "always_on": [{"field": "language", "value": "en"}]}).always_on),
    })
    write_filter_mapping(fresh_store, changed)
    tree, _ = _maria_filter(fresh_store, maria)
    fields = [c.field for c in tree.clauses]
    assert "policy_type" not in fields and fields[-1] == "language"


def test_missing_mapping_node_is_a_config_error(maria: Session) -> None:
    from hopweave.graph.networkx_store import NetworkxGraphStore

    with pytest.raises(ConfigError, match="FilterMapping"):
        read_filter_mapping(NetworkxGraphStore(None), maria.tenant_id)


def test_mapping_is_validated_against_the_schema(bank) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError):
        FilterMapping.model_validate({"version": 1, "entities": [{"entity": "Tier", "field": "colour"}]}).check(bank.schema)
    with pytest.raises(SchemaError):
        FilterMapping.model_validate({"version": 1, "entities": [{"entity": "Planet", "field": "tier"}]}).check(bank.schema)
    with pytest.raises(Exception):
        FilterMapping.model_validate({"version": 1, "always_on": [{"field": "status"}]})


def test_session_region_wins_and_several_values_become_in(bank, maria: Session) -> None:  # type: ignore[no-untyped-def]
    mapping = read_filter_mapping(bank, "deltabank")
    ents = [
        Entity(type="Tier", value="Gold", source="utterance", span=(0, 4)),
        Entity(type="Tier", value="Platinum", source="utterance", span=(9, 17)),
        Entity(type="Region", value="CA", source="utterance", span=(20, 26)),
        Entity(type="PolicyType", value="FeeSchedule", source="utterance", span=(30, 40), node_id="POLICYTYPE_FeeSchedule"),
    ]
    tree, notes = compile_filter(mapping, ents, maria, bank, bank.schema)
    by = {c.field: c for c in tree.clauses}
    assert by["tier"] == In(field="tier", values=("Gold", "Platinum"))
    assert by["region"] == Eq(field="region", value="US")
    assert by["policy_type"] == Eq(field="policy_type", value="FeeSchedule")
    assert any("Region 'CA'" in n for n in notes)


def test_tenant_is_always_on_and_required(bank) -> None:  # type: ignore[no-untyped-def]
    mapping = read_filter_mapping(bank, "northbank")
    nb = Session(tenant_id="northbank", customer_id="NB_CUST_4421")
    tree, _ = compile_filter(mapping, [], nb, bank, bank.schema)
    assert {c.field: c.value for c in tree.clauses} == {"status": "active", "version": "current", "tenant_id": "northbank"}
    broken = FilterMapping.model_validate({"version": 1, "always_on": [{"field": "tenant_id", "session": "customer_id",
                                                                        "required": True}]})
    with pytest.raises(TenantError):
        compile_filter(broken, [], Session(tenant_id="deltabank"))


def test_node_is_written_as_shared_json(bank) -> None:  # type: ignore[no-untyped-def]
    node = bank.get_node("deltabank", FILTER_MAPPING_ID)
    assert node is not None and node.tenant_id == GLOBAL_TENANT and node.label == "FilterMapping"
    assert FilterMapping.model_validate(json.loads(node.props["definition"])) == read_mapping_file()
