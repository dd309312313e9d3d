"""The event handlers: watch events into the cache and the queue (upstream ``eventhandlers.go``).

The kube layer's watch calls these (they implement ``kube.intake.IntakeSink``). Each handler keeps
the cache true and moves pods between the queue's pools when an event could change a decision:

* a pending pod of this scheduler is added to (or updated in) the queue; once bound, by anyone,
  it leaves the queue and the cache counts it on its node;
* a bound pod deleted frees room, and a node added or changed in a way that could help
  (allocatable, labels, taints, the unschedulable flag) makes parked pods worth another try:
  they move from the unschedulable pool to active or backoff (``AssignedPodDelete``, ``NodeAdd``,
  ``NodeUpdate``, upstream's cluster events);
* namespaces, workload selectors and PodDisruptionBudgets are cached for the plugins that read
  them (pod affinity's namespace selectors, default topology spreading, preemption).

Handlers never await: the watch delivers events in order and each one is applied at once.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from opsche_daemon.cache import Cache
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget
from opsche_daemon.queue import SchedulingQueue
from opsche_daemon.scheduler.nominator import Nominator

__all__ = ["EventHandlers", "node_may_help"]

log = structlog.get_logger("opsche.scheduler")


class EventHandlers:
    """The intake sink of one scheduler: its cache, its queue and its nominations."""

    def __init__(
        self,
        scheduler_name: str,
        cache: Cache,
        queue: SchedulingQueue,
        metrics: Metrics,
        nominator: Nominator,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.cache = cache
        self.queue = queue
        self.metrics = metrics
        self.nominator = nominator

    def responsible_for(self, pod: Pod) -> bool:
        """Pods that name this scheduler, are unbound, not terminal and not being deleted."""
        return (
            pod.scheduler_name == self.scheduler_name
            and not pod.node_name
            and not pod.terminal
            and not pod.deleting
        )

    # ------------------------------------------------------------------ pods
    def pod_changed(self, pod: Pod) -> None:
        """Update the cache; enqueue, update or drop the pod in the queue."""
        was_assumed = self.cache.is_assumed(pod.key)
        self.cache.upsert_pod(pod)
        if pod.node_name:
            self.nominator.clear(pod.key)
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
                log.debug("pod queued", pod=pod.key)  # with "pod assumed": where latency goes
        elif pod.key in self.queue:
            self.queue.delete(pod.key)
        self.metrics.set_pending_pods(self.queue.counts())

    def pod_deleted(self, pod: Pod) -> None:
        """A pod went away: its room may let parked pods fit."""
        was_bound = self.cache.placement(pod.key) is not None
        self.cache.remove_pod(pod.key)
        self.queue.delete(pod.key)
        self.nominator.clear(pod.key)
        if was_bound:
            self._move("AssignedPodDelete")
        self.metrics.set_pending_pods(self.queue.counts())

    # ------------------------------------------------------------------ nodes
    def node_changed(self, node: Node) -> None:
        """A node was added or changed: parked pods may fit now."""
        known = self.cache.node(node.name)
        self.cache.upsert_node(node)
        if known is None:
            self._move("NodeAdd")
        elif node_may_help(known, node):
            self._move("NodeUpdate")

    def node_deleted(self, name: str) -> None:
        """A node went away."""
        self.cache.remove_node(name)
        self.nominator.node_deleted(name)

    # ------------------------------------------------------------------ what plugins read
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
        self.metrics.set_pending_pods(self.queue.counts())


def node_may_help(old: Node, new: Node) -> bool:
    """Whether a node update could make a parked pod fit (upstream's NodeUpdate event filter)."""
    return (
        old.allocatable != new.allocatable
        or old.labels != new.labels
        or old.taints != new.taints
        or old.unschedulable != new.unschedulable
    )
