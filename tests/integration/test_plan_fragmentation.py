"""Fragmentation across four nodes: kube-scheduler leaves pods pending, opsche places them all.

Four nodes of 4 cpu. Four 2-cpu replicas spread one per node (both schedulers spread them), so
2 cpu is free on every node, 8 in all. Two 4-cpu pods then fit nowhere. Preemption cannot help
(equal priority), so kube-scheduler reports them unschedulable and leaves them pending; opsche's
plan pairs the small replicas, freeing two nodes with the fewest moves (2), for every trigger
variant, with default preemption on and off. Both run on the same real cluster; kube-scheduler
is the one built from the pinned Kubernetes sources.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from opsche_daemon.localcluster.cluster import LocalCluster
from tests.integration.plans import (
    Variant,
    cluster_api,
    create_namespace,
    create_replicaset,
    delete_namespace,
    metric_lines,
    module_cluster,
    scenario,
    variants,
)
from tests.integration.waiting import Objects, running, wait_for, wait_for_pods


@pytest.fixture(scope="module")
def four_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    yield from module_cluster(tmp_path_factory, "fragmented", 4, default_scheduler=True)


@pytest.fixture(scope="module")
async def api(four_nodes: tuple[LocalCluster, Path]) -> AsyncIterator[client.ApiClient]:
    async for api_client in cluster_api(four_nodes[0]):
        yield api_client


async def fragment(api: client.ApiClient, namespace: str, scheduler_name: str) -> Objects:
    """Four 2-cpu replicas, one per node, then a ReplicaSet of two 4-cpu pods; the replicas."""
    await create_replicaset(api, namespace, "small", 4, "2", scheduler_name)
    before = await wait_for_pods(
        api, namespace, lambda p: len(p) == 4 and all(map(running, p.values()))
    )
    assert len({p.spec.node_name for p in before.values()}) == 4, "one replica per node"
    await create_replicaset(api, namespace, "big", 2, "4", scheduler_name)
    return before


def unschedulable(pod: client.V1Pod) -> bool:
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        for c in pod.status.conditions or []
    )


async def test_kube_scheduler_leaves_the_big_pods_pending(
    four_nodes: tuple[LocalCluster, Path], api: client.ApiClient
) -> None:
    """The baseline: the real kube-scheduler, with its default preemption, cannot place them."""
    namespace = "fragmented-kube-scheduler"
    core = client.CoreV1Api(api)
    await create_namespace(core, namespace)
    before = await fragment(api, namespace, "default-scheduler")
    pods = await wait_for_pods(
        api,
        namespace,
        lambda p: sum(1 for q in p.values() if unschedulable(q)) == 2,
        what="kube-scheduler to report both 4-cpu pods unschedulable",
    )
    assert all(not q.spec.node_name for q in pods.values() if q.metadata.labels["app"] == "big")
    assert {n: p.metadata.uid for n, p in before.items()} == {
        n: p.metadata.uid for n, p in pods.items() if n in before
    }, "kube-scheduler moved nothing"
    events = await wait_for(
        core.list_namespaced_event,
        namespace,
        lambda evs: any(e.reason == "FailedScheduling" for e in evs.values()),
        what="a FailedScheduling event",
    )
    message = next(e.message for e in events.values() if e.reason == "FailedScheduling")
    assert "0/4 nodes are available: 4 Insufficient cpu" in message
    assert "No preemption victims found" in message, message
    await delete_namespace(api, namespace)


@variants
async def test_opsche_places_every_pod_with_the_fewest_moves(
    four_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    cluster, config_file = four_nodes
    namespace = f"fragmented-{variant.short}"
    args = variant.args(config_file)
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        before = await fragment(api, namespace, "opsche")
        after = await wait_for_pods(
            api,
            namespace,
            lambda p: len(p) == 6 and all(map(running, p.values())),
            within=90,
            what="all six pods running",
        )
        replaced = [n for n in before if n not in after]
        assert len(replaced) == 2, f"the fewest moves is 2, got {replaced}"
        per_node: dict[str, int] = {}
        for pod in after.values():
            cpu = 4 if pod.metadata.labels["app"] == "big" else 2
            per_node[pod.spec.node_name] = per_node.get(pod.spec.node_name, 0) + cpu
        assert all(used <= 4 for used in per_node.values()), per_node
        assert await metric_lines(daemon.port, 'opsche_plan_outcomes_total{outcome="converged"}')
