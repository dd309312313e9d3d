"""The scheduling cycle: pop a pod, decide on a snapshot, assume, hand over to the binder.

Read it as kube-scheduler's ``schedule_one.go`` in Python:

1. ``pop`` the highest-priority pod from the queue;
2. take an immutable snapshot of the cache and run the framework (PreFilter, Filter, Score);
3. on success, Reserve, *assume* the pod on the node in the cache (so the next cycle counts it),
   and start the bind asynchronously (at most ``bind_workers`` at once); scheduling goes on;
4. on failure, run PostFilter (preemption), report ``FailedScheduling`` with upstream's message and
   the ``PodScheduled=False`` condition, and requeue the pod by the queue's rules;
5. a failed bind forgets the assumption, unreserves, and retries the pod with backoff.

The scheduler is also the intake sink: watch events update the cache and move pods between queue
pools (a node added or a pod deleted may make parked pods fit).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping

import structlog

from opsche_daemon.cache import Cache
from opsche_daemon.framework.interface import Code, CycleState, PostFilterResult
from opsche_daemon.framework.runtime import FitError, Framework
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot
from opsche_daemon.queue import QueuedPod, SchedulingQueue

__all__ = ["Binder", "Scheduler"]

log = structlog.get_logger("opsche.scheduler")


class Binder:
    """What the scheduler needs from the API side (implemented over ``kube.writer.Writer``)."""

    async def bind(self, pod: Pod, node_name: str) -> None:
        """Bind or raise."""
        raise NotImplementedError

    def event(self, pod: Pod, reason: str, note: str, *, type_: str = "Normal") -> None:
        """Post an event in the background."""
        raise NotImplementedError

    async def set_unschedulable(self, pod: Pod, message: str, nominated_node: str | None) -> None:
        """Set the PodScheduled=False condition (and nominatedNodeName)."""
        raise NotImplementedError

    async def preempt(self, preemptor: Pod, result: PostFilterResult) -> bool:
        """Evict the victims; False if any eviction was refused."""
        raise NotImplementedError


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
    ) -> None:
        self.name = name
        self.framework = framework
        self.queue = queue
        self.cache = cache
        self.binder = binder
        self.metrics = metrics
        self.preemption = preemption
        self._bind_slots = asyncio.Semaphore(bind_workers)
        self._tasks: set[asyncio.Task[None]] = set()
        self._nominated: dict[str, dict[str, Pod]] = {}  # node -> pod key -> pod
        self.scheduled = 0
        self.turn_budget_s = 0.05
        # Cleared while the optimiser blocks scheduling (plan computation in blocking mode).
        self._running = asyncio.Event()
        self._running.set()
        # Called with each pod a cycle found unschedulable (the scheduling-failure trigger).
        self.on_unschedulable: list[Callable[[Pod], None]] = []
        # True while a plan is enforced: preemption then stays out of the plan's way.
        self.preemption_paused: Callable[[], bool] = lambda: False
        size = metrics.cache_size
        size.labels("nodes").set_function(lambda: cache.stats().nodes)
        size.labels("pods").set_function(lambda: cache.stats().bound_pods)
        size.labels("assumed_pods").set_function(lambda: cache.stats().assumed_pods)

    # ------------------------------------------------------------------ intake sink
    def responsible_for(self, pod: Pod) -> bool:
        """Pods that name this scheduler, are unbound, not terminal and not being deleted."""
        return (
            pod.scheduler_name == self.name
            and not pod.node_name
            and not pod.terminal
            and not pod.deleting
        )

    def pod_changed(self, pod: Pod) -> None:
        """Update the cache; enqueue, update or drop the pod in the queue."""
        was_assumed = self.cache.is_assumed(pod.key)
        self.cache.upsert_pod(pod)
        if pod.node_name:
            self._clear_nomination(pod.key)
            if pod.key in self.queue:
                self.queue.delete(pod.key)
            return
        if was_assumed:
            return  # our bind is in flight; this is an older state of the pod
        if self.responsible_for(pod):
            is_new = pod.key not in self.queue
            self.queue.add(pod)
            if is_new:
                self.metrics.queue_incoming_pods.labels(
                    self.queue.where(pod.key) or "active", "PodAdd"
                ).inc()
        elif pod.key in self.queue:
            self.queue.delete(pod.key)
        self._update_gauges()

    def pod_deleted(self, pod: Pod) -> None:
        """A pod went away: its room may let parked pods fit."""
        was_bound = self.cache.placement(pod.key) is not None
        self.cache.remove_pod(pod.key)
        self.queue.delete(pod.key)
        self._clear_nomination(pod.key)
        if was_bound:
            self._move("AssignedPodDelete")
        self._update_gauges()

    def node_changed(self, node: Node) -> None:
        """A node was added or changed: parked pods may fit now."""
        known = self.cache.node(node.name)
        self.cache.upsert_node(node)
        if known is None:
            self._move("NodeAdd")
        elif _node_may_help(known, node):
            self._move("NodeUpdate")

    def node_deleted(self, name: str) -> None:
        """A node went away."""
        self.cache.remove_node(name)
        self._nominated.pop(name, None)

    def namespace_changed(self, name: str, labels: Mapping[str, str] | None) -> None:
        """Namespace labels, for pod-affinity namespace selectors."""
        if labels is None:
            self.cache.remove_namespace(name)
        else:
            self.cache.upsert_namespace(name, labels)

    def workload_changed(
        self, kind: str, namespace: str, name: str, selector: LabelSelector | None
    ) -> None:
        """A workload selector, for default topology spreading."""
        if selector is None:
            self.cache.remove_workload(kind, namespace, name)
        else:
            self.cache.upsert_workload(kind, namespace, name, selector)

    def budget_changed(self, budget: DisruptionBudget, deleted: bool = False) -> None:
        """PodDisruptionBudgets, for preemption that counts (or respects) violations."""
        if deleted:
            self.cache.remove_budget(budget.namespace, budget.name)
        else:
            self.cache.upsert_budget(budget)

    def _move(self, event: str) -> None:
        moved = self.queue.move_all_to_active_or_backoff(event)
        if moved:
            # Not ``event=``: structlog takes the message as its ``event`` argument.
            log.debug("moved unschedulable pods", cluster_event=event, moved=moved)
            self.metrics.queue_incoming_pods.labels("active", event).inc(moved)
        self._update_gauges()

    def _update_gauges(self) -> None:
        for queue, count in self.queue.counts().items():
            self.metrics.pending_pods.labels(queue).set(count)

    # ------------------------------------------------------------------ nominations
    def _clear_nomination(self, key: str) -> None:
        for pods in self._nominated.values():
            pods.pop(key, None)

    def _nominate(self, pod: Pod, node_name: str) -> None:
        self._clear_nomination(pod.key)
        self._nominated.setdefault(node_name, {})[pod.key] = pod

    def nominated(self) -> dict[str, list[Pod]]:
        """Nominated pods per node (preemptors waiting for their victims to leave)."""
        return {node: list(pods.values()) for node, pods in self._nominated.items() if pods}

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
                await self._guarded_cycle(info)
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

    async def _guarded_cycle(self, info: QueuedPod) -> None:
        try:
            await self.schedule_one(info)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("scheduling cycle failed", pod=info.key)
            self.queue.requeue_error(info)

    async def schedule_one(self, info: QueuedPod) -> None:
        """One scheduling cycle for one pod."""
        pod = info.pod
        cycle = self.queue.scheduling_cycle
        started = time.monotonic()
        if self.cache.placement(pod.key) is not None:
            self.queue.done(pod.key)  # bound meanwhile (by us earlier, or by someone else)
            return
        if pod.unsupported_volumes:
            message = (
                f"opsche does not schedule pods using {', '.join(pod.unsupported_volumes)} "
                "(volume binding and dynamic resource allocation are not implemented); "
                "use kube-scheduler for this pod"
            )
            self._record_failure(
                info,
                message,
                {"VolumeBinding"},
                cycle,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                started,
            )
            return
        state = CycleState(self.cache.snapshot())
        algorithm_started = time.monotonic()
        try:
            result = self.framework.schedule(state, pod, self.nominated())
        except FitError as fit:
            self.metrics.algorithm_duration.observe(time.monotonic() - algorithm_started)
            nominated = await self._post_filter(state, pod, fit)
            message = str(fit)
            self._record_failure(
                info,
                message,
                fit.diagnosis.unschedulable_plugins,
                cycle,
                fit.code,
                started,
                nominated,
            )
            return
        self.metrics.algorithm_duration.observe(time.monotonic() - algorithm_started)
        status = self.framework.run_reserve(state, pod, result.node)
        if not status.ok:
            self._record_failure(info, status.message, {status.plugin}, cycle, status.code, started)
            return
        assumed = self.cache.assume(pod, result.node)
        self._clear_nomination(pod.key)
        self.queue.done(pod.key)
        self._update_gauges()
        self.metrics.schedule_attempts.labels("scheduled", self.name).inc()
        self.metrics.attempt_duration.labels("scheduled", self.name).observe(
            time.monotonic() - started
        )
        log.debug(
            "pod assumed",
            pod=pod.key,
            node=result.node,
            evaluated=result.evaluated,
            feasible=result.feasible,
        )
        await self._bind_slots.acquire()
        task = asyncio.get_running_loop().create_task(
            self._bind(info, state, assumed, result.node), name=f"bind:{pod.key}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
        self._nominate(pod, result.nominated_node)
        return result.nominated_node

    def _record_failure(
        self,
        info: QueuedPod,
        message: str,
        plugins: set[str],
        cycle: int,
        code: Code,
        started: float,
        nominated: str | None = None,
    ) -> None:
        pod = info.pod
        result = (
            "unschedulable"
            if code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
            else "error"
        )
        self.metrics.schedule_attempts.labels(result, self.name).inc()
        self.metrics.attempt_duration.labels(result, self.name).observe(time.monotonic() - started)
        log.info("pod unschedulable", pod=pod.key, reason=message, attempts=info.attempts)
        if result == "error":
            self.queue.requeue_error(info)
        else:
            self.queue.requeue_unschedulable(info, plugins, cycle)
        self._update_gauges()
        self.binder.event(pod, "FailedScheduling", message, type_="Warning")
        for hook in self.on_unschedulable:
            hook(pod)
        task = asyncio.get_running_loop().create_task(
            self._set_condition(pod, message, nominated), name=f"condition:{pod.key}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _set_condition(self, pod: Pod, message: str, nominated: str | None) -> None:
        try:
            await self.binder.set_unschedulable(pod, message, nominated)
        except Exception as exc:
            log.warning("could not set PodScheduled condition", pod=pod.key, error=str(exc))

    async def _bind(self, info: QueuedPod, state: CycleState, pod: Pod, node: str) -> None:
        started = time.monotonic()
        try:
            await self.binder.bind(pod, node)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("bind failed", pod=pod.key, node=node, error=str(exc))
            # Still assumed means neither deleted nor confirmed by the watch meanwhile: only
            # then retry it (a pod deleted during the bind must not come back to the queue).
            still_assumed = self.cache.is_assumed(pod.key)
            self.cache.forget(pod)
            self.framework.run_unreserve(state, pod, node)
            current = self.cache.placement(pod.key)
            if still_assumed and current is None and pod.key not in self.queue:
                self.queue.add(info.pod)
                requeued = self.queue.info(pod.key)
                if requeued is not None:
                    requeued.attempts = info.attempts
                    self.queue.requeue_error(requeued)
            self.metrics.schedule_attempts.labels("error", self.name).inc()
            self.binder.event(
                info.pod, "FailedScheduling", f"Binding rejected: {exc}", type_="Warning"
            )
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
            self._update_gauges()

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
                self._update_gauges()

    async def drain(self, within: float = 10.0) -> None:
        """Wait (bounded) for in-flight binds at shutdown."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=within)


def _node_may_help(old: Node, new: Node) -> bool:
    """Whether a node update could make a parked pod fit (upstream's NodeUpdate event filter)."""
    return (
        old.allocatable != new.allocatable
        or old.labels != new.labels
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
    )
