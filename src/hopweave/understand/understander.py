"""The understanding stage as one call: classify + resolve + map to filters + lexical plan.

:class:`UnderstandingStage` is the contract the engine composes (``understand`` returns an
:class:`~hopweave.understand.models.Understanding`); :class:`Understander` implements it for one
domain (its :class:`~hopweave.models.domain.DomainSettings`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hopweave.bounded import check_deadline
from hopweave.errors import InputError
from hopweave.models.common import Session, check_tenant, to_datetime
from hopweave.models.domain import DomainSettings
from hopweave.understand.classifier import GoalClassifier
from hopweave.understand.filter_map import FilterMapping, compile_filter, instant, read_filter_mapping
from hopweave.understand.lexical_plan import _stop_words, build_lexical_plan
from hopweave.understand.models import Understanding
from hopweave.understand.resolver import EntityResolver
from hopweave.understand.scope import session_scope
from hopweave.understand.temporal import time_windows
from hopweave.understand.text import MAX_CHARS, check_utterance, looks_non_english

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.search.embedder import Embedder
    from hopweave.understand.calibration import Calibration
    from hopweave.understand.classifier import ClassifierConfig


@runtime_checkable
class UnderstandingStage(Protocol):
    """Stage 1 as the engine sees it."""

    def understand(self, utterance: str, session: Session, as_of: datetime | str) -> Understanding:
        """The typed understanding of one request. Raises InputError / TenantError / ConfigError."""
        ...

    def warmup(self) -> None:
        """Build caches now (no request pays for them). Reads only."""
        ...


class Understander:
    """``understand(utterance, session, as_of) -> Understanding``: the engine's stage 1.

    Args:
        store: the GraphStore (GoalType nodes, vocabulary, FilterMapping node, tenant data).
        embedder: the offline embedder (default: the project's default, loaded on first use).
        threshold: abstain below this confidence (default: the classifier settings').
        max_chars: longest accepted utterance (longer raises InputError).
        classifier_config: classifier settings (the engine passes the store's for the domain;
            default: the engine's own, ``ClassifierConfig()``).
        calibration: classifier calibration (default: the file the settings name when they were
            read from a file, else the engine's ``DEFAULT_CALIBRATION``).
        settings: the domain's settings (subject, identifiers, authoritative attributes,
            synonyms, amounts, identifier labels).
        enrich_from_graph: add the authoritative attributes' values on record as entities.

    No I/O in the constructor; thread-safe; caches are keyed by graph revisions.
    """

    def __init__(
        self,
        store: "GraphStore",
        embedder: "Embedder | None" = None,
        *,
        settings: DomainSettings,
        threshold: float | None = None,
        max_chars: int = MAX_CHARS,
        classifier_config: "ClassifierConfig | None" = None,
        calibration: "Calibration | None" = None,
        enrich_from_graph: bool = True,
    ) -> None:
        self.store = store
        self.settings = settings
        self.max_chars = max_chars
        self.classifier = GoalClassifier(store, embedder, config=classifier_config, calibration=calibration,
                                         threshold=threshold, domain=settings.name)
        self.resolver = EntityResolver(store, settings, enrich_from_graph=enrich_from_graph)

    def filter_mapping(self, tenant_id: str) -> FilterMapping:
        """The tenant's FilterMapping (parsed once per metagraph revision and FilterMapping
        writes through this store, see :func:`read_filter_mapping`). Raises ConfigError."""
        return read_filter_mapping(self.store, tenant_id)

    def warmup(self, tenant_id: str = "hopweave-warmup") -> None:
        """Load the embedder, build the classifier index and compile the entity ruler now (so the
        first request does not pay for it). Reads only; ``tenant_id`` needs to own nothing."""
        self.classifier.classify("warm up")
        self.resolver.pipeline(check_tenant(tenant_id))

    def understand(self, utterance: str, session: Session, as_of: datetime | str) -> Understanding:
        """Classify, resolve and map one request.

        Returns:
            Understanding: goal (None when the classifier abstained), calibrated confidence,
            entities (session identity first), mentions (ids the session may not use, claims
            the record contradicts), the filter tree (entity clauses + always-on clauses from
            the FilterMapping node) and the lexical plan.

        Raises:
            InputError: empty/whitespace-only/over-long utterance, missing or malformed as_of,
                or a session that is not a Session.
            TenantError: a malformed tenant.
            ConfigError: the graph has no FilterMapping node, or the classifier settings or
                calibration are missing.
        """
        if not isinstance(session, Session):
            raise InputError("session must be a hopweave.models.common.Session (the authenticated session)")
        text = check_utterance(utterance, self.max_chars)
        when = to_datetime(as_of)
        if when is None:
            raise InputError("as_of is required: relative dates are evaluated against the request's as_of")
        notes: list[str] = []
        if looks_non_english(text, _stop_words()):
            notes.append("the utterance does not look like English; the classifier and vocabulary are English-only")
        if not session.locale.lower().startswith("en"):
            notes.append(f"session locale {session.locale!r}: the classifier and vocabulary are English-only")
        check_deadline("goal classification")
        cls = self.classifier.classify(text)
        if cls.abstained:
            notes.append(
                f"no confident goal (best {cls.best} at {cls.confidence:.2f} < threshold {cls.threshold:.2f}): "
                "fall back to generic retrieval or ask the customer to clarify"
            )
        check_deadline("entity resolution")
        res = self.resolver.resolve(text, session, when)
        check_deadline("filter mapping")
        mapping = self.filter_mapping(session.tenant_id)
        store: Any = _VocabularyReads(self.store, self.resolver.pipeline(session.tenant_id)[2])
        tree, fnotes = compile_filter(mapping, res.entities, session, store, self.store.schema,
                                      unscoped=res.unscoped, as_of=when)
        # every interface's scope (hopweave.understand.scope): the record's authoritative values,
        # identity and always-on clauses, appended where the compiled filter lacks them
        tree = session_scope(mapping, self.settings, res.record, session, when).complete(tree)
        notes.extend(res.notes)
        notes.extend(fnotes)
        windows = tuple(time_windows(text, when))
        notes.extend(w.note(when) for w in windows)
        if res.unscoped:
            notes.append(f"no {', '.join(res.unscoped)} on record for this session: only documents that are "
                         "not specific to one are searched")
        check_deadline("the lexical plan")
        lexical = build_lexical_plan(text, res.entities, session, when, store, self.settings)
        return Understanding(
            utterance=utterance,
            as_of=when,
            tenant_id=session.tenant_id,
            goal=cls.goal,
            confidence=cls.confidence,
            abstained=cls.abstained,
            classification=cls,
            entities=tuple(res.entities),
            mentions=tuple(res.mentions),
            filter=tree,
            documents_at=instant(when) if mapping.in_force is not None else None,
            lexical=lexical,
            notes=tuple(notes),
            revisions={
                "metagraph": cls.metagraph_revision,
                "vocabulary": res.vocabulary_revision,
                "filter_mapping": mapping.revision,
                "calibration": cls.calibration_id,
            },
            domain=self.settings.name,
            time_windows=windows,
        )


class _VocabularyReads:
    """The store as the filter mapping and the lexical plan read it: ``get_node`` of a vocabulary
    node is served from the resolver's cached vocabulary (the same tenant-visible nodes, read
    once per revision); everything else goes to the store."""

    def __init__(self, store: "GraphStore", nodes: dict[str, Any]) -> None:
        from hopweave.understand.read_cache import cache_of

        self._store = store
        self._nodes = nodes
        self._hopweave_read_cache = cache_of(store)  # walks through this view share the store's read cache

    def get_node(self, tenant_id: str, node_id: str) -> Any:
        node = self._nodes.get(node_id)
        return node if node is not None else self._store.get_node(tenant_id, node_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def understanding_json(u: Understanding, qdrant_filter: Any = None) -> dict[str, Any]:
    """The CLI/JSON view: goal, confidence, entities, mentions, filter tree (+ display and the
    compiled Qdrant filter when given), lexical plan, notes, revisions."""
    d = u.to_json_dict()
    if qdrant_filter is not None:
        d["qdrant_filter"] = qdrant_filter
    return d
