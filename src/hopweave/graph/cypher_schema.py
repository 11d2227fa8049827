"""Schema constraints and indexes for the Cypher stores: ``cypher/schema.cypher``.

``cypher/schema.cypher`` is the human-facing file (paste it into Neo4j Browser or cypher-shell).
It is generated from the merged schema (base + pack) by :func:`render_schema_cypher` (a unit test keeps
the two in sync; regenerate with ``hopweave cypher-schema PACK > cypher/schema.cypher``);
:func:`parse_schema_cypher` reads such a file back strictly (only the two statement shapes it
contains). The stores create the items of their own schema (:func:`schema_items`: for the default
schema, exactly the file's; for another pack's schema, that schema's) and render each item for
their engine with :func:`ddl_for`, using the capability table (FalkorDB has no ``IF NOT EXISTS``
and creates constraints by command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hopweave.errors import ConfigError, SchemaError
from hopweave.graph.capabilities import Capabilities
from hopweave.models.schema import GraphSchema, cypher_identifier

HEADER = """// hopweave graph schema: unique ids, tenant and property indexes.
// Generated from the merged schema (metagraph/base_schema.yaml + a pack schema) by `hopweave cypher-schema`; do not edit by hand.
// Neo4j 5 syntax. The FalkorDB store renders the same items in its own dialect.
"""

_UNIQUE_RE = re.compile(
    r"^CREATE CONSTRAINT (\w+) IF NOT EXISTS FOR \(n:(\w+)\) REQUIRE n\.(\w+) IS UNIQUE;$"
)
_INDEX_RE = re.compile(r"^CREATE INDEX (\w+) IF NOT EXISTS FOR \(n:(\w+)\) ON \(n\.(\w+)\);$")


@dataclass(frozen=True)
class SchemaItem:
    kind: Literal["unique", "index"]
    label: str
    prop: str

    @property
    def name(self) -> str:
        return f"{self.label.lower()}_{self.prop}_{'unique' if self.kind == 'unique' else 'index'}"


def schema_items(schema: GraphSchema) -> list[SchemaItem]:
    """Unique ``id`` per label, an index on ``tenant_id`` and on every ``indexed`` property."""
    items: list[SchemaItem] = []
    for lab in schema.labels:
        items.append(SchemaItem("unique", lab.name, "id"))
        items.append(SchemaItem("index", lab.name, "tenant_id"))
        for p in lab.properties:
            if p.indexed and p.name not in ("id", "tenant_id"):
                items.append(SchemaItem("index", lab.name, p.name))
    return items


def render_schema_cypher(schema: GraphSchema) -> str:
    """The canonical text of ``cypher/schema.cypher`` (Neo4j 5 syntax)."""
    lines = [HEADER.rstrip("\n"), f"// schema version {schema.version}", ""]
    for it in schema_items(schema):
        if it.kind == "unique":
            lines.append(
                f"CREATE CONSTRAINT {it.name} IF NOT EXISTS FOR (n:{it.label}) REQUIRE n.{it.prop} IS UNIQUE;"
            )
        else:
            lines.append(f"CREATE INDEX {it.name} IF NOT EXISTS FOR (n:{it.label}) ON (n.{it.prop});")
    return "\n".join(lines) + "\n"


def parse_schema_cypher(text: str, schema: GraphSchema) -> list[SchemaItem]:
    """Items of a schema.cypher text. Comments and blank lines are skipped; any other line must
    be one of the two generated statement shapes over identifiers declared in ``schema``.
    Raises SchemaError naming the offending line."""
    items: list[SchemaItem] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        m = _UNIQUE_RE.match(line)
        kind: Literal["unique", "index"] = "unique"
        if m is None:
            m, kind = _INDEX_RE.match(line), "index"
        if m is None:
            raise SchemaError(
                f"schema.cypher line {no} is not a generated constraint/index statement: {line!r}; "
                "regenerate the file with `hopweave cypher-schema PACK > cypher/schema.cypher`"
            )
        _, label, prop = m.groups()
        cypher_identifier(schema, "label", label)
        cypher_identifier(schema, "property", prop, label)
        items.append(SchemaItem(kind, label, prop))
    return items


def schema_cypher_path() -> Path:
    """The shipped ``cypher/schema.cypher`` (checkout or installed package). Raises ConfigError."""
    here = Path(__file__).resolve().parents[1]
    for cand in (here / "_cypher" / "schema.cypher", here.parent.parent / "cypher" / "schema.cypher"):
        if cand.is_file():
            return cand
    raise ConfigError("cannot find cypher/schema.cypher; reinstall hopweave or run from a checkout")


def load_schema_items(schema: GraphSchema, path: Path | None = None) -> list[SchemaItem]:
    """Parse the shipped (or given) schema.cypher against ``schema``."""
    p = path or schema_cypher_path()
    return parse_schema_cypher(p.read_text(encoding="utf-8"), schema)


def ddl_for(
    item: SchemaItem, caps: Capabilities, schema: GraphSchema, graph: str = "hopweave"
) -> list[tuple[str, ...]]:
    """Statements creating ``item`` on the engine: each a 1-tuple ``(cypher,)`` or a command tuple.

    On engines whose unique constraint is a command, the property index it needs comes first.
    """
    label = cypher_identifier(schema, "label", item.label)
    prop = cypher_identifier(schema, "property", item.prop, item.label)
    index = (caps.index_ddl.format(name=item.name, label=label, prop=prop),)
    if item.kind == "index":
        return [index]
    if caps.unique_ddl is not None:
        return [(caps.unique_ddl.format(name=item.name, label=label, prop=prop),)]
    if caps.unique_constraint_command is None:
        raise ConfigError(f"capability row {caps.name!r} has no way to create a unique constraint")
    cmd = tuple(
        a.format(graph=graph, label=item.label, prop=item.prop) for a in caps.unique_constraint_command
    )
    return [index, cmd]
