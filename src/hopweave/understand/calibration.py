"""Calibration of the goal classifier: a logistic (Platt) map from goal-agnostic score
features to P(the top goal is right), fitted on held-out validation utterances.

The parameters are data (``<pack>/classifier_calibration.json``) with their provenance: the
validation file and its sha256, the metagraph revision and embedding space they were computed
with, the fit settings and the fit metrics. The fit is deterministic (Newton's method from zero,
fixed iterations; parameters rounded to 6 decimals).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from hopweave.errors import ConfigError, InputError

FEATURES = ("top_score", "goal_margin", "background_margin")


class ClassifierFingerprint(BaseModel):
    """What a classifier compares utterances with, recorded as a calibration's provenance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metagraph_revision: str
    goals: tuple[str, ...]
    examples_sha256: str
    embedding_space: str
    settings: dict[str, Any]


class Calibratable(Protocol):
    """A classifier that can be calibrated (``GoalClassifier`` is one)."""

    def calibration_samples(self, utterances: Sequence[str]) -> list[tuple[list[float], str]]:
        """Per utterance: the features of the chosen goal, and that goal's name."""
        ...

    def fingerprint(self) -> ClassifierFingerprint:
        """The provenance of what the classifier compares with."""
        ...


class Calibration(BaseModel):
    """``P(correct) = sigmoid(coef . features + intercept)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    features: tuple[str, ...] = FEATURES
    coef: tuple[float, ...]
    intercept: float
    provenance: dict[str, Any] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        """Short hash of the parameters (recorded with every classification)."""
        raw = json.dumps([self.features, self.coef, self.intercept], sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:12]

    def probability(self, features: Sequence[float]) -> float:
        """Calibrated probability for one feature vector, in [0, 1]."""
        if len(features) != len(self.coef):
            raise ConfigError(f"calibration expects {len(self.coef)} features, got {len(features)}")
        z = self.intercept + sum(c * f for c, f in zip(self.coef, features))
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


#: The engine's own calibration, used by a classifier whose domain has no calibration file (a
#: pack without ``classifier.yaml`` / ``calibration_file``). Round, unfitted parameters of the
#: same goal-agnostic features: a top score of about 0.5 with clear margins gives a confidence
#: above the default 0.5 threshold, a close runner-up or background utterance below it. Fit
#: your own on held-out utterances with ``hopweave understand-calibrate``.
DEFAULT_CALIBRATION = Calibration(
    coef=(5.0, 5.0, 8.0),
    intercept=-3.0,
    provenance={"source": "hopweave engine default (not fitted); run `hopweave understand-calibrate`"},
)


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration JSON file.

    Raises:
        ConfigError: missing or malformed (run ``hopweave understand-calibrate``).
    """
    p = Path(path)
    try:
        return Calibration.model_validate_json(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"classifier calibration {p} does not exist: run `hopweave understand-calibrate`"
        ) from None
    except Exception as exc:
        raise ConfigError(f"classifier calibration {p} is malformed: {exc}") from exc


def write_calibration(cal: Calibration, path: str | Path) -> None:
    """Write deterministic JSON (sorted keys, 2-space indent, trailing newline)."""
    Path(path).write_text(json.dumps(cal.model_dump(mode="json"), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.05, iterations: int = 100) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method (the intercept is not penalised).

    Returns ``(coef, intercept)``. Deterministic.

    Raises:
        InputError: fewer than 2 samples, or only one class present.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(x) < 2:
        raise InputError("calibration needs a (n, k) feature matrix with n >= 2 matching labels")
    if y.min() == y.max():
        raise InputError("calibration needs both correct and incorrect validation predictions")
    n, k = x.shape
    a = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(k + 1)
    reg = np.full(k + 1, l2)
    reg[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + reg * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg) + 1e-9 * np.eye(k + 1)
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return w[:k], float(w[k])


def calibration_metrics(p: Sequence[float], y: Sequence[bool], bins: int = 10) -> dict[str, float]:
    """Log-loss, Brier score and expected calibration error (equal-width bins), rounded."""
    pa = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1 - 1e-12)
    ya = np.asarray(y, dtype=np.float64)
    if len(pa) == 0:
        return {"log_loss": 0.0, "brier": 0.0, "ece": 0.0}
    log_loss = float(-np.mean(ya * np.log(pa) + (1 - ya) * np.log(1 - pa)))
    brier = float(np.mean((pa - ya) ** 2))
    ece = 0.0
    idx = np.minimum((pa * bins).astype(int), bins - 1)
    for b in range(bins):
        m = idx == b
        if m.any():
            ece += float(m.mean()) * abs(float(pa[m].mean()) - float(ya[m].mean()))
    return {"log_loss": round(log_loss, 4), "brier": round(brier, 4), "ece": round(ece, 4)}


def fit_calibration(
    classifier: Calibratable,
    validation_path: str | Path,
    *,
    l2: float = 0.05,
    command: str = "",
) -> Calibration:
    """Fit the calibration of ``classifier`` (its store's GoalTypes, settings and embedder) on a
    labeled validation split, with provenance.

    A validation item counts as correct when the classifier's top goal equals its label
    (an out-of-scope item, ``goal: null``, is never correct), so the calibrated confidence is
    P(top goal is right) and out-of-scope utterances learn to get low confidence.

    Raises:
        InputError: malformed validation file, or it yields only one class.
        ConfigError: the store has no GoalType nodes.
    """
    from hopweave.understand.datasets import file_sha256, load_split

    items = load_split(validation_path)
    samples = classifier.calibration_samples([u.text for u in items])
    x = np.array([f for f, _ in samples], dtype=np.float64)
    y = np.array([g == u.goal for (_, g), u in zip(samples, items)], dtype=bool)
    coef, intercept = fit_logistic(x, y, l2=l2)
    cal = Calibration(
        coef=tuple(round(float(c), 6) for c in coef),
        intercept=round(float(intercept), 6),
    )
    probs = [cal.probability(f) for f in x]
    provenance = {
        "method": "Platt scaling: L2-regularised logistic regression (Newton) on goal-agnostic features",
        "command": command,
        "validation_file": Path(validation_path).name,
        "validation_sha256": file_sha256(validation_path),
        "n": int(len(y)),
        "n_correct": int(y.sum()),
        "n_out_of_scope": sum(1 for u in items if u.goal is None),
        "l2": l2,
        **classifier.fingerprint().model_dump(mode="json"),
        "fit_metrics": calibration_metrics(probs, list(y)),
    }
    return cal.model_copy(update={"provenance": provenance})
