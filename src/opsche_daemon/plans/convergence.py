"""Deciding when an enforced plan is done (paper, Algorithm 7), with the clock injected.

The ``PlanEnforcer`` calls ``ConvergenceMonitor.check`` every ``interval_s`` (250 ms) with a fresh
observation (``ActivePlan.observe(snapshot)``) and tears the plan down on anything but WAITING.
Nothing here sleeps or reads the wall clock by itself.

One deliberate refinement of the paper: for the first ``settle_s`` seconds a workload with quota
left counts as unsatisfied even with no pending pod. Right after the evictions the controller may
not yet have created the replacement (a StatefulSet waits for the old pod to be gone), or the
watch not yet delivered it; the paper's rule would read that as "scaled down" and end the plan
before the replacement could be pinned. ``settle_s=0`` gives the paper's behaviour exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from opsche_daemon.plans.active import ActivePlan, Observation, Workload

__all__ = ["ConvergenceMonitor", "Verdict", "decide"]

DEFAULT_INTERVAL_S = 0.25
DEFAULT_SETTLE_S = 2.0


class Verdict(StrEnum):
    """What the enforcer does next with the plan."""

    WAITING = "waiting"  # keep enforcing; check again after the interval
    CONVERGED = "converged"  # tear down: the plan is carried out
    TIMED_OUT = "timed_out"  # tear down: the plan took too long


def decide(
    active: ActivePlan,
    *,
    started_at: float,
    now: float,
    timeout_s: float,
    bound: Mapping[str, str],
    pending_by_workload: Mapping[Workload, int],
    settle_s: float = 0.0,
) -> Verdict:
    """Algorithm 7, one iteration: the deadline first (as the paper), then convergence."""
    elapsed = now - started_at
    if elapsed >= timeout_s:
        return Verdict.TIMED_OUT
    strict = elapsed < settle_s
    if active.converged(bound, pending_by_workload, strict=strict):
        return Verdict.CONVERGED
    return Verdict.WAITING


@dataclass
class ConvergenceMonitor:
    """Algorithm 7's loop state for one installed plan; ``check`` is one iteration."""

    active: ActivePlan
    timeout_s: float
    settle_s: float = DEFAULT_SETTLE_S
    interval_s: float = DEFAULT_INTERVAL_S
    clock: Callable[[], float] = time.monotonic
    started_at: float = field(default=-1.0)
    verdict: Verdict = Verdict.WAITING

    def __post_init__(self) -> None:
        if self.started_at < 0:
            self.started_at = self.clock()

    @property
    def elapsed(self) -> float:
        """Seconds since the plan was installed."""
        return self.clock() - self.started_at

    def check(self, observation: Observation) -> Verdict:
        """Decide from a fresh observation; once not WAITING, the verdict sticks."""
        if self.verdict is Verdict.WAITING:
            self.verdict = decide(
                self.active,
                started_at=self.started_at,
                now=self.clock(),
                timeout_s=self.timeout_s,
                bound=observation.bound,
                pending_by_workload=observation.pending_by_workload,
                settle_s=self.settle_s,
            )
        return self.verdict
