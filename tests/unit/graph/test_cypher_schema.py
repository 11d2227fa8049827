"""cypher/schema.cypher: in sync with the schema, parsed strictly, rendered per engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopweave.errors import SchemaError, UnsafeIdentifierError
from hopweave.graph.capabilities import FALKORDB, NEO4J
from hopweave.graph.cypher_schema import (
    SchemaItem,
    ddl_for,
    load_schema_items,
    parse_schema_cypher,
    render_schema_cypher,
    schema_cypher_path,
    schema_items,
)
from hopweave.models.schema import GraphSchema

SHIPPED = Path(__file__).resolve().parents[3] / "cypher" / "schema.cypher"


def test_shipped_file_matches_the_schema(schema: GraphSchema) -> None:
    assert SHIPPED.read_text(encoding="utf-8") == render_schema_cypher(schema), (
        "cypher/schema.cypher is stale: regenerate with `hopweave cypher-schema examples/deltabank > cypher/schema.cypher`"
    )
    assert schema_cypher_path() == SHIPPED


def test_items_cover_ids_tenants_and_indexed_properties(schema: GraphSchema) -> None:
    items = set(load_schema_items(schema))
    for lab in schema.labels:
        assert SchemaItem("unique", lab.name, "id") in items
        assert SchemaItem("index", lab.name, "tenant_id") in items
    assert SchemaItem("index", "Event", "timestamp") in items
    assert SchemaItem("index", "TraversalPattern", "name") in items
    assert SchemaItem("index", "Event", "amount") not in items  # not declared indexed
    assert len(items) == len(schema_items(schema))


@pytest.mark.parametrize(
    "line",
    [
        "MATCH (n) DETACH DELETE n;",
        "CREATE INDEX x IF NOT EXISTS FOR (n:Customer) ON (n.id); MATCH (n) DETACH DELETE n;",
        "CREATE INDEX x IF NOT EXISTS FOR (n:Spaceship) ON (n.id);",
        "CREATE INDEX x IF NOT EXISTS FOR (n:Customer) ON (n.password);",
    ],
)
def test_parser_rejects_anything_else(schema: GraphSchema, line: str) -> None:
    with pytest.raises(SchemaError):
        parse_schema_cypher("// ok\n" + line + "\n", schema)


def test_ddl_per_engine(schema: GraphSchema) -> None:
    unique = SchemaItem("unique", "Customer", "id")
    assert ddl_for(unique, NEO4J, schema) == [
        ("CREATE CONSTRAINT customer_id_unique IF NOT EXISTS FOR (n:`Customer`) REQUIRE n.`id` IS UNIQUE",)
    ]
    # FalkorDB: the index the constraint needs, then its GRAPH.CONSTRAINT command
    assert ddl_for(unique, FALKORDB, schema, graph="g") == [
        ("CREATE INDEX FOR (n:`Customer`) ON (n.`id`)",),
        ("GRAPH.CONSTRAINT", "CREATE", "g", "UNIQUE", "NODE", "Customer", "PROPERTIES", "1", "id"),
    ]
    assert ddl_for(SchemaItem("index", "Event", "type"), NEO4J, schema) == [
        ("CREATE INDEX event_type_index IF NOT EXISTS FOR (n:`Event`) ON (n.`type`)",)
    ]
    with pytest.raises(UnsafeIdentifierError):
        ddl_for(SchemaItem("index", "Event", "type`) DETACH"), NEO4J, schema)


def test_store_creates_the_items_of_its_own_schema() -> None:
    """A Cypher store of another pack's schema (telecom: no Customer label) creates that schema's
    constraints and indexes; it used to parse the default cypher/schema.cypher against its own
    schema and fail with SchemaError."""
    import cypher_statements as cs

    telecom = cs.pack_schemas()["telecom"].schema
    out = cs.Collection()
    store = cs.RecordingStore(telecom, out, "ddl")
    try:
        assert store.ensure_schema() == len(schema_items(telecom))
    finally:
        store.close()
    queries = [s.query for s in out.items]
    assert "CREATE CONSTRAINT subscriber_id_unique IF NOT EXISTS FOR (n:`Subscriber`) REQUIRE n.`id` IS UNIQUE" in queries
    assert not any("`Customer`" in q for q in queries)
