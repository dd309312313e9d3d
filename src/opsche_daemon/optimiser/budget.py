"""The disruption budget: at most r running pods moved or evicted per pending pod a plan places.

Kept apart from the CP-SAT model (which imports OR-Tools) so plan repair and the flow can apply
the same arithmetic. r is held as a small fraction so the model's constraint has integer
coefficients: ``denominator * disruptions <= numerator * pods placed + credit``.

The credit (``optimiser.budgetAcrossPlans``) is what earlier plans left unused, in
``1/denominator`` disruptions: the goal is a ratio over a whole run, and a budget per plan that
rounds down lets a plan placing one pod disrupt only one, however cheap the plans before it were.

The price on disruption (``optimiser.placementWorthMoves``, ``cpsat.price_of``) judges a whole
solution by the same count (``tally``): a warm start worth less under the price than the cluster
as it is must not become the answer just because the search stopped before improving on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import NamedTuple

from opsche_daemon.optimiser.problem import Problem

__all__ = ["Budget", "Tally", "budget_of", "tally", "within_budget", "worth_its_price"]


class Budget(NamedTuple):
    """r = numerator / denominator disruptions per pending pod placed, plus a credit."""

    numerator: int
    denominator: int
    credit: int = 0  # extra disruptions allowed, in 1/denominator units

    def allows(self, disrupted: int, placed: int) -> bool:
        """Whether a plan disrupting ``disrupted`` pods to place ``placed`` stays within."""
        return self.denominator * disrupted <= self.numerator * placed + self.credit


def budget_of(disruptions_per_placement: float, credit: float = 0.0) -> Budget | None:
    """``r`` rounded down to hundredths (never looser than asked), or None for no limit (0).

    Below 0.01 that is 0: no plan may disrupt anything. ``credit`` (disruptions, rounded down,
    never below 0) is added to every plan's allowance.
    """
    if disruptions_per_placement <= 0:
        return None
    ratio = Fraction(math.floor(disruptions_per_placement * 100 + 1e-9), 100)
    units = max(0, math.floor(credit * ratio.denominator + 1e-9))
    return Budget(ratio.numerator, ratio.denominator, units)


class Tally(NamedTuple):
    """What a solution does to the cluster as it is, counted as the model counts it."""

    disrupted: int  # running pods moved or evicted
    placed: int  # pending pods placed (beyond each group's running members)
    shortfall: int  # disruption score lost: 1 a move, 2 an eviction that leaves its pod pending


def tally(problem: Problem, counts: Mapping[tuple[int, int], int]) -> Tally:
    """Count ``counts`` against the cluster: ``kept + stay`` per group is the disruption score.

    ``stay`` is the running members left where they are, ``kept`` the members running anywhere
    (``min(placed, running)``, as ``plan_from_solution`` counts them), so a running member not
    staying costs 1 and one not kept (evicted, left pending) 1 more.
    """
    placed = [0] * len(problem.groups)
    for (g, _), value in counts.items():
        placed[g] += value
    disrupted = newly = shortfall = 0
    for group in problem.groups:
        stay = sum(min(counts.get((group.index, n), 0), group.current(n)) for n in group.running)
        kept = min(placed[group.index], group.running_count)
        disrupted += group.running_count - stay
        newly += placed[group.index] - kept
        shortfall += (group.running_count - stay) + (group.running_count - kept)
    return Tally(disrupted, newly, shortfall)


def within_budget(problem: Problem, counts: Mapping[tuple[int, int], int], budget: Budget) -> bool:
    """Whether ``counts`` move or evict at most r running pods per pending pod they place."""
    count = tally(problem, counts)
    return budget.allows(count.disrupted, count.placed)


def worth_its_price(
    problem: Problem, counts: Mapping[tuple[int, int], int], price: tuple[int, int]
) -> bool:
    """Whether ``counts`` is worth at least the cluster as it is under the price ``a / b``.

    The priced objective is ``a * placed + b * score``; the cluster as it is places nothing and
    loses no score, so a solution is worth making when ``a * placed >= b * shortfall``.
    """
    a, b = price
    count = tally(problem, counts)
    return a * count.placed >= b * count.shortfall
