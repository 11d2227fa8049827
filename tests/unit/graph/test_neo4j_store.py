"""Neo4jGraphStore without a server: no I/O in the constructor, settings checked, driver errors
translated into hopweave errors. (tests/integration/test_neo4j.py runs it against a server.)"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

neo4j = pytest.importorskip(
    "neo4j", reason="the neo4j driver is not installed: pip install 'hopweave[neo4j]'"
)

from factories import make_pattern  # noqa: E402

from hopweave.errors import (  # noqa: E402
    ConfigError,
    QueryTimeoutError,
    StoreAuthError,
    StoreError,
    StoreUnavailableError,
)
from hopweave.graph.neo4j_store import Neo4jGraphStore  # noqa: E402
from hopweave.graph.traverse import run_goal_patterns  # noqa: E402
from hopweave.models.common import Bindings, Session  # noqa: E402

DEAD = "bolt://127.0.0.1:9"  # discard port: nothing listens


@pytest.fixture
def dead(schema):
    store = Neo4jGraphStore(
        DEAD, ("neo4j", "pw"), schema, connection_timeout=0.5, max_transaction_retry_time=0
    )
    yield store
    store.close()


def test_constructor_does_no_io_and_checks_the_uri(schema) -> None:
    t0 = time.perf_counter()
    Neo4jGraphStore(DEAD, ("neo4j", "pw"), schema).close()
    assert time.perf_counter() - t0 < 1.0
    for bad in ("http://localhost:7474", "localhost:7687", ""):
        with pytest.raises(ConfigError):
            Neo4jGraphStore(bad, None, schema)


def test_unreachable_server_is_store_unavailable(dead) -> None:
    with pytest.raises(StoreUnavailableError):
        dead.verify()
    with pytest.raises(StoreUnavailableError):
        dead.get_node("deltabank", "CUST_4421")
    p = make_pattern(budget_ms=2000)
    b = Bindings(session=Session(tenant_id="deltabank", customer_id="C"), as_of=datetime(2026, 5, 12))
    [res] = run_goal_patterns(dead, "deltabank", [p], b)  # the executor reports it, others go on
    assert res.error and "StoreUnavailableError" in res.error


def _server_error(code: str, message: str) -> Exception:
    hydrate = getattr(neo4j.exceptions.Neo4jError, "_hydrate_neo4j", None)
    if hydrate is None:
        pytest.skip("this neo4j driver version cannot build server errors offline")
    return hydrate(code=code, message=message)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            lambda: _server_error(
                "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
                "The transaction has not completed within the timeout specified at its start",
            ),
            QueryTimeoutError,
        ),
        (
            lambda: _server_error(
                "Neo.ClientError.Schema.ConstraintValidationFailed",
                "Node(1) already exists with label `Customer` and property `id` = 'C1'",
            ),
            StoreError,
        ),
        (lambda: _server_error("Neo.ClientError.Statement.SyntaxError", "Invalid input"), StoreError),
        (lambda: neo4j.exceptions.AuthError("unauthorized"), StoreAuthError),
        (lambda: neo4j.exceptions.ServiceUnavailable("gone"), StoreUnavailableError),
        (lambda: neo4j.exceptions.SessionExpired("expired"), StoreUnavailableError),
    ],
)
def test_driver_errors_are_translated(dead, exc, expected) -> None:
    err = dead._translate(exc(), 50.0)
    assert type(err) is expected, (type(err), err)
    assert str(err)
