"""The scheduler: its loop, and one pod's scheduling cycle and binding cycle (``schedule_one.go``).

Read it as kube-scheduler's ``ScheduleOne`` in Python. The loop pops the highest-priority pod and
runs ``schedule_one``, which tells two stories:

* the **scheduling cycle**, synchronous and one pod at a time: take an immutable snapshot of the
  cache, run the framework (PreFilter, Filter, Score) to pick a node, Reserve it, and *assume* the
  pod on it in the cache, so the next cycle already counts its requests; on failure run PostFilter
  (preemption), report ``FailedScheduling`` with upstream's message and the ``PodScheduled=False``
  condition, and requeue the pod by the queue's rules;
* the **binding cycle**, asynchronous (at most ``bind_workers`` at once) so scheduling goes on
  while the API call is in flight: POST the Binding; if it fails, forget the assumption, run
  Unreserve and retry the pod with backoff.

Watch events reach the cache and the queue through ``EventHandlers`` (``events.py``), not through
this class: the scheduler only pops what the queue holds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import structlog

from opsche_daemon.cache import Cache
from opsche_daemon.framework.extender import Extender, ExtenderError, schedule_with_extenders
from opsche_daemon.framework.interface import Code, CycleState
from opsche_daemon.framework.runtime import FitError, Framework
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.queue import QueuedPod, SchedulingQueue
from opsche_daemon.scheduler.binder import Binder
from opsche_daemon.scheduler.events import EventHandlers
from opsche_daemon.scheduler.nominator import Nominator

__all__ = ["AttemptResult", "Scheduler"]

log = structlog.get_logger("opsche.scheduler")


class AttemptResult(StrEnum):
    """How a scheduling attempt ended (the ``result`` label of upstream's attempt metrics)."""

    SCHEDULED = "scheduled"
    UNSCHEDULABLE = "unschedulable"
    ERROR = "error"


@dataclass(frozen=True)
class _Decision:
    """What the scheduling cycle hands to the binding cycle."""

    state: CycleState
    pod: Pod  # as assumed in the cache (``node_name`` set)
    node: str


class Scheduler:
    """One scheduler profile driving one queue over one cache."""

    def __init__(
        self,
        name: str,
        framework: Framework,
        queue: SchedulingQueue,
        cache: Cache,
        binder: Binder,
        metrics: Metrics,
        *,
        bind_workers: int = 16,
        preemption: bool = True,
        nominator: Nominator | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        self.name = name
        # kube-scheduler's extenders, asked after the Filter plugins and beside the Score ones.
        self.extenders = tuple(extenders)
        self.framework = framework
        self.queue = queue
        self.cache = cache
        self.binder = binder
        self.metrics = metrics
        self.preemption = preemption
        # Shared with DefaultPreemption, which reads the nominations in its dry runs.
        self.nominator = nominator or Nominator()
        # The watch's entry point: the kube layer feeds these handlers, which feed cache and queue.
        self.events = EventHandlers(name, cache, queue, metrics, self.nominator)
        self._bind_slots = asyncio.Semaphore(bind_workers)
        self._tasks: set[asyncio.Task[None]] = set()
        self.scheduled = 0
        self.turn_budget_s = 0.05
        # Cleared while the optimiser blocks scheduling (plan computation in blocking mode).
        self._running = asyncio.Event()
        self._running.set()
        # Called with each pod a cycle found unschedulable (the scheduling-failure trigger).
        self.on_unschedulable: list[Callable[[Pod], None]] = []
        # True while a plan is enforced (the plans package sets it): preemption then stays out
        # of the plan's way.
        self.preemption_paused: Callable[[], bool] = lambda: False
        # Asked once preemption has found victims: False defers the eviction (the plans' solve
        # gets the first try, ``plans.deferral``); the default always lets preemption act.
        self.preemption_gate: Callable[[Pod], bool] = lambda _pod: True
        size = metrics.cache_size
        size.labels("nodes").set_function(lambda: cache.stats().nodes)
        size.labels("pods").set_function(lambda: cache.stats().bound_pods)
        size.labels("assumed_pods").set_function(lambda: cache.stats().assumed_pods)

    def nominated(self) -> dict[str, list[Pod]]:
        """Nominated pods per node (preemptors waiting for their victims to leave)."""
        return self.nominator.nominated()

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        """Schedule pods until cancelled.

        Pods are scheduled in turns of up to ``turn_budget_s`` of CPU before yielding to the
        event loop. Yielding after every pod would let a flood of watch events (a burst of
        thousands of pod creations) take the loop for seconds between two scheduling cycles;
        a bounded turn keeps both the intake and the scheduler moving.
        """
        while True:
            await self._running.wait()
            info = await self.queue.pop()
            turn_ends = time.monotonic() + self.turn_budget_s
            while True:
                await self._guarded_schedule_one(info)
                if time.monotonic() >= turn_ends or not self._running.is_set():
                    break
                next_info = self.queue.pop_nowait()
                if next_info is None:
                    break
                info = next_info
            # Let watch events and binds run between turns: they keep the cache true.
            await asyncio.sleep(0)

    def pause(self) -> None:
        """Stop starting scheduling cycles (the one in progress finishes)."""
        self._running.clear()

    def resume(self) -> None:
        """Start scheduling again."""
        self._running.set()

    @property
    def paused(self) -> bool:
        """True while scheduling is paused."""
        return not self._running.is_set()

    def plan_snapshot(self) -> Snapshot:
        """The cache now, with every unbound pod as pending: what the optimiser plans from."""
        return self.cache.snapshot(tuple(self.cache.unbound()))

    async def flush_loop(self) -> None:
        """Move expired backoffs every second and long-parked pods every 30 s."""
        ticks = 0
        while True:
            await asyncio.sleep(1.0)
            ticks += 1
            moved = self.queue.flush_backoff_completed()
            if ticks % 30 == 0:
                moved += self.queue.flush_unschedulable_leftover()
            if moved:
                self.metrics.set_pending_pods(self.queue.counts())

    async def drain(self, within: float = 10.0) -> None:
        """Wait (bounded) for in-flight binds and condition updates at shutdown."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=within)

    async def _guarded_schedule_one(self, info: QueuedPod) -> None:
        try:
            await self.schedule_one(info)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("scheduling cycle failed", pod=info.key)
            self.queue.requeue_error(info)

    # ------------------------------------------------------------------ ScheduleOne
    async def schedule_one(self, info: QueuedPod) -> None:
        """One pod: the scheduling cycle now, then the binding cycle in the background."""
        if self.cache.placement(info.key) is not None:
            self.queue.done(info.key)  # bound meanwhile (by us earlier, or by someone else)
            return
        decision = await self._scheduling_cycle(info)
        if decision is None:
            return  # the failure was handled: reported and requeued
        # Binding cycle: asynchronous, so the next pod's scheduling cycle starts at once.
        await self._bind_slots.acquire()
        self._spawn(self._binding_cycle(info, decision), f"bind:{info.key}")

    async def _scheduling_cycle(self, info: QueuedPod) -> _Decision | None:
        """Pick a node, Reserve it and assume the pod there; None if the pod stays pending."""
        pod = info.pod
        cycle = self.queue.scheduling_cycle
        started = time.monotonic()

        # 1. Pods whose volumes need plugins opsche lacks are refused, never placed blindly.
        if pod.unsupported_volumes:
            message = (
                f"opsche does not schedule pods using {', '.join(pod.unsupported_volumes)} "
                "(volume binding and dynamic resource allocation are not implemented); "
                "use kube-scheduler for this pod"
            )
            self._handle_scheduling_failure(
                info,
                message,
                {"VolumeBinding"},
                cycle,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                started,
            )
            return None

        # 2. PreFilter, Filter and Score on an immutable snapshot of the cache.
        state = CycleState(self.cache.snapshot())
        algorithm_started = time.monotonic()
        try:
            if self.extenders:
                result = await schedule_with_extenders(
                    self.framework,
                    self.extenders,
                    state,
                    pod,
                    self.nominated(),
                    self._extender_skipped,
                )
            else:
                result = self.framework.schedule(state, pod, self.nominated())
        except ExtenderError as error:
            # A non-ignorable filter extender failed: upstream fails the cycle with the error
            # itself as the message, reason SchedulerError, and retries the pod with backoff.
            self.metrics.algorithm_duration.observe(time.monotonic() - algorithm_started)
            log.warning("extender failed; pod not scheduled", pod=pod.key, error=str(error))
            self._handle_scheduling_failure(info, str(error), set(), cycle, Code.ERROR, started)
            return None
        except FitError as fit:
            self.metrics.algorithm_duration.observe(time.monotonic() - algorithm_started)
            # 3. No node fits: PostFilter (preemption) may nominate one for a later cycle.
            nominated = await self._post_filter(state, pod, fit)
            self._handle_scheduling_failure(
                info,
                str(fit),
                fit.diagnosis.unschedulable_plugins,
                cycle,
                fit.code,
                started,
                nominated,
            )
            return None
        self.metrics.algorithm_duration.observe(time.monotonic() - algorithm_started)
        if self.extenders and (
            self.queue.where(pod.key) != "inflight" or self.cache.placement(pod.key) is not None
        ):
            # The extender calls awaited: meanwhile the pod was deleted, or bound by someone
            # else. Its decision is void; assuming it would resurrect or double-count it.
            self.queue.done(pod.key)
            log.info("pod changed during its extender calls; cycle abandoned", pod=pod.key)
            return None

        # 4. Reserve: plugins claim what they track on the node (a plan's quota, for one).
        status = self.framework.run_reserve(state, pod, result.node)
        if not status.ok:
            self._handle_scheduling_failure(
                info, status.message, {status.plugin}, cycle, status.code, started
            )
            return None

        # 5. Assume: the cache counts the pod on its node before the Binding returns.
        assumed = self.cache.assume(pod, result.node)
        self.nominator.clear(pod.key)
        self.queue.done(pod.key)
        self.metrics.set_pending_pods(self.queue.counts())
        self.metrics.schedule_attempts.labels(AttemptResult.SCHEDULED, self.name).inc()
        self.metrics.attempt_duration.labels(AttemptResult.SCHEDULED, self.name).observe(
            time.monotonic() - started
        )
        log.debug(
            "pod assumed",
            pod=pod.key,
            node=result.node,
            evaluated=result.evaluated,
            feasible=result.feasible,
            cycle_s=round(time.monotonic() - started, 6),
        )
        return _Decision(state, assumed, result.node)

    async def _binding_cycle(self, info: QueuedPod, decision: _Decision) -> None:
        """POST the Binding; on failure undo the assumption and retry the pod with backoff."""
        pod, node = decision.pod, decision.node
        started = time.monotonic()
        try:
            await self.binder.bind(pod, node)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("bind failed", pod=pod.key, node=node, error=str(exc))
            self._handle_binding_failure(info, decision, exc)
        else:
            self.scheduled += 1
            self.metrics.binding_duration.observe(time.monotonic() - started)
            if info.initial_attempt_at is not None:
                self.metrics.sli_duration.labels(str(min(info.attempts, 16))).observe(
                    time.monotonic() - info.initial_attempt_at
                )
            log.info("pod scheduled", pod=pod.key, node=node, attempts=info.attempts)
            self.binder.event(pod, "Scheduled", f"Successfully assigned {pod.key} to {node}")
        finally:
            self._bind_slots.release()
            self.metrics.set_pending_pods(self.queue.counts())

    # ------------------------------------------------------------------ failures
    async def _post_filter(self, state: CycleState, pod: Pod, fit: FitError) -> str | None:
        """Run preemption when it could help; returns the nominated node, if any."""
        # Upstream runs PostFilter on every FitError; DefaultPreemption itself reports "not
        # helpful" for unresolvable nodes, and that text is part of the FailedScheduling event.
        if not self.preemption or not self.framework.post_filter_plugins:
            return None
        if self.preemption_paused():
            return None
        self.metrics.preemption_attempts.inc()
        result, status = self.framework.run_post_filter(state, pod, fit.diagnosis.node_statuses)
        if result is None:
            fit.diagnosis.post_filter_message = status.message
            return None
        if result.victims and not self.preemption_gate(pod):
            fit.diagnosis.post_filter_message = (
                "preemption: deferred until a cluster-wide plan has been tried."
            )
            return None
        self.metrics.preemption_victims.observe(len(result.victims))
        log.info(
            "preempting",
            pod=pod.key,
            node=result.nominated_node,
            victims=[v.key for v in result.victims],
        )
        if not await self.binder.preempt(pod, result):
            fit.diagnosis.post_filter_message = "preemption: an eviction was refused."
            return None
        self.nominator.nominate(pod, result.nominated_node)
        return result.nominated_node

    def _extender_skipped(
        self, extender: Extender, verb: str, pod: Pod, error: ExtenderError
    ) -> None:
        """An ignorable extender (or any prioritize call) failed and the cycle went on."""
        log.warning(
            "extender skipped",
            extender=extender.name,
            verb=verb,
            pod=pod.key,
            kind=error.kind,
            error=str(error),
        )

    def _handle_scheduling_failure(
        self,
        info: QueuedPod,
        message: str,
        plugins: set[str],
        cycle: int,
        code: Code,
        started: float,
        nominated: str | None = None,
    ) -> None:
        """Count, log, requeue, post FailedScheduling and set PodScheduled=False."""
        pod = info.pod
        unschedulable = code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        result = AttemptResult.UNSCHEDULABLE if unschedulable else AttemptResult.ERROR
        self.metrics.schedule_attempts.labels(result, self.name).inc()
        self.metrics.attempt_duration.labels(result, self.name).observe(time.monotonic() - started)
        log.info("pod unschedulable", pod=pod.key, reason=message, attempts=info.attempts)
        if unschedulable:
            self.queue.requeue_unschedulable(info, plugins, cycle)
        else:
            self.queue.requeue_error(info)
        self.metrics.set_pending_pods(self.queue.counts())
        self.binder.event(pod, "FailedScheduling", message, type_="Warning")
        for hook in self.on_unschedulable:
            hook(pod)
        unchanged = pod.unschedulable_message == message and (
            nominated is None or nominated == pod.nominated_node_name
        )
        if not unchanged:  # as upstream's updatePod: no write when nothing would change
            reason = "Unschedulable" if unschedulable else "SchedulerError"
            self._spawn(
                self._set_condition(pod, message, nominated, reason), f"condition:{pod.key}"
            )

    def _handle_binding_failure(self, info: QueuedPod, decision: _Decision, exc: Exception) -> None:
        """Forget the assumption, Unreserve, and retry the pod unless it went away meanwhile."""
        pod, node = decision.pod, decision.node
        # Still assumed means neither deleted nor confirmed by the watch meanwhile: only then
        # retry it (a pod deleted during the bind must not come back to the queue).
        still_assumed = self.cache.is_assumed(pod.key)
        self.cache.forget(pod)
        self.framework.run_unreserve(decision.state, pod, node)
        if still_assumed and self.cache.placement(pod.key) is None and pod.key not in self.queue:
            self.queue.add(info.pod)
            requeued = self.queue.info(pod.key)
            if requeued is not None:
                requeued.attempts = info.attempts
                self.queue.requeue_error(requeued)
        self.metrics.schedule_attempts.labels(AttemptResult.ERROR, self.name).inc()
        self.binder.event(info.pod, "FailedScheduling", f"Binding rejected: {exc}", type_="Warning")

    async def _set_condition(
        self, pod: Pod, message: str, nominated: str | None, reason: str
    ) -> None:
        try:
            await self.binder.set_unschedulable(pod, message, nominated, reason=reason)
        except Exception as exc:
            log.warning("could not set PodScheduled condition", pod=pod.key, error=str(exc))

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """A background task the scheduler keeps a reference to (and ``drain`` awaits)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
