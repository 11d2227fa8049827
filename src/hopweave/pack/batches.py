"""A domain pack as ``(tenant, items)`` batches for a server graph store (Neo4j, FalkorDB).

The same items ``hopweave load`` writes into the embedded store (the pack's graph files, its
Document nodes, its gated metagraph) go through :meth:`CypherGraphStore.bulk_load`, so every
backend holds the same graph. Used by ``hopweave load-server`` and the congruence tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from hopweave.graph.base import Edge, Node
from hopweave.models.schema import GLOBAL_TENANT

Batch = tuple[str, Iterable[Node | Edge]]


class _LinkIndex:
    """(label, property, value) -> node id of the nodes the corpus links can name, filled while
    the graph batches stream past (a server store is not read back)."""

    def __init__(self, links: Sequence[Any]) -> None:
        self.keys = {(link.label, link.match) for link in links}
        self.ids: dict[tuple[str, str, str], str] = {}

    def tee(self, items: Iterable[Node | Edge]) -> Iterator[Node | Edge]:
        for it in items:
            if isinstance(it, Node):
                for label, prop in self.keys:
                    if it.label == label and prop in it.props:
                        key = (label, prop, str(it.props[prop]))
                        self.ids[key] = min(self.ids.get(key, it.id), it.id)
            yield it

    def resolve(self, label: str, match: str, value: str) -> str | None:
        return self.ids.get((label, match, value))


def pack_batches(pack_dir: str | Path, extra_graph: Iterable[Batch] = ()) -> Iterator[Batch]:
    """A pack as ``(tenant, items)`` batches, in load order: graph files (then ``extra_graph``),
    Document nodes, gated metagraph. Raises PackError / PatternValidationError (before any batch:
    the goals are gated first)."""
    from hopweave.pack.corpus import document_graph, load_corpus
    from hopweave.pack.loader import graph_items, metagraph_items, read_pack
    from hopweave.pack.manifest import pack_path

    p = read_pack(pack_dir)
    meta = metagraph_items(p)
    corpus = p.manifest.corpus
    index = _LinkIndex(corpus.links if corpus is not None else ())
    for tenant, items in [*graph_items(p), *extra_graph]:
        yield tenant, index.tee(items)
    if corpus is not None:
        tenant = p.manifest.tenant_for_corpus()
        docs = load_corpus(pack_path(p.directory, corpus.dir, "corpus"), p.schema, tenant)
        nodes, edges = document_graph(docs, corpus.links, schema=p.schema, resolve=index.resolve)
        yield tenant, [*nodes, *edges]
    yield GLOBAL_TENANT, meta
