"""Build a DeltaBank store: graph (generator + documents) and metagraph, in one atomic bulk load.

:func:`load_deltabank` is the one entry point (the CLI ``hopweave load`` calls it). Engineer E
adds the corpus -> vector index ingestion here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

from hopweave.deltabank.generate import DEFAULT_NODES, DEFAULT_SEED, generate
from hopweave.deltabank.maria import TENANT
from hopweave.graph import open_graph_store
from hopweave.graph.base import Edge, Node
from hopweave.graph.gates import gate_write
from hopweave.graph.metagraph_io import goal_node, load_goal_files, pattern_node
from hopweave.models.metagraph import goal_node_id, pattern_node_id
from hopweave.models.schema import GLOBAL_TENANT


def default_example_dir() -> Path | None:
    """``examples/deltabank`` of the source checkout, if there is one."""
    from hopweave.paths import repo_root

    root = repo_root()
    d = root / "examples" / "deltabank" if root else None
    return d if d is not None and d.is_dir() else None


def document_items(example_dir: Path | None, schema: Any, tenant_id: str = TENANT) -> Iterator[Node | Edge]:
    """Hook: the Document nodes (and their edges) of the example's policy corpus
    (``<example_dir>/corpus``), if present. The corpus format belongs to ``deltabank.corpus``."""
    if example_dir is None or not (example_dir / "corpus").is_dir():
        return
    from hopweave.deltabank.corpus import document_graph, load_corpus

    nodes, edges = document_graph(load_corpus(example_dir / "corpus", schema, tenant_id))
    yield from nodes
    yield from edges


def ingest_example_corpus(store_dir: str | Path, example_dir: Path | None, schema: Any) -> dict[str, Any]:
    """(Re)build ``<store_dir>/vectors`` from the example's policy corpus, aside and swapped in
    atomically (a crash leaves the previous complete index). Returns the ingest summary ({} when
    the example has no corpus)."""
    if example_dir is None or not (example_dir / "corpus").is_dir():
        return {}
    from hopweave.deltabank.corpus import load_corpus
    from hopweave.search.embedders import default_embedder
    from hopweave.search.staging import rebuild_index

    docs = load_corpus(example_dir / "corpus", schema, TENANT)
    out = rebuild_index(store_dir, schema, docs, default_embedder())  # replace: a removed document must not linger
    return {"documents": out["documents"], "chunks": out["chunks"], "embedded": out["embedded"]}


def metagraph_items(goals_dir: str | Path | None, schema: Any) -> tuple[list[Node | Edge], int, int]:
    """Gated GoalType/TraversalPattern nodes and HAS_PATTERN edges from the goal files."""
    goals, raws = load_goal_files(goals_dir)
    patterns = gate_write(schema, goals, raws, stored=())
    items: list[Node | Edge] = [goal_node(g) for g in goals]
    items += [pattern_node(p) for p in patterns]
    items += [Edge(goal_node_id(p.goal), pattern_node_id(p.name), "HAS_PATTERN") for p in patterns]
    from hopweave.understand.filter_map import filter_mapping_node  # the entity -> filter mapping (C)

    items.append(filter_mapping_node(schema))
    return items, len(goals), len(patterns)


def load_deltabank(
    store_dir: str | Path,
    *,
    nodes: int = DEFAULT_NODES,
    seed: int = DEFAULT_SEED,
    example_dir: str | Path | None = None,
    goals_dir: str | Path | None = None,
    with_vectors: bool = True,
) -> dict[str, Any]:
    """(Re)build the DeltaBank graph in ``<store_dir>/graph`` (replacing what was there, atomically).

    ``nodes`` ~ total node count (>= ~1,200: the fixed cases), ``seed`` the generator seed,
    ``example_dir`` the example folder (default: the checkout's ``examples/deltabank``),
    ``goals_dir`` the goal files (default: the shipped ``metagraph/goals``), ``with_vectors``
    False = graph only (no corpus embedding; the graph tests and the 1M-node benchmark).
    Returns a summary: nodes, edges, labels, goals, patterns, metagraph_revision, seconds.
    Raises PatternValidationError (a goal file fails a gate), SchemaError/TenantError (a
    generator bug), StoreError."""
    t0 = time.perf_counter()
    ex = Path(example_dir) if example_dir is not None else default_example_dir()
    store = open_graph_store(store_dir)
    meta, n_goals, n_patterns = metagraph_items(goals_dir, store.schema)
    with store.bulk(replace=True) as bulk:
        for tenant, items in generate(nodes=nodes, seed=seed):
            bulk.write(tenant, items)
        bulk.write(TENANT, document_items(ex, store.schema, TENANT))
        bulk.write(GLOBAL_TENANT, meta)
    stats = store.stats()
    vectors = ingest_example_corpus(store_dir, ex, store.schema) if with_vectors else {}
    summary = {
        "store": str(Path(store_dir)),
        "tenants": [TENANT, "northbank"],
        "nodes": stats["nodes"],
        "edges": stats["edges"],
        "labels": stats["labels"],
        "goals": n_goals,
        "patterns": n_patterns,
        "metagraph_revision": store.metagraph_revision(),
        "seed": seed,
        "vectors": vectors,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    store.close()
    return summary
