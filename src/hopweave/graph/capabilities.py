"""What differs between the Cypher engines hopweave runs on, as data.

The compiled pattern and filter queries use only the openCypher subset that Neo4j 5 and FalkorDB
both accept (verified by the congruence suites); the compiler reads two fields from here (the
index guard and the subquery opening). Everything that *does* differ —
schema DDL, how a time bound is passed, how errors look, whether a read-only entry point exists —
is one row of :data:`CAPABILITIES`, read by ``cypher_store`` and its two driver subclasses.
Add a field here instead of writing ``if engine == ...`` anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hopweave.errors import ConfigError


@dataclass(frozen=True)
class Capabilities:
    """One Cypher engine's differences (see the module docstring)."""

    name: str
    #: ``(n:A|B)`` label disjunction inside a node pattern (FalkorDB: no; we use WHERE n:A OR n:B).
    label_disjunction: bool
    #: ``IF NOT EXISTS`` on CREATE INDEX / CONSTRAINT.
    ddl_if_not_exists: bool
    #: Template of a property index statement (``{name}``, ``{label}``, ``{prop}`` are validated
    #: identifiers, already backtick-escaped where needed).
    index_ddl: str
    #: Template of a unique-id constraint as a Cypher statement, or None when the engine
    #: creates constraints through a command (``unique_constraint_command``).
    unique_ddl: str | None
    #: Non-Cypher command creating a unique constraint (FalkorDB ``GRAPH.CONSTRAINT``), or None.
    unique_constraint_command: tuple[str, ...] | None
    #: How a per-query time bound is passed to the server: transaction timeout in seconds
    #: (Neo4j) or the GRAPH.QUERY TIMEOUT argument in milliseconds (FalkorDB).
    timeout_unit: Literal["s", "ms"]
    #: The client-side deadline runs the query on a helper thread and stops waiting
    #: ``client_grace_ms`` after the deadline (a network server can stall; a server's own time
    #: bound can fire late). False: the call is made directly and a socket timeout is the
    #: backstop.
    client_deadline_thread: bool
    #: The default of that grace (the store's ``client_grace_ms``) in milliseconds.
    client_grace_ms: float
    #: Smallest server-side timeout the engine accepts, in milliseconds.
    min_timeout_ms: int
    #: The engine has a read-only query entry point (FalkorDB GRAPH.RO_QUERY, Neo4j READ access).
    read_only_queries: bool
    #: Substrings of server error messages that mean "query exceeded its time bound".
    timeout_markers: tuple[str, ...]
    #: Substrings of server error messages that mean "unique constraint violated".
    constraint_markers: tuple[str, ...]
    #: How a property is written in a comparison that must not be answered from an index
    #: (``{x}`` = the property expression). FalkorDB 4's range index compares strings wrongly
    #: (``v < 'B'`` returned 'Plus' and 'B') and equates booleans with numbers
    #: (``v = 1`` matched ``true``); ``[{x}][0]`` is the same value but not index-answerable. Used
    #: for every range and for equality with a non-string value.
    index_guard: str
    #: Rows per UNWIND batch when bulk loading.
    bulk_batch: int
    #: Statement deleting everything (Neo4j batches it so a million nodes fit in memory).
    clear_query: str
    #: The compiled query enforces ``max_visited`` (counts visits like the walker, cuts after the
    #: hop that passes it; ``budget_ms`` is the server time bound, see ``timeout_unit``).
    max_visited_in_query: bool
    #: Rows a pattern cut by ``max_visited`` returns: "none" on the Cypher engines (the query
    #: stops between hops and keeps nothing), where the networkx walker returns the rows its
    #: depth-first walk found before the cut. The truncation flag, reason and ``visited``
    #: (``max_visited + 1``) are the same on every backend.
    max_visited_rows_on_cut: Literal["none", "partial"]
    #: Opening of a subquery importing ``{vars}`` (closed by ``}``): Neo4j 5's variable-scope
    #: clause (``CALL { WITH x ... }`` is deprecated there), FalkorDB's importing ``WITH``
    #: (FalkorDB 4 does not parse ``CALL (x) {``).
    subquery_open: str
    #: Read-only listing of the single-label node indexes, one row per index with ``labels``
    #: (a list or a string) and ``props`` (a list): what ``hopweave doctor`` compares with the schema.
    index_list_query: str
    #: The same for the unique constraints.
    unique_list_query: str


