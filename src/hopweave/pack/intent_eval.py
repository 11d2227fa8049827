"""How well a domain's goal classifier does on labelled utterances: accuracy in scope, abstention,
the confusion between goals, per-goal precision / recall / F1 and the calibration of its
confidence. Used by ``hopweave eval intents PACK`` and ``benchmarks/bench_classifier.py``.

A labelled utterance (:class:`~hopweave.understand.datasets.LabeledUtterance`) names its goal, or
``goal: null`` when it is out of scope and the classifier should abstain. A prediction is the
classifier's best goal when its calibrated confidence reaches the threshold, else "no goal".
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from hopweave.understand.calibration import calibration_metrics

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.understand.classifier import GoalClassifier
    from hopweave.understand.datasets import LabeledUtterance
    from hopweave.understand.models import Classification

#: The label of an abstention (and of an out-of-scope utterance).
NO_GOAL = "(no goal)"


def prf(y_true: Sequence[str], y_pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per-label precision, recall, F1 and support.

    Args:
        y_true: the labels.
        y_pred: the predictions, in the same order.
        labels: the labels to report (goals and :data:`NO_GOAL`).

    Returns:
        ``{label: {"precision", "recall", "f1", "support"}}``.
    """
    out = {}
    for c in labels:
        tp = sum(1 for t, p in zip(y_true, y_pred) if t == c and p == c)
        fp = sum(1 for t, p in zip(y_true, y_pred) if t != c and p == c)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t == c and p != c)
        p_ = tp / (tp + fp) if tp + fp else 0.0
        r_ = tp / (tp + fn) if tp + fn else 0.0
        f = 2 * p_ * r_ / (p_ + r_) if p_ + r_ else 0.0
        out[c] = {"precision": p_, "recall": r_, "f1": f, "support": float(tp + fn)}
    return out


def reliability(p: Sequence[float], y: Sequence[bool],
                edges: tuple[float, ...] = (0, 0.2, 0.5, 0.8, 0.9, 1.0001)) -> list[dict[str, Any]]:
    """Confidence bins: how many predictions, their mean confidence and how often the best goal
    was right (empty bins are left out)."""
    rows = []
    for lo, hi in zip(edges, edges[1:]):
        ks = [k for k, v in enumerate(p) if lo <= v < hi]
        if ks:
            rows.append({"bin": f"[{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'}", "n": len(ks),
                         "mean_confidence": statistics.fmean(p[k] for k in ks),
                         "accuracy": sum(y[k] for k in ks) / len(ks)})
    return rows


def _share(hits: int, n: int) -> float:
    return hits / n if n else 0.0


def intent_report(items: Sequence["LabeledUtterance"], cls: Sequence["Classification"],
                  threshold: float) -> dict[str, Any]:
    """The figures of one split.

    Args:
        items: the labelled utterances.
        cls: the classifier's answer for each, in the same order.
        threshold: the abstain threshold the predictions are read at.

    Returns:
        A JSON-ready report: counts, ``in_scope_accuracy`` (right goal and not abstained),
        ``in_scope_abstained``, ``selective_accuracy`` (right when it answers),
        ``oos_abstain_rate``, ``abstain_rate``, macro-F1 (with and without "no goal"),
        ``per_label``, ``confusion`` (label -> prediction -> count), ``by_tag``, ``calibration``
        (ECE, Brier, log-loss of P(best goal is right)), ``reliability`` and every error.

    Raises:
        ValueError: ``items`` and ``cls`` differ in length.
    """
    if len(items) != len(cls):
        raise ValueError(f"{len(items)} utterances but {len(cls)} classifications")
    goals = sorted({i.goal for i in items if i.goal})
    y_true = [i.goal or NO_GOAL for i in items]
    y_pred = [c.best if c.confidence >= threshold and c.best else NO_GOAL for c in cls]
    ins = [k for k, i in enumerate(items) if i.goal]
    oos = [k for k, i in enumerate(items) if not i.goal]
    answered = [k for k in ins if y_pred[k] != NO_GOAL]
    per = prf(y_true, y_pred, [*goals, NO_GOAL])
    by_tag: dict[str, list[bool]] = defaultdict(list)
    confusion: dict[str, dict[str, int]] = {t: {} for t in [*goals, NO_GOAL]}
    for k, i in enumerate(items):
        for t in i.tags:
            by_tag[t].append(y_pred[k] == y_true[k])
        row = confusion.setdefault(y_true[k], {})
        row[y_pred[k]] = row.get(y_pred[k], 0) + 1
    conf = [c.confidence for c in cls]
    right = [c.best == i.goal for c, i in zip(cls, items)]
    errors = [
        {"text": i.text, "label": i.goal, "predicted": None if y_pred[k] == NO_GOAL else y_pred[k],
         "best": c.best, "confidence": c.confidence, "tags": list(i.tags)}
        for k, (i, c) in enumerate(zip(items, cls)) if y_pred[k] != y_true[k]
    ]
    return {
        "n": len(items), "n_in_scope": len(ins), "n_out_of_scope": len(oos), "threshold": threshold,
        "in_scope_accuracy": _share(sum(y_pred[k] == y_true[k] for k in ins), len(ins)),
        "in_scope_abstained": _share(sum(y_pred[k] == NO_GOAL for k in ins), len(ins)),
        "selective_accuracy": _share(sum(y_pred[k] == y_true[k] for k in answered), len(answered)),
        "oos_abstain_rate": _share(sum(y_pred[k] == NO_GOAL for k in oos), len(oos)),
        "abstain_rate": _share(sum(p == NO_GOAL for p in y_pred), len(items)),
        "macro_f1": statistics.fmean(v["f1"] for v in per.values()),
        "macro_f1_goals": statistics.fmean(per[g]["f1"] for g in goals) if goals else 0.0,
        "per_label": per,
        "confusion": {t: dict(sorted(row.items())) for t, row in confusion.items()},
        "by_tag": {t: {"n": len(v), "correct": sum(v) / len(v)} for t, v in sorted(by_tag.items())},
        "calibration": calibration_metrics(conf, right),
        "reliability": reliability(conf, right),
        "errors": errors,
    }


def pack_classifier(pack_dir: str | Path) -> "GoalClassifier":
    """The goal classifier a pack's domain gets once loaded, built from the pack's own files
    (goal types, ``classifier.yaml``, the calibration file it names) over an in-memory graph:
    no store is written and no corpus is embedded.

    Args:
        pack_dir: the pack folder.

    Returns:
        The classifier (its example index is built on the first classification).

    Raises:
        PackError: the pack cannot be read (as ``hopweave validate`` reports it).
        PatternValidationError: a goal file fails a gate.
        ConfigError: the classifier settings or calibration do not validate.
    """
    from hopweave.graph.networkx_store import NetworkxGraphStore
    from hopweave.models.schema import GLOBAL_TENANT
    from hopweave.pack.loader import metagraph_items, read_pack
    from hopweave.understand.classifier import GoalClassifier, classifier_settings

    p = read_pack(pack_dir)
    graph = NetworkxGraphStore(None, p.schema)
    graph.tenant_domains = dict.fromkeys(p.manifest.tenants, p.manifest.name)
    with graph.bulk() as bulk:
        bulk.write(GLOBAL_TENANT, metagraph_items(p))
    config, calibration = classifier_settings(p.classifier, p.calibration)
    return GoalClassifier(graph, config=config, calibration=calibration, domain=p.manifest.name)


__all__ = ["NO_GOAL", "intent_report", "pack_classifier", "prf", "reliability"]
