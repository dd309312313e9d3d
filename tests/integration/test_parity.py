"""Parity with kube-scheduler: the same pods, in the same order, on two identical clusters.

Cluster A runs the real kube-scheduler; cluster B runs opsche only. Nodes are made deliberately
different (capacity, zones, labels, a PreferNoSchedule taint) so that most decisions have a single
best node. Before each pod, opsche's own framework scores cluster A's state to learn whether the
best score is tied: where it is not, both schedulers must pick that node; where it is, each must
pick one of the tied nodes, and if they picked different ones cluster B is brought back in line
(the pod re-created bound to A's node) so the next decision starts from the same state.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from opsche_daemon.cache import Cache
from opsche_daemon.framework.interface import CycleState
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.kube.intake import initial_sync
from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import running_opsche
from opsche_daemon.localcluster.versions import load_versions
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget
from tests.integration.waiting import Objects, running, wait_for_pods

NODES = 8
NAMESPACE = "parity"
APPS = ("web", "api", "db")


@dataclass
class Twin:
    layout: Layout
    api: client.ApiClient
    scheduler: str


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Layout, Layout, Path]]:
    """Cluster A with kube-scheduler, cluster B with opsche (and no kube-scheduler)."""
    root = tmp_path_factory.mktemp("parity")
    versions = load_versions()
    a = LocalCluster(root / "a", versions, out=lambda line: print(line, flush=True))
    b = LocalCluster(root / "b", versions, out=lambda line: print(line, flush=True))
    try:
        layout_a = a.up(ClusterSpec(nodes=NODES))
        layout_b = b.up(ClusterSpec(nodes=NODES, default_scheduler=False))
        log = root / "opsche.log"
        with running_opsche(layout_b.kubeconfig, log, ["--scheduler-name", "default-scheduler"]):
            yield layout_a, layout_b, log
    finally:
        a.down()
        b.down()


async def _client(layout: Layout) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(layout.kubeconfig), client_configuration=configuration
    )
    return client.ApiClient(configuration)


@pytest.fixture(scope="module")
async def twins(layouts: tuple[Layout, Layout, Path]) -> AsyncIterator[tuple[Twin, Twin]]:
    layout_a, layout_b, _ = layouts
    api_a, api_b = await _client(layout_a), await _client(layout_b)
    try:
        yield Twin(layout_a, api_a, "default-scheduler"), Twin(layout_b, api_b, "default-scheduler")
    finally:
        await api_a.close()
        await api_b.close()


def node_patch(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Status (capacity) and metadata/spec patches that make node ``index`` unlike the others."""
    cpu = str(4 + index)
    memory = f"{8 + 4 * index}Gi"
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    labels = {"topology.kubernetes.io/zone": f"zone-{index % 3}"}
    if index % 2 == 0:
        labels["disk"] = "ssd"
    spec: dict[str, Any] = {}
    if index == 5:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"}]
    return (
        {"status": {"capacity": resources, "allocatable": resources}},
        {"metadata": {"labels": labels}, "spec": spec},
    )


async def prepare(twin: Twin) -> None:
    core = client.CoreV1Api(twin.api)
    for index in range(NODES):
        status, meta = node_patch(index)
        name = f"kwok-node-{index}"
        await core.patch_node_status(name, status)
        await core.patch_node(name, meta)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    for app in APPS:
        await core.create_namespaced_service(
            NAMESPACE,
            client.V1Service(
                metadata=client.V1ObjectMeta(name=app),
                spec=client.V1ServiceSpec(
                    selector={"app": app}, ports=[client.V1ServicePort(port=80)]
                ),
            ),
        )


def pod_body(index: int, scheduler: str, node_name: str | None = None) -> dict[str, Any]:
    """The index-th pod of the workload: varied sizes, apps, preferences and tolerations."""
    app = APPS[index % len(APPS)]
    cpu = ("250m", "500m", "1", "1500m", "750m")[index % 5]
    memory = ("256Mi", "1Gi", "2Gi", "512Mi")[index % 4]
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    affinity: dict[str, Any] = {}
    if index % 4 == 1:
        affinity["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                }
            ]
        }
    if index % 5 == 2:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": app}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    if index % 6 == 3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{index:03d}", "labels": {"app": app}},
        "spec": spec,
    }


