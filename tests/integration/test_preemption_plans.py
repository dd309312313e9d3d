"""Preemption and plans in concert, on two nodes of 4 cpu (the case found on a full cluster).

The layout, built deterministically (preferred node affinity, a directly bound pod):

* kwok-node-0: ``a`` (ReplicaSet, 1 cpu) and ``bare`` (no controller, 2 cpu, created last);
* kwok-node-1: ``b`` (ReplicaSet, 2 cpu);

then ``vip`` (3 cpu, high priority) arrives. Preemption finds one low-priority victim on each
node and upstream's tie-breakers (the latest start time) pick ``bare``, which an eviction deletes
for good. Yet two moves place everything and lose nothing: ``b`` to node 0 beside ``bare``, ``a``
to node 1 beside ``vip``. With opsche's defaults (``plansFirst``, ``avoidBareVictims``) a plan is
tried first and does exactly that, for every trigger; with plansFirst off the bare pod is never
the victim; with both off opsche preempts as kube-scheduler does and ``bare`` is lost.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from opsche_daemon.localcluster.cluster import LocalCluster
from tests.integration.plans import (
    FAST_TRIGGERS,
    bare_pod,
    cluster_api,
    container,
    metric_lines,
    module_cluster,
    scenario,
)
from tests.integration.waiting import Objects, running, wait_for_pods

NODE_0, NODE_1 = "kwok-node-0", "kwok-node-1"
HIGH = "opsche-test-high"


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    yield from module_cluster(tmp_path_factory, "preempt", 2, default_scheduler=False)


@pytest.fixture(scope="module")
async def api(two_nodes: tuple[LocalCluster, Path]) -> AsyncIterator[client.ApiClient]:
    async for api_client in cluster_api(two_nodes[0]):
        scheduling = client.SchedulingV1Api(api_client)
        await scheduling.create_priority_class(
            client.V1PriorityClass(metadata=client.V1ObjectMeta(name=HIGH), value=1000)
        )
        yield api_client
        await scheduling.delete_priority_class(HIGH)


async def replicaset_preferring(
    api: client.ApiClient, namespace: str, name: str, cpu: str, node: str
) -> None:
    """One replica requesting ``cpu``, preferring (not requiring) ``node``."""
    labels = {"app": name}
    term = client.V1PreferredSchedulingTerm(
        weight=100,
        preference=client.V1NodeSelectorTerm(
            match_expressions=[
                client.V1NodeSelectorRequirement(
                    key="kubernetes.io/hostname", operator="In", values=[node]
                )
            ]
        ),
    )
    spec = client.V1PodSpec(
        scheduler_name="opsche",
        containers=[container(cpu)],
        affinity=client.V1Affinity(
            node_affinity=client.V1NodeAffinity(
                preferred_during_scheduling_ignored_during_execution=[term]
            )
        ),
    )
    await client.AppsV1Api(api).create_namespaced_replica_set(
        namespace,
        client.V1ReplicaSet(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1ReplicaSetSpec(
                replicas=1,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels), spec=spec
                ),
            ),
        ),
    )


def by_app(pods: Objects, app: str) -> list[client.V1Pod]:
    return [p for p in pods.values() if (p.metadata.labels or {}).get("app") == app]


async def layout(api: client.ApiClient, namespace: str) -> Objects:
    """Build the module docstring's layout; return its three pods, all running."""
    core = client.CoreV1Api(api)
    # Preferred (soft) node affinity decides where ``a`` and ``b`` start; plans may still move
    # them, as the optimiser does not keep soft preferences.
    await replicaset_preferring(api, namespace, "a", "1", NODE_0)
    await wait_for_pods(api, namespace, lambda p: any(running(q) for q in by_app(p, "a")))
    await replicaset_preferring(api, namespace, "b", "2", NODE_1)
    pods = await wait_for_pods(api, namespace, lambda p: any(running(q) for q in by_app(p, "b")))
    # ``bare`` must start after ``b`` by upstream's clock (creation timestamps have 1 s
    # resolution), or the tie-break would not single it out.
    b_created = by_app(pods, "b")[0].metadata.creation_timestamp
    wait = b_created + datetime.timedelta(seconds=1.05) - datetime.datetime.now(datetime.UTC)
    await asyncio.sleep(max(0.0, wait.total_seconds()))  # at most 1.05 s: the clock, not an event
    await core.create_namespaced_pod(namespace, bare_pod("bare", "2", node_name=NODE_0))
    pods = await wait_for_pods(
        api, namespace, lambda p: len(p) == 3 and all(map(running, p.values()))
    )
    nodes = {
        (p.metadata.labels or {}).get("app", p.metadata.name): p.spec.node_name
        for p in pods.values()
    }
    assert nodes == {"a": NODE_0, "bare": NODE_0, "b": NODE_1}, nodes
    return pods


