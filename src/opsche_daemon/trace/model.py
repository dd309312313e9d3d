"""The trace file: the cluster's shape and one record per workload (a ReplicaSet).

A trace is JSON a person can read and a tool can write. Requests are stored as fractions of one
node, as the paper states them; ``pod_cpu_millis`` and ``pod_memory_mib`` round them once to the
units the API server stores, and every consumer (replayer, bounds, show) uses those rounded values
so the ceilings and the replay count exactly the same requests.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "TRACE_FORMAT",
    "NodeShape",
    "Trace",
    "TraceFileError",
    "Workload",
    "read_trace",
    "write_trace",
]

TRACE_FORMAT = "opsche-trace/v1"


class TraceFileError(ValueError):
    """A trace file that cannot be read; the message names the file, record and field."""


@dataclass(frozen=True)
class NodeShape:
    """Every node's allocatable cpu (millicores) and memory (MiB); all nodes are alike."""

    cpu_millis: int
    memory_mib: int

    def cpu_quantity(self) -> str:
        """The node's cpu as a Kubernetes quantity."""
        return f"{self.cpu_millis}m"

    def memory_quantity(self) -> str:
        """The node's memory as a Kubernetes quantity."""
        return f"{self.memory_mib}Mi"


@dataclass(frozen=True)
class Workload:
    """One ReplicaSet: ``replicas`` identical pods alive from ``start_s`` to ``end_s``.

    ``priority`` is 1 (lowest) to the trace's ``priorities``. ``initial`` workloads are running
    when the replay starts (``start_s`` is 0) and are excluded from the statistics.
    """

    name: str
    start_s: float
    end_s: float
    replicas: int
    priority: int
    cpu_fraction: float
    memory_fraction: float
    initial: bool = False

    def pod_cpu_millis(self, node: NodeShape) -> int:
        """One pod's cpu request in millicores (at least 1)."""
        return max(1, round(self.cpu_fraction * node.cpu_millis))

    def pod_memory_mib(self, node: NodeShape) -> int:
        """One pod's memory request in MiB (at least 1)."""
        return max(1, round(self.memory_fraction * node.memory_mib))


