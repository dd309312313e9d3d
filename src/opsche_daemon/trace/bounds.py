"""Two usage ceilings computed from a trace alone, to say how much room a scheduler has left.

A paired difference (opsche minus kube-scheduler) says which scheduler used the cluster better,
not how far either is from the best possible. Two bounds answer that:

* **Capped demand** (``limit_usage``): at each instant the effective demand of the workloads that
  are alive, capped at the cluster's capacity, averaged over the horizon. No scheduler can exceed
  it, but it is loose whenever pods queue: a pod that waits until its workload ends never runs, and
  demand above capacity at one moment is not carried over to a later one.
* **Pooled bound** (``pooled_usage``): the same trace on ONE node with the whole cluster's cpu and
  memory, run by a simple greedy discrete-event pass (priority, then arrival order; any pod that
  fits starts; nothing is ever preempted; a pod stops, or leaves the queue unstarted, when its
  workload ends). It is what a cluster without fragmentation would run: the practical ceiling for
  a cluster-wide optimiser, whose whole job is to undo fragmentation. It is not a strict bound
  (a clever preemption order could occasionally beat the greedy pass), but on the paper's traces
  kube-scheduler lands at about 98 % of it and an idealised optimiser close to 100 %.

Pooled usage never exceeds capped demand: at every instant the pooled run holds a subset of the
alive pods and never more than capacity. Both use the rounded requests of
``Workload.pod_cpu_millis`` and ``pod_memory_mib``, exactly as the replayer creates them, and
are exact (computed from event times, not sampled on a grid).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from opsche_daemon.trace.demand import DemandStep, demand_steps, time_averaged_demand
from opsche_daemon.trace.model import Trace

__all__ = ["PooledPod", "PooledRun", "limit_usage", "pooled_run", "pooled_usage"]

_WAITING, _QUEUED, _RUNNING, _DONE = range(4)


def limit_usage(trace: Trace, window_s: float | None = None) -> float:
    """The time-averaged effective demand over ``[0, window_s]``, capped at 1.0 at each instant.

    ``window_s`` defaults to the trace's horizon; a replay cut short compares with its own window.
    """
    steps = demand_steps(trace.workloads, trace.nodes, trace.node)
    return time_averaged_demand(steps, window_s or trace.horizon_s, cap=1.0)


@dataclass(frozen=True)
class PooledPod:
    """One replica in the pooled run and when it started (``None``: its workload ended first)."""

    workload: str
    replica: int
    priority: int
    arrival_s: float
    end_s: float
    start_s: float | None

    @property
    def wait_s(self) -> float | None:
        """How long it queued before starting."""
        return None if self.start_s is None else self.start_s - self.arrival_s


@dataclass(frozen=True)
class PooledRun:
    """The pooled pass: the running pods' shares of capacity over time, and every pod's start.

    ``steps`` is a step function (from each step's ``t`` until the next one); the pass runs until
    the last workload ends, so ``steps`` may reach beyond ``horizon_s``, which ``usage`` ignores.
    """

    horizon_s: float
    steps: tuple[DemandStep, ...]
    pods: tuple[PooledPod, ...]

    @property
    def usage(self) -> float:
        """The time average of the effective share over ``[0, horizon_s]``."""
        return time_averaged_demand(list(self.steps), self.horizon_s)


class _Pass:
    """The pooled pass's state: integer requests and free capacity, a sorted queue of keys."""

    def __init__(self, trace: Trace) -> None:
        node = trace.node
        self.cpu_total = trace.nodes * node.cpu_millis
        self.mem_total = trace.nodes * node.memory_mib
        self.names: list[tuple[str, int]] = []
        self.cpu: list[int] = []
        self.mem: list[int] = []
        self.keys: list[tuple[int, float, int]] = []
        self.end: list[float] = []
        self.arrivals: dict[float, list[int]] = {}
        self.departures: dict[float, list[int]] = {}
        for w in trace.workloads:
            c, m = w.pod_cpu_millis(node), w.pod_memory_mib(node)
            for r in range(w.replicas):
                pid = len(self.names)
                self.names.append((w.name, r))
                self.cpu.append(c)
                self.mem.append(m)
                # pid grows with trace order, then replica index: the tie-breaks after start_s.
                self.keys.append((-w.priority, w.start_s, pid))
                self.end.append(w.end_s)
                self.arrivals.setdefault(w.start_s, []).append(pid)
                self.departures.setdefault(w.end_s, []).append(pid)
        self.state = [_WAITING] * len(self.names)
        self.started: list[float | None] = [None] * len(self.names)
        self.min_cpu = min(self.cpu, default=0)
        self.min_mem = min(self.mem, default=0)
        self.free_cpu = self.cpu_total
        self.free_mem = self.mem_total
        self.queue: list[tuple[int, float, int]] = []  # entries of started/left pods go stale

    def try_start(self, pid: int, t: float) -> bool:
        if self.cpu[pid] > self.free_cpu or self.mem[pid] > self.free_mem:
            return False
        self.free_cpu -= self.cpu[pid]
        self.free_mem -= self.mem[pid]
        self.state[pid] = _RUNNING
        self.started[pid] = t
        return True

    def full_scan(self, t: float) -> None:
        """Start every queued pod that fits, in queue order; drop stale entries."""
        kept: list[tuple[int, float, int]] = []
        for i, key in enumerate(self.queue):
            if self.free_cpu < self.min_cpu or self.free_mem < self.min_mem:
                kept.extend(k for k in self.queue[i:] if self.state[k[2]] == _QUEUED)
                break
            if self.state[key[2]] == _QUEUED and not self.try_start(key[2], t):
                kept.append(key)
        self.queue = kept

    def event(self, t: float) -> DemandStep:
        """Departures, then arrivals, then starts at ``t``; the running shares afterwards."""
        freed = False
        for pid in self.departures.get(t, ()):
            if self.state[pid] == _RUNNING:
                self.free_cpu += self.cpu[pid]
                self.free_mem += self.mem[pid]
                freed = True
            self.state[pid] = _DONE
        arrived = sorted(self.keys[pid] for pid in self.arrivals.get(t, ()))
        for key in arrived:
            self.state[key[2]] = _QUEUED
            bisect.insort(self.queue, key)
        if freed:
            self.full_scan(t)
        else:
            for key in arrived:
                self.try_start(key[2], t)
        return DemandStep(
            t,
            (self.cpu_total - self.free_cpu) / self.cpu_total,
            (self.mem_total - self.free_mem) / self.mem_total,
        )


def pooled_run(trace: Trace, window_s: float | None = None) -> PooledRun:
    """Run the trace on one node of the whole cluster's capacity (see the module docstring).

    At every event time, departures are applied first (running pods of ending workloads free their
    requests, queued ones leave), then arrivals join the queue, then the queue is considered in
    order: highest priority first, then earlier ``start_s``, then trace order, then replica index;
    every pod that fits the free cpu AND memory starts, so a later small pod may overtake a big one
    that does not fit. Since free capacity only grows at a departure, a time with arrivals only
    needs to try the new arrivals: everything queued before did not fit then and fits no better now.
    """
    run = _Pass(trace)
    times = sorted(run.arrivals.keys() | run.departures.keys())
    steps = tuple(run.event(t) for t in times)
    pods = tuple(
        PooledPod(
            workload=name,
            replica=replica,
            priority=-run.keys[pid][0],
            arrival_s=run.keys[pid][1],
            end_s=run.end[pid],
            start_s=run.started[pid],
        )
        for pid, (name, replica) in enumerate(run.names)
    )
    return PooledRun(window_s or trace.horizon_s, steps, pods)


def pooled_usage(trace: Trace, window_s: float | None = None) -> float:
    """The pooled bound's time-averaged effective usage over ``[0, window_s]`` (default horizon)."""
    return pooled_run(trace, window_s).usage
