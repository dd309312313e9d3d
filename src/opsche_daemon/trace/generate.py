"""The trace generator of seed 000, Section 4.1: arrivals, an initial state, a calibrated lifetime.

A trace must load the cluster to a target time-averaged effective demand (90 % in the paper) so
that schedulers are compared under contention. The generator follows the paper step by step:

* Arrivals. Inter-arrival times are drawn from a truncated Pareto until the horizon is covered;
  each workload (a ReplicaSet) draws its replica count and priority (truncated geometric, 1 is
  the lowest priority), per-pod cpu and memory fractions (independent truncated Paretos) and a
  lifetime from the truncated Pareto of the current mean lifetime. A workload may outlive the
  horizon.
* Initial state. To avoid a cold start, workloads already running at time 0 are drawn until
  their aggregate effective requested load (the larger of the summed cpu and memory shares of
  the cluster) is as close to the target as one more workload can bring it. A workload seen at
  a random instant is length-biased, so its total lifetime ``X*`` is drawn from ``x f(x)``, and
  its remaining lifetime is ``Uniform(0, X*)``.
* Calibration. The first mean lifetime comes from Little's law: ``target x nodes = arrival rate
  x E[replicas] x max(E[cpu], E[memory]) x W`` (the cluster's bottleneck is the larger of the
  summed shares, which by the law of large numbers is the larger mean, not the mean of per-pod
  maxima). Each iteration realises the whole trace, measures its time-averaged effective demand
  over ``[0, horizon]`` exactly (``demand.py``: uncapped, initial workloads included) and scales
  the mean lifetime by ``target / measured``, until the relative error is within the tolerance.

Why separate random streams: every attribute has its own ``random.Random`` derived from the seed
and its name, and lifetimes are the quantiles of uniforms drawn once. Calibration iterations then
differ only through the mean lifetime (every lifetime grows with it, so the measured demand is
monotone in it) and the search is deterministic; and changing one parameter (the number of
priorities, say) leaves every other attribute of the same seed's trace unchanged.

Times are rounded to 0.1 ms (the smallest inter-arrival time) and fractions to 6 decimals before
measuring, so the calibrated demand is exactly that of the file written.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from opsche_daemon.trace.config import TraceConfig
from opsche_daemon.trace.demand import demand_steps, time_averaged_demand
from opsche_daemon.trace.distributions import TruncatedGeometric, TruncatedPareto
from opsche_daemon.trace.model import NodeShape, Trace, Workload

__all__ = [
    "CalibrationError",
    "effective_load",
    "generate_trace",
    "initial_lifetime",
    "little_mean_lifetime",
]

_TIME_DIGITS = 4
_FRACTION_DIGITS = 6
_MIN_REMAINING_S = 0.001
_EDGE = 1e-6
"""How close (relatively) to its bounds the mean lifetime may go: the shape diverges there."""


class CalibrationError(ValueError):
    """The mean lifetime cannot bring the trace's demand within the tolerance of the target."""

    def __init__(self, message: str, *, best_mean_lifetime_s: float, best_usage: float) -> None:
        super().__init__(message)
        self.best_mean_lifetime_s = best_mean_lifetime_s
        self.best_usage = best_usage


@dataclass(frozen=True)
class _Draw:
    """One workload's attributes that do not depend on the mean lifetime."""

    start_s: float
    replicas: int
    priority: int
    cpu: float
    memory: float
    u_lifetime: float
    u_remaining: float = 0.0


@dataclass(frozen=True)
class _Distributions:
    interarrival: TruncatedPareto
    replicas: TruncatedGeometric
    priority: TruncatedGeometric
    cpu: TruncatedPareto
    memory: TruncatedPareto


def _distributions(config: TraceConfig) -> _Distributions:
    return _Distributions(
        interarrival=TruncatedPareto.from_mean(
            config.interarrival_mean_s, config.interarrival_min_s, config.interarrival_max
        ),
        replicas=TruncatedGeometric(config.replicas_max, config.replicas_ratio),
        priority=TruncatedGeometric(config.priority_levels, config.priority_ratio),
        cpu=TruncatedPareto.from_mean(config.cpu_mean, config.cpu_min, config.cpu_max),
        memory=TruncatedPareto.from_mean(config.memory_mean, config.memory_min, config.memory_max),
    )


