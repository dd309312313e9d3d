"""The monitor's arithmetic: what is running or pending, and which deletion is a disruption."""

from __future__ import annotations

from typing import Any

import pytest

from opsche_daemon.trace.model import NodeShape, Trace, Workload
from opsche_daemon.trace.monitor import LABEL_WORKLOAD, PodTracker, deletion_cause
from opsche_daemon.trace.result import DeletionCause

NODE = NodeShape(cpu_millis=4000, memory_mib=16384)


def _trace() -> Trace:
    workloads = (
        Workload("init-0001", 0.0, 500.0, 1, 1, 0.5, 0.25, initial=True),
        Workload("wl-00001", 1.0, 50.0, 2, 2, 0.25, 0.5),
    )
    return Trace(nodes=2, node=NODE, horizon_s=100.0, priorities=2, workloads=workloads)


def _pod(
    name: str,
    workload: str,
    phase: str = "Pending",
    node: str | None = None,
    deleting: bool = False,
    reason: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_WORKLOAD: workload}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if reason is not None:
        status["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": reason}]
    spec = {"nodeName": node} if node else {}
    return {"metadata": meta, "spec": spec, "status": status}


def test_samples_count_running_requests_as_capacity_shares() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("i", "init-0001"), 0.0)
    tracker.observe("MODIFIED", _pod("i", "init-0001", "Running", "n0"), 0.5)
    tracker.observe("ADDED", _pod("a", "wl-00001"), 1.0)
    tracker.observe("ADDED", _pod("b", "wl-00001"), 1.0)
    tracker.observe("MODIFIED", _pod("a", "wl-00001", "Running", "n1"), 1.2)
    sample = tracker.sample(2.0)
    assert (sample.running, sample.pending) == (2, 1)
    # cpu: 2000m + 1000m of 8000m; memory: 4096Mi + 8192Mi of 32768Mi
    assert sample.cpu == pytest.approx(3000 / 8000)
    assert sample.memory == pytest.approx(12288 / 32768)
    assert sample.effective == pytest.approx(3000 / 8000)


def test_terminating_pods_stop_counting_and_records_carry_times() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("a", "wl-00001"), 10.0)
    tracker.observe("MODIFIED", _pod("a", "wl-00001", "Running", "n1"), 10.25)
    tracker.observe("MODIFIED", _pod("a", "wl-00001", "Running", "n1", deleting=True), 12.0)
    assert tracker.sample(12.5).running == 0
    tracker.observe("DELETED", _pod("a", "wl-00001", "Running", "n1", deleting=True), 12.5)
    (record,) = tracker.records(t0=10.0)
    assert (record.created_s, record.running_s, record.deleted_s) == (0.0, 0.25, 2.0)
    assert record.bound_s == 0.25  # first seen with a node in the same event as Running
    assert record.latency_ms == pytest.approx(250.0)
    assert record.node == "n1"
    assert record.cause is DeletionCause.DELETED


def test_a_pod_reported_running_after_its_deletion_began_never_ran() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("a", "wl-00001"), 35.0)
    tracker.observe("MODIFIED", _pod("a", "wl-00001", node="n1", deleting=True), 36.25)
    tracker.observe("MODIFIED", _pod("a", "wl-00001", "Running", "n1", deleting=True), 36.5)
    tracker.observe("DELETED", _pod("a", "wl-00001", "Running", "n1", deleting=True), 37.0)
    (record,) = tracker.records(t0=0.0)
    assert (record.created_s, record.running_s, record.deleted_s) == (35.0, None, 36.25)
    assert record.bound_s == 36.25
    assert record.latency_ms is None


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("PreemptionByScheduler", DeletionCause.PREEMPTED),
        ("EvictionByEvictionAPI", DeletionCause.EVICTED),
        ("DeletionByTaintManager", DeletionCause.DELETED),
        (None, DeletionCause.DELETED),
    ],
)
def test_deletions_while_the_workload_lives_are_classified_by_disruption_reason(
    reason: str | None, cause: DeletionCause
) -> None:
    obj = _pod("a", "wl-00001", "Running", "n1", deleting=True, reason=reason)
    assert deletion_cause(obj, deleted_at=5.0, workload_ended_at=None) is cause
    assert deletion_cause(obj, deleted_at=5.0, workload_ended_at=6.0) is cause
    assert cause.disruption


def test_deletion_after_the_workload_ended_is_not_a_disruption() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("a", "wl-00001", "Running", "n1"), 1.0)
    tracker.observe("ADDED", _pod("b", "wl-00001", "Running", "n1"), 1.0)
    tracker.observe("DELETED", _pod("b", "wl-00001", reason="PreemptionByScheduler"), 3.0)
    tracker.workload_ended("wl-00001", 5.0)
    tracker.observe("DELETED", _pod("a", "wl-00001", "Running", "n1"), 5.1)
    causes = {r.name: r.cause for r in tracker.records(0.0)}
    assert causes == {"a": DeletionCause.WORKLOAD_END, "b": DeletionCause.PREEMPTED}
    assert tracker.disruptions() == 1


def test_pods_of_no_trace_workload_are_counted_apart() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("x", "someone-else"), 1.0)
    assert tracker.foreign == 1
    assert tracker.records(0.0) == []
    assert tracker.unplaced(initial=False) == 0


def test_an_opsche_preemption_stays_a_preemption_after_the_eviction_overwrites_its_reason() -> None:
    tracker = PodTracker(_trace())
    tracker.observe("ADDED", _pod("a", "wl-00001", "Running", "n1"), 1.0)
    marked = _pod("a", "wl-00001", "Running", "n1", reason="PreemptionByScheduler")
    tracker.observe("MODIFIED", marked, 2.0)
    evicted = _pod("a", "wl-00001", "Running", "n1", deleting=True, reason="EvictionByEvictionAPI")
    tracker.observe("MODIFIED", evicted, 2.1)
    tracker.observe("DELETED", evicted, 2.2)
    (record,) = tracker.records(0.0)
    assert record.cause is DeletionCause.PREEMPTED
