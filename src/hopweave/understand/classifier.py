"""Goal classification from the graph's ``:GoalType`` nodes.

Labels, descriptions and example utterances are read from the store (``GraphStore.goal_types()``)
and re-read whenever ``GraphStore.metagraph_revision()`` changes; the per-revision index (example
embeddings + a character n-gram TF-IDF index) is cached. There is no training step: scoring is
nearest-example, and the calibration (``calibration.py``) maps goal-agnostic features to a
probability, so a GoalType added to the graph is classifiable on the next call.

Settings (``<pack>/classifier.yaml``) and calibration parameters
(``<pack>/classifier_calibration.json``) are data; see the comments in the YAML file. A domain
without them gets the engine's own defaults: ``ClassifierConfig()`` (the field defaults below)
and ``calibration.DEFAULT_CALIBRATION``; never another pack's files.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopweave.bounded import DataRegex, compile_data_regex, regex_problem
from hopweave.errors import ConfigError, InputError
from hopweave.fileio import read_yaml
from hopweave.models.keys import with_key_hints
from hopweave.understand.calibration import (
    DEFAULT_CALIBRATION,
    Calibration,
    ClassifierFingerprint,
    load_calibration,
)
from hopweave.understand.models import Classification, GoalCandidate
from hopweave.understand.text import CharNgramIndex, check_utterance, split_clauses

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.graph.base import GraphStore
    from hopweave.search.embedder import Embedder


class ClassifierConfig(BaseModel):
    """The classifier settings file (``<pack>/classifier.yaml``). The field defaults are the
    engine's own settings, used for a domain whose pack has no classifier file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    lexical_weight: float = Field(default=0.3, ge=0.0, le=5.0)
    #: A goal's score is the mean of its ``top_k`` best example scores (fewer if it has fewer).
    top_k: int = Field(default=3, ge=1, le=50)
    char_ngrams: tuple[int, int] = (3, 5)
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    use_descriptions: bool = False
    clause_separators: str = r"[.?!;]+|,"
    min_clause_words: int = Field(default=2, ge=1)
    #: At most this many clauses of one utterance are scored (bounds the cost of long input).
    max_clauses: int = Field(default=8, ge=1, le=64)
    #: The clauses of an utterance are scored only when the whole utterance's calibrated
    #: confidence is below this (one encoder pass instead of one per clause when the whole is
    #: decisive); 1.0 always scores them.
    decisive_confidence: float = Field(default=0.9, ge=0.0, le=1.0)
    #: A clause read alone (:meth:`GoalClassifier.read_clauses`) that no goal takes is a request
    #: the domain does not handle when its ``background`` score is at least this and beats its
    #: best goal's score by ``request_margin``: it reads like a known out-of-scope request, not
    #: like a detail of the request around it ("how much can I get").
    request_background: float = Field(default=0.45, ge=-1.0, le=2.0)
    request_margin: float = Field(default=0.05, ge=0.0, le=2.0)
    #: A clause read alone is a request of its goal only when that goal is confident, its score is
    #: at least ``min_part_score`` (a clause that only names a plan or product is not a request)
    #: and, when it is not the whole utterance's best goal, it beats that goal's score on the
    #: clause by ``part_margin`` (a detail of the whole's request leans to the whole's goal).
    min_part_score: float = Field(default=0.59, ge=-1.0, le=2.0)
    part_margin: float = Field(default=0.15, ge=0.0, le=2.0)
    calibration_file: str = "classifier_calibration.json"
    background: tuple[str, ...] = ()
    #: Directory the file was read from (calibration_file is relative to it). Not in the YAML.
    base_dir: Optional[str] = None

    @field_validator("clause_separators")
    @classmethod
    def _safe_separators(cls, v: str) -> str:
        problem = regex_problem(v)
        if problem is not None:
            raise ValueError(f"clause_separators {v!r} is refused: {problem}")
        return v

    def separators(self) -> DataRegex:
        """The clause separators, case-insensitive and time-bounded (:mod:`hopweave.bounded`).
        Raises UnsafeRegexError (not reached for a validated config)."""
        return compile_data_regex(self.clause_separators, "classifier settings, key clause_separators")

    def calibration_path(self) -> Path | None:
        """The calibration file next to the settings file they were read from (None: settings
        not read from a file, e.g. the engine defaults or a store's copy)."""
        return Path(self.base_dir) / self.calibration_file if self.base_dir else None


