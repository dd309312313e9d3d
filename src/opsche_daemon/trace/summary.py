"""The monitor's arithmetic: a replay's samples and pod records in, its ``Summary`` out.

Kept apart from the replayer (and free of any cluster client) so every number a report
aggregates is defined in one place and unit-tested on hand-built records. The definitions
follow seed 000's Section 4.1:

* **usage**: the mean of the per-second samples' effective share (the larger of the running pods'
  cpu and memory over capacity) over the replay. Initial workloads' pods count: they are the
  cluster's load, and leaving them out would make a scheduler that keeps them look worse;
* **latency** (creation to first Running) and **disruptions** (pods taken away while their
  workload still wanted them) count only pods of arriving workloads: the initial ones were
  placed before the clock started, by whichever scheduler, and are excluded from the statistics
  (as the paper does); ``all_disruptions_by_cause`` counts every pod's, since a plan that moves an
  initial pod disrupts its owner all the same;
* the latency's median is also split at the Binding (``binding_p50_ms``: creation to first seen
  with a node; ``start_p50_ms``: from there to Running), so a slow scheduler and a slow node
  can be told apart by the same watch for every scheduler;
* the two ceilings come from the trace alone (``opsche_daemon.trace.bounds``), so a result file
  carries the room left above it.

``check_consistency`` is the other direction: it reads a finished result against its trace and
lists what cannot be right (a pod of an unknown workload, usage above capacity, a deletion
without a cause), so an integration test can tell a broken replay from a bad scheduler.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, fields

from opsche_daemon.trace.bounds import limit_usage, pooled_usage
from opsche_daemon.trace.model import Trace
from opsche_daemon.trace.result import DeletionCause, PodRecord, ReplayResult, Sample, Summary

__all__ = ["check_consistency", "percentile", "summarise"]

_DISRUPTIONS = tuple(c for c in DeletionCause if c.disruption)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), interpolating linearly between order statistics.

    The same definition as ``numpy.percentile``'s default (``method="linear"``): the value at
    rank ``(n - 1) * q / 100`` of the sorted values.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


def _latency(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"p50_ms": None, "p95_ms": None, "mean_ms": None, "pods": 0}
    return {
        "p50_ms": percentile(values, 50),
        "p95_ms": percentile(values, 95),
        "mean_ms": math.fsum(values) / len(values),
        "pods": len(values),
    }


def _levels(trace: Trace, seen: Iterable[int]) -> list[int]:
    return sorted(set(range(1, trace.priorities + 1)) | set(seen))


def summarise(
    trace: Trace,
    samples: Sequence[Sample],
    pods: Sequence[PodRecord],
    duration_s: float,
    *,
    solver_runs: int | None,
    plan_activations: int | None,
    time_scale: float = 1.0,
    plan_pods_placed: int | None = None,
) -> Summary:
    """The summary of one replay (see the module docstring for what each number means).

    Samples outside ``[0, duration_s]`` (taken while the initial workloads were placed, or after
    the end) do not count toward usage. Priorities are string keys, every level of the trace
    present (zeros and ``None`` included), so reports never have to guess a missing key.
    The ceilings are computed over the same window on the trace's clock (``duration_s`` x
    ``time_scale``, at most the horizon), so a replay cut short is compared with its own window.
    """
    window_s = min(duration_s * time_scale, trace.horizon_s)
    window = [s.effective for s in samples if 0 <= s.t <= duration_s]
    usage = math.fsum(window) / len(window) if window else 0.0
    arriving = [p for p in pods if not p.initial]
    latencies: dict[int, list[float]] = {}
    for pod in arriving:
        if pod.latency_ms is not None:
            latencies.setdefault(pod.priority, []).append(pod.latency_ms)
    disrupted = [p for p in arriving if p.cause is not None and p.cause.disruption]
    every_cause = Counter(p.cause for p in pods if p.cause is not None and p.cause.disruption)
    by_priority = Counter(p.priority for p in disrupted)
    by_cause = Counter(p.cause for p in disrupted)
    levels = _levels(trace, {p.priority for p in arriving})
    overall = _latency([v for values in latencies.values() for v in values])
    ran = sum(1 for p in arriving if p.running_s is not None)
    binding = [v for p in arriving if p.running_s is not None and (v := p.binding_ms) is not None]
    start = [v for p in arriving if (v := p.start_ms) is not None]
    return Summary(
        effective_usage=usage,
        limit_usage=limit_usage(trace, window_s),
        pooled_usage=pooled_usage(trace, window_s),
        latency_p50_ms=_float(overall["p50_ms"]),
        latency_p95_ms=_float(overall["p95_ms"]),
        latency_mean_ms=_float(overall["mean_ms"]),
        latency_by_priority={str(p): _latency(latencies.get(p, [])) for p in levels},
        disruptions=len(disrupted),
        disruptions_by_priority={str(p): by_priority[p] for p in levels},
        disruptions_by_cause={c.value: by_cause[c] for c in _DISRUPTIONS},
        pods_created=len(arriving),
        pods_ran=ran,
        never_ran=len(arriving) - ran,
        pending_at_end=samples[-1].pending if samples else 0,
        solver_runs=solver_runs,
        plan_activations=plan_activations,
        plan_pods_placed=plan_pods_placed,
        binding_p50_ms=percentile(binding, 50) if binding else None,
        start_p50_ms=percentile(start, 50) if start else None,
        all_disruptions_by_cause={c.value: every_cause[c] for c in _DISRUPTIONS},
    )


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _pod_problems(trace: Trace, result: ReplayResult) -> list[str]:
    workloads = {w.name: w for w in trace.workloads}
    problems = []
    for pod in result.pods:
        where = f"pod {pod.name}"
        workload = workloads.get(pod.workload)
        if workload is None:
            problems.append(f"{where}: workload {pod.workload!r} is not in the trace")
        elif (pod.priority, pod.initial) != (workload.priority, workload.initial):
            problems.append(
                f"{where}: priority {pod.priority}, initial {pod.initial}; its workload has "
                f"priority {workload.priority}, initial {workload.initial}"
            )
        if (pod.deleted_s is None) != (pod.cause is None):
            problems.append(
                f"{where}: deleted_s={pod.deleted_s} but cause={pod.cause}: "
                "a deleted pod needs a cause and only a deleted pod has one"
            )
        running = math.inf if pod.running_s is None else pod.running_s
        if pod.bound_s is not None and not pod.created_s <= pod.bound_s <= running:
            problems.append(
                f"{where}: bound {pod.bound_s} is not between created {pod.created_s} and "
                f"running {pod.running_s}"
            )
        times = [t for t in (pod.created_s, pod.running_s, pod.deleted_s) if t is not None]
        if times != sorted(times):
            problems.append(
                f"{where}: created {pod.created_s}, running {pod.running_s}, deleted "
                f"{pod.deleted_s}: not in order"
            )
    return problems


def _count_problems(trace: Trace, result: ReplayResult, grace_s: float) -> list[str]:
    counts = Counter(p.workload for p in result.pods)
    scale = result.time_scale
    problems = []
    for w in trace.workloads:
        start, end = w.start_s / scale, min(w.end_s / scale, result.duration_s)
        if end - start >= grace_s and counts[w.name] < w.replicas:
            problems.append(
                f"workload {w.name}: {counts[w.name]} pod records, "
                f"fewer than its {w.replicas} replicas"
            )
    return problems


def _summary_problems(trace: Trace, result: ReplayResult) -> list[str]:
    stored = result.summary
    problems = []
    if sum(stored.disruptions_by_cause.values()) != stored.disruptions:
        problems.append(
            f"summary: disruptions by cause {stored.disruptions_by_cause} add up to "
            f"{sum(stored.disruptions_by_cause.values())}, not {stored.disruptions}"
        )
    if sum(stored.disruptions_by_priority.values()) != stored.disruptions:
        problems.append(
            f"summary: disruptions by priority {stored.disruptions_by_priority} do not add up "
            f"to {stored.disruptions}"
        )
    fresh = asdict(
        summarise(
            trace,
            result.samples,
            result.pods,
            result.duration_s,
            solver_runs=stored.solver_runs,
            plan_activations=stored.plan_activations,
            time_scale=result.time_scale,
            plan_pods_placed=stored.plan_pods_placed,
        )
    )
    written = asdict(stored)
    problems.extend(
        f"summary: {f.name} is {written[f.name]!r}, the records give {fresh[f.name]!r}"
        for f in fields(Summary)
        if not _close(written[f.name], fresh[f.name])
    )
    return problems


def check_consistency(trace: Trace, result: ReplayResult, *, grace_s: float = 2.0) -> list[str]:
    """What cannot be right about ``result`` as a replay of ``trace`` (empty when all is well).

    Checked: the result's trace header agrees with the trace; every pod record's workload is in
    the trace, with its priority and initial flag; every workload alive for at least ``grace_s``
    real seconds of the replay (the monitor samples every second, and a ReplicaSet's pods appear
    a moment after it, so a workload that starts at the very end, or lives for a fraction of a
    second on a compressed clock, may have none yet) has at least one record per replica
    (preempted or evicted pods are recreated, so there may be more); no sample's cpu or memory
    share exceeds capacity; a pod has a deletion time exactly when it has a cause; created,
    running and deleted times are in order; the summary's disruption breakdowns add up, and the
    summary is what ``summarise`` gives for the records.
    """
    problems = []
    header = result.trace
    for key, value in (("nodes", trace.nodes), ("priorities", trace.priorities)):
        if key in header and header[key] != value:
            problems.append(f"result trace header: {key} is {header[key]!r}, the trace has {value}")
    count = header.get("workloads")
    if isinstance(count, int) and count != len(trace.workloads):
        problems.append(
            f"result trace header: workloads is {count}, the trace has {len(trace.workloads)}"
        )
    problems.extend(
        f"sample at t={s.t:g}: cpu {s.cpu:.6f}, memory {s.memory:.6f}: above capacity"
        for s in result.samples
        if s.effective > 1.0 + 1e-9
    )
    problems.extend(_pod_problems(trace, result))
    problems.extend(_count_problems(trace, result, grace_s))
    problems.extend(_summary_problems(trace, result))
    return problems
