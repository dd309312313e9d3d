"""Pods, nodes and snapshots for the unit tests: how a test object is made, written once.

Two kinds of builder:

* **model objects**, built directly (``pod``, ``node``, ``controller``, ``node_info``,
  ``snapshot_of``): the dataclasses as the cache holds them, with only the fields a test names set.
  Quantities are integers in the model's units (millicores, bytes).
* **API objects** (``container``, ``pod_manifest``, ``api_pod``, ``node_manifest``, ``api_node``,
  ``requests_pod``): the JSON the watch delivers, parsed by ``Pod.from_api`` / ``Node.from_api``,
  for tests whose subject depends on that parsing (requests summed over containers, affinity and
  spread terms, images, ports). Quantities are API strings (``"500m"``, ``"1Gi"``).

Every builder takes keyword arguments for what tests vary and defaults for the rest; a test file
with a scenario of its own (one scheduler, one owner) wraps these rather than building its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from opsche_daemon.framework.interface import CycleState
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import LabelSelector, Taint, Toleration
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot

__all__ = [
    "PAUSE_IMAGE",
    "GiB",
    "api_node",
    "api_pod",
    "container",
    "controller",
    "node",
    "node_info",
    "node_manifest",
    "pod",
    "pod_manifest",
    "requests_pod",
    "snapshot_of",
    "state_of",
]

GiB = 2**30
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
DELETION_TIMESTAMP = "2026-01-01T00:00:00Z"


# ---------------------------------------------------------------------- model objects


def controller(
    name: str, kind: str = "ReplicaSet", *, uid: str | None = None, api_version: str = ""
) -> Owner:
    """A controller owner reference; ``uid`` defaults to ``uid-<name>``."""
    return Owner(kind, name, f"uid-{name}" if uid is None else uid, api_version)


def pod(
    name: str = "pod",
    cpu: int = 0,
    *,
    memory: int = 0,
    scalars: Mapping[str, int] | None = None,
    non_zero: bool = False,
    namespace: str = "default",
    uid: str | None = None,
    on: str = "",
    phase: str | None = None,
    priority: int = 0,
    scheduler: str = "default-scheduler",
    owner: Owner | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Iterable[Toleration] = (),
    gates: Iterable[str] = (),
    nominated: str = "",
    preemption_policy: str = "PreemptLowerPriority",
    created: float = 0.0,
    deleting: bool = False,
) -> Pod:
    """A pod requesting ``cpu`` millicores and ``memory`` bytes (plus extended ``scalars``).

    Bound to node ``on`` (phase Running) or pending (phase Pending) unless ``phase`` says
    otherwise. ``non_zero`` sets the requests the scorers read to the same vector (``Pod.from_api``
    fills them in; a directly built pod has none). ``uid`` defaults to ``uid-<name>``.
    """
    requests = Resources(cpu, memory, 0, 0, dict(scalars or {}))
    return Pod(
        namespace=namespace,
        name=name,
        uid=f"uid-{name}" if uid is None else uid,
        scheduler_name=scheduler,
        node_name=on,
        nominated_node_name=nominated,
        phase=phase or ("Running" if on else "Pending"),
        priority=priority,
        preemption_policy=preemption_policy,
        requests=requests,
        non_zero_requests=requests if non_zero else Resources(),
        tolerations=tuple(tolerations),
        scheduling_gates=tuple(gates),
        owner=owner,
        created=created,
        deleting=deleting,
        labels=MappingProxyType(dict(labels or {})),
        annotations=MappingProxyType(dict(annotations or {})),
        node_selector=MappingProxyType(dict(node_selector or {})),
    )


def node(
    name: str = "node",
    cpu: int = 4000,
    *,
    memory: int = 16 * GiB,
    pods: int = 110,
    ephemeral_storage: int = 0,
    scalars: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Taint] = (),
    unschedulable: bool = False,
) -> Node:
    """A Ready node with ``cpu`` millicores, ``memory`` bytes and room for ``pods`` pods."""
    return Node(
        name,
        labels=MappingProxyType(dict(labels or {})),
        taints=tuple(taints),
        allocatable=Resources(cpu, memory, ephemeral_storage, pods, dict(scalars or {})),
        unschedulable=unschedulable,
    )


def node_info(n: Node, *pods: Pod) -> NodeInfo:
    """A NodeInfo with ``pods`` counted on it."""
    return NodeInfo.build(n, tuple(pods))


def snapshot_of(
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    *,
    generation: int = 0,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    workload_selectors: Mapping[str, tuple[LabelSelector, ...]] | None = None,
    disruption_budgets: tuple[DisruptionBudget, ...] = (),
) -> Snapshot:
    """``nodes`` in order, each bound pod on its node, the unbound pods pending (in order).

    A pod bound to a node not in ``nodes`` is a mistake in the test and raises ``ValueError``.
    """
    listed = list(nodes)
    by_node: dict[str, list[Pod]] = {n.name: [] for n in listed}
    pending: list[Pod] = []
    for p in pods:
        if not p.node_name:
            pending.append(p)
        elif p.node_name in by_node:
            by_node[p.node_name].append(p)
        else:
            raise ValueError(f"{p.key} is bound to {p.node_name}, which is not a node here")
    return Snapshot.of(
        [NodeInfo.build(n, tuple(by_node[n.name])) for n in listed],
        tuple(pending),
        generation,
        namespace_labels=namespace_labels,
        workload_selectors=workload_selectors,
        disruption_budgets=disruption_budgets,
    )


def state_of(*infos: NodeInfo) -> CycleState:
    """A fresh cycle state over a snapshot of ``infos``."""
    return CycleState(Snapshot.of(list(infos)))


# ---------------------------------------------------------------------- API objects


def container(
    name: str = "app",
    *,
    requests: Mapping[str, Any] | None = None,
    image: str = PAUSE_IMAGE,
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


def pod_manifest(
    name: str = "pod",
    *,
    namespace: str = "default",
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Iterable[Mapping[str, Any]] | None = None,
    init_containers: Iterable[Mapping[str, Any]] = (),
    node_name: str = "",
    phase: str | None = None,
    deleting: bool = False,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Pod as the API serves it: by default one container without requests, not bound.

    ``spec`` entries are merged into (and override) the spec built from the other arguments;
    ``phase`` defaults to Running when ``node_name`` is set, else Pending; ``deleting`` sets a
    deletion timestamp; ``uid`` defaults to ``uid-<name>``.
    """
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}" if uid is None else uid,
    }
    if labels is not None:
        metadata["labels"] = dict(labels)
    if deleting:
        metadata["deletionTimestamp"] = DELETION_TIMESTAMP
    body: dict[str, Any] = {
        "containers": [dict(c) for c in (containers if containers is not None else [container()])]
    }
    if init_containers:
        body["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        body["nodeName"] = node_name
    body.update(spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": body,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def api_pod(
    name: str = "pod",
    *,
    namespace: str = "default",
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Iterable[Mapping[str, Any]] | None = None,
    init_containers: Iterable[Mapping[str, Any]] = (),
    node_name: str = "",
    phase: str | None = None,
    deleting: bool = False,
    spec: Mapping[str, Any] | None = None,
) -> Pod:
    """``Pod.from_api`` of ``pod_manifest`` with the same arguments."""
    return Pod.from_api(
        pod_manifest(
            name,
            namespace=namespace,
            uid=uid,
            labels=labels,
            containers=containers,
            init_containers=init_containers,
            node_name=node_name,
            phase=phase,
            deleting=deleting,
            spec=spec,
        )
    )


def requests_pod(
    name: str = "pod", *requests: Mapping[str, Any], spec: Mapping[str, Any] | None = None
) -> Pod:
    """A pending API pod with one container (``c0``, ``c1``, ...) per ``requests`` mapping."""
    return api_pod(
        name,
        containers=[container(f"c{i}", requests=r) for i, r in enumerate(requests)],
        spec=spec,
    )


def node_manifest(
    name: str = "node",
    *,
    allocatable: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[Iterable[str], int]] = (),
) -> dict[str, Any]:
    """A Ready Node as the API serves it; ``allocatable`` defaults to 4 cpu, 8Gi and 110 pods.

    A given ``allocatable`` keeps ``pods: 110`` unless it names ``pods``; ``images`` are
    ``(names, size in bytes)`` pairs as ``status.images`` lists them.
    """
    alloc: dict[str, Any] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    if allocatable is not None:
        alloc = {"pods": "110", **allocatable}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
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


def api_node(
    name: str = "node",
    *,
    allocatable: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    images: Iterable[tuple[Iterable[str], int]] = (),
) -> Node:
    """``Node.from_api`` of ``node_manifest`` with the same arguments."""
    return Node.from_api(
        node_manifest(
            name,
            allocatable=allocatable,
            labels=labels,
            taints=taints,
            unschedulable=unschedulable,
            images=images,
        )
    )