def classifier_settings(config: dict[str, Any] | None, calibration: dict[str, Any] | None
                        ) -> tuple[ClassifierConfig | None, Calibration | None]:
    """Classifier settings and calibration as a store keeps them for a domain (the pack's
    ``classifier.yaml`` and calibration file, as data). Raises ConfigError when invalid."""
    try:
        cfg = ClassifierConfig.model_validate(config) if config is not None else None
        cal = Calibration.model_validate(calibration) if calibration is not None else None
    except Exception as exc:
        raise ConfigError(f"the store's classifier settings are invalid ({exc}); reload the pack") from exc
    return cfg, cal


def load_classifier_config(path: str | Path) -> ClassifierConfig:
    """Read a classifier settings file (a pack's ``classifier.yaml``).

    Returns the validated settings, remembering the directory they were read from.

    Raises:
        InputError: the file does not exist or is not YAML.
        ConfigError: the settings are not a mapping or do not validate.
    """
    p = Path(path)
    data = read_yaml(p, "classifier settings")
    if not isinstance(data, dict):
        raise ConfigError(f"classifier settings {p} must be a mapping, not {type(data).__name__}")
    try:
        return ClassifierConfig.model_validate({**data, "base_dir": str(p.parent)})
    except ValueError as exc:
        raise ConfigError(f"classifier settings {p} are invalid: {with_key_hints(exc, ClassifierConfig)}") from exc


#: Example-text embeddings by (embedding space key, text), shared by classifiers in the process.
_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_VECTORS_LOCK = threading.Lock()


#: Views whose scores an index keeps (then it starts over): a request's views are scored twice
#: at most, by the intent split and by understanding, moments apart.
_VIEW_CACHE_SIZE = 1024


@dataclass(frozen=True)
class _Index:
    """Everything derived from one metagraph revision."""

    revision: str
    goals: tuple[str, ...]
    texts: tuple[str, ...]  # examples (+ descriptions), then background
    owner: np.ndarray  # goal index per text; -1 for background
    dense: np.ndarray  # (len(texts), dims)
    chars: CharNgramIndex
    #: Scores already worked out, by (view text, top_k, lexical_weight): the intent split and
    #: the understanding stage score the same whole utterance (bounded: see _VIEW_CACHE_SIZE).
    views: dict[tuple[str, int, float], "ClauseScores"] = field(default_factory=dict, compare=False, repr=False)

    @property
    def content_hash(self) -> str:
        """sha256 of the goal names and texts the classifier compares with (calibration provenance)."""
        h = hashlib.sha256()
        for t, o in zip(self.texts, self.owner.tolist()):
            h.update(f"{self.goals[o] if o >= 0 else '_background'}\0{t}\0".encode())
        return h.hexdigest()


@dataclass(frozen=True)
class ClauseReading:
    """One candidate clause of an utterance, classified alone (:meth:`GoalClassifier.read_clauses`)."""

    text: str
    #: The goal the clause asks for (confident), else None.
    goal: str | None
    confidence: float
    #: The fused score of the clause's best goal, and of its nearest out-of-scope references.
    score: float
    background: float
    #: True when the clause reads as a request no goal handles (see ``request_background``).
    unhandled_request: bool


@dataclass(frozen=True)
class ClauseScores:
    """Per-goal evidence for one clause (used by the classifier and the calibration fit)."""

    clause: str
    goal_scores: np.ndarray  # fused, per goal
    goal_dense: np.ndarray
    goal_lexical: np.ndarray
    goal_example: tuple[str, ...]
    background: float

    def features(self, g: int) -> list[float]:
        """[top_score, goal_margin, background_margin] as if goal ``g`` were chosen."""
        s = float(self.goal_scores[g])
        others = [float(v) for i, v in enumerate(self.goal_scores) if i != g]
        return [s, s - (max(others) if others else 0.0), s - self.background]

    @property
    def best(self) -> int:
        return int(np.argmax(self.goal_scores))


