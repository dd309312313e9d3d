"""The disruption budget: at most r running pods moved or evicted per pending pod a plan places.

Kept apart from the CP-SAT model (which imports OR-Tools) so plan repair and the flow can apply
the same arithmetic. r is held as a small fraction so the model's constraint has integer
coefficients: ``denominator * disruptions <= numerator * pods placed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from opsche_daemon.optimiser.problem import Problem

__all__ = ["Budget", "budget_of", "within_budget"]

Budget = tuple[int, int]  # r = numerator / denominator disruptions per pending pod placed


def budget_of(disruptions_per_placement: float) -> Budget | None:
    """``r`` rounded down to hundredths (never looser than asked), or None for no limit (0).

    Below 0.01 that is 0: no plan may disrupt anything.
    """
    if disruptions_per_placement <= 0:
        return None
    ratio = Fraction(math.floor(disruptions_per_placement * 100 + 1e-9), 100)
    return ratio.numerator, ratio.denominator


def within_budget(problem: Problem, counts: Mapping[tuple[int, int], int], budget: Budget) -> bool:
    """Whether ``counts`` move or evict at most r running pods per pending pod they place."""
    placed = [0] * len(problem.groups)
    for (g, _), value in counts.items():
        placed[g] += value
    disrupted = newly = 0
    for group in problem.groups:
        stay = sum(min(counts.get((group.index, n), 0), group.current(n)) for n in group.running)
        disrupted += group.running_count - stay
        newly += placed[group.index] - min(placed[group.index], group.running_count)
    numerator, denominator = budget
    return denominator * disrupted <= numerator * newly