def vip() -> client.V1Pod:
    pod = bare_pod("vip", "3")
    pod.spec.priority_class_name = HIGH
    return pod


def preempted(pods: Objects) -> list[str]:
    return [
        p.metadata.name
        for p in pods.values()
        if any(
            c.type == "DisruptionTarget" and c.reason == "PreemptionByScheduler"
            for c in p.status.conditions or []
        )
    ]


async def run_case(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    namespace: str,
    trigger: str,
    preemption_yaml: str,
    settled: int,
) -> tuple[Objects, Objects, Objects, int]:
    """Layout, then ``vip``: the pods before, when vip runs, once ``settled`` pods all run, and
    how many preemptions were deferred."""
    cluster, _ = two_nodes
    config = tmp_path / "opsche.yaml"
    config.write_text(FAST_TRIGGERS + "  planTimeoutSeconds: 20\n" + preemption_yaml)
    args = ["--config", str(config), "--trigger", trigger]
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        before = await layout(api, namespace)
        await client.CoreV1Api(api).create_namespaced_pod(namespace, vip())
        after = await wait_for_pods(
            api,
            namespace,
            lambda p: "vip" in p and running(p["vip"]),
            within=90,
            what="vip running",
        )
        final = await wait_for_pods(
            api,
            namespace,
            lambda p: len(p) == settled and all(map(running, p.values())),
            within=60,
            what=f"{settled} pods running",
        )
        deferred = await metric_lines(
            daemon.port, 'opsche_preemption_deferrals_total{result="deferred"}', within=1
        )
        return before, after, final, len(deferred)


TRIGGERS = ("scheduling-failure", "periodic", "stable-queue")


@pytest.mark.parametrize("trigger", TRIGGERS)
async def test_plans_first_places_the_preemptor_with_two_moves_and_loses_nothing(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path, trigger: str
) -> None:
    namespace = f"pf-{''.join(w[0] for w in trigger.split('-'))}"
    before, after, final, deferred = await run_case(
        two_nodes, api, tmp_path, namespace, trigger, "", settled=4
    )
    assert deferred == 1, "preemption was deferred to a plan"
    assert after["bare"].metadata.uid == before["bare"].metadata.uid, "the bare pod survived"
    assert preempted(after) == []
    nodes = {
        (p.metadata.labels or {}).get("app", p.metadata.name): p.spec.node_name
        for p in final.values()
    }
    assert nodes == {"bare": NODE_0, "b": NODE_0, "vip": NODE_1, "a": NODE_1}
    moved = {n for n in before if n not in final}
    assert moved == {by_app(before, "a")[0].metadata.name, by_app(before, "b")[0].metadata.name}


async def test_without_plans_first_the_victim_is_the_pod_that_comes_back(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    before, after, final, deferred = await run_case(
        two_nodes,
        api,
        tmp_path,
        "pf-off",
        "periodic",  # a later plan places b's replacement: nothing fails again to trigger one
        "preemption: {plansFirst: false}\n",
        settled=4,
    )
    assert deferred == 0
    assert after["bare"].metadata.uid == before["bare"].metadata.uid
    assert after["vip"].spec.node_name == NODE_1
    victim = by_app(before, "b")[0].metadata.name
    assert victim not in after, "b, which comes back, was the victim"
    assert final["bare"].metadata.uid == before["bare"].metadata.uid


async def test_upstream_preemption_evicts_the_bare_pod(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    """Both options off: kube-scheduler's choice, and the bare pod is deleted for good."""
    yaml = "preemption: {plansFirst: false, avoidBareVictims: false}\n"
    _before, after, _final, deferred = await run_case(
        two_nodes, api, tmp_path, "upstream", "scheduling-failure", yaml, settled=3
    )
    assert deferred == 0
    assert "bare" not in after, "kube-scheduler's tie-break chose the bare pod: deleted for good"
