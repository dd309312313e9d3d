"""Plans end to end: seed 000's Algorithm 1, from a trigger to a converged (or torn-down) plan.

* ``flow``: ``OptimizationFlow``, one run at a time: snapshot, solve, validate, enforce, tear down;
* ``enforcement``: ``PlanEnforcer``, the named steps: install, evict, activate, await
  convergence, tear down;
* ``triggers``: when a run starts (scheduling-failure, periodic, stable-queue);
* ``plugins``: ``PlanState`` and the PlanGate/PlanPin/PlanReserve framework plugins that hold
  back, pin and budget pods while a plan is installed (Algorithms 2-4);
* ``active``: an installed plan's per-workload, per-node quotas and what it has observed;
* ``convergence``: when a plan is done or has timed out (Algorithm 7);
* ``deferral``: ``PreemptionDeferral``, plans before preemption (preemption as the fallback);
* ``outcomes``: how runs end.

Nothing here talks to the API server: the eviction call is injected (``kube.writer.Writer.evict``
in the daemon) and events go through the scheduler's ``Binder``.
"""

from __future__ import annotations

from opsche_daemon.plans.active import ActivePlan, Observation, PlanCounters, Workload
from opsche_daemon.plans.convergence import ConvergenceMonitor, Verdict, decide
from opsche_daemon.plans.deferral import PreemptionDeferral
from opsche_daemon.plans.enforcement import Evict, PlanEnforcer
from opsche_daemon.plans.flow import OptimizationFlow, state_key
from opsche_daemon.plans.outcomes import FAILED_OUTCOMES, RETRY_OUTCOMES, RunOutcome, SolveResult
from opsche_daemon.plans.plugins import (
    PLAN_PLUGINS,
    PlanGate,
    PlanPin,
    PlanReserve,
    PlanState,
    plan_plugins,
)
from opsche_daemon.plans.triggers import has_background_task, run_trigger

__all__ = [
    "FAILED_OUTCOMES",
    "PLAN_PLUGINS",
    "RETRY_OUTCOMES",
    "ActivePlan",
    "ConvergenceMonitor",
    "Evict",
    "Observation",
    "OptimizationFlow",
    "PlanCounters",
    "PlanEnforcer",
    "PlanGate",
    "PlanPin",
    "PlanReserve",
    "PlanState",
    "PreemptionDeferral",
    "RunOutcome",
    "SolveResult",
    "Verdict",
    "Workload",
    "decide",
    "has_background_task",
    "plan_plugins",
    "run_trigger",
    "state_key",
]
