"""Builders for realistic Pod and Node API objects (JSON as the watch delivers it) for tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opsche_daemon.framework.interface import CycleState
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot


def container(
    name: str = "app",
    *,
    requests: Mapping[str, Any] | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    ports: Iterable[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
) -> dict[str, Any]:
    """A container; ``requests`` like ``{"cpu": "500m", "memory": "1Gi"}``."""
    out: dict[str, Any] = {"name": name, "image": image}
    if requests is not None:
        out["resources"] = {"requests": dict(requests)}
    if ports:
        out["ports"] = [dict(p) for p in ports]
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def pod(
    name: str = "pod",
    *,
    namespace: str = "default",
    containers: Iterable[Mapping[str, Any]] | None = None,
    init_containers: Iterable[Mapping[str, Any]] = (),
    spec: Mapping[str, Any] | None = None,
    node_name: str = "",
) -> Pod:
    """A pending pod; by default one container without requests."""
    body: dict[str, Any] = {
        "containers": [dict(c) for c in (containers if containers is not None else [container()])]
    }
    if init_containers:
        body["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        body["nodeName"] = node_name
    body.update(spec or {})
    return Pod.from_api(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": body,
            "status": {"phase": "Pending"},
        }
    )


def requests_pod(name: str = "pod", *requests: Mapping[str, Any], **kw: Any) -> Pod:
    """A pod with one container per ``requests`` mapping."""
    return pod(
        name,
        containers=[container(f"c{i}", requests=r) for i, r in enumerate(requests)],
        **kw,
    )


def node(
    name: str = "node",
    *,
    allocatable: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[Iterable[str], int]] = (),
) -> Node:
    """A Ready node; ``allocatable`` defaults to 4 cpu, 8Gi and 110 pods."""
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    if allocatable is not None:
        alloc = {"pods": "110", **allocatable}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return Node.from_api(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec,
            "status": {
                "allocatable": alloc,
                "capacity": alloc,
                "images": [{"names": list(n), "sizeBytes": size} for n, size in images],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def info(n: Node, *pods: Pod) -> NodeInfo:
    """A NodeInfo with ``pods`` bound to it."""
    return NodeInfo.build(n, tuple(pods))


def state_of(*infos: NodeInfo) -> CycleState:
    """A fresh cycle state over a snapshot of ``infos``."""
    return CycleState(Snapshot.of(list(infos)))