NEO4J = Capabilities(
    name="neo4j",
    label_disjunction=True,
    ddl_if_not_exists=True,
    index_ddl="CREATE INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})",
    unique_ddl="CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{prop} IS UNIQUE",
    unique_constraint_command=None,
    timeout_unit="s",
    client_deadline_thread=True,
    client_grace_ms=50.0,
    min_timeout_ms=1,
    read_only_queries=True,
    timeout_markers=("TransactionTimedOut", "Transaction.Terminated"),
    constraint_markers=("ConstraintValidationFailed", "already exists with label"),
    index_guard="{x}",
    bulk_batch=5_000,
    # Neo4j 5's variable-scope subquery (``CALL { WITH n ... }`` is deprecated there).
    clear_query="MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS",
    max_visited_in_query=True,
    max_visited_rows_on_cut="none",
    subquery_open="CALL ({vars}) {{",
    index_list_query=("SHOW INDEXES YIELD entityType, labelsOrTypes, properties WHERE entityType = 'NODE' "
                      "RETURN labelsOrTypes AS labels, properties AS props"),
    unique_list_query=("SHOW CONSTRAINTS YIELD type, labelsOrTypes, properties "
                       "WHERE type IN ['UNIQUENESS', 'NODE_PROPERTY_UNIQUENESS'] "
                       "RETURN labelsOrTypes AS labels, properties AS props"),
)

FALKORDB = Capabilities(
    name="falkordb",
    label_disjunction=False,
    ddl_if_not_exists=False,
    index_ddl="CREATE INDEX FOR (n:{label}) ON (n.{prop})",
    unique_ddl=None,
    unique_constraint_command=(
        "GRAPH.CONSTRAINT",
        "CREATE",
        "{graph}",
        "UNIQUE",
        "NODE",
        "{label}",
        "PROPERTIES",
        "1",
        "{prop}",
    ),
    timeout_unit="ms",
    # FalkorDB's TIMEOUT is fired by its cron thread and is met in server CPU time, not wall
    # time: on a busy machine (load 12 on 2 cores) a hub walk stopped after ~budget of CPU but
    # 2.5-3x the budget of wall time (docs/parity.md, "Budgets on servers"). The client stops
    # waiting at the deadline instead (no grace: a query cut by either side returns the same
    # truncated result; the thread hop costs 1-2 ms a pattern).
    client_deadline_thread=True,
    client_grace_ms=0.0,
    min_timeout_ms=1,
    read_only_queries=True,
    timeout_markers=("Query timed out", "timed out"),
    constraint_markers=("unique constraint violation",),
    index_guard="[{x}][0]",
    bulk_batch=5_000,
    clear_query="MATCH (n) DETACH DELETE n",
    max_visited_in_query=True,
    max_visited_rows_on_cut="none",
    subquery_open="CALL {{ WITH {vars}",
    index_list_query="CALL db.indexes() YIELD label, properties, entitytype WHERE entitytype = 'NODE' "
                     "RETURN label AS labels, properties AS props",
    unique_list_query="CALL db.constraints() YIELD type, label, properties, entitytype, status "
                      "WHERE type = 'UNIQUE' AND entitytype = 'NODE' AND status = 'OPERATIONAL' "
                      "RETURN label AS labels, properties AS props",
)

#: The one table. Keys are the engine names used in settings and CLI options.
CAPABILITIES: dict[str, Capabilities] = {c.name: c for c in (NEO4J, FALKORDB)}


def capabilities(engine: str) -> Capabilities:
    """The row of :data:`CAPABILITIES` for ``engine``; raises ConfigError for unknown engines."""
    try:
        return CAPABILITIES[engine]
    except KeyError:
        raise ConfigError(
            f"unknown Cypher engine {engine!r}; known engines: {sorted(CAPABILITIES)}"
        ) from None
