"""How an optimisation run ends: one enum for logs, metrics and the flow's own decisions.

A run ends before enforcement (nothing pending, an empty plan, a plan the cluster outran, a
cancelled solve) or after it (converged, timed out, an eviction refused, an error). The values are
the label values of ``opsche_solver_runs_total{result}`` and ``opsche_plan_outcomes_total{outcome}``
that dashboards already read.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FAILED_OUTCOMES", "RETRY_OUTCOMES", "RunOutcome", "SolveResult"]


class RunOutcome(StrEnum):
    """Why an optimisation run ended."""

    NOTHING_PENDING = "nothing_pending"  # no pending pod of this scheduler: nothing to solve
    EMPTY = "empty"  # the solver found nothing better than the current state
    INVALID = "invalid"  # the cluster changed between snapshot and validation: plan discarded
    CANCELLED = "cancelled"  # the solve was cancelled (the pending set changed, or shutdown)
    CONVERGED = "converged"  # the plan was carried out
    TIMED_OUT = "timed_out"  # the plan was not carried out within planTimeoutSeconds
    EVICTION_REFUSED = "eviction_refused"  # a PodDisruptionBudget (or an error) refused a step
    ERROR = "error"  # a bug or an unexpected failure; logged with its traceback


class SolveResult(StrEnum):
    """What a run's solve came to, before enforcement (``opsche_solver_runs_total{result}``)."""

    NOTHING_PENDING = "nothing_pending"
    CANCELLED = "cancelled"
    EMPTY = "empty"
    INVALID = "invalid"
    PLAN = "plan"  # a valid plan, handed to enforcement
    REPAIRED = "repaired"  # stale, cut down to its valid part (repairStalePlans), then enforced


RETRY_OUTCOMES = frozenset({RunOutcome.INVALID, RunOutcome.CANCELLED})
"""Runs that ended before evicting anything because the cluster moved under them: their pods are
worth another try. Not after a refused eviction or a timeout: retrying those could evict pods
again and again for a plan that cannot succeed."""

FAILED_OUTCOMES = frozenset({RunOutcome.TIMED_OUT, RunOutcome.EVICTION_REFUSED, RunOutcome.ERROR})
"""Runs that disturbed pods and failed: the next run waits a cool-down that doubles with each
failure in a row, so a plan that keeps timing out cannot evict pods over and over."""
