"""The optimisation flow (seed 000, Algorithm 1): snapshot, solve, validate, enforce, tear down.

One run at a time, started by a trigger (``triggers.py``):

1. take a snapshot of the cache (in blocking mode, scheduling pauses from here on);
2. solve it in a worker thread (CP-SAT or the heuristic) within the time limit, while the event
   loop keeps scheduling (non-blocking mode) and watching;
3. validate the plan against a *fresh* snapshot: the cluster moved on during the solve, and a
   plan for a state that no longer exists is discarded, never applied;
4. hand the plan to the ``PlanEnforcer`` (evict, activate, await convergence);
5. always tear down, whatever the outcome, then keep the books: the states already solved (so no
   trigger re-solves an unchanged cluster), and a cool-down after a failed plan that doubles with
   each failure in a row (so a plan that cannot converge does not evict pods every few seconds).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

import structlog

from opsche_daemon.config import OptimiserSettings, Trigger
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.api import solve_snapshot
from opsche_daemon.optimiser.budget import budget_of
from opsche_daemon.optimiser.repair import repair_plan
from opsche_daemon.optimiser.validate import validate_plan
from opsche_daemon.plans.enforcement import Evict, PlanEnforcer
from opsche_daemon.plans.extenders import extender_filter
from opsche_daemon.plans.outcomes import FAILED_OUTCOMES, RunOutcome, SolveResult
from opsche_daemon.plans.plugins import PlanState
from opsche_daemon.safety import Protected
from opsche_daemon.scheduler import Scheduler

__all__ = ["OptimizationFlow", "state_key"]

log = structlog.get_logger("opsche.optimiser")


class OptimizationFlow:
    """Algorithm 1 for one scheduler."""

    def __init__(
        self,
        scheduler: Scheduler,
        state: PlanState,
        evict: Evict,
        settings: OptimiserSettings,
        protected: Protected,
        clock: Callable[[], float] = time.monotonic,
        before_validate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.state = state
        self.settings = settings
        self.protected = protected
        self.clock = clock
        self.enforcer = PlanEnforcer(scheduler, state, evict, settings, clock)
        # Awaited between the solve and the validation: a failpoint for tests of stale plans.
        self.before_validate = before_validate
        # Awaited right after each solve with its wall seconds (unless the run was cancelled):
        # the virtual-time replay charges a solve its full time limit here (--solver-time limit).
        self.after_solve: Callable[[float], Awaitable[None]] | None = None
        self.in_progress = False
        self.cancellable = True  # whether the stable-queue trigger may cancel the current run
        self.closed = False  # set at shutdown: no run starts any more
        self.cancel = threading.Event()
        self.last_solved: int | None = None  # state_key() of the last state solved
        self._solve_s: float | None = None  # the current run's solve, for its closing log line
        self.outcomes: list[RunOutcome] = []  # for tests and logs, in order
        self.failures_in_a_row = 0
        self.not_before = 0.0  # clock() before which no run starts (after failed runs)
        self._key: tuple[int, int] | None = None  # (cache generation, state_key) memo
        self._task: asyncio.Task[None] | None = None
        self.runs_started = 0  # numbers the runs: run n is the n-th started
        # Called with the run's number and outcome once it is torn down (plans.deferral).
        self.on_finish: list[Callable[[int, RunOutcome], None]] = []

    # ------------------------------------------------------------------ starting
    def request(self, trigger: Trigger, *, cancellable: bool = True) -> bool:
        """Start a run in the background; True if started.

        Not while a run is in progress, nor during the cool-down after a failed run.
        ``cancellable=False`` keeps the stable-queue trigger from cancelling it when the pending
        pods change (a run for a deferred preemptor must answer it).
        """
        if self.closed or self.in_progress or self.clock() < self.not_before:
            return False
        self.cancellable = cancellable
        self.in_progress = True
        self.cancel = threading.Event()
        self.runs_started += 1
        self._task = asyncio.get_running_loop().create_task(
            self._run(trigger, self.runs_started), name=f"optimisation:{trigger}"
        )
        return True

    def close(self) -> None:
        """At shutdown: start no run any more, and ask a solve in progress to stop."""
        self.closed = True
        self.cancel.set()

    async def stop(self, within: float = 5.0) -> None:
        """At shutdown: close, and end the current run now (torn down, its held pods released).

        A plan being enforced is abandoned rather than awaited: its pods are requeued, and
        the next leader plans again from what it sees.
        """
        self.close()
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task}, timeout=within)

    def already_solved(self) -> bool:
        """True if the cluster is in the state the last run solved (its answer would not change).

        Memoised on the cache's generation: the failure trigger asks after every failed cycle.
        """
        if self.last_solved is None:
            return False
        generation = self.scheduler.cache.generation
        if self._key is None or self._key[0] != generation:
            self._key = (generation, state_key(self.scheduler.plan_snapshot(), self.scheduler.name))
        return self._key[1] == self.last_solved

    async def wait(self) -> None:
        """Wait for the current run (and its convergence monitor) to end."""
        if self._task is not None:
            await asyncio.shield(self._task)

    # ------------------------------------------------------------------ one run
    async def _run(self, trigger: Trigger, number: int) -> None:
        try:
            await self._run_once(trigger)
        finally:
            for hook in self.on_finish:
                try:
                    hook(number, self.outcomes[-1] if self.outcomes else RunOutcome.ERROR)
                except Exception:
                    log.exception("a run-finished hook failed", run=number)

    async def _run_once(self, trigger: Trigger) -> None:
        try:
            outcome = await self._solve_validate_enforce(trigger)
        except asyncio.CancelledError:
            self._finish(RunOutcome.CANCELLED)
            raise
        except Exception:
            log.exception("optimisation run failed", trigger=trigger)
            outcome = RunOutcome.ERROR
        try:
            self._finish(outcome)
        except Exception:
            # A teardown that fails once is tried again as an error; whatever happens, the
            # flow must not stay "in progress", or no trigger could ever start a run again.
            log.exception("tearing the run down failed", outcome=outcome)
            try:
                self._finish(RunOutcome.ERROR)
            finally:
                self.in_progress = False

    async def _solve_validate_enforce(self, trigger: Trigger) -> RunOutcome:
        settings = self.settings
        metrics = self.scheduler.metrics

        # 1. Snapshot (blocking mode: nothing is scheduled until the run ends).
        if settings.blocking:
            self.scheduler.pause()
        snapshot = self.scheduler.plan_snapshot()
        mine = [p for p in snapshot.pending if p.scheduler_name == self.scheduler.name]
        if not mine:
            metrics.solver_runs.labels(trigger, SolveResult.NOTHING_PENDING).inc()
            return RunOutcome.NOTHING_PENDING
        self.last_solved = state_key(snapshot, self.scheduler.name)

        # 2. Solve in a worker thread; the event loop keeps scheduling and watching.
        plan = await asyncio.to_thread(
            solve_snapshot,
            snapshot,
            scheduler_name=self.scheduler.name,
            protected=self.protected,
            solver=settings.solver,
            time_limit=settings.solve_time_limit_s,
            cancel=self.cancel,
            disruptions_per_placement=settings.max_disruptions_per_placement,
            stall_s=settings.solve_stall_s,
            extra_filter=extender_filter(self.scheduler.extenders, self.cancel),
            disruption_credit=self.disruption_credit(),
            placement_worth=settings.placement_worth_moves,
        )
        metrics.solve_duration.labels(settings.solver).observe(plan.seconds)
        self._solve_s = plan.seconds
        if self.after_solve is not None and not self.cancel.is_set():
            await self.after_solve(plan.seconds)
        if self.cancel.is_set():
            metrics.solver_runs.labels(trigger, SolveResult.CANCELLED).inc()
            return RunOutcome.CANCELLED
        if plan.empty:
            metrics.solver_runs.labels(trigger, SolveResult.EMPTY).inc()
            return RunOutcome.EMPTY

        # 3. Validate against a fresh snapshot: a plan for a state that is gone is discarded.
        if self.before_validate is not None:
            await self.before_validate()
        fresh = self.scheduler.plan_snapshot()
        errors = validate_plan(
            plan, fresh, scheduler_name=self.scheduler.name, protected=self.protected
        )
        if errors and settings.repair_stale_plans:
            repaired = repair_plan(
                plan,
                fresh,
                scheduler_name=self.scheduler.name,
                protected=self.protected,
                budget=budget_of(settings.max_disruptions_per_placement, self.disruption_credit()),
            )
            if repaired is not None:
                log.info(
                    "stale plan repaired on a fresh snapshot",
                    trigger=trigger,
                    errors=errors[:5],
                    dropped=list(repaired.dropped[:10]),
                    placements=len(repaired.plan.placements),
                )
                metrics.solver_runs.labels(trigger, SolveResult.REPAIRED).inc()
                return await self.enforcer.enforce(repaired.plan, fresh, trigger)
        if errors:
            log.info("plan invalid on a fresh snapshot", trigger=trigger, errors=errors[:5])
            metrics.solver_runs.labels(trigger, SolveResult.INVALID).inc()
            # The state solved did not get its plan: the periodic and stable-queue triggers
            # must not skip it if the cluster returns to it.
            self.last_solved = None
            return RunOutcome.INVALID

        # 4. Enforce.
        metrics.solver_runs.labels(trigger, SolveResult.PLAN).inc()
        return await self.enforcer.enforce(plan, fresh, trigger)

    def disruption_credit(self) -> float:
        """The disruption budget earlier plans left unused (``budgetAcrossPlans``), else 0.

        r per pod they placed, minus the pods they evicted; never below 0 (a plan that evicted
        and then timed out before placing is not charged to the next one).
        """
        settings = self.settings
        if not settings.budget_across_plans or settings.max_disruptions_per_placement <= 0:
            return 0.0
        enforcer = self.enforcer
        earned = settings.max_disruptions_per_placement * enforcer.placed_total
        return max(0.0, earned - enforcer.disrupted_total)

    def _finish(self, outcome: RunOutcome) -> None:
        """5. Tear down, then the cool-down and the run's bookkeeping."""
        released = self.enforcer.tear_down(outcome)
        self.outcomes.append(outcome)
        if outcome in FAILED_OUTCOMES:
            self.failures_in_a_row += 1
            cooldown = min(
                self.settings.max_failure_cooldown_s,
                self.settings.failure_cooldown_s * 2 ** (self.failures_in_a_row - 1),
            )
            self.not_before = self.clock() + cooldown
            log.info("plan failed; next run after a cool-down", outcome=outcome, seconds=cooldown)
        elif outcome is RunOutcome.CONVERGED:
            self.failures_in_a_row = 0
        self.in_progress = False
        solve_s, self._solve_s = self._solve_s, None
        log.info(
            "optimisation run ended",
            outcome=outcome,
            released=released,
            solve_s=None if solve_s is None else round(solve_s, 3),
        )


def state_key(snapshot: Snapshot, scheduler_name: str) -> int:
    """What decides a plan: pending pods, where pods run, and the nodes (not heartbeats).

    The triggers skip a state already solved; the snapshot's generation changes on every status
    update, so it cannot serve.
    """
    pending = frozenset(p.key for p in snapshot.pending if p.scheduler_name == scheduler_name)
    placed = frozenset((p.key, info.name) for info, p in snapshot.pods())
    nodes = frozenset(
        (info.name, info.node.allocatable.milli_cpu, info.node.allocatable.memory,
         info.node.unschedulable, info.node.taints)
        for info in snapshot.node_infos()
    )  # fmt: skip
    return hash((pending, placed, nodes))
