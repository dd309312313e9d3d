"""The local control plane is real: nodes, scheduling, the Eviction API and PDBs act as upstream."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from opsche_daemon.localcluster.cluster import MANAGED_LABEL
from tests.integration.conftest import NODE_CPU, NODE_MEMORY, NODES
from tests.integration.waiting import running, wait_for, wait_for_pods


def replicaset(name: str, replicas: int, cpu: str = "100m") -> client.V1ReplicaSet:
    labels = {"app": name}
    container = client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
    )
    return client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ReplicaSetSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[container]),
            ),
        ),
    )


async def test_nodes_are_ready_with_the_requested_capacity(api: client.ApiClient) -> None:
    nodes = (await client.CoreV1Api(api).list_node(label_selector=f"{MANAGED_LABEL}=true")).items
    assert len(nodes) == NODES
    for node in nodes:
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True", node.metadata.name
        assert node.status.allocatable["cpu"] == NODE_CPU
        assert node.status.allocatable["memory"] == NODE_MEMORY
        assert node.status.capacity["pods"] == "110"


async def test_the_api_server_reports_the_pinned_release(api: client.ApiClient) -> None:
    from opsche_daemon.localcluster.versions import load_versions

    info = await client.VersionApi(api).get_code()
    assert info.git_version == load_versions().kubernetes


async def test_replicaset_pods_are_scheduled_by_kube_scheduler_and_run(
    api: client.ApiClient, namespace: str
) -> None:
    await client.AppsV1Api(api).create_namespaced_replica_set(namespace, replicaset("web", 6))
    pods = await wait_for_pods(
        api,
        namespace,
        lambda pods: len(pods) == 6 and all(running(p) for p in pods.values()),
        what="6 running pods",
    )
    core = client.CoreV1Api(api)
    events = (await core.list_namespaced_event(namespace)).items
    scheduled = {e.involved_object.name for e in events if e.reason == "Scheduled"}
    assert scheduled == set(pods), "every pod was bound by kube-scheduler"
    sources = {
        e.reporting_component or e.source.component for e in events if e.reason == "Scheduled"
    }
    assert sources == {"default-scheduler"}
    # LeastAllocated spreads identical pods: 6 small pods on 4 empty nodes use every node.
    assert len({p.spec.node_name for p in pods.values()}) == NODES


async def test_eviction_api_evicts_and_the_replicaset_replaces_the_pod(
    api: client.ApiClient, namespace: str
) -> None:
    await client.AppsV1Api(api).create_namespaced_replica_set(namespace, replicaset("evictee", 1))
    pods = await wait_for_pods(
        api, namespace, lambda p: len(p) == 1 and all(map(running, p.values()))
    )
    (victim,) = pods
    await client.CoreV1Api(api).create_namespaced_pod_eviction(
        victim,
        namespace,
        client.V1Eviction(metadata=client.V1ObjectMeta(name=victim, namespace=namespace)),
    )
    after = await wait_for_pods(
        api,
        namespace,
        lambda p: victim not in p and len(p) == 1 and all(map(running, p.values())),
        what="the evicted pod gone and a replacement running",
    )
    assert victim not in after


async def test_a_pod_disruption_budget_makes_eviction_fail_with_429(
    api: client.ApiClient, namespace: str
) -> None:
    await client.AppsV1Api(api).create_namespaced_replica_set(namespace, replicaset("guarded", 2))
    pods = await wait_for_pods(
        api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
    )
    policy = client.PolicyV1Api(api)
    await policy.create_namespaced_pod_disruption_budget(
        namespace,
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="guarded"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=2, selector=client.V1LabelSelector(match_labels={"app": "guarded"})
            ),
        ),
    )

    # The disruption controller must have computed the budget; until then the API server refuses
    # evictions for another reason (no observed status), which would prove nothing.
    def observed(pdbs: dict[str, client.V1PodDisruptionBudget]) -> bool:
        pdb = pdbs.get("guarded")
        return bool(
            pdb
            and pdb.status
            and pdb.status.observed_generation == pdb.metadata.generation
            and pdb.status.current_healthy == 2
        )

    await wait_for(
        policy.list_namespaced_pod_disruption_budget,
        namespace,
        observed,
        what="the disruption controller to observe the PDB",
    )
    victim = next(iter(pods))
    with pytest.raises(ApiException) as refused:
        await client.CoreV1Api(api).create_namespaced_pod_eviction(
            victim,
            namespace,
            client.V1Eviction(metadata=client.V1ObjectMeta(name=victim, namespace=namespace)),
        )
    assert refused.value.status == 429
    # The stub types the body as bytes; ApiClient decodes it to str before it raises.
    assert "disruption budget" in str(refused.value.body)
    still = await client.CoreV1Api(api).read_namespaced_pod(victim, namespace)
    assert still.metadata.deletion_timestamp is None