def _stream(seed: int, name: str) -> random.Random:
    """An attribute's own random stream (a string seed is hashed with SHA-512: stable)."""
    return random.Random(f"opsche-trace/{seed}/{name}")  # noqa: S311 - simulation, not secrets


def little_mean_lifetime(config: TraceConfig) -> float:
    """The calibration's first mean lifetime, by Little's law (analytical means).

    ``target x nodes = (1 / mean inter-arrival) x E[replicas] x max(E[cpu], E[memory]) x W``.
    """
    dist = _distributions(config)
    per_pod = max(dist.cpu.mean, dist.memory.mean)
    rate = 1.0 / dist.interarrival.mean
    return config.target_usage * config.nodes / (rate * dist.replicas.mean * per_pod)


def initial_lifetime(
    lifetime: TruncatedPareto, u_total: float, u_remaining: float
) -> tuple[float, float]:
    """(total ``X*``, remaining) lifetime of an initial workload from two uniforms.

    ``X*`` is the ``u_total`` quantile of the length-biased lifetime distribution; the remaining
    lifetime is ``u_remaining x X*``, i.e. ``Uniform(0, X*)``: the workload observed at a random
    instant of its life.
    """
    total = lifetime.length_biased().quantile(u_total)
    return total, u_remaining * total


def effective_load(
    workloads: list[Workload] | tuple[Workload, ...], nodes: int, node: NodeShape
) -> float:
    """The larger of the summed cpu and memory shares of the cluster (rounded requests)."""
    cpu = sum(w.pod_cpu_millis(node) * w.replicas for w in workloads)
    memory = sum(w.pod_memory_mib(node) * w.replicas for w in workloads)
    return max(cpu / (nodes * node.cpu_millis), memory / (nodes * node.memory_mib))


def _pod_shares(draw: _Draw, node: NodeShape) -> tuple[int, int]:
    probe = Workload("probe", 0.0, 1.0, draw.replicas, draw.priority, draw.cpu, draw.memory)
    return probe.pod_cpu_millis(node) * draw.replicas, probe.pod_memory_mib(node) * draw.replicas


def _attributes(
    dist: _Distributions, streams: dict[str, random.Random], prefix: str
) -> tuple[int, int, float, float, float]:
    """Replicas, priority, cpu, memory and the lifetime's uniform: one draw of each stream."""
    return (
        dist.replicas.sample(streams[f"{prefix}replicas"]),
        dist.priority.sample(streams[f"{prefix}priority"]),
        round(dist.cpu.sample(streams[f"{prefix}cpu"]), _FRACTION_DIGITS),
        round(dist.memory.sample(streams[f"{prefix}memory"]), _FRACTION_DIGITS),
        streams[f"{prefix}lifetime"].random(),
    )


def _initial_draws(
    config: TraceConfig, dist: _Distributions, streams: dict[str, random.Random]
) -> list[_Draw]:
    """Initial workloads until their effective load is as close to the target as it gets."""
    node = config.node_shape
    cpu_total = config.nodes * node.cpu_millis
    memory_total = config.nodes * node.memory_mib
    draws: list[_Draw] = []
    cpu = memory = 0
    load = 0.0
    while load < config.target_usage:
        replicas, priority, cpu_f, memory_f, u_total = _attributes(dist, streams, "initial-")
        draw = _Draw(
            0.0, replicas, priority, cpu_f, memory_f, u_total, streams["initial-remaining"].random()
        )
        pod_cpu, pod_memory = _pod_shares(draw, node)
        with_it = max((cpu + pod_cpu) / cpu_total, (memory + pod_memory) / memory_total)
        if with_it >= config.target_usage and (
            with_it - config.target_usage > config.target_usage - load
        ):
            break  # this one would overshoot by more than stopping short
        draws.append(draw)
        cpu, memory, load = cpu + pod_cpu, memory + pod_memory, with_it
    return draws


def _arrival_draws(
    config: TraceConfig, dist: _Distributions, streams: dict[str, random.Random]
) -> list[_Draw]:
    """Arriving workloads, one per inter-arrival time, until the horizon is covered."""
    horizon = config.horizon_s
    draws: list[_Draw] = []
    t = 0.0
    while True:
        t += dist.interarrival.sample(streams["interarrival"])
        if t > horizon:
            return draws
        replicas, priority, cpu_f, memory_f, u_lifetime = _attributes(dist, streams, "")
        start = min(round(t, _TIME_DIGITS), horizon)
        draws.append(_Draw(start, replicas, priority, cpu_f, memory_f, u_lifetime))


