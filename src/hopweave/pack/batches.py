"""A domain pack as ``(tenant, items)`` batches for a server graph store (Neo4j, FalkorDB).

The same items ``hopweave load`` writes into the embedded store (the pack's graph files, its
Document nodes, its gated metagraph) go through :meth:`CypherGraphStore.bulk_load`, so every
backend holds the same graph. Used by ``hopweave load-server`` and the congruence tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from hopweave.graph.base import Edge, Node
from hopweave.models.schema import GLOBAL_TENANT

Batch = tuple[str, Iterable[Node | Edge]]


class _LinkIndex:
    """(tenant, label, property, value) -> node id of the nodes the corpus links can name, filled
    while the graph batches stream past (a server store is not read back). A document of tenant T
    links to T's nodes and the shared ones, as the embedded load's store lookups do."""

    def __init__(self, links: Sequence[Any]) -> None:
        self.keys = {(link.label, link.match) for link in links}
        self.ids: dict[tuple[str, str, str, str], str] = {}

    def tee(self, tenant: str, items: Iterable[Node | Edge]) -> Iterator[Node | Edge]:
        for it in items:
            if isinstance(it, Node):
                for label, prop in self.keys:
                    if it.label == label and prop in it.props:
                        key = (tenant, label, prop, str(it.props[prop]))
                        self.ids[key] = min(self.ids.get(key, it.id), it.id)
            yield it

    def resolver(self, tenant: str) -> Callable[[str, str, str], str | None]:
        def resolve(label: str, match: str, value: str) -> str | None:
            hits = [self.ids.get((t, label, match, value)) for t in (tenant, GLOBAL_TENANT)]
            return min((h for h in hits if h is not None), default=None)

        return resolve


def pack_batches(pack_dir: str | Path, extra_graph: Iterable[Batch] = ()) -> Iterator[Batch]:
    """A pack as ``(tenant, items)`` batches, in load order: graph files (then ``extra_graph``),
    Document nodes (one batch per document tenant, as ``hopweave load`` writes them), gated
    metagraph. Raises PackError / PatternValidationError (before any batch: the goals are gated
    first)."""
    from hopweave.pack.loader import document_items, graph_items, metagraph_items, read_pack

    p = read_pack(pack_dir)
    meta = metagraph_items(p)
    corpus = p.manifest.corpus
    index = _LinkIndex(corpus.links if corpus is not None else ())
    for tenant, items in [*graph_items(p), *extra_graph]:
        yield tenant, index.tee(tenant, items)
    doc_batches, _ = document_items(p, resolver=index.resolver)
    yield from doc_batches
    yield GLOBAL_TENANT, meta
