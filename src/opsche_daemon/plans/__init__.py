"""Plan enforcement's pure core: the installed plan, its scheduling plugins, convergence.

The daemon validates a plan, installs it in a ``PlanState`` shared with the ``PlanGate``,
``PlanPin`` and ``PlanReserve`` plugins, evicts, and polls a ``ConvergenceMonitor`` until the plan
converges or times out; then it uninstalls it and re-enqueues the pods the gate held back. Nothing
here talks to the API server.
"""

from __future__ import annotations

from opsche_daemon.plan.active import ActivePlan, Observation, PlanCounters, Workload
from opsche_daemon.plan.convergence import ConvergenceMonitor, Verdict, decide
from opsche_daemon.plan.plugins import (
    PLAN_PLUGINS,
    PlanGate,
    PlanPin,
    PlanReserve,
    PlanState,
    plan_plugins,
)

__all__ = [
    "PLAN_PLUGINS",
    "ActivePlan",
    "ConvergenceMonitor",
    "Observation",
    "PlanCounters",
    "PlanGate",
    "PlanPin",
    "PlanReserve",
    "PlanState",
    "Verdict",
    "Workload",
    "decide",
    "plan_plugins",
]
