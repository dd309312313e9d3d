"""The replay result file: what the monitor saw, per second and per pod, plus its summary.

All times are real seconds since the replay's start (the moment arrivals begin, after the initial
workloads were placed); ``time_scale`` says how much the trace's clock was compressed (trace time
= real time x scale). Latencies are real milliseconds. ``opsche bench report`` reads only these
files, so a report can be redone, or extended, without replaying anything.

A file whose name ends in ``.gz`` is gzip-compressed JSON (``RESULT_SUFFIXES``): the per-second
samples and per-pod records of a 2 h replay are 1-1.6 MB as JSON and about a seventh of that
compressed, which is what lets a grid of hundreds of runs be committed and resumed elsewhere.
The benchmarks write compressed files; both kinds are read.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

__all__ = [
    "RESULT_FORMAT",
    "RESULT_SUFFIXES",
    "DeletionCause",
    "PodRecord",
    "ReplayResult",
    "ResultFileError",
    "Sample",
    "SchedulerRun",
    "Summary",
    "is_result_name",
    "read_result",
    "read_result_json",
    "write_result",
]

RESULT_FORMAT = "opsche-replay/v1"
RESULT_SUFFIXES = (".json.gz", ".json")  # compressed first: what the benchmarks write


def is_result_name(name: str) -> bool:
    """Whether a file name has a result file's suffix (``.json`` or ``.json.gz``)."""
    return name.endswith(RESULT_SUFFIXES)


class ResultFileError(ValueError):
    """A result file that cannot be read; the message names the file and what is wrong."""


class DeletionCause(StrEnum):
    """Why a pod went away.

    ``WORKLOAD_END`` is the trace's own deletion of the ReplicaSet; the others happened while the
    workload was alive and are disruptions: ``PREEMPTED`` (DisruptionTarget reason
    PreemptionByScheduler), ``EVICTED`` (through the Eviction API: opsche's plan moves and
    evictions), ``DELETED`` (anything else, such as a plain delete).
    """

    WORKLOAD_END = "workload-end"
    PREEMPTED = "preempted"
    EVICTED = "evicted"
    DELETED = "deleted"

    @property
    def disruption(self) -> bool:
        """Whether the pod was taken away while its workload still wanted it."""
        return self is not DeletionCause.WORKLOAD_END


@dataclass(frozen=True)
class Sample:
    """One monitor sample: pods and the requests of running pods as shares of capacity."""

    t: float
    running: int
    pending: int
    cpu: float
    memory: float

    @property
    def effective(self) -> float:
        """The bottleneck resource's share: the larger of cpu and memory."""
        return max(self.cpu, self.memory)


@dataclass(frozen=True)
class PodRecord:
    """One pod's life as the monitor saw it (``None``: it did not happen during the replay)."""

    name: str
    workload: str
    priority: int
    initial: bool
    created_s: float
    running_s: float | None = None
    deleted_s: float | None = None
    node: str | None = None
    cause: DeletionCause | None = None
    # First seen with a node (the Binding's watch event); null in results made before it was
    # recorded. It splits the latency into the scheduler's part and the node's part.
    bound_s: float | None = None

    @property
    def latency_ms(self) -> float | None:
        """Scheduling latency: creation to first Running, in milliseconds."""
        if self.running_s is None:
            return None
        return (self.running_s - self.created_s) * 1000.0

    @property
    def binding_ms(self) -> float | None:
        """Creation to first seen bound: the scheduler's share (queue, cycle, Binding call)."""
        if self.bound_s is None:
            return None
        return (self.bound_s - self.created_s) * 1000.0

    @property
    def start_ms(self) -> float | None:
        """First seen bound to first Running: the node's share (KWOK here, a kubelet elsewhere)."""
        if self.bound_s is None or self.running_s is None:
            return None
        return (self.running_s - self.bound_s) * 1000.0


