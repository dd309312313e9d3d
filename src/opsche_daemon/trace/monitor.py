"""The replay monitor's bookkeeping: pod watch events in, samples and per-pod records out.

Pure on purpose: the replayer feeds it raw pod objects from its watch together with the time it
saw each one, and the arithmetic (what counts as running or pending, which deletion is a
disruption and of what kind) is unit-tested without a cluster.

Times are the monitor's own observations on one monotonic clock, so a latency is the difference
of two observations by the same watch (creation and first Running), not of two API timestamps
that have one-second resolution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opsche_daemon.trace.model import Trace, Workload
from opsche_daemon.trace.result import DeletionCause, PodRecord, Sample

__all__ = [
    "LABEL_INITIAL",
    "LABEL_PRIORITY",
    "LABEL_WORKLOAD",
    "PodTracker",
    "deletion_cause",
    "disruption_reason",
]

LABEL_WORKLOAD = "opsche.dev/workload"
LABEL_PRIORITY = "opsche.dev/priority"
LABEL_INITIAL = "opsche.dev/initial"

_REASONS = {
    "PreemptionByScheduler": DeletionCause.PREEMPTED,
    "EvictionByEvictionAPI": DeletionCause.EVICTED,
}


def disruption_reason(obj: dict[str, Any]) -> str | None:
    """The reason of the pod's ``DisruptionTarget=True`` condition, if it has one."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            return str(condition.get("reason"))
    return None


def deletion_cause(
    obj: dict[str, Any],
    deleted_at: float,
    workload_ended_at: float | None,
    first_reason: str | None = None,
) -> DeletionCause:
    """Why a pod went away: its workload's end, else its ``DisruptionTarget`` reason.

    A deletion first seen before the replayer deleted the workload is a disruption even if the
    workload ends while the pod is still terminating. ``first_reason`` is the first
    ``DisruptionTarget`` reason the monitor saw on the pod: opsche marks a preemption victim
    ``PreemptionByScheduler`` and then evicts it through the Eviction API, which overwrites the
    condition with ``EvictionByEvictionAPI``; the first reason is the one that says why.
    """
    if workload_ended_at is not None and workload_ended_at <= deleted_at:
        return DeletionCause.WORKLOAD_END
    reason = first_reason or disruption_reason(obj)
    if reason is None:
        return DeletionCause.DELETED
    return _REASONS.get(reason, DeletionCause.DELETED)


@dataclass
class _Pod:
    name: str
    workload: Workload
    created: float
    running: float | None = None
    deleted: float | None = None
    bound: float | None = None
    gone: bool = False
    node: str | None = None
    phase: str = "Pending"
    last: dict[str, Any] | None = None
    reason: str | None = None  # the first DisruptionTarget reason seen


class PodTracker:
    """Every pod of the replay's namespace, as last seen, with the times that matter."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.workloads = {w.name: w for w in trace.workloads}
        self.cpu_total = trace.nodes * trace.node.cpu_millis
        self.memory_total = trace.nodes * trace.node.memory_mib
        self.pods: dict[str, _Pod] = {}
        self.ended: dict[str, float] = {}
        self.foreign = 0  # pods in the namespace that belong to no trace workload

    def workload_ended(self, workload: str, now: float) -> None:
        """The replayer is about to delete ``workload``'s ReplicaSet."""
        self.ended.setdefault(workload, now)

    def observe(self, event_type: str, obj: dict[str, Any], now: float) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) for a pod, seen at ``now``."""
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        workload = self.workloads.get(str((meta.get("labels") or {}).get(LABEL_WORKLOAD)))
        if not isinstance(name, str) or workload is None:
            if isinstance(name, str) and event_type == "ADDED":
                self.foreign += 1
            return
        pod = self.pods.get(name)
        if pod is None:
            pod = self.pods[name] = _Pod(name, workload, now)
        pod.last = obj
        if pod.reason is None:
            pod.reason = disruption_reason(obj)
        status = obj.get("status") or {}
        pod.phase = str(status.get("phase") or "Pending")
        pod.node = (obj.get("spec") or {}).get("nodeName") or pod.node
        if pod.node is not None and pod.bound is None:
            pod.bound = now
        if pod.deleted is None and (meta.get("deletionTimestamp") or event_type == "DELETED"):
            pod.deleted = now
        # A pod whose deletion began before it ran never counts as running: KWOK (like a
        # kubelet) may still report Running on a terminating pod, and its latency would be a
        # time after its own deletion.
        if pod.phase == "Running" and pod.running is None and pod.deleted is None:
            pod.running = now
        if event_type == "DELETED":
            pod.gone = True

    def _counts(self) -> tuple[int, int, int, int]:
        running = pending = cpu = memory = 0
        for pod in self.pods.values():
            if pod.deleted is not None:
                continue
            if pod.phase == "Running":
                running += 1
                cpu += pod.workload.pod_cpu_millis(self.trace.node)
                memory += pod.workload.pod_memory_mib(self.trace.node)
            elif pod.phase == "Pending":
                pending += 1
        return running, pending, cpu, memory

    def sample(self, t: float) -> Sample:
        """Running and pending pods now, and the requests of running ones as capacity shares."""
        running, pending, cpu, memory = self._counts()
        return Sample(t, running, pending, cpu / self.cpu_total, memory / self.memory_total)

    def unplaced(self, *, initial: bool) -> int:
        """Pods of initial (or arriving) workloads not deleted and not yet Running."""
        return sum(
            1
            for p in self.pods.values()
            if p.workload.initial == initial and p.deleted is None and p.running is None
        )

    def records(self, t0: float) -> list[PodRecord]:
        """One record per pod, times relative to ``t0`` (the replay's start)."""
        out = []
        for pod in sorted(self.pods.values(), key=lambda p: (p.created, p.name)):
            cause = None
            if pod.deleted is not None:
                cause = deletion_cause(
                    pod.last or {}, pod.deleted, self.ended.get(pod.workload.name), pod.reason
                )
            out.append(
                PodRecord(
                    name=pod.name,
                    workload=pod.workload.name,
                    priority=pod.workload.priority,
                    initial=pod.workload.initial,
                    created_s=pod.created - t0,
                    running_s=None if pod.running is None else pod.running - t0,
                    deleted_s=None if pod.deleted is None else pod.deleted - t0,
                    node=pod.node,
                    cause=cause,
                    bound_s=None if pod.bound is None else pod.bound - t0,
                )
            )
        return out

    def disruptions(self) -> int:
        """Pods of arriving workloads deleted while their workload was alive, so far."""
        return sum(
            1
            for p in self.pods.values()
            if not p.workload.initial
            and p.deleted is not None
            and deletion_cause(
                p.last or {}, p.deleted, self.ended.get(p.workload.name), p.reason
            ).disruption
        )
