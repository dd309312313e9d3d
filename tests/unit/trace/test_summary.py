"""The monitor's arithmetic on hand-built records, and the consistency check that guards it."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from opsche_daemon.trace.bounds import limit_usage, pooled_usage
from opsche_daemon.trace.model import NodeShape, Trace, Workload
from opsche_daemon.trace.result import (
    DeletionCause,
    PodRecord,
    ReplayResult,
    Sample,
    SchedulerRun,
    Summary,
)
from opsche_daemon.trace.summary import check_consistency, percentile, summarise

NODE = NodeShape(cpu_millis=1000, memory_mib=1000)
TRACE = Trace(
    nodes=1,
    node=NODE,
    horizon_s=10.0,
    priorities=3,
    workloads=(
        Workload("init", 0.0, 4.0, 1, 1, 0.4, 0.1, initial=True),
        Workload("w1", 0.0, 8.0, 2, 1, 0.3, 0.2),
        Workload("w2", 1.0, 3.0, 1, 2, 0.2, 0.5),
    ),
)

P = DeletionCause.PREEMPTED
E = DeletionCause.EVICTED
END = DeletionCause.WORKLOAD_END

PODS = (
    # the initial pod: a huge latency and a preemption, neither of which counts
    PodRecord("init-a", "init", 1, True, -30.0, -1.0, 2.0, "n1", P),
    PodRecord("w1-a", "w1", 1, False, 0.0, 0.5, 8.0, "n1", END),
    PodRecord("w1-b", "w1", 1, False, 0.0, 2.0, 2.5, "n1", P),
    PodRecord("w1-c", "w1", 1, False, 2.5, None, 8.0, None, END),  # the replacement, never ran
    PodRecord("w2-a", "w2", 2, False, 1.0, 1.1, 2.9, "n1", E),
)

SAMPLES = (
    Sample(-1.0, 1, 0, 0.4, 0.1),  # before the clock started: not counted
    Sample(0.0, 1, 2, 0.4, 0.1),
    Sample(1.0, 2, 1, 0.7, 0.3),
    Sample(2.0, 3, 0, 0.6, 0.8),
    Sample(3.0, 1, 1, 0.3, 0.2),
    Sample(4.0, 1, 1, 0.9, 0.9),  # after duration_s: not counted
)


def summary() -> Summary:
    return summarise(TRACE, SAMPLES, PODS, 3.0, solver_runs=7, plan_activations=2)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101])
def test_percentile_matches_numpy_linear_interpolation(n: int) -> None:
    rng = random.Random(n)
    values = [rng.expovariate(1 / 500) for _ in range(n)]
    for q in (0, 5, 37.5, 50, 95, 99, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_by_hand_and_its_errors() -> None:
    assert percentile([2000, 100, 500], 95) == pytest.approx(500 + 0.9 * 1500)
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        percentile([1.0], 101)


def test_usage_is_the_mean_effective_share_of_samples_within_the_replay() -> None:
    # t=0..3: max(cpu, memory) = 0.4, 0.7, 0.8, 0.3
    assert summary().effective_usage == pytest.approx((0.4 + 0.7 + 0.8 + 0.3) / 4)


def test_latency_counts_arriving_pods_that_ran() -> None:
    s = summary()
    # w1-a 500 ms, w1-b 2000 ms, w2-a 100 ms; the initial pod and w1-c do not count
    assert s.latency_p50_ms == pytest.approx(500)
    assert s.latency_p95_ms == pytest.approx(1850)
    assert s.latency_mean_ms == pytest.approx(2600 / 3)
    assert s.latency_by_priority["1"] == pytest.approx(
        {"p50_ms": 1250, "p95_ms": 1925, "mean_ms": 1250, "pods": 2}
    )
    assert s.latency_by_priority["2"] == pytest.approx(
        {"p50_ms": 100, "p95_ms": 100, "mean_ms": 100, "pods": 1}
    )
    assert s.latency_by_priority["3"] == {
        "p50_ms": None,
        "p95_ms": None,
        "mean_ms": None,
        "pods": 0,
    }


def test_the_latency_is_split_at_the_binding_when_pods_carry_bound_times() -> None:
    assert (summary().binding_p50_ms, summary().start_p50_ms) == (None, None)  # older results
    pods = (
        dataclasses.replace(PODS[1], bound_s=0.2),  # 200 ms to bind, 300 ms to start
        dataclasses.replace(PODS[2], bound_s=1.0),  # 1000 ms, 1000 ms
        dataclasses.replace(PODS[3], bound_s=7.0),  # bound but never ran: not in either median
        dataclasses.replace(PODS[4], bound_s=1.05),  # 50 ms, 50 ms
    )
    s = summarise(TRACE, SAMPLES, (PODS[0], *pods), 3.0, solver_runs=None, plan_activations=None)
    assert s.binding_p50_ms == pytest.approx(200)
    assert s.start_p50_ms == pytest.approx(300)
    assert pods[0].binding_ms == pytest.approx(200)
    assert pods[0].start_ms == pytest.approx(300)
    assert pods[2].start_ms is None


def test_disruptions_by_priority_and_cause_exclude_initial_pods() -> None:
    s = summary()
    assert s.disruptions == 2
    assert s.disruptions_by_priority == {"1": 1, "2": 1, "3": 0}
    assert s.disruptions_by_cause == {"preempted": 1, "evicted": 1, "deleted": 0}
    # ... but a plan (or preemption) that takes an initial pod disrupts its owner all the same:
    assert s.all_disruptions_by_cause == {"preempted": 2, "evicted": 1, "deleted": 0}


def test_counts_bounds_and_pass_through() -> None:
    s = summary()
    assert (s.pods_created, s.pods_ran, s.never_ran) == (4, 3, 1)
    assert s.pending_at_end == 1
    assert (s.solver_runs, s.plan_activations) == (7, 2)
    # The ceilings cover the replay's own window (3 s here), not the trace's 10 s horizon.
    assert s.limit_usage == limit_usage(TRACE, 3.0)
    assert s.pooled_usage == pooled_usage(TRACE, 3.0)
    assert limit_usage(TRACE, 3.0) != limit_usage(TRACE)
    scaled = summarise(TRACE, SAMPLES, PODS, 3.0, solver_runs=7, plan_activations=2, time_scale=2.0)
    assert scaled.limit_usage == limit_usage(TRACE, 6.0)


def test_a_replay_with_no_samples_and_no_arriving_pods() -> None:
    s = summarise(TRACE, [], PODS[:1], 3.0, solver_runs=None, plan_activations=None)
    assert s.effective_usage == 0.0
    assert s.pending_at_end == 0
    assert s.latency_mean_ms is None
    assert s.latency_p95_ms is None
    assert (s.pods_created, s.pods_ran, s.disruptions) == (0, 0, 0)
    assert s.disruptions_by_cause == {"preempted": 0, "evicted": 0, "deleted": 0}
    assert s.solver_runs is None


# --- consistency -----------------------------------------------------------------------------


def result(**changes: object) -> ReplayResult:
    base = ReplayResult(
        trace={"name": "t", "nodes": 1, "priorities": 3, "workloads": 3},
        scheduler=SchedulerRun("kube-scheduler", "default-scheduler"),
        time_scale=1.0,
        duration_s=3.0,
        wall_s=40.0,
        samples=SAMPLES,
        pods=PODS,
        summary=summary(),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_consistent_result_has_no_problems() -> None:
    assert check_consistency(TRACE, result()) == []


def test_unknown_workloads_and_wrong_priorities_are_found() -> None:
    pods: tuple[PodRecord, ...] = (*PODS, PodRecord("x-a", "x", 1, False, 1.0, 1.5))
    pods = (*pods, dataclasses.replace(PODS[1], name="w1-d", priority=3))
    problems = check_consistency(TRACE, result(pods=pods))
    assert any("pod x-a: workload 'x' is not in the trace" in p for p in problems)
    assert any(p.startswith("pod w1-d: priority 3") for p in problems)


def test_a_sample_above_capacity_is_found() -> None:
    # after the end, so only the capacity check sees it (pending as the last sample's)
    samples = (*SAMPLES, Sample(5.0, 4, 1, 1.0 + 1e-6, 0.5))
    problems = check_consistency(TRACE, result(samples=samples))
    assert any("above capacity" in p for p in problems)
    exactly_full = (*SAMPLES, Sample(5.0, 4, 1, 1.0 + 1e-12, 0.5))
    assert check_consistency(TRACE, result(samples=exactly_full)) == []


def test_causes_and_times_must_agree() -> None:
    pods = (
        *PODS,
        PodRecord("w1-e", "w1", 1, False, 3.0, None, 4.0, None, None),  # deleted, no cause
        PodRecord("w1-f", "w1", 1, False, 3.0, None, None, None, P),  # a cause, not deleted
        PodRecord("w1-g", "w1", 1, False, 3.0, 2.0, None),  # running before it was created
        PodRecord("w1-h", "w1", 1, False, 3.0, 3.5, None, "n1", bound_s=3.6),  # bound late
        PodRecord("w1-i", "w1", 1, False, 3.0, None, None, "n1", bound_s=2.9),  # bound early
    )
    problems = check_consistency(TRACE, result(pods=pods))
    assert any(p.startswith("pod w1-e: deleted_s=4.0 but cause=None") for p in problems)
    assert any(p.startswith("pod w1-f: deleted_s=None") for p in problems)
    assert any(p.startswith("pod w1-g:") and "not in order" in p for p in problems)
    assert any(p.startswith("pod w1-h: bound 3.6 is not between") for p in problems)
    assert any(p.startswith("pod w1-i: bound 2.9 is not between") for p in problems)


def test_missing_pods_of_a_started_workload_are_found_with_a_grace_at_the_end() -> None:
    without_w2 = tuple(p for p in PODS if p.workload != "w2")
    problems = check_consistency(TRACE, result(pods=without_w2))
    assert any("workload w2: 0 pod records, fewer than its 1 replicas" in p for p in problems)
    # w2 starts at 1 s of trace time; on a 2x clock that is 0.5 s real, alive until 1.5 s: less
    # than the 2 s grace, so a missing record is no evidence of a fault.
    problems = check_consistency(TRACE, result(pods=without_w2, time_scale=2.0))
    assert not any("workload w2" in p for p in problems)


def test_the_summary_must_add_up_and_match_the_records() -> None:
    s = summary()
    broken = dataclasses.replace(s, disruptions_by_cause={**s.disruptions_by_cause, "deleted": 1})
    problems = check_consistency(TRACE, result(summary=broken))
    assert any("disruptions by cause" in p and "add up to 3, not 2" in p for p in problems)
    stale = dataclasses.replace(s, effective_usage=0.9)
    problems = check_consistency(TRACE, result(summary=stale))
    assert problems == [f"summary: effective_usage is 0.9, the records give {s.effective_usage!r}"]


def test_a_header_of_another_trace_is_found() -> None:
    problems = check_consistency(TRACE, result(trace={"name": "t", "nodes": 16, "priorities": 3}))
    assert problems == ["result trace header: nodes is 16, the trace has 1"]