@dataclass(frozen=True)
class SchedulerRun:
    """Which scheduler ran the replay and how it was configured.

    ``label`` names the configuration in reports (``kube-scheduler``, ``periodic``, ...);
    ``scheduler_name`` is the pods' ``spec.schedulerName``; the rest is null for kube-scheduler.
    """

    label: str
    scheduler_name: str
    trigger: str | None = None
    blocking: bool | None = None
    preemption: bool | None = None
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Summary:
    """The numbers a report aggregates (see ``opsche_daemon.trace.summary``)."""

    effective_usage: float
    limit_usage: float
    pooled_usage: float
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_mean_ms: float | None
    latency_by_priority: dict[str, dict[str, float | int | None]]
    disruptions: int
    disruptions_by_priority: dict[str, int]
    disruptions_by_cause: dict[str, int]
    pods_created: int
    pods_ran: int
    never_ran: int
    pending_at_end: int
    solver_runs: int | None = None
    plan_activations: int | None = None
    # Pending pods that plans placed (opsche_plan_pods_placed_total), so disruptions per placed
    # pod can be read off a run; null for kube-scheduler and for results made before it existed.
    plan_pods_placed: int | None = None
    # The latency's median split at the Binding (creation to bound, bound to Running), over the
    # arriving pods that ran; null for results made before pods' bound times were recorded.
    binding_p50_ms: float | None = None
    start_p50_ms: float | None = None
    # Disruptions by cause over every pod, the initial workloads' included. ``disruptions``
    # follows the paper and leaves those out, but a plan that moves a pod of an initial workload
    # disrupts its owner all the same: this is what "disruptions per placed pod" divides.
    # Null for results made before it existed.
    all_disruptions_by_cause: dict[str, int] | None = None


@dataclass(frozen=True)
class ReplayResult:
    """A whole result file."""

    trace: dict[str, Any]
    scheduler: SchedulerRun
    time_scale: float
    duration_s: float
    wall_s: float
    samples: tuple[Sample, ...]
    pods: tuple[PodRecord, ...]
    summary: Summary
    started_at: str = ""
    environment: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object."""
        return {
            "format": RESULT_FORMAT,
            "trace": self.trace,
            "scheduler": asdict(self.scheduler),
            "time_scale": self.time_scale,
            "duration_s": self.duration_s,
            "wall_s": self.wall_s,
            "started_at": self.started_at,
            "environment": self.environment,
            "summary": asdict(self.summary),
            "samples": [[s.t, s.running, s.pending, s.cpu, s.memory] for s in self.samples],
            "pods": [asdict(p) for p in self.pods],
        }


def result_from_json(data: Any, where: str = "result") -> ReplayResult:
    """Parse a result object (as written by ``write_result``)."""
    if not isinstance(data, dict) or data.get("format") != RESULT_FORMAT:
        raise ResultFileError(f"{where}: not an {RESULT_FORMAT} result file")
    try:
        pods = tuple(
            PodRecord(**{**p, "cause": None if p["cause"] is None else DeletionCause(p["cause"])})
            for p in data["pods"]
        )
        return ReplayResult(
            trace=dict(data["trace"]),
            scheduler=SchedulerRun(**data["scheduler"]),
            time_scale=float(data["time_scale"]),
            duration_s=float(data["duration_s"]),
            wall_s=float(data["wall_s"]),
            samples=tuple(Sample(*row) for row in data["samples"]),
            pods=pods,
            summary=Summary(**data["summary"]),
            started_at=str(data.get("started_at", "")),
            environment=dict(data.get("environment") or {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultFileError(f"{where}: malformed result file: {exc}") from None


def read_result_json(path: Path) -> Any:
    """A result file's JSON, decompressed if its name ends in ``.gz``.

    ``OSError`` for an unreadable file, ``ValueError`` (``json.JSONDecodeError``,
    ``UnicodeDecodeError``, or gzip's ``BadGzipFile``/``EOFError`` as ``ValueError``) for bad
    content: callers word these for their own users.
    """
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (gzip.BadGzipFile, EOFError) as exc:
            raise ValueError(f"not gzip-compressed JSON: {exc}") from None
    return json.loads(raw)


def read_result(path: Path) -> ReplayResult:
    """Read a result file; ``ResultFileError`` for anything wrong with it."""
    try:
        data = read_result_json(path)
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ResultFileError(f"{path}: not JSON: {exc}") from None
    return result_from_json(data, str(path))


def write_result(result: ReplayResult, path: Path) -> None:
    """Write a result atomically (a temporary file, then rename), so a killed run leaves none.

    Compressed when ``path`` ends in ``.gz``, with no time stamp in the gzip header, so the same
    result makes the same bytes (a re-run that changed nothing shows no diff).
    """
    tmp = path.with_name(path.name + ".tmp")
    text = (json.dumps(result.to_json(), separators=(",", ":")) + "\n").encode()
    if path.name.endswith(".gz"):
        text = gzip.compress(text, compresslevel=9, mtime=0)
    tmp.write_bytes(text)
    tmp.replace(path)
