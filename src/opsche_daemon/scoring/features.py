"""The one feature extraction of learned scoring, shared by training, evaluation and serving.

Seed 002 found that features decide whether a scorer can work at all: with free capacity taken as
"allocatable minus this pod's own request" (ignoring the pods already running) its model was
noise (R² ≈ 0). So a candidate is described by its *reconstructed* occupancy at decision time
(the dataset's sweep line, or the service's view of the cluster), the pod's requests, and one
workload-structure feature the seed found nearly as important (the width of the pod's job, here
its ReplicaSet's replicas). Training and serving both call :func:`feature_row`, so a model is
always served the features it was trained on, in the same order and units.

Units: cpu in cores, memory in GiB (for the Alibaba trace, whose memory is normalised to 0-100 of
an undisclosed machine size, the loader scales it so a machine has 100 "GiB"; only ratios and
differences matter to a ranker).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FEATURES", "Candidate", "PodDemand", "feature_row"]

FEATURES = (
    "free_cpu",  # cores free on the node before the pod
    "free_memory",  # GiB free before the pod
    "request_cpu",  # the pod's request, cores
    "request_memory",  # GiB
    "cpu_after_fraction",  # (free - request) / allocatable: how full the pod leaves it
    "memory_after_fraction",
    "cpu_used_fraction",  # used / allocatable before the pod
    "memory_used_fraction",
    "balance_after",  # |cpu fraction used - memory fraction used| once the pod is there
    "job_width",  # replicas of the pod's workload
)


@dataclass(frozen=True)
class PodDemand:
    """What a pod asks for: cores, GiB, and its workload's width."""

    cpu: float
    memory: float
    job_width: int = 1


@dataclass(frozen=True)
class Candidate:
    """A node at the moment of a decision: allocatable and already used, cores and GiB."""

    name: str
    allocatable_cpu: float
    allocatable_memory: float
    used_cpu: float = 0.0
    used_memory: float = 0.0

    @property
    def free_cpu(self) -> float:
        """Cores not requested by running pods."""
        return self.allocatable_cpu - self.used_cpu

    @property
    def free_memory(self) -> float:
        """GiB not requested by running pods."""
        return self.allocatable_memory - self.used_memory

    def fits(self, pod: PodDemand) -> bool:
        """True if the pod's requests fit in what is free (resource feasibility)."""
        return pod.cpu <= self.free_cpu + 1e-9 and pod.memory <= self.free_memory + 1e-9


def _fraction(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def feature_row(pod: PodDemand, node: Candidate) -> list[float]:
    """The features of placing ``pod`` on ``node``, in :data:`FEATURES` order."""
    cpu_after = _fraction(node.free_cpu - pod.cpu, node.allocatable_cpu)
    memory_after = _fraction(node.free_memory - pod.memory, node.allocatable_memory)
    return [
        node.free_cpu,
        node.free_memory,
        pod.cpu,
        pod.memory,
        cpu_after,
        memory_after,
        _fraction(node.used_cpu, node.allocatable_cpu),
        _fraction(node.used_memory, node.allocatable_memory),
        abs((1 - cpu_after) - (1 - memory_after)),
        float(pod.job_width),
    ]