@dataclass(frozen=True)
class Trace:
    """A generated (or hand-written) trace.

    ``config`` is the generator configuration it came from (free-form for hand-written traces);
    ``mean_lifetime_s`` the calibrated mean lifetime; ``achieved_usage`` the time-averaged
    effective demand of the workloads over ``[0, horizon_s]`` (uncapped), which calibration drove
    to within 1 % of ``target_usage``.
    """

    nodes: int
    node: NodeShape
    horizon_s: float
    priorities: int
    workloads: tuple[Workload, ...]
    seed: int | None = None
    mean_interarrival_s: float | None = None
    mean_lifetime_s: float | None = None
    target_usage: float | None = None
    achieved_usage: float | None = None
    config: dict[str, Any] = field(default_factory=dict)
    calibration: tuple[dict[str, float], ...] = ()

    def pods(self, *, initial: bool | None = None) -> int:
        """How many pods the trace creates (of initial or arriving workloads, or all)."""
        return sum(w.replicas for w in self.workloads if initial is None or w.initial == initial)

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object."""
        data = asdict(self)
        data["calibration"] = list(self.calibration)
        data["workloads"] = [asdict(w) for w in self.workloads]
        return {"format": TRACE_FORMAT, **data}


def _number(where: str, raw: dict[str, Any], key: str, *, integer: bool = False) -> Any:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceFileError(f"{where}: {key} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise TraceFileError(f"{where}: {key} must be finite, got {value!r}")
    if integer and value != int(value):
        raise TraceFileError(f"{where}: {key} must be a whole number, got {value!r}")
    return int(value) if integer else float(value)


def _optional(where: str, raw: dict[str, Any], key: str) -> float | None:
    return None if raw.get(key) is None else float(_number(where, raw, key))


def _workload(where: str, raw: Any, priorities: int, horizon_s: float) -> Workload:
    if not isinstance(raw, dict):
        raise TraceFileError(f"{where}: expected an object, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise TraceFileError(f"{where}: name must be a non-empty string, got {name!r}")
    where = f"{where} ({name})"
    start = _number(where, raw, "start_s")
    end = _number(where, raw, "end_s")
    replicas = _number(where, raw, "replicas", integer=True)
    priority = _number(where, raw, "priority", integer=True)
    cpu = _number(where, raw, "cpu_fraction")
    memory = _number(where, raw, "memory_fraction")
    initial = raw.get("initial", False)
    if not isinstance(initial, bool):
        raise TraceFileError(f"{where}: initial must be true or false, got {initial!r}")
    problems = []
    if start < 0 or start > horizon_s:
        problems.append(f"start_s must be in [0, horizon_s={horizon_s:g}], got {start:g}")
    if end <= start:
        problems.append(f"end_s must be after start_s={start:g}, got {end:g}")
    if replicas < 1:
        problems.append(f"replicas must be at least 1, got {replicas}")
    if not 1 <= priority <= priorities:
        problems.append(f"priority must be in 1..{priorities}, got {priority}")
    for key, value in (("cpu_fraction", cpu), ("memory_fraction", memory)):
        if not 0 < value <= 1:
            problems.append(f"{key} must be in (0, 1], got {value:g}")
    if initial and start != 0:
        problems.append(f"an initial workload starts at 0, got start_s={start:g}")
    if problems:
        raise TraceFileError(f"{where}: {problems[0]}")
    return Workload(name, start, end, replicas, priority, cpu, memory, initial)


def trace_from_json(data: Any, where: str = "trace") -> Trace:
    """Parse and validate a trace object; every error names the record and field."""
    if not isinstance(data, dict):
        raise TraceFileError(f"{where}: expected a JSON object")
    if data.get("format") != TRACE_FORMAT:
        raise TraceFileError(
            f"{where}: format must be {TRACE_FORMAT!r}, got {data.get('format')!r}"
        )
    nodes = _number(where, data, "nodes", integer=True)
    if nodes < 1:
        raise TraceFileError(f"{where}: nodes must be at least 1, got {nodes}")
    node_raw = data.get("node")
    if not isinstance(node_raw, dict):
        raise TraceFileError(f"{where}: node must be an object with cpu_millis and memory_mib")
    node = NodeShape(
        _number(f"{where}: node", node_raw, "cpu_millis", integer=True),
        _number(f"{where}: node", node_raw, "memory_mib", integer=True),
    )
    if node.cpu_millis < 1 or node.memory_mib < 1:
        raise TraceFileError(f"{where}: node cpu_millis and memory_mib must be positive")
    horizon = _number(where, data, "horizon_s")
    if horizon <= 0:
        raise TraceFileError(f"{where}: horizon_s must be positive, got {horizon:g}")
    priorities = _number(where, data, "priorities", integer=True)
    if priorities < 1:
        raise TraceFileError(f"{where}: priorities must be at least 1, got {priorities}")
    raw_workloads = data.get("workloads")
    if not isinstance(raw_workloads, list):
        raise TraceFileError(f"{where}: workloads must be a list")
    workloads = tuple(
        _workload(f"{where}: workloads[{i}]", raw, priorities, horizon)
        for i, raw in enumerate(raw_workloads)
    )
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise TraceFileError(f"{where}: workload name {dup!r} appears more than once")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TraceFileError(f"{where}: seed must be an integer or null, got {seed!r}")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise TraceFileError(f"{where}: config must be an object")
    calibration = data.get("calibration") or []
    if not isinstance(calibration, list) or not all(isinstance(c, dict) for c in calibration):
        raise TraceFileError(f"{where}: calibration must be a list of objects")
    return Trace(
        nodes=nodes,
        node=node,
        horizon_s=horizon,
        priorities=priorities,
        workloads=workloads,
        seed=seed,
        mean_interarrival_s=_optional(where, data, "mean_interarrival_s"),
        mean_lifetime_s=_optional(where, data, "mean_lifetime_s"),
        target_usage=_optional(where, data, "target_usage"),
        achieved_usage=_optional(where, data, "achieved_usage"),
        config=config,
        calibration=tuple(calibration),
    )


def read_trace(path: Path) -> Trace:
    """Read a trace file; ``TraceFileError`` (never a traceback) for anything wrong with it."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFileError(f"{path}: not JSON: {exc}") from None
    return trace_from_json(data, str(path))


def write_trace(trace: Trace, path: Path) -> None:
    """Write a trace file (indented, one workload per line, so diffs and greps stay readable)."""
    data = trace.to_json()
    workloads = data.pop("workloads")
    head = json.dumps(data, indent=2)[:-2]  # drop the closing "\n}"
    lines = ",\n".join("    " + json.dumps(w, separators=(", ", ": ")) for w in workloads)
    path.write_text(f'{head},\n  "workloads": [\n{lines}\n  ]\n}}\n')
