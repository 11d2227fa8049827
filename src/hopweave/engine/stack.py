"""The engine's view of the stages it composes (stores, embedder, understanding, profiles).

Everything the engine needs from the other packages goes through these small functions, so the
engine core reads one narrow interface: :class:`UnderstandingView` for the understanding stage,
``VectorIndex.search`` for documents, ``GraphStore`` for the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hopweave.engine.result import EntityItem
from hopweave.graph.base import GraphStore
from hopweave.models.common import Session
from hopweave.models.filters import FilterTree, parse_filter
from hopweave.models.ranking import RankingProfile


# ---- stores ------------------------------------------------------------------------------
def open_graph(store_dir: str | Path) -> GraphStore:
    """The embedded networkx graph of a store directory (``<dir>/graph``)."""
    from hopweave.graph import open_graph_store

    return open_graph_store(store_dir)


def open_index(store_dir: str | Path, schema: Any = None) -> Any | None:
    """The embedded qdrant-edge index of a store directory (``<dir>/vectors``), or None when the
    store has no vector collection (the engine then runs graph-only, flagged degraded).
    ``schema`` (the store's, whose chunk fields filters may name) defaults to the schema kept in
    the store's settings by ``hopweave load PACK``, else the shipped default."""
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.models.store_settings import read_store_settings

    if not (Path(store_dir) / "vectors").is_dir():
        return None
    if schema is None:
        settings = read_store_settings(store_dir)
        if settings is not None:
            schema = settings.schema()
        else:
            from hopweave.models.schema import GraphSchema
            from hopweave.paths import default_schema_path

            schema = GraphSchema.load(default_schema_path())
    return EdgeIndex(store_dir, schema)


def index_revision(index: Any | None) -> str:
    """A short token identifying the vector collection's contents (space + BM25 statistics)."""
    if index is None:
        return "no-index"
    try:
        info = index.require_info()
    except Exception:
        return "unavailable"
    return f"{info.space.key}|avg_len={info.avg_len:.4f}"


def default_embedder() -> Any:
    from hopweave.search.embedders import default_embedder as _d

    return _d()


def profile(name: str | None) -> RankingProfile:
    """A published ranking profile (the default hybrid profile when ``name`` is None)."""
    from hopweave.search.profiles import get_profile

    return get_profile(name)


# ---- understanding ---------------------------------------------------------------------------
@dataclass
class UnderstandingView:
    """What the engine reads from the understanding stage."""

    goal: str | None = None
    confidence: float = 0.0
    abstained: bool = True
    entities: tuple[EntityItem, ...] = ()
    entity_values: dict[str, Any] = field(default_factory=dict)
    filter: FilterTree | None = None
    lexical_query: str = ""
    dense_query: str = ""
    #: The goal the classifier would have picked when it abstained.
    best: str | None = None
    notes: tuple[str, ...] = ()


def make_understander(graph: GraphStore, embedder: Any) -> Any:
    """The understanding stage built from the graph's GoalTypes and vocabulary."""
    from hopweave.understand import Understander

    return Understander(graph, embedder=embedder)


def warm_understander(understander: Any) -> None:
    """Build the understanding stage's caches (the classifier's example index) now."""
    warm = getattr(understander, "warmup", None)
    if callable(warm):
        warm()
        return
    try:  # a tenant that owns nothing: builds the classifier index and the entity ruler
        understander.understand("warm up the late fee classifier", Session(tenant_id="hopweave-warmup"),
                                datetime(2026, 1, 1))
    except Exception:
        pass


def warm_index(index: Any, embedder: Any) -> None:
    """Open the vector index (a tenant that owns nothing: no rows, no side effect)."""
    try:
        from hopweave.search.profiles import get_profile

        index.search("hopweave-warmup", "warm up", get_profile(None), limit=1,
                     query_vector=embedder.embed(["warm up"])[0], query_space=embedder.space)
    except Exception:  # a missing collection is reported by the first real search
        pass


def understand(understander: Any, utterance: str, session: Session, as_of: datetime) -> Any:
    return understander.understand(utterance, session, as_of)


def understanding_view(u: Any, utterance: str) -> UnderstandingView:
    """Normalise an ``Understanding`` (or None when the stage failed) for the engine."""
    if u is None:
        return UnderstandingView(lexical_query=utterance, dense_query=utterance)
    goal = getattr(u, "goal", None)
    cls = getattr(u, "classification", None)
    best = getattr(cls, "best", None) if cls is not None else None
    if goal is not None and not isinstance(goal, str):
        goal = getattr(goal, "name", None) or str(goal)
    ents: list[EntityItem] = []
    values: dict[str, Any] = {}
    for e in getattr(u, "entities", None) or ():
        etype = getattr(e, "type", None) or getattr(e, "label", None)
        value = getattr(e, "value", None)
        if value is None:
            value = getattr(e, "canonical", None)
        if etype is None:
            continue
        ents.append(EntityItem(type=str(etype), value=value, source=str(getattr(e, "source", "") or ""),
                               text=str(getattr(e, "text", "") or ""), node_id=getattr(e, "node_id", None)))
        values.setdefault(str(etype), value)
    if callable(getattr(u, "entity_bindings", None)):
        values = dict(u.entity_bindings())
    flt = getattr(u, "filter", None)
    if flt is not None and not hasattr(flt, "op"):
        flt = parse_filter(flt)
    plan = getattr(u, "lexical", None) or getattr(u, "lexical_plan", None)
    lexical = utterance
    if plan is not None:
        q = getattr(plan, "query", None) or getattr(plan, "text", None)
        if isinstance(q, str) and q.strip():
            lexical = q
        else:
            terms = list(getattr(plan, "terms", ()) or ()) + list(getattr(plan, "expansions", ()) or ())
            if terms:
                lexical = " ".join([utterance, *[str(t) for t in terms]])
    return UnderstandingView(
        goal=goal,
        confidence=float(getattr(u, "confidence", 0.0) or 0.0),
        abstained=bool(getattr(u, "abstained", False)),
        entities=tuple(sorted(ents, key=lambda x: (x.type, str(x.value)))),
        entity_values=values,
        filter=flt,
        lexical_query=lexical,
        dense_query=utterance,
        best=best if isinstance(best, str) else None,
        notes=tuple(str(n) for n in getattr(u, "notes", ()) or ()),
    )
