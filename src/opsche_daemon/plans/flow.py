"""The optimisation flow (seed 000, Algorithm 1) and the triggers that start it (Algorithms 5-7).

One run at a time: snapshot, solve in a worker thread, validate against a fresh snapshot, then
under the plan: hold back every other pod (PlanGate), evict through the Eviction API (a PDB
refusal aborts cleanly), activate the planned pods, pin them (PlanPin/PlanReserve), and watch for
convergence or timeout; teardown always releases every held pod.

Blocking mode pauses scheduling from the snapshot on; non-blocking (the default) only once a
valid plan is being enforced. Triggers: ``scheduling-failure`` (a cycle found a pod
unschedulable), ``periodic`` (every interval, skipping states already solved) and
``stable-queue`` (the pending set unchanged for a window; a running solve is cancelled when it
changes).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.api import solve_snapshot
from opsche_daemon.optimiser.validate import validate_plan
from opsche_daemon.plan.convergence import ConvergenceMonitor, Verdict
from opsche_daemon.plan.plugins import PLAN_PLUGINS, PlanState
from opsche_daemon.scheduler import Scheduler

__all__ = ["TRIGGERS", "FlowSettings", "OptimizationFlow", "run_trigger", "state_key"]

log = structlog.get_logger("opsche.optimiser")

TRIGGERS = ("scheduling-failure", "periodic", "stable-queue", "none")
# Runs that ended before evicting anything because the cluster moved under them: their pods are
# worth another try. Not after a refused eviction or a timeout: retrying those could evict pods
# again and again for a plan that cannot succeed.
RETRY_OUTCOMES = frozenset({"invalid", "cancelled"})
# Runs that disturbed pods and failed: the next run waits a cool-down that doubles with each
# failure in a row, so a plan that keeps timing out cannot evict pods over and over.
FAILED_OUTCOMES = frozenset({"timed_out", "eviction_refused", "error"})
Evict = Callable[[Pod], Awaitable[Any]]


@dataclass(frozen=True)
class FlowSettings:
    """How plans are computed and enforced."""

    trigger: str = "scheduling-failure"
    blocking: bool = False
    solver: str = "cpsat"
    solve_time_limit_s: float = 2.0
    period_s: float = 8.0
    stable_window_s: float = 8.0
    poll_s: float = 0.25
    convergence_interval_s: float = 0.25
    plan_timeout_s: float = 4.0
    failure_cooldown_s: float = 10.0
    max_failure_cooldown_s: float = 300.0


class OptimizationFlow:
    """Algorithm 1 for one scheduler."""

    def __init__(
        self,
        scheduler: Scheduler,
        state: PlanState,
        evict: Evict,
        settings: FlowSettings,
        protected: Callable[[Pod], bool],
        clock: Callable[[], float] = time.monotonic,
        before_validate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.state = state
        self.evict = evict
        self.settings = settings
        self.protected = protected
        self.clock = clock
        # Awaited between the solve and the validation: a failpoint for tests of stale plans.
        self.before_validate = before_validate
        self.in_progress = False
        self.cancel = threading.Event()
        self.last_solved: int | None = None  # state_key() of the last state solved
        self.outcomes: list[str] = []  # for tests and logs: converged, timed_out, invalid, ...
        self.failures_in_a_row = 0
        self.not_before = 0.0  # clock() before which no run starts (after failed runs)
        self._key: tuple[int, int] | None = None  # (cache generation, state_key) memo
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ starting
    def request(self, trigger: str) -> bool:
        """Start a run in the background; True if started.

        Not while a run is in progress, nor during the cool-down after a failed run.
        """
        if self.in_progress or self.clock() < self.not_before:
            return False
        self.in_progress = True
        self.cancel = threading.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(trigger), name=f"optimisation:{trigger}"
        )
        return True

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

    # ------------------------------------------------------------------ the flow
    async def _run(self, trigger: str) -> None:
        settings = self.settings
        try:
            if settings.blocking:
                self.scheduler.pause()
            snapshot = self.scheduler.plan_snapshot()
            mine = [p for p in snapshot.pending if p.scheduler_name == self.scheduler.name]
            metrics = self.scheduler.metrics
            if not mine:
                metrics.solver_runs.labels(trigger, "nothing_pending").inc()
                self._finish("nothing_pending")
                return
            self.last_solved = state_key(snapshot, self.scheduler.name)
            plan = await asyncio.to_thread(
                solve_snapshot,
                snapshot,
                scheduler_name=self.scheduler.name,
                protected=self.protected,
                solver=settings.solver,
                time_limit=settings.solve_time_limit_s,
                cancel=self.cancel,
            )
            metrics.solve_duration.labels(settings.solver).observe(plan.seconds)
            if self.cancel.is_set():
                metrics.solver_runs.labels(trigger, "cancelled").inc()
                self._finish("cancelled")
                return
            if plan.empty:
                metrics.solver_runs.labels(trigger, "empty").inc()
                self._finish("empty")
                return
            if self.before_validate is not None:
                await self.before_validate()
            fresh = self.scheduler.plan_snapshot()
            errors = validate_plan(
                plan, fresh, scheduler_name=self.scheduler.name, protected=self.protected
            )
            if errors:
                log.info("plan invalid on a fresh snapshot", trigger=trigger, errors=errors[:5])
                metrics.solver_runs.labels(trigger, "invalid").inc()
                # The state solved did not get its plan: the periodic and stable-queue
                # triggers must not skip it if the cluster returns to it.
                self.last_solved = None
                self._finish("invalid")
                return
            metrics.solver_runs.labels(trigger, "plan").inc()
            await self._enforce(plan, fresh, trigger)
        except asyncio.CancelledError:
            self._finish("cancelled")
            raise
        except Exception:
            log.exception("optimisation run failed", trigger=trigger)
            self._finish("error")

    async def _enforce(self, plan: Plan, fresh: Snapshot, trigger: str) -> None:
        if not self.settings.blocking:
            self.scheduler.pause()
        active = self.state.install(plan, fresh)
        queue = self.scheduler.queue
        queue.gate_active()
        log.info(
            "enforcing plan",
            plan=active.plan_id,
            trigger=trigger,
            placements=len(plan.placements),
            moves=len(plan.moves),
            evictions=len(plan.evictions),
        )
        metrics = self.scheduler.metrics
        metrics.plan_activations.inc()
        running = {p.key: p for _, p in fresh.pods()}
        why = {
            m.key: f"moved by plan {active.plan_id} from {m.from_node} to {m.to_node}, "
            f"to place {len(plan.placements)} pending pod(s)"
            for m in plan.moves
        }
        why |= {
            e.key: f"evicted by plan {active.plan_id} to place higher-priority pod(s)"
            for e in plan.evictions
        }
        evicted = {e.key for e in plan.evictions}
        for key, note in why.items():
            pod = running[key]
            result = await self.evict(pod)
            outcome = getattr(result, "outcome", "evicted")
            if outcome not in ("evicted", "not_found"):
                log.info("plan eviction refused; aborting plan", pod=key, outcome=outcome)
                self._finish("eviction_refused")
                return
            moved = key not in evicted
            (metrics.plan_pods_moved if moved else metrics.plan_pods_evicted).inc()
            self.scheduler.binder.event(
                pod, "OpscheMoved" if moved else "OpscheEvicted", note, type_="Normal"
            )
        queue.activate(p.key for p in plan.placements)
        self.scheduler.resume()
        monitor = ConvergenceMonitor(
            active,
            timeout_s=self.settings.plan_timeout_s,
            interval_s=self.settings.convergence_interval_s,
            clock=self.clock,
        )
        leaving = set(why)  # disturbed pods whose room the planned pods wait for
        while True:
            await asyncio.sleep(self.settings.convergence_interval_s)
            metrics.plan_pods_held.set(len(self.state.held))
            snapshot = self.scheduler.plan_snapshot()
            still = {key for key in leaving if self.scheduler.cache.placement(key) is not None}
            if still != leaving:
                # Room was freed on a planned node. A planned pod that already tried while the
                # disturbed pod was terminating sits in backoff (seconds, doubling per attempt);
                # the plan has reserved that room for it, so it goes straight back to active.
                leaving = still
                queue.activate(p.key for p in snapshot.pending if active.is_planned(p))
            verdict = monitor.check(active.observe(snapshot))
            if verdict is Verdict.CONVERGED:
                self._finish("converged")
                return
            if verdict is Verdict.TIMED_OUT:
                self._finish("timed_out")
                return

    def _finish(self, outcome: str) -> None:
        """Teardown: uninstall the plan, release every held pod, resume scheduling."""
        queue = self.scheduler.queue
        was_active = self.state.is_active
        held = self.state.uninstall() if was_active else frozenset()
        queue.reevaluate_gated(held)
        plan_plugins = set(PLAN_PLUGINS)
        if outcome in RETRY_OUTCOMES:
            # The cluster changed under the plan: let the parked pods try again (with their
            # backoff), which also re-arms the scheduling-failure trigger.
            queue.move_all_to_active_or_backoff("PlanDiscarded")
        else:
            queue.move_all_to_active_or_backoff(
                "PlanUninstalled", lambda info: bool(info.unschedulable_plugins & plan_plugins)
            )
        self.scheduler.resume()
        self.scheduler.metrics.plan_pods_held.set(0)
        if was_active:
            self.scheduler.metrics.plan_outcomes.labels(outcome).inc()
        self.outcomes.append(outcome)
        if outcome in FAILED_OUTCOMES:
            self.failures_in_a_row += 1
            cooldown = min(
                self.settings.max_failure_cooldown_s,
                self.settings.failure_cooldown_s * 2 ** (self.failures_in_a_row - 1),
            )
            self.not_before = self.clock() + cooldown
            log.info("plan failed; next run after a cool-down", outcome=outcome, seconds=cooldown)
        elif outcome == "converged":
            self.failures_in_a_row = 0
        self.in_progress = False
        log.info("optimisation run ended", outcome=outcome, released=len(held))


def state_key(snapshot: Snapshot, scheduler_name: str) -> int:
    """What decides a plan: pending pods, where pods run, and the nodes (not heartbeats).

    The periodic and stable-queue triggers skip a state already solved; the snapshot's
    generation changes on every status update, so it cannot serve.
    """
    pending = frozenset(p.key for p in snapshot.pending if p.scheduler_name == scheduler_name)
    placed = frozenset((p.key, info.name) for info, p in snapshot.pods())
    nodes = frozenset(
        (info.name, info.node.allocatable.milli_cpu, info.node.allocatable.memory,
         info.node.unschedulable, info.node.taints)
        for info in snapshot.node_infos()
    )  # fmt: skip
    return hash((pending, placed, nodes))


async def run_trigger(flow: OptimizationFlow) -> None:
    """The background loop of the configured trigger (Algorithm 6); returns for none/failure."""
    settings = flow.settings
    scheduler = flow.scheduler
    if settings.trigger == "scheduling-failure":

        def on_failure(_pod: Pod) -> None:
            if not flow.in_progress and not flow.already_solved():
                flow.request("scheduling-failure")

        scheduler.on_unschedulable.append(on_failure)
        return
    if settings.trigger == "periodic":
        while True:
            await asyncio.sleep(settings.period_s)
            if not flow.in_progress and not flow.already_solved():
                flow.request("periodic")
    if settings.trigger == "stable-queue":
        last: frozenset[str] = frozenset()
        since = flow.clock()
        while True:
            await asyncio.sleep(settings.poll_s)
            pending = frozenset(
                p.key for p in scheduler.cache.unbound() if p.scheduler_name == scheduler.name
            )
            if pending != last:
                last, since = pending, flow.clock()
                if flow.in_progress and not flow.state.is_active:
                    flow.cancel.set()  # the pending set changed under a running solve
                continue
            if not pending or flow.in_progress or flow.already_solved():
                continue
            if flow.clock() - since >= settings.stable_window_s:
                flow.request("stable-queue")
