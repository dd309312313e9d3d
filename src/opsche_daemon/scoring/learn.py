"""Training the learned scorers and measuring every scorer the way seed 002 does.

Two metrics, on decisions the models never saw:

* **R²** of a regressor against the 100/20 labels (the metric the seed started from; a ranker's
  scores are not on the labels' scale, so it has none);
* **top-1 accuracy**: the share of decisions whose chosen node gets the highest score in its
  group. A tie at the top is a random pick among the tied nodes, so a decision where the chosen
  node ties with ``k - 1`` others counts ``1 / k`` (the heuristic's ties on identical idle nodes
  are neither a win nor a loss).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opsche_daemon.scoring.dataset import POSITIVE_LABEL, Decision
from opsche_daemon.scoring.features import feature_row
from opsche_daemon.scoring.models import LearnedScorer, Scorer, feature_frame

__all__ = ["Evaluation", "evaluate", "r_squared", "top1", "train"]

KINDS = ("forest", "ranker")


def _rows(decisions: Sequence[Decision]) -> tuple[list[list[float]], list[float], list[int]]:
    rows: list[list[float]] = []
    labels: list[float] = []
    groups: list[int] = []
    for d in decisions:
        rows += [feature_row(d.pod, c) for c in d.candidates]
        labels += d.labels()
        groups.append(len(d.candidates))
    return rows, labels, groups


# The ranker's capacity is chosen on the training data alone (see ``_folds``): a few thousand
# decisions are easy to memorise, and a ranker with 15 leaves of 5 samples did (0.95 top-1 on its
# training traces, 0.41 on others, in the first run on the committed replays).
RANKER_GRID = tuple((leaves, samples) for leaves in (3, 7, 15) for samples in (5, 20, 50))


def _fit_forest(decisions: Sequence[Decision], seed: int) -> Any:
    from sklearn.ensemble import RandomForestRegressor  # noqa: PLC0415 - the learn extra

    rows, labels, _ = _rows(decisions)
    estimator = RandomForestRegressor(n_estimators=150, max_depth=10, random_state=seed, n_jobs=1)
    estimator.fit(feature_frame(rows), labels)
    return estimator


def _fit_ranker(decisions: Sequence[Decision], seed: int, leaves: int, samples: int) -> Any:
    from lightgbm import LGBMRanker  # noqa: PLC0415 - the learn extra

    rows, labels, groups = _rows(decisions)
    estimator = LGBMRanker(
        objective="lambdarank",
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=leaves,
        min_child_samples=samples,
        random_state=seed,
        n_jobs=1,
        verbose=-1,
    )
    relevance = [1 if label == POSITIVE_LABEL else 0 for label in labels]
    estimator.fit(feature_frame(rows), relevance, group=groups)
    return estimator


def _folds(decisions: Sequence[Decision]) -> list[tuple[list[Decision], list[Decision]]]:
    """Leave one source (trace) out; with a single source, its first 70 % against the rest."""
    sources = sorted({d.source for d in decisions})
    if len(sources) >= 2:
        return [
            ([d for d in decisions if d.source != s], [d for d in decisions if d.source == s])
            for s in sources
        ]
    ordered = sorted(decisions, key=lambda d: d.time)
    cut = max(1, int(0.7 * len(ordered)))
    return [(ordered[:cut], ordered[cut:])]


def _tune_ranker(decisions: Sequence[Decision], seed: int) -> tuple[int, int, float]:
    """The grid point with the best mean held-out top-1 over the folds, and that accuracy."""
    best = (RANKER_GRID[0][0], RANKER_GRID[0][1], -1.0)
    folds = [f for f in _folds(decisions) if f[0] and f[1]]
    if not folds:
        return best
    for leaves, samples in RANKER_GRID:
        accuracy = sum(
            top1(LearnedScorer("ranker", _fit_ranker(fit, seed, leaves, samples)), held)
            for fit, held in folds
        ) / len(folds)
        if accuracy > best[2]:
            best = (leaves, samples, accuracy)
    return best


def train(kind: str, decisions: Sequence[Decision], *, seed: int = 0) -> LearnedScorer:
    """A ``forest`` (the seed's Random Forest) or a ``ranker`` (LightGBM lambdarank).

    The forest has the seed's fixed settings. The ranker's leaves and minimum leaf size are
    picked from ``RANKER_GRID`` by held-out top-1 within ``decisions`` (leave one trace out),
    so that the test set never chooses them.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choose from {', '.join(KINDS)}")
    if not decisions:
        raise ValueError("no decisions to train on")
    sources = sorted({d.source for d in decisions})
    meta: dict[str, Any] = {"decisions": len(decisions), "sources": sources}
    if kind == "forest":
        estimator = _fit_forest(decisions, seed)
    else:
        leaves, samples, accuracy = _tune_ranker(decisions, seed)
        meta.update(num_leaves=leaves, min_child_samples=samples, validation_top1=accuracy)
        estimator = _fit_ranker(decisions, seed, leaves, samples)
    return LearnedScorer(kind, estimator, meta)


def top1(scorer: Scorer, decisions: Sequence[Decision]) -> float:
    """Top-1 accuracy of ``scorer`` (ties at the top shared, see the module's docstring)."""
    if not decisions:
        return float("nan")
    credit = 0.0
    for d in decisions:
        scores = scorer.score(d.pod, d.candidates)
        best = max(scores)
        tied = [i for i, s in enumerate(scores) if s >= best - 1e-12]
        if 0 in tied:
            credit += 1 / len(tied)
    return credit / len(decisions)


def r_squared(scorer: LearnedScorer, decisions: Sequence[Decision]) -> float:
    """R² of a regressor's predictions against the 100/20 labels."""
    predicted: list[float] = []
    labels: list[float] = []
    for d in decisions:
        predicted += scorer.score(d.pod, d.candidates)
        labels += d.labels()
    mean = sum(labels) / len(labels)
    total = sum((y - mean) ** 2 for y in labels)
    residual = sum((y - p) ** 2 for y, p in zip(labels, predicted, strict=True))
    return 1 - residual / total if total else float("nan")


@dataclass(frozen=True)
class Evaluation:
    """One scorer's numbers on one test set."""

    scorer: str
    top1: float
    r2: float | None
    decisions: int
    chance: float  # mean of 1 / group size: what random ranking scores on average


def evaluate(scorers: Sequence[Scorer], decisions: Sequence[Decision]) -> list[Evaluation]:
    """Every scorer's top-1 accuracy (and R² for regressors) on ``decisions``."""
    chance = sum(1 / len(d.candidates) for d in decisions) / max(1, len(decisions))
    out = []
    for scorer in scorers:
        r2 = (
            r_squared(scorer, decisions)
            if isinstance(scorer, LearnedScorer) and scorer.kind == "forest"
            else None
        )
        out.append(Evaluation(scorer.name, top1(scorer, decisions), r2, len(decisions), chance))
    return out
