"""A customer in two programs sees both programs' documents: a list-valued record property
(``list[str]``) and a session attribute declared ``many: true`` are sets, matched as
``field in [...]`` by the session's scope, on both Qdrant adapters; a list where one value is
declared is refused with the fix, never read as "no value on record"."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fixtures import load, make_index

from hopweave.errors import InputError
from hopweave.graph.base import Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.common import Session
from hopweave.models.domain import DomainSettings, check_session_attributes
from hopweave.models.filters import Eq, In, matches
from hopweave.models.ranking import RankingProfile
from hopweave.models.schema import SchemaExtension
from hopweave.pack.manifest import read_manifest
from hopweave.understand.filter_map import FilterMapping, read_mapping_file
from hopweave.understand.scope import SubjectRecord, read_record, session_scope

PACK = Path(__file__).resolve().parents[3] / "examples" / "deltabank"
BASE = read_manifest(PACK).domain_settings()
MAPPING = read_mapping_file(PACK / "filters.yaml")
WIDE = RankingProfile(name="wide_rrf", version=1, method="rrf", rank_constant=60, candidates_per_channel=500)
AS_OF = "2026-05-12"


def _settings(**domain) -> DomainSettings:
    return DomainSettings.model_validate({**BASE.model_dump(mode="json"), **domain})


#: Product from the customer's own list property `programs` (two programs on record).
RECORD = _settings(authoritative=[{"entity": "Product", "subject_property": "programs"}])
#: Product from a list-valued session attribute.
SESSION_SET = _settings(authoritative=[], session_attributes=[{"name": "programs", "type": "str", "many": True}])
SESSION_MAP = FilterMapping.model_validate({**MAPPING.model_dump(mode="json", by_alias=True), "always_on": [
    *MAPPING.model_dump(mode="json", by_alias=True)["always_on"], {"field": "product", "session": "programs"}]})


def _payloads() -> list[dict]:
    return [{"tenant_id": "t1", "chunk_id": p.lower(), "document_id": p.lower(), "title": "Fee schedule",
             "text": f"annual fee schedule for the {p.replace('_', ' ')} program", "status": "active",
             "version": "current", "revision": "v1", "product": p}
            for p in ("Gold_Card", "Checking", "Platinum_Card")]


def _graph(schema) -> NetworkxGraphStore:
    ext = SchemaExtension.from_dict({"labels": [{"extends": "Customer",
                                                 "properties": [{"name": "programs", "type": "list[str]"}]}]})
    g = NetworkxGraphStore(None, schema.extend(ext))
    g.write("t1", nodes=[Node(id="CUST_1", label="Customer",
                              props={"name": "A. Customer", "programs": ["Gold_Card", "Checking"]})])
    return g


def test_a_list_property_on_record_is_a_set(schema) -> None:
    rec = read_record(_graph(schema), RECORD, Session(tenant_id="t1", customer_id="CUST_1"), AS_OF)
    assert rec.names["Product"] == ("Checking", "Gold_Card")  # sorted: [A, B] and [B, A] are one set
    scope = session_scope(MAPPING, RECORD, rec, Session(tenant_id="t1", customer_id="CUST_1"), AS_OF)
    assert In(field="product", values=("Checking", "Gold_Card")) in scope.clauses
    scope.check(Eq(field="product", value="Checking"))  # either program narrows the scope


def test_a_many_session_attribute_is_a_set() -> None:
    s = Session(tenant_id="t1", attributes={"programs": ["Gold_Card", "Checking", "Gold_Card"]})
    assert check_session_attributes(s, SESSION_SET) is s
    scope = session_scope(SESSION_MAP, SESSION_SET, SubjectRecord(), s, AS_OF)
    assert In(field="product", values=("Checking", "Gold_Card")) in scope.clauses
    one = Session(tenant_id="t1", attributes={"programs": ["Checking"]})
    assert Eq(field="product", value="Checking") in session_scope(SESSION_MAP, SESSION_SET, SubjectRecord(),
                                                                   one, AS_OF).clauses


def test_a_list_for_one_value_is_refused_with_the_fix() -> None:
    single = _settings(session_attributes=[{"name": "programs", "type": "str"}])
    with pytest.raises(InputError, match="many: true"):
        check_session_attributes(Session(tenant_id="t1", attributes={"programs": ["A", "B"]}), single)
    with pytest.raises(InputError, match="a str"):
        check_session_attributes(Session(tenant_id="t1", attributes={"programs": ["A", 3]}), SESSION_SET)


@pytest.mark.parametrize("kind", ["edge", "client"])
def test_two_programs_retrieve_both_programs_documents(kind, tmp_path, schema, hash_embedder) -> None:
    rec = read_record(_graph(schema), RECORD, Session(tenant_id="t1", customer_id="CUST_1"), AS_OF)
    tree = session_scope(MAPPING, RECORD, rec, Session(tenant_id="t1", customer_id="CUST_1")).tree  # today's
    payloads = _payloads()
    assert {p["chunk_id"] for p in payloads if matches(tree, p)} == {"gold_card", "checking"}
    idx = make_index(kind, tmp_path, schema, hash_embedder)
    try:
        load(idx, payloads, hash_embedder)
        query = "annual fee schedule"
        res = idx.search("t1", query, WIDE, where=tree, limit=10, query_vector=hash_embedder.embed_one(query),
                         query_space=hash_embedder.space)
        assert {h.chunk_id for h in res.hits} == {"gold_card", "checking"}
    finally:
        idx.close()
