"""Build a DeltaBank store at any size: the generator step, then the one pack loader.

:func:`load_deltabank` loads the pack (``examples/deltabank``) with ``hopweave.pack.loader``;
at the default size and seed it reads the committed graph files, at any other size it writes
freshly generated ones into a copy of the pack first (same loader, same checks).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from .generate import DEFAULT_NODES, DEFAULT_SEED, write_graph_files

#: The DeltaBank pack folder.
PACK_DIR = Path(__file__).resolve().parents[1]


def default_example_dir() -> Path:
    """The DeltaBank pack folder (``examples/deltabank``)."""
    return PACK_DIR


def sized_pack(tmp: Path, nodes: int, seed: int) -> Path:
    """A copy of the pack (without its graph files and generator) with a generated graph."""
    dst = tmp / "deltabank"
    shutil.copytree(PACK_DIR, dst, ignore=shutil.ignore_patterns("graph", "generator", "__pycache__"))
    write_graph_files(dst / "graph", nodes=nodes, seed=seed)
    return dst


def load_deltabank(store_dir: str | Path, *, nodes: int = DEFAULT_NODES, seed: int = DEFAULT_SEED,
                   with_vectors: bool = True, example_dir: str | Path | None = None,
                   progress: Any = None) -> dict[str, Any]:
    """Load the DeltaBank pack into ``store_dir`` with ``nodes`` generated nodes (about; at least
    the ~1,500 of the fixed cases) from ``seed``. ``example_dir`` is accepted for old callers and
    must be the pack folder. Returns the loader's summary (nodes, edges, goals, patterns,
    metagraph_revision, vectors, seconds, ...). Raises what ``load_pack`` raises."""
    from hopweave.pack.loader import load_pack

    if example_dir is not None and Path(example_dir).resolve() != PACK_DIR:
        raise ValueError(f"example_dir must be the DeltaBank pack {PACK_DIR}, got {example_dir}")
    if nodes == DEFAULT_NODES and seed == DEFAULT_SEED and (PACK_DIR / "graph").is_dir():
        return load_pack(PACK_DIR, store_dir, with_vectors=with_vectors, progress=progress)
    with tempfile.TemporaryDirectory(prefix="deltabank-pack-") as tmp:
        pack = sized_pack(Path(tmp), nodes, seed)
        return load_pack(pack, store_dir, with_vectors=with_vectors, progress=progress)


def metagraph_items(schema: Any = None) -> list[Any]:
    """The pack's gated GoalType / TraversalPattern nodes, HAS_PATTERN edges and FilterMapping
    node, domain-free (the store-wide ids a hand-built test store without store settings reads);
    ``hopweave load`` writes the domain-scoped ones. ``schema``: default the pack's merged schema."""
    from hopweave.graph.metagraph_io import gated_items, load_goal_files
    from hopweave.models.schema import GraphSchema
    from hopweave.understand.filter_map import filter_mapping_node, read_mapping_file

    schema = schema or GraphSchema.load(PACK_DIR / "schema.yaml")
    goals, raws = load_goal_files(PACK_DIR / "goals")
    items, _ = gated_items(schema, goals, raws)
    return [*items, filter_mapping_node(schema, read_mapping_file(PACK_DIR / "filters.yaml"))]


def deltabank_batches(nodes: int = DEFAULT_NODES, seed: int = DEFAULT_SEED) -> Iterator[tuple[str, Any]]:
    """The pack at ``nodes``/``seed`` as ``(tenant, items)`` batches for a server store
    (:func:`hopweave.pack.batches.pack_batches`); consume each batch before the next."""
    from hopweave.pack.batches import pack_batches

    if nodes == DEFAULT_NODES and seed == DEFAULT_SEED and (PACK_DIR / "graph").is_dir():
        yield from pack_batches(PACK_DIR)
        return
    with tempfile.TemporaryDirectory(prefix="deltabank-pack-") as tmp:
        yield from pack_batches(sized_pack(Path(tmp), nodes, seed))
