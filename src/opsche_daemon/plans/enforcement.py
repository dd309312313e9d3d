"""Enforcing a validated plan on the live cluster, in named steps (paper, Algorithm 1, lines 9-20).

``PlanEnforcer.enforce`` runs the steps in this order; each reads like the paper:

1. **install**: pause scheduling (the cycle in progress finishes), install the plan in the
   ``PlanState`` the plan plugins share, and re-run PreEnqueue on the queue, so every pod the plan
   does not cover is held back in the gated pool (``PlanGate``);
2. **evict**: every moved or evicted pod through the Eviction API, with an ``OpscheMoved`` or
   ``OpscheEvicted`` event saying which plan and why; a refusal (a PodDisruptionBudget) aborts the
   plan there, before anything else is disturbed;
3. **activate**: the planned pods go straight to the active pool and scheduling resumes; from
   here ``PlanPin`` (PreFilter) pins each to its node and ``PlanReserve`` spends the plan's
   per-node quota;
4. **await convergence**: every ``convergence_interval_s`` a ``ConvergenceMonitor`` reads a fresh
   snapshot; the run ends converged or timed out;
5. **tear down** (``tear_down``, after every run whatever its outcome): uninstall the plan,
   release every held pod, re-queue the pods the plan plugins parked, resume scheduling.

Nothing here talks to the API server: the eviction call and the event sink are injected, so the
unit tests run the real scheduler, queue and cache against a recording fake.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable

import structlog

from opsche_daemon.config import OptimiserSettings
from opsche_daemon.model.eviction import EvictionResult
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.plans.active import ActivePlan
from opsche_daemon.plans.convergence import ConvergenceMonitor, Verdict
from opsche_daemon.plans.outcomes import RETRY_OUTCOMES, RunOutcome
from opsche_daemon.plans.plugins import PLAN_PLUGINS, PlanState
from opsche_daemon.scheduler import Scheduler

__all__ = ["Evict", "PlanEnforcer"]

log = structlog.get_logger("opsche.optimiser")

Evict = Callable[[Pod], Awaitable[EvictionResult]]
"""The Eviction API call (``kube.writer.Writer.evict`` in the daemon)."""


class PlanEnforcer:
    """Carries out one plan at a time for one scheduler, and tears every run down."""

    def __init__(
        self,
        scheduler: Scheduler,
        state: PlanState,
        evict: Evict,
        settings: OptimiserSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scheduler = scheduler
        self.state = state
        self.evict = evict
        self.settings = settings
        self.clock = clock
        # Preemption would evict pods the plan counts on, or take room it reserved.
        scheduler.preemption_paused = lambda: state.is_active
        # Every plan's pods placed and running pods evicted so far (optimiser.budgetAcrossPlans).
        self.placed_total = 0
        self.disrupted_total = 0

    async def enforce(self, plan: Plan, fresh: Snapshot, trigger: str) -> RunOutcome:
        """Steps 1-4 for a plan validated against ``fresh``; the caller then calls ``tear_down``."""
        active = self._install(plan, fresh, trigger)
        disturbed = await self._evict(plan, fresh, active)
        if disturbed is None:
            return RunOutcome.EVICTION_REFUSED
        self._activate(p.key for p in plan.placements)
        self.scheduler.resume()
        outcome = await self._await_convergence(active, disturbed)
        # Placed: the plan's pending pods no longer pending (a replica that stands in for a
        # planned one of its workload counts, as convergence counts it).
        still = sum(1 for p in self.scheduler.plan_snapshot().pending if active.is_planned(p))
        placed = max(0, len(plan.placements) - still)
        self.placed_total += placed
        self.scheduler.metrics.plan_pods_placed.inc(placed)
        return outcome

    # ------------------------------------------------------------------ 1. install
    def _install(self, plan: Plan, fresh: Snapshot, trigger: str) -> ActivePlan:
        if not self.settings.blocking:
            self.scheduler.pause()
        active = self.state.install(plan, fresh)
        self.scheduler.queue.gate_active()
        log.info(
            "enforcing plan",
            plan=active.plan_id,
            trigger=trigger,
            placements=len(plan.placements),
            moves=len(plan.moves),
            evictions=len(plan.evictions),
        )
        self.scheduler.metrics.plan_activations.inc()
        return active

    # ------------------------------------------------------------------ 2. evict
    async def _evict(self, plan: Plan, fresh: Snapshot, active: ActivePlan) -> set[str] | None:
        """Evict every moved and evicted pod; the keys disturbed, or None if one was refused."""
        metrics = self.scheduler.metrics
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
            if not result.outcome.gone:
                log.info("plan eviction refused; aborting plan", pod=key, outcome=result.outcome)
                return None
            moved = key not in evicted
            self.disrupted_total += 1
            (metrics.plan_pods_moved if moved else metrics.plan_pods_evicted).inc()
            self.scheduler.binder.event(
                pod, "OpscheMoved" if moved else "OpscheEvicted", note, type_="Normal"
            )
        return set(why)

    # ------------------------------------------------------------------ 3. activate
    def _activate(self, keys: Iterable[str]) -> None:
        """Planned pods straight to active, past any backoff: the plan reserved their room."""
        self.scheduler.queue.activate(keys)

    # ------------------------------------------------------------------ 4. await convergence
    async def _await_convergence(self, active: ActivePlan, leaving: set[str]) -> RunOutcome:
        """Poll until the plan converges or times out; ``leaving``: the pods it disturbed."""
        settings = self.settings
        monitor = ConvergenceMonitor(
            active,
            timeout_s=settings.plan_timeout_s,
            interval_s=settings.convergence_interval_s,
            clock=self.clock,
        )
        while True:
            await asyncio.sleep(settings.convergence_interval_s)
            self.scheduler.metrics.plan_pods_held.set(len(self.state.held))
            snapshot = self.scheduler.plan_snapshot()
            still = {key for key in leaving if self.scheduler.cache.placement(key) is not None}
            if still != leaving:
                # Room was freed on a planned node. A planned pod that already tried while the
                # disturbed pod was terminating sits in backoff (seconds, doubling per attempt);
                # the plan has reserved that room for it, so it goes straight back to active.
                leaving = still
                self._activate(p.key for p in snapshot.pending if active.is_planned(p))
            verdict = monitor.check(active.observe(snapshot))
            if verdict is Verdict.CONVERGED:
                return RunOutcome.CONVERGED
            if verdict is Verdict.TIMED_OUT:
                return RunOutcome.TIMED_OUT

    # ------------------------------------------------------------------ 5. tear down
    def tear_down(self, outcome: RunOutcome) -> int:
        """Uninstall the plan (if any), release held pods, resume; returns how many were held."""
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
        return len(held)
