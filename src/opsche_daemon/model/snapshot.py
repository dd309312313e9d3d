"""An immutable, generation-stamped view of the cluster: what every decision reads.

"Snapshot, decide, act": a scheduling cycle, a solver run and a plan validation each read one
Snapshot and never see it change underneath them; the cache builds a new one when the cluster
changes. The generation lets a plan say which state it was computed from.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector

__all__ = ["DisruptionBudget", "Snapshot"]


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget as preemption and plans need it: whom it covers, what it allows."""

    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int

    def covers(self, pod: Pod) -> bool:
        """Same namespace and the selector matches (a nil selector matches nothing)."""
        return (
            pod.namespace == self.namespace
            and self.selector is not None
            and self.selector.matches(pod.labels)
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Nodes (in a stable order) with their pods, plus the pods not yet bound."""

    generation: int = 0
    nodes: Mapping[str, NodeInfo] = field(default_factory=lambda: MappingProxyType({}))
    pending: tuple[Pod, ...] = ()
    # Labels of each namespace, for pod-affinity terms with a namespaceSelector.
    namespace_labels: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # Per namespace, the selectors of Services, ReplicationControllers, ReplicaSets and
    # StatefulSets: upstream's DefaultSelector merges those matching a pod to apply the default
    # topology-spread constraints (pods of one workload spread across nodes and zones).
    workload_selectors: Mapping[str, tuple[LabelSelector, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    disruption_budgets: tuple[DisruptionBudget, ...] = ()

    @classmethod
    def of(
        cls,
        infos: list[NodeInfo],
        pending: tuple[Pod, ...] = (),
        generation: int = 0,
        *,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        workload_selectors: Mapping[str, tuple[LabelSelector, ...]] | None = None,
        disruption_budgets: tuple[DisruptionBudget, ...] = (),
    ) -> Snapshot:
        """Build from NodeInfos, keeping their order."""
        return cls(
            generation,
            MappingProxyType({i.name: i for i in infos}),
            pending,
            MappingProxyType(dict(namespace_labels or {})),
            MappingProxyType(dict(workload_selectors or {})),
            disruption_budgets,
        )

    def node_infos(self) -> tuple[NodeInfo, ...]:
        """All nodes in order."""
        return tuple(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        """One node by name."""
        return self.nodes.get(name)

    def pods(self) -> Iterator[tuple[NodeInfo, Pod]]:
        """Every pod on every node, with its node."""
        for info in self.nodes.values():
            for pod in info.pods:
                yield info, pod

    def __len__(self) -> int:
        return len(self.nodes)