def _top_mean(values: np.ndarray, k: int) -> float:
    """Mean of the ``k`` largest values (all of them when there are fewer)."""
    return float(np.sort(values)[::-1][:k].mean())


class GoalClassifier:
    """Classify an utterance into one of the graph's goal types, or abstain.

    Args:
        store: the GraphStore whose GoalType nodes are the labels.
        embedder: the offline embedder (default: ``hopweave.search.embedder.default_embedder()``,
            created on first use).
        config: classifier settings (default: the engine's, ``ClassifierConfig()``).
        calibration: calibration parameters (default: the file named by a config read from a
            file, else the engine's ``DEFAULT_CALIBRATION``).
        threshold: abstain below this calibrated confidence (default: the config's).
        domain: the domain (pack) whose goal types are the labels (default: all of the store's).
        vector_cache_dir: where the example embeddings are cached on disk (default: the store's
            ``cache/classifier`` dir, else the user cache dir; see ``vector_cache.py``).

    No I/O happens in the constructor; the index is built on the first :meth:`classify`.
    Thread-safe.
    """

    def __init__(
        self,
        store: "GraphStore",
        embedder: "Embedder | None" = None,
        config: ClassifierConfig | None = None,
        calibration: Calibration | None = None,
        threshold: float | None = None,
        domain: str | None = None,
        vector_cache_dir: str | Path | None = None,
    ) -> None:
        self.store = store
        self._vector_cache_dir = Path(vector_cache_dir) if vector_cache_dir is not None else None
        #: The domain (pack) whose goal types are the labels (None: every goal in the store).
        self.domain = domain
        self._embedder = embedder
        self._config = config
        self._calibration = calibration
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InputError(f"threshold must be in [0, 1], got {threshold}")
        self._threshold = threshold
        self._lock = threading.Lock()
        self._index: _Index | None = None

    # ---- lazily resolved parts ------------------------------------------------------------
    @property
    def config(self) -> ClassifierConfig:
        if self._config is None:
            self._config = ClassifierConfig()
        return self._config

    @property
    def calibration(self) -> Calibration:
        if self._calibration is None:
            path = self.config.calibration_path()
            self._calibration = load_calibration(path) if path is not None else DEFAULT_CALIBRATION
        return self._calibration

    @property
    def embedder(self) -> "Embedder":
        if self._embedder is None:
            from hopweave.search.embedder import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    @property
    def threshold(self) -> float:
        return self.config.threshold if self._threshold is None else self._threshold

    # ---- the per-revision index -----------------------------------------------------------
    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of example texts, re-using vectors computed before in this process for
        the same embedding space (a metagraph change re-embeds only new examples)."""
        space = self.embedder.space.key
        with _VECTORS_LOCK:
            missing = [t for t in dict.fromkeys(texts) if (space, t) not in _VECTORS]
        if missing:
            vecs = self.embedder.embed(missing)
            with _VECTORS_LOCK:
                for t, v in zip(missing, vecs):
                    _VECTORS[(space, t)] = np.asarray(v, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.embedder.space.dimensions), dtype=np.float32)
        with _VECTORS_LOCK:
            return np.stack([_VECTORS[(space, t)] for t in texts])

    def _dense(self, texts: Sequence[str], revision: str) -> np.ndarray:
        """The example embeddings: from the on-disk cache when it holds exactly these texts in
        this embedding space (no model load), else embedded and written there."""
        from hopweave.understand.vector_cache import cache_dir_for, load_vectors, save_vectors

        if not texts:
            return self._embed(texts)
        space = self.embedder.space
        where = self._vector_cache_dir or cache_dir_for(self.store)
        vecs = load_vectors(where, space.key, texts, space.dimensions)
        if vecs is None:
            vecs = self._embed(texts)
            save_vectors(where, space.key, texts, vecs, revision)
        return vecs

    def index(self) -> _Index:
        """The index for the store's current metagraph revision (rebuilt when it changed)."""
        rev = self.store.metagraph_revision()
        idx = self._index
        if idx is not None and idx.revision == rev:
            return idx
        with self._lock:
            idx = self._index
            if idx is not None and idx.revision == rev:
                return idx
            cfg = self.config
            goals = sorted(self.store.domain_goal_types(self.domain), key=lambda g: g.name)
            texts: list[str] = []
            owner: list[int] = []
            for gi, g in enumerate(goals):
                items = list(dict.fromkeys(e.strip() for e in g.examples if e and e.strip()))
                if cfg.use_descriptions and g.description.strip():
                    items.append(g.description.strip())
                texts.extend(items)
                owner.extend([gi] * len(items))
            background = [b for b in cfg.background if b.strip()]
            texts.extend(background)
            owner.extend([-1] * len(background))
            idx = _Index(
                revision=rev,
                goals=tuple(g.name for g in goals),
                texts=tuple(texts),
                owner=np.asarray(owner, dtype=np.int64),
                dense=self._dense(texts, rev),
                chars=CharNgramIndex(texts, *cfg.char_ngrams),
            )
            self._index = idx
            return idx

    # ---- scoring --------------------------------------------------------------------------
    def clause_scores(self, utterance: str, all_views: bool = True) -> list[ClauseScores]:
        """Evidence for the whole utterance and for each clause of a mixed request (with
        ``all_views`` False, the clauses only when the whole is not decisive, as classified)."""
        return self._score([utterance], all_views=all_views)[1][0]

    def _score(self, utterances: Sequence[str], all_views: bool = False, whole_only: bool = False
               ) -> tuple[_Index, list[list[ClauseScores]]]:
        """Per utterance, the evidence of each view: the whole utterance, then its clauses. The
        clauses are scored only when the whole is not decisive (calibrated confidence below
        ``decisive_confidence``) or ``all_views``; the wholes are embedded in one call, then the
        clauses that are needed in another (vectors do not depend on call mates)."""
        cfg = self.config
        seps = cfg.separators()
        views: list[list[str]] = []
        for u in utterances:
            text = check_utterance(u)
            views.append([text.strip()] + split_clauses(text, seps, cfg.min_clause_words, cfg.max_clauses))
        idx = self.index()
        n_goals = len(idx.goals)
        rows_of = [np.flatnonzero(idx.owner == gi) for gi in range(n_goals)]
        bg_rows = np.flatnonzero(idx.owner == -1)
        wholes = self._embed_views([vs[0] for vs in views])
        out: list[list[ClauseScores]] = [[self._view_scores(idx, vs[0], wholes[i], rows_of, bg_rows)]
                                         for i, vs in enumerate(views)]
        todo = [] if whole_only else [i for i, vs in enumerate(views)
                                      if len(vs) > 1 and (all_views or not self._decisive(out[i][0]))]
        flat = [v for i in todo for v in views[i][1:]]
        q = self._embed_views(flat)
        k = 0
        for i in todo:
            for view in views[i][1:]:
                out[i].append(self._view_scores(idx, view, q[k], rows_of, bg_rows))
                k += 1
        return idx, out

    def read_clauses(self, utterance: str, clauses: Sequence[str]) -> list[ClauseReading]:
        """Each of ``clauses`` (candidate clauses of ``utterance``) classified alone, never split
        further. The clauses, the whole utterance and the whole's own clause views are embedded
        in one encoder call, so classifying the whole afterwards (:meth:`classify`) encodes
        nothing more when the embedder caches per text.

        Returns:
            One ClauseReading per clause: ``goal`` when the clause is a request of it (see
            ``min_part_score`` and ``part_margin``), ``unhandled_request`` when no goal takes it and it reads like
            an out-of-scope request (``request_background``, ``request_margin``); both False /
            None for a clause that only adds detail.

        Raises:
            InputError: an empty or over-long utterance or clause.
            ConfigError: invalid classifier settings or calibration.
        """
        cfg = self.config
        whole = check_utterance(utterance).strip()
        views = [check_utterance(c).strip() for c in clauses]
        whole_views = split_clauses(whole, cfg.separators(), cfg.min_clause_words, cfg.max_clauses)
        texts = list(dict.fromkeys([whole, *whole_views, *views]))
        idx = self.index()
        vecs = dict(zip(texts, self._embed_views(texts)))
        rows_of = [np.flatnonzero(idx.owner == gi) for gi in range(len(idx.goals))]
        bg_rows = np.flatnonzero(idx.owner == -1)
        out = []
        wb = self._view_scores(idx, whole, vecs[whole], rows_of, bg_rows).best if idx.goals else -1
        for v in views:
            sc = self._view_scores(idx, v, vecs[v], rows_of, bg_rows)
            c = self._decide(idx, [sc])
            score = float(sc.goal_scores[sc.best]) if len(sc.goal_scores) else -1.0
            own = c.goal is not None and score >= cfg.min_part_score
            if own and sc.best != wb:
                own = score - float(sc.goal_scores[wb]) >= cfg.part_margin
            goal = c.goal if own else None
            elsewhere = (goal is None and sc.background >= cfg.request_background
                         and sc.background - score >= cfg.request_margin)
            out.append(ClauseReading(v, goal, c.confidence, round(score, 4), round(sc.background, 4), elsewhere))
        return out

    def _embed_views(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed(texts), dtype=np.float32) if texts else np.zeros((0, 1))

    def decisive(self, utterance: str) -> bool:
        """True when the whole utterance alone is classified with at least
        ``decisive_confidence`` (one encoder pass, shared with :meth:`classify` by the
        embedder's per-text cache)."""
        return self._decisive(self._score([utterance], whole_only=True)[1][0][0])

    def _decisive(self, whole: ClauseScores) -> bool:
        """True when the whole utterance alone is confident enough that its clauses are not scored."""
        if not len(whole.goal_scores) or whole.goal_scores[whole.best] < -0.5:
            return False
        return self.calibration.probability(whole.features(whole.best)) >= self.config.decisive_confidence

    def _view_scores(self, idx: _Index, view: str, q: np.ndarray, rows_of: list[np.ndarray],
                     bg_rows: np.ndarray) -> ClauseScores:
        """The evidence of one view; ``q`` is its embedding (one text, one vector: the embedders
        are per text), so a view scored before on this index is read back, not scored again."""
        key = (view, self.config.top_k, self.config.lexical_weight)
        hit = idx.views.get(key)
        if hit is None:
            hit = self._score_view(idx, view, q, rows_of, bg_rows)
            if len(idx.views) >= _VIEW_CACHE_SIZE:
                idx.views.clear()
            idx.views[key] = hit
        return hit

    def _score_view(self, idx: _Index, view: str, q: np.ndarray, rows_of: list[np.ndarray],
                    bg_rows: np.ndarray) -> ClauseScores:
        cfg = self.config
        n_goals = len(idx.goals)
        dense = (idx.dense @ q).astype(np.float64) if len(idx.texts) else np.zeros(0)
        lex = np.asarray(idx.chars.scores(view), dtype=np.float64)
        fused = dense + cfg.lexical_weight * lex
        g_score = np.full(n_goals, -1.0)
        g_dense = np.zeros(n_goals)
        g_lex = np.zeros(n_goals)
        g_ex = [""] * n_goals
        for gi, rows in enumerate(rows_of):
            if len(rows) == 0:
                continue
            order = rows[np.argsort(-fused[rows], kind="stable")]  # ties: the lower row first
            best = int(order[0])
            g_score[gi] = float(fused[order[: cfg.top_k]].mean())
            g_dense[gi], g_lex[gi] = dense[best], lex[best]
            g_ex[gi] = idx.texts[best]
        background = _top_mean(fused[bg_rows], cfg.top_k) if len(bg_rows) else 0.0
        for a in (g_score, g_dense, g_lex):  # shared through the index's view cache: read-only
            a.flags.writeable = False
        return ClauseScores(view, g_score, g_dense, g_lex, tuple(g_ex), background)

    def choose(self, clauses: list[ClauseScores]) -> ClauseScores:
        """The clause the decision rests on: the one whose best goal scores highest (ties: the
        earliest, i.e. the whole utterance). A mixed request ("report this fraud, and what's my
        balance?") is decided by its in-scope clause."""
        best = clauses[0]
        for c in clauses[1:]:
            if len(c.goal_scores) and c.goal_scores[c.best] > best.goal_scores[best.best] + 1e-12:
                best = c
        return best

    def classify(self, utterance: str) -> Classification:
        """The goal of ``utterance`` with a calibrated confidence, or an abstention.
        See :meth:`classify_many`."""
        return self.classify_many([utterance])[0]

    def classify_many(self, utterances: Sequence[str]) -> list[Classification]:
        """The goal of each utterance with a calibrated confidence, or an abstention.

        Returns:
            One Classification per utterance: ``goal`` None and ``abstained`` True when the confidence is below
            the threshold (``best`` still names the top candidate), or when the graph has no
            GoalType nodes.

        Raises:
            InputError: empty, whitespace-only or over-long utterance.
            ConfigError: missing/invalid classifier settings or calibration.
        """
        idx, per_utt = self._score(utterances)
        return [self._decide(idx, clauses) for clauses in per_utt]

    def _decide(self, idx: _Index, clauses: list[ClauseScores]) -> Classification:
        cal = self.calibration
        thr = self.threshold
        if not idx.goals:
            return Classification(
                goal=None, confidence=0.0, abstained=True, threshold=thr, best=None,
                clause=clauses[0].clause, metagraph_revision=idx.revision, calibration_id=cal.id,
            )
        c = self.choose(clauses)
        cands = []
        for gi, name in enumerate(idx.goals):
            if c.goal_scores[gi] < -0.5:  # a goal without examples
                continue
            cands.append(
                GoalCandidate(
                    goal=name,
                    confidence=round(cal.probability(c.features(gi)), 4),
                    score=round(float(c.goal_scores[gi]), 4),
                    dense=round(float(c.goal_dense[gi]), 4),
                    lexical=round(float(c.goal_lexical[gi]), 4),
                    nearest_example=c.goal_example[gi],
                )
            )
        if not cands:
            return Classification(
                goal=None, confidence=0.0, abstained=True, threshold=thr, best=None,
                clause=c.clause, metagraph_revision=idx.revision, calibration_id=cal.id,
            )
        cands.sort(key=lambda k: (-k.score, k.goal))
        top = cands[0]
        abstain = top.confidence < thr
        return Classification(
            goal=None if abstain else top.goal,
            confidence=top.confidence,
            abstained=abstain,
            threshold=thr,
            best=top.goal,
            candidates=tuple(cands),
            clause=c.clause,
            background=round(c.background, 4),
            metagraph_revision=idx.revision,
            calibration_id=cal.id,
        )

    def fingerprint(self) -> ClassifierFingerprint:
        """What this classifier compares with: metagraph revision, goals, a hash of the example
        texts, the embedding space and the settings (the provenance of a calibration fit)."""
        idx = self.index()
        cfg = self.config
        return ClassifierFingerprint(
            metagraph_revision=idx.revision,
            goals=idx.goals,
            examples_sha256=idx.content_hash,
            embedding_space=self.embedder.space.key,
            settings={
                "lexical_weight": cfg.lexical_weight,
                "top_k": cfg.top_k,
                "char_ngrams": list(cfg.char_ngrams),
                "use_descriptions": cfg.use_descriptions,
                "clause_separators": cfg.clause_separators,
                "min_clause_words": cfg.min_clause_words,
                "max_clauses": cfg.max_clauses,
                "background_sha256": hashlib.sha256("\n".join(cfg.background).encode()).hexdigest(),
            },
        )

    def calibration_samples(self, utterances: Sequence[str]) -> list[tuple[list[float], str]]:
        """Per utterance: the features of the chosen clause's best goal, and that goal (the
        inputs of the calibration fit).

        Raises:
            ConfigError: the store has no GoalType nodes.
        """
        # every view is scored: the fit does not depend on the calibration it replaces (the
        # features of a decisive whole are of the same kind, so one mapping serves both)
        idx, per_utt = self._score(utterances, all_views=True)
        if not idx.goals:
            raise ConfigError("the store has no GoalType nodes to calibrate against")
        out = []
        for clauses in per_utt:
            c = self.choose(clauses)
            out.append((c.features(c.best), idx.goals[c.best]))
        return out