def _realise(
    initial: list[_Draw], arrivals: list[_Draw], lifetime: TruncatedPareto
) -> tuple[Workload, ...]:
    """The workloads of the draws with lifetimes from ``lifetime``."""
    workloads = []
    for i, d in enumerate(initial, start=1):
        _, remaining = initial_lifetime(lifetime, d.u_lifetime, d.u_remaining)
        end = max(round(remaining, _TIME_DIGITS), _MIN_REMAINING_S)
        workloads.append(
            Workload(f"init-{i:04d}", 0.0, end, d.replicas, d.priority, d.cpu, d.memory, True)
        )
    for i, d in enumerate(arrivals, start=1):
        end = round(d.start_s + lifetime.quantile(d.u_lifetime), _TIME_DIGITS)
        workloads.append(
            Workload(f"wl-{i:05d}", d.start_s, end, d.replicas, d.priority, d.cpu, d.memory)
        )
    return tuple(workloads)


def generate_trace(config: TraceConfig, progress: Callable[[str], None] | None = None) -> Trace:
    """Generate and calibrate the trace of ``config`` (deterministic for its seed).

    ``progress`` receives one line per calibration iteration. Raises ``TraceConfigError`` for an
    invalid config and ``CalibrationError`` when no mean lifetime inside the lifetime bounds
    brings the demand within the tolerance (the message says the best achieved).
    """
    config.validate()
    dist = _distributions(config)
    names = ("replicas", "priority", "cpu", "memory", "lifetime")
    streams = {
        name: _stream(config.seed, name)
        for name in ("interarrival", *names, *(f"initial-{n}" for n in names), "initial-remaining")
    }
    initial = _initial_draws(config, dist, streams)
    arrivals = _arrival_draws(config, dist, streams)
    node, horizon, target = config.node_shape, config.horizon_s, config.target_usage
    tolerance = config.calibration_tolerance
    lo, hi = config.lifetime_min_s, config.lifetime_max_s
    lowest, highest = lo * (1 + _EDGE), hi * (1 - _EDGE)

    def clamp(mean: float) -> float:
        return min(highest, max(lowest, mean))

    first = config.lifetime_initial_mean_s
    mean = clamp(little_mean_lifetime(config) if first is None else first)
    history: list[dict[str, float]] = []
    best_mean, best_usage, best_error = mean, 0.0, float("inf")
    limit = config.calibration_max_iterations
    for iteration in range(1, limit + 1):
        workloads = _realise(initial, arrivals, TruncatedPareto.from_mean(mean, lo, hi))
        usage = time_averaged_demand(demand_steps(workloads, config.nodes, node), horizon)
        history.append({"mean_lifetime_s": mean, "usage": usage})
        error = abs(usage - target) / target
        if progress is not None:
            progress(
                f"calibration {iteration}/{limit}: mean lifetime {mean:.2f} s -> "
                f"time-averaged demand {usage:.2%} (target {target:.2%}, off by {error:.2%})"
            )
        if error < best_error:
            best_mean, best_usage, best_error = mean, usage, error
        if error <= tolerance:
            return Trace(
                nodes=config.nodes,
                node=node,
                horizon_s=horizon,
                priorities=config.priority_levels,
                workloads=workloads,
                seed=config.seed,
                mean_interarrival_s=config.interarrival_mean_s,
                mean_lifetime_s=mean,
                target_usage=target,
                achieved_usage=usage,
                config=config.to_mapping(),
                calibration=tuple(history),
            )
        following = clamp(mean * target / usage) if usage > 0 else highest
        if following == mean:
            side = "above lifetime.maxSeconds" if usage < target else "below lifetime.minSeconds"
            raise CalibrationError(
                f"the target demand {target:.2%} needs a mean lifetime {side} "
                f"({lo:g}..{hi:g} s): at {mean:.2f} s the demand is {usage:.2%}; best achieved "
                f"{best_usage:.2%} at a mean lifetime of {best_mean:.2f} s",
                best_mean_lifetime_s=best_mean,
                best_usage=best_usage,
            )
        mean = following
    raise CalibrationError(
        f"calibration did not reach {target:.2%} within {tolerance:.2%} in {limit} iterations "
        f"(calibration.maxIterations); best achieved {best_usage:.2%} at a mean lifetime of "
        f"{best_mean:.2f} s",
        best_mean_lifetime_s=best_mean,
        best_usage=best_usage,
    )
