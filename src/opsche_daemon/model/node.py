"""An immutable view of a Node, and ``NodeInfo``: a node with the pods on it and their sums.

``NodeInfo`` is what filter and score plugins read (upstream ``framework.NodeInfo``): requested
and non-zero-requested resources, used host ports and the pods themselves, kept as running sums so
each check is O(1) in the number of pods. NodeInfos are immutable; adding a pod returns a new one,
which is what lets a snapshot be shared safely between the scheduling cycle, the solver thread and
plan validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from opsche_daemon.model.apiobject import without_managed_fields
from opsche_daemon.model.pod import HostPort, Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import Taint

__all__ = ["Node", "NodeInfo"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Node:
    """What scheduling reads from a Node."""

    name: str
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    taints: tuple[Taint, ...] = ()
    allocatable: Resources = field(default_factory=Resources)
    unschedulable: bool = False
    # image name -> size in bytes, as status.images reports them (each name of each image).
    images: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    ready: bool = True
    resource_version: str = ""
    # The API object, for scheduler extenders (ExtenderArgs.Nodes carries whole Nodes).
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_api(cls, obj: Mapping[str, Any]) -> Node:
        """Build from the API's JSON form of a Node."""
        meta: Mapping[str, Any] = obj.get("metadata") or {}
        spec: Mapping[str, Any] = obj.get("spec") or {}
        status: Mapping[str, Any] = obj.get("status") or {}
        images: dict[str, int] = {}
        for image in status.get("images") or ():
            for name in image.get("names") or ():
                images[str(name)] = int(image.get("sizeBytes") or 0)
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        return cls(
            name=str(meta.get("name", "")),
            labels=MappingProxyType(dict(meta.get("labels") or {})),
            taints=tuple(Taint.parse(t) for t in spec.get("taints") or ()),
            allocatable=Resources.parse(status.get("allocatable") or status.get("capacity")),
            unschedulable=bool(spec.get("unschedulable")),
            images=MappingProxyType(images),
            ready=ready,
            resource_version=str(meta.get("resourceVersion", "")),
            raw=without_managed_fields(obj),
        )


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node and the (non-terminal) pods assigned or assumed on it."""

    node: Node
    pods: tuple[Pod, ...] = ()
    requested: Resources = field(default_factory=Resources)
    non_zero_requested: Resources = field(default_factory=Resources)
    used_ports: frozenset[HostPort] = frozenset()

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.name

    @classmethod
    def build(cls, node: Node, pods: tuple[Pod, ...] = ()) -> NodeInfo:
        """A NodeInfo with the sums computed from ``pods``."""
        info = cls(node)
        for pod in pods:
            info = info.with_pod(pod)
        return info

    def with_pod(self, pod: Pod) -> NodeInfo:
        """A copy with ``pod`` added (its requests and host ports counted)."""
        return replace(
            self,
            pods=(*self.pods, pod),
            requested=self.requested + pod.requests,
            non_zero_requested=self.non_zero_requested + pod.non_zero_requests,
            used_ports=self.used_ports | frozenset(pod.host_ports),
        )

    def without_pod(self, key: str) -> NodeInfo:
        """A copy with the pod ``namespace/name`` removed (unchanged if absent)."""
        kept = tuple(p for p in self.pods if p.key != key)
        if len(kept) == len(self.pods):
            return self
        return NodeInfo.build(self.node, kept)

    def with_node(self, node: Node) -> NodeInfo:
        """A copy whose node object is replaced (labels, capacity or taints changed)."""
        return replace(self, node=node)

    @property
    def free(self) -> Resources:
        """Allocatable minus requested (may be negative if the node was over-committed)."""
        return self.node.allocatable - self.requested
