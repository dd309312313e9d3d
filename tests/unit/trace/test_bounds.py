"""The two ceilings on hand-built traces, and the pooled pass against a naive reference."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsche_daemon.trace.bounds import limit_usage, pooled_run, pooled_usage
from opsche_daemon.trace.demand import demand_steps
from opsche_daemon.trace.model import NodeShape, Trace, Workload

NODE = NodeShape(cpu_millis=1000, memory_mib=1000)


def wl(
    name: str,
    start: float,
    end: float,
    cpu: float,
    memory: float = 0.01,
    *,
    replicas: int = 1,
    priority: int = 1,
    initial: bool = False,
) -> Workload:
    return Workload(name, start, end, replicas, priority, cpu, memory, initial)


def trace(*workloads: Workload, nodes: int = 1, horizon: float = 10.0, prios: int = 2) -> Trace:
    return Trace(nodes=nodes, node=NODE, horizon_s=horizon, priorities=prios, workloads=workloads)


def starts(t: Trace) -> dict[tuple[str, int], float | None]:
    return {(p.workload, p.replica): p.start_s for p in pooled_run(t).pods}


# --- capped demand ---------------------------------------------------------------------------


def test_capped_demand_caps_a_spike_above_capacity_at_each_instant() -> None:
    # [0,2) 0.5, [2,4) 1.3 -> 1.0, [4,10) 0.5: (1 + 2 + 3) / 10; uncapped it would be 0.66.
    t = trace(wl("a", 0, 10, 0.5), wl("b", 2, 4, 0.8))
    assert limit_usage(t) == pytest.approx(0.6)


def test_capped_demand_takes_the_bottleneck_resource_and_stops_at_the_horizon() -> None:
    # memory is the bottleneck of b; c runs past the horizon and counts only until it.
    t = trace(wl("a", 0, 10, 0.2, 0.1), wl("b", 0, 5, 0.1, 0.4), wl("c", 8, 30, 0.3))
    # [0,5): max(0.3, 0.5)=0.5; [5,8): 0.2; [8,10): 0.5  -> (2.5 + 0.6 + 1.0) / 10
    assert limit_usage(t) == pytest.approx(0.41)


def test_capped_demand_counts_every_replica_and_uses_rounded_requests() -> None:
    # 0.3333 of 1000m rounds to 333m; two replicas on two nodes: 666 / 2000.
    t = trace(wl("a", 0, 10, 0.3333, replicas=2), nodes=2)
    assert limit_usage(t) == pytest.approx(666 / 2000)


# --- pooled bound ----------------------------------------------------------------------------


def test_a_later_small_pod_overtakes_a_big_one_that_does_not_fit() -> None:
    # Two nodes pooled: 2000m. a takes 1400m; b (800m) does not fit the 600m left, c (500m) does.
    t = trace(
        wl("a", 0, 10, 0.7, replicas=2),
        wl("b", 1, 10, 0.8),
        wl("c", 2, 10, 0.5),
        nodes=2,
    )
    assert starts(t) == {("a", 0): 0, ("a", 1): 0, ("b", 0): None, ("c", 0): 2}
    # [0,2): 1400/2000, [2,10): 1900/2000
    assert pooled_usage(t) == pytest.approx((2 * 0.7 + 8 * 0.95) / 10)


def test_a_pod_leaves_the_queue_unstarted_when_its_workload_ends() -> None:
    t = trace(wl("a", 0, 6, 1.0), wl("b", 1, 5, 0.5), wl("c", 2, 8, 0.5), horizon=8)
    run = pooled_run(t)
    assert starts(t) == {("a", 0): 0, ("b", 0): None, ("c", 0): 6}
    assert [p.wait_s for p in run.pods] == [0, None, 4]
    assert run.usage == pytest.approx((6 * 1.0 + 2 * 0.5) / 8)


def test_higher_priority_first_then_arrival_order() -> None:
    t = trace(
        wl("full", 0, 5, 1.0),
        wl("low-early", 1, 20, 0.6, priority=1),
        wl("high-late", 2, 20, 0.6, priority=2),
        wl("low-later", 3, 20, 0.4, priority=1),
        horizon=20,
    )
    # At 5: high-late (priority 2) first; low-early no longer fits; low-later (0.4) does.
    assert starts(t) == {
        ("full", 0): 0,
        ("low-early", 0): None,
        ("high-late", 0): 5,
        ("low-later", 0): 5,
    }


def test_ties_go_by_start_then_trace_order_then_replica() -> None:
    t = trace(
        wl("full", 0, 5, 1.0),
        wl("second", 2, 20, 0.3, replicas=2),
        wl("first", 1, 20, 0.3),
        wl("third", 2, 20, 0.3),
        horizon=20,
    )
    # At 5 there is room for three of the four 300m pods: first (earliest), then second's two
    # replicas (same start as third, earlier in the trace).
    assert starts(t) == {
        ("full", 0): 0,
        ("second", 0): 5,
        ("second", 1): 5,
        ("first", 0): 5,
        ("third", 0): None,
    }


def test_departures_free_capacity_before_arrivals_at_the_same_instant() -> None:
    t = trace(wl("a", 0, 5, 1.0), wl("b", 5, 10, 1.0))
    assert starts(t) == {("a", 0): 0, ("b", 0): 5}
    assert pooled_usage(t) == pytest.approx(1.0)


def test_memory_must_fit_too() -> None:
    t = trace(wl("a", 0, 10, 0.1, 0.9), wl("b", 1, 10, 0.1, 0.2), wl("c", 1, 10, 0.1, 0.1))
    assert starts(t) == {("a", 0): 0, ("b", 0): None, ("c", 0): 1}


def test_running_pods_are_never_preempted() -> None:
    t = trace(wl("low", 0, 10, 1.0, priority=1), wl("high", 1, 10, 0.5, priority=2))
    assert starts(t) == {("low", 0): 0, ("high", 0): None}


def test_an_empty_trace_uses_nothing() -> None:
    assert pooled_usage(trace()) == 0.0
    assert limit_usage(trace()) == 0.0


# --- properties on random traces -------------------------------------------------------------


def reference_starts(t: Trace) -> dict[tuple[str, int], float | None]:
    """The pooled pass written the slow, obvious way: a full scan of every queued pod each event."""
    pods = [
        (w, r, i) for i, w in enumerate(t.workloads) for r in range(w.replicas)
    ]  # trace order, then replica
    times = sorted({w.start_s for w in t.workloads} | {w.end_s for w in t.workloads})
    started: dict[tuple[str, int], float | None] = {(w.name, r): None for w, r, _ in pods}
    running: set[tuple[str, int]] = set()
    cpu_cap = t.nodes * t.node.cpu_millis
    mem_cap = t.nodes * t.node.memory_mib
    for now in times:
        running = {k for k in running if next(w for w, _, _ in pods if w.name == k[0]).end_s > now}
        queue = sorted(
            (
                p
                for p in pods
                if p[0].start_s <= now < p[0].end_s and started[p[0].name, p[1]] is None
            ),
            key=lambda p: (-p[0].priority, p[0].start_s, p[2], p[1]),
        )
        for w, r, _ in queue:
            used_cpu = sum(x.pod_cpu_millis(t.node) for x, rr, _ in pods if (x.name, rr) in running)
            used_mem = sum(x.pod_memory_mib(t.node) for x, rr, _ in pods if (x.name, rr) in running)
            if (
                used_cpu + w.pod_cpu_millis(t.node) <= cpu_cap
                and used_mem + w.pod_memory_mib(t.node) <= mem_cap
            ):
                started[w.name, r] = now
                running.add((w.name, r))
    return started


def random_trace(rng: random.Random, n: int, nodes: int, horizon: float = 100.0) -> Trace:
    workloads = []
    for i in range(n):
        start = 0.0 if i < n // 5 else round(rng.uniform(0, horizon), rng.choice([0, 1]))
        life = round(rng.expovariate(1 / 30) + 0.5, rng.choice([0, 1]))
        workloads.append(
            Workload(
                f"w{i}",
                start,
                start + life,
                rng.randint(1, 3),
                rng.randint(1, 3),
                rng.choice([0.05, 0.125, 0.25, 0.5, rng.uniform(0.05, 0.5)]),
                rng.choice([0.05, 0.125, 0.25, 0.5, rng.uniform(0.05, 0.5)]),
                i < n // 5,
            )
        )
    return Trace(nodes, NODE, horizon, 3, tuple(workloads))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), nodes=st.integers(1, 4))
def test_pooled_never_exceeds_capped_demand_and_matches_the_reference(
    seed: int, n: int, nodes: int
) -> None:
    t = random_trace(random.Random(seed), n, nodes)
    run = pooled_run(t)
    assert pooled_usage(t) <= limit_usage(t) + 1e-12
    assert all(s.cpu <= 1 + 1e-12 and s.memory <= 1 + 1e-12 for s in run.steps)
    # Pointwise: the pooled run holds a subset of the alive pods.
    demand = demand_steps(t.workloads, t.nodes, t.node)
    for step in run.steps:
        alive = [d for d in demand if d.t <= step.t][-1]
        assert step.cpu <= alive.cpu + 1e-12
        assert step.memory <= alive.memory + 1e-12
    assert {(p.workload, p.replica): p.start_s for p in run.pods} == reference_starts(t)


def test_a_two_hour_32_node_trace_takes_well_under_a_second() -> None:
    rng = random.Random(7)
    workloads = [
        wl(f"i{i}", 0, rng.uniform(1, 4000), 0.125, 0.125, replicas=2, initial=True)
        for i in range(100)
    ]
    now = 0.0
    while len(workloads) < 2100:
        now += rng.expovariate(1 / 3.5)
        life = min(86400.0, 2 * rng.paretovariate(1.1) * 60)
        workloads.append(
            Workload(
                f"w{len(workloads)}",
                now,
                now + life,
                rng.choice([1, 1, 2, 3]),
                rng.randint(1, 4),
                min(0.5, 0.05 * rng.paretovariate(1.8)),
                min(0.5, 0.05 * rng.paretovariate(1.8)),
            )
        )
    t = Trace(32, NodeShape(4000, 16384), now, 4, tuple(workloads))
    began = time.perf_counter()
    usage = pooled_usage(t)
    elapsed = time.perf_counter() - began
    assert 0 < usage <= limit_usage(t)
    assert elapsed < 0.5
