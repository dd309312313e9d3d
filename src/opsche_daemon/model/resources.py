"""Resource vectors (cpu in millicores, memory and storage in bytes, pods, extended resources).

Why integers: every fit check in the scheduler, the solver and plan validation compares sums of
requests with allocatable capacity. Upstream compares ``MilliValue()`` for cpu and ``Value()`` for
everything else, both integers rounded up; doing the same here means opsche and kube-scheduler
agree on "fits" to the last unit, and the solver's linear model needs integers anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opsche_daemon.model.quantity import QuantityError, parse_quantity, to_int, to_milli

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "Resources",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler scores a container without requests as if it asked for this much
# (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest), so best-effort pods still
# spread instead of piling onto one node. Only scoring uses these; filtering uses real requests.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# Resources that are never "extended": hugepages and the native ones are named explicitly.
_NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


def _scalar_name(name: str) -> bool:
    """Resources that count as scalar (extended, hugepages, attachable volumes) upstream."""
    return name not in _NATIVE and (
        "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")
    )


@dataclass(frozen=True, slots=True)
class Resources:
    """An immutable resource vector; absent scalar resources are zero."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalars: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None) -> Resources:
        """Build from an API resource list (``{"cpu": "500m", "memory": "1Gi", ...}``).

        Unparseable values are skipped: the API server never stores them. A snapshot file edited
        by hand may contain them, and ``model.snapshot_file`` refuses it before parsing.
        """
        milli_cpu = memory = storage = pods = 0
        scalars: dict[str, int] = {}
        for name, raw in (values or {}).items():
            try:
                value = parse_quantity(raw)
            except QuantityError:
                continue
            if name == CPU:
                milli_cpu = to_milli(value)
            elif name == MEMORY:
                memory = to_int(value)
            elif name == EPHEMERAL_STORAGE:
                storage = to_int(value)
            elif name == PODS:
                pods = to_int(value)
            elif _scalar_name(name):
                scalars[name] = to_int(value)
        return cls(milli_cpu, memory, storage, pods, scalars)

    def get(self, name: str) -> int:
        """The amount of one resource by its API name."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.pods
        return self.scalars.get(name, 0)

    def names(self) -> Iterator[str]:
        """Names of the non-zero resources."""
        for name in _NATIVE:
            if self.get(name):
                yield name
        yield from (n for n, v in self.scalars.items() if v)

    def __add__(self, other: Resources) -> Resources:
        scalars = dict(self.scalars)
        for name, value in other.scalars.items():
            scalars[name] = scalars.get(name, 0) + value
        return Resources(
            self.milli_cpu + other.milli_cpu,
            self.memory + other.memory,
            self.ephemeral_storage + other.ephemeral_storage,
            self.pods + other.pods,
            scalars,
        )

    def __sub__(self, other: Resources) -> Resources:
        scalars = dict(self.scalars)
        for name, value in other.scalars.items():
            scalars[name] = scalars.get(name, 0) - value
        return Resources(
            self.milli_cpu - other.milli_cpu,
            self.memory - other.memory,
            self.ephemeral_storage - other.ephemeral_storage,
            self.pods - other.pods,
            scalars,
        )

    def max(self, other: Resources) -> Resources:
        """Element-wise maximum (how init containers combine with regular ones)."""
        names = set(self.scalars) | set(other.scalars)
        return Resources(
            max(self.milli_cpu, other.milli_cpu),
            max(self.memory, other.memory),
            max(self.ephemeral_storage, other.ephemeral_storage),
            max(self.pods, other.pods),
            {n: max(self.scalars.get(n, 0), other.scalars.get(n, 0)) for n in names},
        )

    def exceeded_by(self, demand: Resources) -> list[str]:
        """Names of resources where ``demand`` is larger than this (capacity) vector."""
        out = [n for n in _NATIVE if demand.get(n) > self.get(n)]
        out += [n for n, v in demand.scalars.items() if v > self.scalars.get(n, 0)]
        return out

    def to_api(self) -> dict[str, str]:
        """The API form (non-zero entries only), e.g. for snapshot files."""
        out: dict[str, str] = {}
        if self.milli_cpu:
            out[CPU] = f"{self.milli_cpu}m"
        if self.memory:
            out[MEMORY] = str(self.memory)
        if self.ephemeral_storage:
            out[EPHEMERAL_STORAGE] = str(self.ephemeral_storage)
        if self.pods:
            out[PODS] = str(self.pods)
        out.update({n: str(v) for n, v in self.scalars.items() if v})
        return out
