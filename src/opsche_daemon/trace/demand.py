"""A trace's requested load over time, exactly: a step function built from workload intervals.

The generator's calibration and the capped-demand ceiling both need the time-averaged effective
demand. It is computed from the intervals themselves (+requests at a start, -requests at an end),
not sampled on a grid: sampling with inclusive ends over-states it by a point or two.
"""

from __future__ import annotations

from dataclasses import dataclass

from opsche_daemon.trace.model import NodeShape, Workload

__all__ = ["DemandStep", "demand_steps", "time_averaged_demand"]


@dataclass(frozen=True)
class DemandStep:
    """From ``t`` until the next step, these shares of the cluster's capacity are requested."""

    t: float
    cpu: float
    memory: float

    @property
    def effective(self) -> float:
        """The larger of the two shares."""
        return max(self.cpu, self.memory)


def demand_steps(
    workloads: tuple[Workload, ...] | list[Workload], nodes: int, node: NodeShape
) -> list[DemandStep]:
    """The step function of requested cpu and memory (shares of ``nodes`` x ``node``).

    Integer millicores and MiB are summed, so the result does not drift with floating point.
    """
    changes: dict[float, list[int]] = {}
    for w in workloads:
        cpu = w.pod_cpu_millis(node) * w.replicas
        mem = w.pod_memory_mib(node) * w.replicas
        for t, sign in ((w.start_s, 1), (w.end_s, -1)):
            delta = changes.setdefault(t, [0, 0])
            delta[0] += sign * cpu
            delta[1] += sign * mem
    cpu_total = nodes * node.cpu_millis
    mem_total = nodes * node.memory_mib
    steps = []
    cpu_now = mem_now = 0
    for t in sorted(changes):
        cpu_now += changes[t][0]
        mem_now += changes[t][1]
        steps.append(DemandStep(t, cpu_now / cpu_total, mem_now / mem_total))
    return steps


def time_averaged_demand(
    steps: list[DemandStep], horizon_s: float, *, cap: float | None = None
) -> float:
    """The mean over ``[0, horizon_s]`` of the effective demand (each instant capped at ``cap``)."""
    if horizon_s <= 0:
        raise ValueError("horizon_s must be positive")
    total = 0.0
    for i, step in enumerate(steps):
        start = max(step.t, 0.0)
        end = min(steps[i + 1].t if i + 1 < len(steps) else horizon_s, horizon_s)
        if end <= start:
            continue
        value = step.effective if cap is None else min(step.effective, cap)
        total += value * (end - start)
    return total / horizon_s
