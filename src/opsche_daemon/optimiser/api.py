"""One call from a Snapshot to a validated Plan: the entry point the CLI and the daemon use.

The heuristic always runs first: it is CP-SAT's warm start, and the answer when CP-SAT finds
nothing better in time. Whatever a solver returns is then topped up greedily (no pending pod is
left unplaced while a node still has room for it) and validated; a plan that fails validation is
a bug, reported instead of returned.
"""

from __future__ import annotations

import threading
import time

from opsche_daemon.config import SolverKind
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.heuristic import HeuristicSolver, heuristic_counts
from opsche_daemon.optimiser.problem import (
    ExtraFilter,
    Problem,
    build_problem,
    fill_greedily,
    plan_from_solution,
)
from opsche_daemon.optimiser.solver import Solver
from opsche_daemon.optimiser.validate import validate_plan
from opsche_daemon.safety import Protected

__all__ = ["SOLVERS", "InvalidPlanError", "solve_snapshot"]

SOLVERS = tuple(SolverKind)


class InvalidPlanError(RuntimeError):
    """A solver produced a plan that fails validation (a bug; the plan is never enforced)."""


def solve_snapshot(
    snapshot: Snapshot,
    *,
    scheduler_name: str,
    protected: Protected,
    solver: str = SolverKind.CPSAT,
    time_limit: float = 2.0,
    cancel: threading.Event | None = None,
    alpha: float = 0.8,
    disruptions_per_placement: float = 0.0,
    stall_s: float = 0.0,
    extra_filter: ExtraFilter | None = None,
    disruption_credit: float = 0.0,
    placement_worth: float = 0.0,
) -> Plan:
    """The best plan for ``snapshot`` found within ``time_limit`` seconds (or until cancelled).

    ``disruptions_per_placement`` > 0 bounds the pods a CP-SAT plan moves or evicts per pending
    pod it places (see ``optimiser.cpsat``); the heuristic has no such bound and refuses one.
    ``disruption_credit`` adds that many disruptions to the bound (earlier plans' unused budget).
    ``placement_worth`` > 0 prices disruption: a CP-SAT plan places a pending pod only where
    that costs at most this many moves (see ``optimiser.cpsat``); the heuristic refuses it too.
    ``stall_s`` > 0 ends a CP-SAT phase that has found nothing better for that long.
    ``extra_filter`` (scheduler extenders) narrows where each group may go.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose from {', '.join(SOLVERS)}")
    if solver == SolverKind.CPSAT:
        # Imported here, before the clock starts: OR-Tools (with numpy and pandas) takes about
        # a second to load, which commands that only check a config or use the heuristic should
        # not pay, and which the first solve must not pay out of its time limit either (on a
        # busy machine the import alone outlasted 2 s and the first plan came back empty).
        from opsche_daemon.optimiser.cpsat import CpSatSolver  # noqa: PLC0415
    started = time.monotonic()
    deadline = started + time_limit
    cancel = cancel or threading.Event()
    problem = build_problem(
        snapshot, scheduler_name=scheduler_name, protected=protected, extra_filter=extra_filter
    )
    chosen: Solver
    if solver == SolverKind.HEURISTIC:
        if disruptions_per_placement > 0 or placement_worth > 0:
            raise ValueError("the heuristic solver takes no disruption budget or price; use cpsat")
        chosen = HeuristicSolver()
    else:

        def warm_start(p: Problem) -> dict[tuple[int, int], int]:
            return heuristic_counts(p, deadline, cancel)

        chosen = CpSatSolver(
            alpha=alpha,
            hint=warm_start,
            disruptions_per_placement=disruptions_per_placement,
            stall=stall_s,
            disruption_credit=disruption_credit,
            placement_worth=placement_worth,
        )
    solution = chosen.solve(problem, deadline, cancel)
    solution.counts = fill_greedily(problem, solution.counts)
    solution.seconds = time.monotonic() - started
    plan = plan_from_solution(problem, solution, chosen.name)
    errors = validate_plan(plan, snapshot, scheduler_name=scheduler_name, protected=protected)
    if errors:
        raise InvalidPlanError(f"{solver} produced an invalid plan: " + "; ".join(errors[:10]))
    return plan