class _Sink:
    """Feeds a Cache from initial_sync, the way the daemon's scheduler does."""

    def __init__(self) -> None:
        self.cache = Cache()

    def pod_changed(self, pod: Pod) -> None:
        self.cache.upsert_pod(pod)

    def pod_deleted(self, pod: Pod) -> None:
        self.cache.remove_pod(pod.key)

    def node_changed(self, node: Node) -> None:
        self.cache.upsert_node(node)

    def node_deleted(self, name: str) -> None:
        self.cache.remove_node(name)

    def namespace_changed(self, name: str, labels: Mapping[str, str] | None) -> None:
        if labels is not None:
            self.cache.upsert_namespace(name, labels)

    def workload_changed(
        self, kind: str, namespace: str, name: str, selector: LabelSelector | None
    ) -> None:
        self.cache.upsert_workload(kind, namespace, name, selector)

    def budget_changed(self, budget: DisruptionBudget, deleted: bool = False) -> None:
        self.cache.upsert_budget(budget)


async def best_nodes(
    api: client.ApiClient, body: dict[str, Any]
) -> tuple[set[str], dict[str, int]]:
    """Nodes with the highest total score under opsche's framework, on the cluster's state now."""
    sink = _Sink()
    await initial_sync(api, sink)
    framework = build_framework()
    pod = Pod.from_api({**body, "metadata": {**body["metadata"], "namespace": NAMESPACE}})
    state = CycleState(sink.cache.snapshot())
    feasible, _ = framework.find_feasible(state, pod)
    scores = {s.name: s.score for s in framework.run_scores(state, pod, feasible)}
    top = max(scores.values())
    return {n for n, s in scores.items() if s == top}, scores


def absent(name: str, pods: Objects) -> bool:
    """The pod ``name`` is gone (a ``wait_for_pods`` condition)."""
    return name not in pods


async def place(twin: Twin, body: dict[str, Any]) -> str:
    core = client.CoreV1Api(twin.api)
    name = body["metadata"]["name"]
    # The client sends a manifest dict as is; its stub names only V1Pod.
    await core.create_namespaced_pod(NAMESPACE, body)  # type: ignore[arg-type]
    pods = await wait_for_pods(
        twin.api,
        NAMESPACE,
        lambda p: name in p and running(p[name]),
        within=60,
        what=f"{name} running",
    )
    return str(pods[name].spec.node_name)


async def test_opsche_places_pods_where_kube_scheduler_does(
    twins: tuple[Twin, Twin], layouts: tuple[Layout, Layout, Path]
) -> None:
    a, b = twins
    await prepare(a)
    await prepare(b)
    agreed, tied, disagreements = 0, 0, []
    for index in range(60):
        body_a = pod_body(index, a.scheduler)
        best, scores = await best_nodes(a.api, body_a)
        node_a = await place(a, body_a)
        node_b = await place(b, pod_body(index, b.scheduler))
        if len(best) == 1:
            if node_a == node_b:
                agreed += 1
            else:
                disagreements.append(
                    {"pod": index, "kube-scheduler": node_a, "opsche": node_b, "scores": scores}
                )
            if node_a not in best:
                disagreements.append(
                    {
                        "pod": index,
                        "kube-scheduler chose outside opsche's best": node_a,
                        "scores": scores,
                    }
                )
        else:
            tied += 1
            assert node_b in best, f"opsche chose {node_b} outside the tied best {best}"
            if node_a not in best:
                disagreements.append(
                    {"pod": index, "kube-scheduler": node_a, "best": sorted(best), "scores": scores}
                )
        if node_a != node_b:
            # Bring B in line so the next decision starts from the same state.
            core = client.CoreV1Api(b.api)
            name = body_a["metadata"]["name"]
            await core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
            await wait_for_pods(b.api, NAMESPACE, partial(absent, name), what=f"{name} gone")
            await place(b, pod_body(index, b.scheduler, node_name=node_a))
    print(f"parity: {agreed} agreed on a unique best node, {tied} tied")
    assert not disagreements, json.dumps(disagreements, indent=1)
    assert agreed >= 40, "the workload must produce mostly untied decisions to mean something"
