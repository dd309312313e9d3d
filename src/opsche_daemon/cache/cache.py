"""The scheduler's cache of the cluster: nodes, every pod, and pods assumed on a node.

Why it is separate from the watch: decisions need a consistent view that includes the scheduler's
own in-flight decisions. A pod is "assumed" on its node the moment the scheduler picks the node,
before the Binding call returns, so the next cycle already counts its requests; if the bind fails
the assumption is forgotten. When the watch later reports the pod bound, the assumption is
confirmed. Without this, a burst of pods would all be placed on the node that looked emptiest.

Pure data structure (no I/O, no Kubernetes client); the kube layer feeds it parsed model objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot

__all__ = ["Cache", "CacheStats"]


@dataclass(frozen=True)
class CacheStats:
    """Counts for logs and metrics."""

    nodes: int
    bound_pods: int
    assumed_pods: int
    pending_pods: int


class Cache:
    """Nodes, bound pods per node, assumed pods, and the unbound pods of every scheduler."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._infos: dict[str, NodeInfo] = {}
        # Pods on nodes we do not know (yet): kept so they count once the node appears.
        self._orphans: dict[str, dict[str, Pod]] = {}
        self._placement: dict[str, str] = {}  # pod key -> node name, for bound and assumed pods
        self._assumed: set[str] = set()
        self._unbound: dict[str, Pod] = {}
        self._namespace_labels: dict[str, Mapping[str, str]] = {}
        self._workload_selectors: dict[tuple[str, str], LabelSelector] = {}
        self._budgets: dict[tuple[str, str], DisruptionBudget] = {}
        self.generation = 0

    # ------------------------------------------------------------------ nodes
    def upsert_node(self, node: Node) -> None:
        """Add a node or replace its object (capacity, labels, taints)."""
        self.generation += 1
        self._nodes[node.name] = node
        info = self._infos.get(node.name)
        if info is not None:
            self._infos[node.name] = info.with_node(node)
            return
        pods = tuple(self._orphans.pop(node.name, {}).values())
        self._infos[node.name] = NodeInfo.build(node, pods)

    def remove_node(self, name: str) -> None:
        """Forget a node; its pods stay remembered as orphans until they are deleted."""
        self.generation += 1
        self._nodes.pop(name, None)
        info = self._infos.pop(name, None)
        if info is not None and info.pods:
            self._orphans[name] = {p.key: p for p in info.pods}

    def node(self, name: str) -> Node | None:
        """A node by name."""
        return self._nodes.get(name)

    # ------------------------------------------------------------------ pods
    def upsert_pod(self, pod: Pod) -> None:
        """Record a pod's latest state from the watch."""
        self.generation += 1
        key = pod.key
        if not pod.node_name:
            if key not in self._assumed:  # an update racing our bind must not undo the assume
                self._unbound[key] = pod
            return
        self._unbound.pop(key, None)
        self._assumed.discard(key)  # the watch confirms (or overrides) our assumption
        self._unplace(key)
        if not pod.terminal:
            self._place(pod, pod.node_name)

    def remove_pod(self, key: str) -> None:
        """A pod was deleted."""
        self.generation += 1
        self._unbound.pop(key, None)
        self._assumed.discard(key)
        self._unplace(key)

    def assume(self, pod: Pod, node_name: str) -> Pod:
        """Count ``pod`` on ``node_name`` before the bind completes; returns the assumed copy."""
        self.generation += 1
        assumed = replace(pod, node_name=node_name)
        self._unbound.pop(pod.key, None)
        self._unplace(pod.key)
        self._place(assumed, node_name)
        self._assumed.add(pod.key)
        return assumed

    def forget(self, pod: Pod) -> None:
        """Undo ``assume`` after a failed bind; the pod is unbound again."""
        if pod.key not in self._assumed:
            return
        self.generation += 1
        self._assumed.discard(pod.key)
        self._unplace(pod.key)
        self._unbound[pod.key] = replace(pod, node_name="")

    def is_assumed(self, key: str) -> bool:
        """True while our bind of the pod has not been confirmed by the watch."""
        return key in self._assumed

    def placement(self, key: str) -> str | None:
        """The node a pod is bound or assumed on."""
        return self._placement.get(key)

    def unbound(self) -> Iterable[Pod]:
        """Pods not bound to any node (of every scheduler)."""
        return self._unbound.values()

    def _place(self, pod: Pod, node_name: str) -> None:
        self._placement[pod.key] = node_name
        info = self._infos.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pod.key] = pod
        else:
            self._infos[node_name] = info.with_pod(pod)

    def _unplace(self, key: str) -> None:
        node_name = self._placement.pop(key, None)
        if node_name is None:
            return
        info = self._infos.get(node_name)
        if info is not None:
            self._infos[node_name] = info.without_pod(key)
        else:
            self._orphans.get(node_name, {}).pop(key, None)

    # ------------------------------------------------------------------ namespaces, workloads
    def upsert_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """Namespace labels, for pod-affinity namespace selectors."""
        self.generation += 1
        self._namespace_labels[name] = MappingProxyType(dict(labels))

    def remove_namespace(self, name: str) -> None:
        """A namespace was deleted."""
        self.generation += 1
        self._namespace_labels.pop(name, None)

    def upsert_workload(
        self, kind: str, namespace: str, name: str, selector: LabelSelector | None
    ) -> None:
        """A Service/RC/ReplicaSet/StatefulSet selector (for default topology spreading)."""
        self.generation += 1
        key = (namespace, f"{kind}/{name}")
        if selector is None or selector.empty:
            self._workload_selectors.pop(key, None)
        else:
            self._workload_selectors[key] = selector

    def remove_workload(self, kind: str, namespace: str, name: str) -> None:
        """A workload was deleted."""
        self.generation += 1
        self._workload_selectors.pop((namespace, f"{kind}/{name}"), None)

    def upsert_budget(self, budget: DisruptionBudget) -> None:
        """A PodDisruptionBudget and its current ``disruptionsAllowed``."""
        self.generation += 1
        self._budgets[(budget.namespace, budget.name)] = budget

    def remove_budget(self, namespace: str, name: str) -> None:
        """A PodDisruptionBudget was deleted."""
        self.generation += 1
        self._budgets.pop((namespace, name), None)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, pending: tuple[Pod, ...] = ()) -> Snapshot:
        """An immutable view of the cache now (NodeInfos are immutable, so this is cheap)."""
        selectors: dict[str, list[LabelSelector]] = {}
        for (namespace, _), selector in self._workload_selectors.items():
            selectors.setdefault(namespace, []).append(selector)
        return Snapshot.of(
            list(self._infos.values()),
            pending,
            self.generation,
            namespace_labels=self._namespace_labels,
            workload_selectors={ns: tuple(s) for ns, s in selectors.items()},
            disruption_budgets=tuple(self._budgets.values()),
        )

    def stats(self) -> CacheStats:
        """Counts for logs and metrics."""
        return CacheStats(
            nodes=len(self._infos),
            bound_pods=len(self._placement) - len(self._assumed),
            assumed_pods=len(self._assumed),
            pending_pods=len(self._unbound),
        )
