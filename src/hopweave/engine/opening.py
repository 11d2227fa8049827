"""What :meth:`Engine.open <hopweave.engine.engine.Engine.open>` opens: the stores named by URI
(or given open, or built by hand), the domains serving each tenant and the store's settings, as
one :class:`OpenedParts` the engine is built from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hopweave.engine.config import EngineConfig
from hopweave.engine.stages import DocumentIndex
from hopweave.errors import InputError, StoreNotLoadedError
from hopweave.graph.base import GraphStore
from hopweave.models.domain import DomainRegistry

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.models.store_settings import StoreSettings
    from hopweave.stores.front import Stores


@dataclass(frozen=True)
class OpenedParts:
    """The stores and settings an engine is built from."""

    graph: GraphStore
    index: DocumentIndex | None
    domains: DomainRegistry | None
    store_dir: Path | None
    settings: "StoreSettings | None"


def open_parts(stores: "str | Path | Stores | None", graph: "GraphStore | str | None",
               vectors: "str | Path | None", index: DocumentIndex | None, domains: DomainRegistry | None,
               config: EngineConfig, *, prefetch_encoder: bool) -> OpenedParts:
    """Open the stores of :meth:`Engine.open <hopweave.engine.engine.Engine.open>` (its
    arguments mean the same), overlapping spaCy's and (``prefetch_encoder``) the encoder's
    loading with the stores' reads.

    Returns:
        The opened parts (``index`` and ``domains`` win over the opened ones when given).

    Raises:
        InputError: conflicting arguments (Stores and a GraphStore, the graph twice...).
        StoreNotLoadedError: a server store never loaded from a pack, without ``domains``.
        The errors of :func:`hopweave.open` (URIs, missing or corrupt stores).
    """
    from hopweave.search.embedder import prefetch_default_encoder
    from hopweave.stores.front import Stores, open_stores
    from hopweave.understand.text import prefetch_spacy

    prefetch_spacy()  # its import (pure Python) overlaps the stores' reads and hashing
    if prefetch_encoder:
        prefetch_default_encoder()  # so does the encoder session's (file reads, native set-up)
    if isinstance(graph, GraphStore):
        if isinstance(stores, Stores):
            raise InputError("Engine.open: give either a Stores or a GraphStore instance, not both")
        side = None
        if stores is not None:  # a store directory supplying the index and the settings
            side = open_stores(stores, vectors)
            side.graph.close()
        return OpenedParts(graph, index if index is not None else (side.index if side else None),
                           domains if domains is not None else (side.domains() if side else None), None,
                           side.settings if side else None)
    if isinstance(stores, Stores):
        if graph is not None or vectors is not None:
            raise InputError("Engine.open: the Stores are already open; do not pass graph= or vectors= too")
        opened = stores
    else:
        if stores is not None and graph is not None:
            raise InputError(f"Engine.open: give the graph once (got {stores!r} and graph={graph!r})")
        opened = open_stores(graph if graph is not None else stores, vectors, search_process=config.search_process)
    if domains is None and opened.settings is None and opened.graph_uri.kind not in ("embedded", "memory"):
        opened.close()
        raise StoreNotLoadedError(f"{opened.graph_uri.display} holds no hopweave store settings (never loaded "
                                  f"from a pack): run `hopweave load PACK --graph {opened.graph_uri.display}`, "
                                  "or pass domains= to Engine.open")
    return OpenedParts(opened.graph, index if index is not None else opened.index,
                       domains if domains is not None else opened.domains(), opened.store_dir, opened.settings)


__all__ = ["OpenedParts", "open_parts"]
