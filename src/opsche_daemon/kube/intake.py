"""Cluster events into the scheduler: an initial LIST, then kopf event handlers.

Why both: kopf watches robustly (re-lists on 410 Gone, reconnects when the API server restarts,
keeps per-object order) but does not say when its first listing is complete, and a scheduler must
not place pods before it has seen every node and pod (upstream ``WaitForCacheSync``). So opsche
LISTs nodes and pods itself first, then hands watching to kopf; kopf's own initial listing simply
re-delivers objects the cache already holds, which is idempotent.

Only ``@kopf.on.event`` handlers are used: they keep no state on the objects, so opsche never
patches the thousands of pods it merely observes. Handlers are coroutines on purpose: kopf runs
synchronous handlers in a thread pool, and the cache and queue are single-threaded by design.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, cast

import kopf
from kubernetes_asyncio import client

from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget

__all__ = [
    "WORKLOAD_KINDS",
    "IntakeSink",
    "build_registry",
    "disruption_budget",
    "initial_sync",
    "list_raw",
    "workload_selector",
]

WORKLOAD_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")
WORKLOADS = (
    ("", "v1", "services", "Service"),
    ("", "v1", "replicationcontrollers", "ReplicationController"),
    ("apps", "v1", "replicasets", "ReplicaSet"),
    ("apps", "v1", "statefulsets", "StatefulSet"),
)


class IntakeSink(Protocol):
    """What is done with each observed change (``scheduler.events.EventHandlers``)."""

    def pod_changed(self, pod: Pod) -> None:
        """A pod was added or modified."""

    def pod_deleted(self, pod: Pod) -> None:
        """A pod was deleted."""

    def node_changed(self, node: Node) -> None:
        """A node was added or modified."""

    def node_deleted(self, name: str) -> None:
        """A node was deleted."""

    def namespace_changed(self, name: str, labels: Mapping[str, str] | None) -> None:
        """A namespace was added/modified (labels) or deleted (None)."""

    def workload_changed(
        self, kind: str, namespace: str, name: str, selector: LabelSelector | None
    ) -> None:
        """A workload's selector was added/modified, or it was deleted (None)."""

    def budget_changed(self, budget: DisruptionBudget, deleted: bool = False) -> None:
        """A PodDisruptionBudget was added, modified or deleted."""


def workload_selector(kind: str, body: Mapping[str, Any]) -> LabelSelector | None:
    """The selector a workload uses to pick its pods (Services and RCs use plain label maps)."""
    spec = body.get("spec") or {}
    if kind in ("Service", "ReplicationController"):
        labels = spec.get("selector")
        return LabelSelector.parse({"matchLabels": labels}) if labels else None
    return LabelSelector.parse(spec.get("selector"))


async def list_raw(call: Callable[..., Awaitable[Any]]) -> list[dict[str, Any]]:
    """A LIST as raw JSON: the generated models would cost seconds on thousands of pods."""
    response: Any = await call(_preload_content=False)
    data = json.loads(await response.read())
    items: list[dict[str, Any]] = data.get("items") or []
    return items


async def initial_sync(
    api: client.ApiClient, sink: IntakeSink, *, keep_raw: bool = True
) -> tuple[int, int]:
    """LIST nodes, namespaces, workloads, budgets and pods into the sink; returns (nodes, pods)."""
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    policy = client.PolicyV1Api(api)
    nodes = await list_raw(core.list_node)
    for raw in nodes:
        sink.node_changed(Node.from_api(raw))
    for raw in await list_raw(core.list_namespace):
        meta = raw.get("metadata") or {}
        sink.namespace_changed(str(meta.get("name")), meta.get("labels") or {})
    lists = {
        "Service": core.list_service_for_all_namespaces,
        "ReplicationController": core.list_replication_controller_for_all_namespaces,
        "ReplicaSet": apps.list_replica_set_for_all_namespaces,
        "StatefulSet": apps.list_stateful_set_for_all_namespaces,
    }
    for kind, call in lists.items():
        for raw in await list_raw(call):
            meta = raw.get("metadata") or {}
            sink.workload_changed(
                kind,
                str(meta.get("namespace")),
                str(meta.get("name")),
                workload_selector(kind, raw),
            )
    for raw in await list_raw(policy.list_pod_disruption_budget_for_all_namespaces):
        sink.budget_changed(disruption_budget(raw))
    pods = await list_raw(core.list_pod_for_all_namespaces)
    for raw in pods:
        sink.pod_changed(Pod.from_api(raw, keep_raw=keep_raw))
    return len(nodes), len(pods)


