"""``opsche trace show``: what a trace file holds, in a terminal's width.

The point is to judge a trace before spending hours replaying it: how big the cluster and the
workload are, whether the priority and replica mixes are the configured ones, whether calibration
reached its target and how long it took, and whether the demand is flat (the initial state did
its job) or ramps up from a cold start. The chart plots the exact bucket means of the effective
demand (from ``demand.py``'s step function, not samples), with the 100 % line marked: demand above
it is what no scheduler can place.
"""

from __future__ import annotations

import math
from collections import Counter

from opsche_daemon.trace.demand import DemandStep, demand_steps, time_averaged_demand
from opsche_daemon.trace.model import Trace

__all__ = ["bucket_demand", "format_trace_summary"]

_ROWS = 10
"""At most this many rows; the row height is 100 % / n, so the 100 % line is always a row."""


def bucket_demand(steps: list[DemandStep], horizon_s: float, buckets: int) -> list[float]:
    """The mean effective demand of each of ``buckets`` equal slices of ``[0, horizon_s]``."""
    width = horizon_s / buckets
    totals = [0.0] * buckets
    for i, step in enumerate(steps):
        start = max(step.t, 0.0)
        end = min(steps[i + 1].t if i + 1 < len(steps) else horizon_s, horizon_s)
        if end <= start or step.effective == 0:
            continue
        first, last = int(start // width), min(int(end // width), buckets - 1)
        for b in range(first, last + 1):
            overlap = min(end, (b + 1) * width) - max(start, b * width)
            if overlap > 0:
                totals[b] += step.effective * overlap
    return [t / width for t in totals]


def _histogram(counts: Counter[int], total: int) -> str:
    return "  ".join(
        f"{k}: {counts[k]} ({counts[k] / total:.0%})" if total else f"{k}: 0"
        for k in sorted(counts)
    )


def _chart(values: list[float], horizon_s: float) -> list[str]:
    peak = max([1.0, *values])
    per_hundred = max(1, math.floor(_ROWS / peak))  # rows from 0 to 100 %
    step = 1.0 / per_hundred
    rows = max(1, math.ceil(peak * per_hundred - 1e-9))
    lines = []
    for r in range(rows, 0, -1):
        level = r / per_hundred
        hundred = r == per_hundred
        cells = "".join("#" if v >= level - step / 2 else ("-" if hundred else " ") for v in values)
        label = f"{level:4.0%}" + ("|" if not hundred else "+")
        lines.append(f"{label:>6}{cells}")
    lines.append(f"{'0%':>5}+{'-' * len(values)}")
    hours = horizon_s / 3600
    right = f"{hours:g} h" if hours >= 1 else f"{horizon_s / 60:g} min"
    lines.append(f"{'':6}0{right:>{len(values) - 1}}")
    return lines


def format_trace_summary(trace: Trace, width: int = 72) -> str:
    """A human-readable summary of ``trace``: sizes, mixes, calibration and a demand chart."""
    node = trace.node
    initial = [w for w in trace.workloads if w.initial]
    arriving = [w for w in trace.workloads if not w.initial]
    pods = trace.pods()
    horizon = trace.horizon_s
    lines = [
        f"cluster:     {trace.nodes} nodes of {node.cpu_millis}m cpu, {node.memory_mib}Mi memory",
        f"horizon:     {horizon:g} s ({horizon / 3600:.2f} h)",
        f"workloads:   {len(trace.workloads)} ({len(initial)} initial, {len(arriving)} arriving)",
        f"pods:        {pods} ({trace.pods(initial=True)} initial, "
        f"{trace.pods(initial=False)} arriving)",
    ]
    if trace.seed is not None:
        lines.append(f"seed:        {trace.seed}")
    if trace.mean_interarrival_s is not None:
        lines.append(f"arrivals:    mean inter-arrival {trace.mean_interarrival_s:g} s")
    priorities = Counter(dict.fromkeys(range(1, trace.priorities + 1), 0))
    priorities.update(w.priority for w in trace.workloads)
    lines.append(f"priorities:  {_histogram(priorities, len(trace.workloads))}")
    replicas = Counter(w.replicas for w in trace.workloads)
    lines.append(f"replicas:    {_histogram(replicas, len(trace.workloads))}")
    if pods:
        cpu = sum(w.pod_cpu_millis(node) * w.replicas for w in trace.workloads) / pods
        memory = sum(w.pod_memory_mib(node) * w.replicas for w in trace.workloads) / pods
        lines.append(
            f"per pod:     mean cpu {cpu:.0f}m ({cpu / node.cpu_millis:.3f} node), "
            f"memory {memory:.0f}Mi ({memory / node.memory_mib:.3f} node)"
        )
    if arriving:
        life = sum(w.end_s - w.start_s for w in arriving) / len(arriving)
        calibrated = (
            f"calibrated mean {trace.mean_lifetime_s:.1f} s, "
            if trace.mean_lifetime_s is not None
            else ""
        )
        lines.append(f"lifetime:    {calibrated}arrivals' mean {life:.1f} s")
    steps = demand_steps(trace.workloads, trace.nodes, node)
    measured = time_averaged_demand(steps, horizon) if steps else 0.0
    # Recomputed from the workloads rather than trusted from the file (it may be hand-edited).
    demand = f"demand:      achieved {measured:.1%}"
    if trace.target_usage is not None:
        demand += f", target {trace.target_usage:.1%}"
    demand += " (time-averaged effective)"
    if trace.achieved_usage is not None and abs(trace.achieved_usage - measured) > 1e-9:
        demand += f"; the file says {trace.achieved_usage:.1%}"
    lines.append(demand)
    if trace.calibration:
        lines.append(f"calibration: {len(trace.calibration)} iterations")
    columns = max(10, min(60, width - 8))
    lines.append("")
    lines.append(f"effective demand over time ({columns} buckets, '-' marks 100 %):")
    lines += _chart(bucket_demand(steps, horizon, columns), horizon)
    return "\n".join(lines)