def disruption_budget(raw: Mapping[str, Any]) -> DisruptionBudget:
    """A PodDisruptionBudget's selector and current ``status.disruptionsAllowed``."""
    meta = raw.get("metadata") or {}
    return DisruptionBudget(
        namespace=str(meta.get("namespace")),
        name=str(meta.get("name")),
        selector=LabelSelector.parse((raw.get("spec") or {}).get("selector")),
        disruptions_allowed=int((raw.get("status") or {}).get("disruptionsAllowed") or 0),
    )


class NoDiffBase(kopf.DiffBaseStorage):
    """A diff-base store that keeps nothing.

    kopf deep-copies every object on every event to compute an "essence" for change detection,
    which only ``on.update``/``on.field`` handlers use. opsche has only ``on.event`` handlers, and
    that copy was a third of kopf's cost per event in a 2000-pod burst, so it is skipped.
    """

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        """An empty essence: nothing to compare."""
        del body, extra_fields
        return cast(kopf.BodyEssence, {})

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        """No stored essence."""
        del body
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        """Store nothing (and so never patch the object)."""
        del body, patch, essence


def build_registry(sink: IntakeSink, *, keep_raw: bool = True) -> kopf.OperatorRegistry:
    """A kopf registry with event handlers for every kind the scheduler needs.

    ``keep_raw``: keep each pod's API object (scheduler extenders are sent it).
    """
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # kopf must not post its own k8s Events
        settings.scanning.disabled = True  # we name every resource; no CRD discovery needed
        settings.persistence.diffbase_storage = NoDiffBase()
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.networking.error_backoffs = [0.5, 1, 2, 5, 10]
        logging.getLogger("kopf").setLevel(logging.WARNING)

    @kopf.on.login(registry=registry)
    async def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # A custom registry gets no default login handlers. The daemon points $KUBECONFIG at the
        # same file its own client uses; inside a cluster the service account is used.
        info: kopf.ConnectionInfo | None = kopf.login_with_kubeconfig(**kwargs)
        return info or kopf.login_with_service_account(**kwargs)

    @kopf.on.event("v1", "pods", registry=registry)
    async def pods(type: str | None, body: kopf.Body, **_: Any) -> None:
        pod = Pod.from_api(body, keep_raw=keep_raw)
        if type == "DELETED":
            sink.pod_deleted(pod)
        else:
            sink.pod_changed(pod)

    @kopf.on.event("v1", "nodes", registry=registry)
    async def nodes(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            sink.node_deleted(str(body.get("metadata", {}).get("name")))
        else:
            sink.node_changed(Node.from_api(body))

    @kopf.on.event("v1", "namespaces", registry=registry)
    async def namespaces(type: str | None, body: kopf.Body, **_: Any) -> None:
        meta = body.get("metadata") or {}
        labels = None if type == "DELETED" else dict(meta.get("labels") or {})
        sink.namespace_changed(str(meta.get("name")), labels)

    @kopf.on.event("policy", "v1", "poddisruptionbudgets", registry=registry)
    async def budgets(type: str | None, body: kopf.Body, **_: Any) -> None:
        sink.budget_changed(disruption_budget(body), deleted=type == "DELETED")

    for group, version, plural, kind in WORKLOADS:

        async def handler(
            type: str | None,
            body: kopf.Body,
            _kind: str = kind,
            **_: Any,
        ) -> None:
            meta = body.get("metadata") or {}
            selector = None if type == "DELETED" else workload_selector(_kind, body)
            sink.workload_changed(
                _kind, str(meta.get("namespace")), str(meta.get("name")), selector
            )

        target = (group, version, plural) if group else (version, plural)
        kopf.on.event(*target, registry=registry, id=f"{kind}-selectors")(handler)
    return registry
