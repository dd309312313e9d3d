"""Plans enforced on the real cluster: the paper's Figure 1 for every trigger, blocking or not.

Two nodes of 4 cpu; a ReplicaSet of two 2-cpu pods lands one per node (LeastAllocated spreads
them), leaving 2 cpu free on each; then a 4-cpu pod arrives. No node fits it, but moving one
replica next to the other frees a whole node. kube-scheduler would leave it pending forever;
opsche's plan moves exactly one pod and places it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.daemon_process import running_opsche
from opsche_daemon.localcluster.versions import load_versions
from tests.integration.waiting import running, wait_for, wait_for_pods

VARIANTS = [
    ("scheduling-failure", False),
    ("scheduling-failure", True),
    ("periodic", False),
    ("periodic", True),
    ("stable-queue", False),
    ("stable-queue", True),
]
# The paper's ablation: every trigger variant with default preemption on and off.
PREEMPTION = [True, False]


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    root = tmp_path_factory.mktemp("plans")
    cluster = LocalCluster(
        root / "cluster", load_versions(), out=lambda line: print(line, flush=True)
    )
    try:
        cluster.up(ClusterSpec(nodes=2, node_cpu="4", node_memory="16Gi", default_scheduler=False))
        config_file = root / "opsche.yaml"
        config_file.write_text(
            "optimiser:\n"
            "  periodSeconds: 2\n"
            "  stableWindowSeconds: 1\n"
            "  planTimeoutSeconds: 20\n"
            "  solveTimeLimitSeconds: 1\n"
        )
        yield cluster, config_file
    finally:
        cluster.down()


@pytest.fixture(scope="module")
async def api(two_nodes: tuple[LocalCluster, Path]) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(two_nodes[0].kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api_client:
        yield api_client


async def metric_lines(port: int, prefix: str, within: float = 30.0) -> list[str]:
    """Lines of /metrics starting with ``prefix`` and a value > 0, once there are any."""
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
        lines = [
            line for line in text.splitlines()
            if line.startswith(prefix) and float(line.split()[-1]) > 0
        ]  # fmt: skip
        if lines:
            return lines
        await asyncio.sleep(0.2)  # a metrics endpoint has no watch: poll it, bounded
    return []


async def create_replicaset(
    api: client.ApiClient, namespace: str, name: str, replicas: int, cpu: str
) -> None:
    """A ReplicaSet of ``replicas`` opsche pods requesting ``cpu``, labelled ``app: name``."""
    labels = {"app": name}
    await client.AppsV1Api(api).create_namespaced_replica_set(
        namespace,
        client.V1ReplicaSet(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1ReplicaSetSpec(
                replicas=replicas,
                selector=client.V1LabelSelector(match_labels=labels),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels=labels),
                    spec=client.V1PodSpec(scheduler_name="opsche", containers=[container(cpu)]),
                ),
            ),
        ),
    )


def container(cpu: str) -> client.V1Container:
    return client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
    )


@pytest.mark.parametrize("preemption", PREEMPTION, ids=["preemption", "no-preemption"])
@pytest.mark.parametrize(("trigger", "blocking"), VARIANTS)
async def test_figure_1_one_move_places_the_pending_pod(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    trigger: str,
    blocking: bool,
    preemption: bool,
) -> None:
    cluster, config_file = two_nodes
    namespace = f"fig1-{trigger}-{'b' if blocking else 'nb'}-{'p' if preemption else 'np'}"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    args = ["--config", str(config_file), "--trigger", trigger]
    if blocking:
        args.append("--blocking")
    if not preemption:
        args.append("--no-preemption")
    with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args) as daemon:
        await create_replicaset(api, namespace, "small", 2, "2")
        before = await wait_for_pods(
            api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
        )
        assert len({p.spec.node_name for p in before.values()}) == 2, "one replica per node"
        await core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="big"),
                spec=client.V1PodSpec(scheduler_name="opsche", containers=[container("4")]),
            ),
        )
        after = await wait_for_pods(
            api,
            namespace,
            lambda p: (
                "big" in p
                and running(p["big"])
                and sum(1 for n, q in p.items() if n != "big" and running(q)) == 2
            ),
            within=90,
            what="the big pod running and both replicas running",
        )
        small = [p for n, p in after.items() if n != "big"]
        assert {p.spec.node_name for p in small} == {
            n for n in ("kwok-node-0", "kwok-node-1") if n != after["big"].spec.node_name
        }, "both replicas share the node the big pod does not use"
        moved = [n for n in before if n not in after]
        assert len(moved) == 1, f"exactly one replica was moved (replaced): {moved}"
        events = await wait_for(
            core.list_namespaced_event,
            namespace,
            lambda evs: any(e.reason == "OpscheMoved" for e in evs.values()),
            what="an OpscheMoved event",
        )
        moved_events = [e for e in events.values() if e.reason == "OpscheMoved"]
        assert [e.involved_object.name for e in moved_events] == moved
        assert "moved by plan" in moved_events[0].message
        metrics = await metric_lines(daemon.port, 'opsche_plan_outcomes_total{outcome="converged"}')
        assert metrics, "the plan converged"
        assert daemon.process.poll() is None, daemon.log_tail()
    await core.delete_namespace(namespace)
    # Two small nodes: the next variant must not start while these pods still hold them.
    await wait_for(
        core.list_namespace,
        None,
        lambda namespaces: namespace not in namespaces,
        within=60,
        what=f"namespace {namespace} to be deleted",
    )


async def _cleanup(core: client.CoreV1Api, namespace: str) -> None:
    await core.delete_namespace(namespace)
    await wait_for(
        core.list_namespace,
        None,
        lambda namespaces: namespace not in namespaces,
        within=60,
        what=f"namespace {namespace} to be deleted",
    )


async def test_pods_without_a_controller_are_never_moved(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    """Figure 1 with bare pods: the only fix would move one, so there is no plan at all."""
    cluster, config_file = two_nodes
    namespace = "bare-pods"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    args = ["--config", str(config_file), "--trigger", "stable-queue"]
    with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args) as daemon:
        for i in range(2):
            await core.create_namespaced_pod(
                namespace,
                client.V1Pod(
                    metadata=client.V1ObjectMeta(name=f"bare-{i}"),
                    spec=client.V1PodSpec(scheduler_name="opsche", containers=[container("2")]),
                ),
            )
        before = await wait_for_pods(
            api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
        )
        await core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="big"),
                spec=client.V1PodSpec(scheduler_name="opsche", containers=[container("4")]),
            ),
        )
        # The stable-queue trigger solves once the pending set is stable; that run must end
        # without a plan (nothing may be moved).
        runs = await metric_lines(daemon.port, 'opsche_solver_runs_total{result="empty"')
        assert runs, daemon.log_tail()
        pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(namespace)).items}
        for name, pod in before.items():
            assert pods[name].metadata.uid == pod.metadata.uid, f"{name} was replaced"
            assert pods[name].spec.node_name == pod.spec.node_name
        assert not pods["big"].spec.node_name
        assert not await metric_lines(daemon.port, "opsche_plan_activations_total", within=0.5)
    await _cleanup(core, namespace)


async def test_a_plan_that_cannot_converge_in_time_releases_every_held_pod(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    """A plan timeout shorter than a replacement takes to appear: the run times out and
    tears down, the held-pod gauge returns to 0, and scheduling carries on."""
    cluster, _ = two_nodes
    namespace = "timeout"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    config_file = tmp_path / "fast-timeout.yaml"
    config_file.write_text("optimiser:\n  planTimeoutSeconds: 0.3\n  solveTimeLimitSeconds: 1\n")
    args = ["--config", str(config_file), "--trigger", "scheduling-failure"]
    with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args) as daemon:
        await create_replicaset(api, namespace, "small", 2, "2")
        await wait_for_pods(api, namespace, lambda p: len(p) == 2 and all(map(running, p.values())))
        await core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="big"),
                spec=client.V1PodSpec(scheduler_name="opsche", containers=[container("4")]),
            ),
        )
        timed_out = await metric_lines(
            daemon.port, 'opsche_plan_outcomes_total{outcome="timed_out"}'
        )
        assert timed_out, daemon.log_tail()
        held = await asyncio.to_thread(
            lambda: (
                urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics").read().decode()
            )
        )
        assert "opsche_plan_pods_held 0.0" in held
        # Released, the replica's replacement is scheduled normally (wherever it fits).
        await wait_for_pods(
            api,
            namespace,
            lambda p: sum(1 for n, q in p.items() if n != "big" and running(q)) == 2,
            within=60,
            what="both replicas running again after the teardown",
        )
    await _cleanup(core, namespace)


async def test_fragmentation_across_four_nodes_is_repaired_with_the_fewest_moves(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    """Four nodes with 2 of 4 cpu used each: two 4-cpu pods fit nowhere (kube-scheduler would
    leave them pending forever); pairing the small replicas frees two nodes with 2 moves."""
    cluster, config_file = two_nodes
    spec = ClusterSpec(nodes=4, node_cpu="4", node_memory="16Gi", default_scheduler=False)
    await asyncio.to_thread(cluster.up, spec)
    namespace = "fragmented"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    args = ["--config", str(config_file), "--trigger", "stable-queue"]
    try:
        with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args) as daemon:
            for name, replicas, cpu in (("small", 4, "2"), ("big", 2, "4")):
                await create_replicaset(api, namespace, name, replicas, cpu)
                if name == "small":
                    before = await wait_for_pods(
                        api, namespace, lambda p: len(p) == 4 and all(map(running, p.values()))
                    )
                    assert len({p.spec.node_name for p in before.values()}) == 4
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
            assert daemon.process.poll() is None, daemon.log_tail()
        await _cleanup(core, namespace)
    finally:
        await asyncio.to_thread(
            cluster.up,
            ClusterSpec(nodes=2, node_cpu="4", node_memory="16Gi", default_scheduler=False),
        )


async def test_a_burst_during_enforcement_never_overcommits_a_node(
    two_nodes: tuple[LocalCluster, Path], api: client.ApiClient, tmp_path: Path
) -> None:
    """Figure 1 with a burst of ten unrelated 100m pods arriving as the plan is computed and
    enforced. A watch checks every node's bound requests against its capacity on every pod
    event, not only at the end. Everything fits exactly (2 x 4 cpu = 4 + 2 x 1.5 + 10 x 0.1),
    so all thirteen pods must end up running, whatever the burst did meanwhile.
    """
    cluster, config_file = two_nodes
    namespace = "burst"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    capacity = {"kwok-node-0": 4000, "kwok-node-1": 4000}
    violations: list[str] = []
    checks = [0]

    def cpu_of(pod: client.V1Pod) -> int:
        request = pod.spec.containers[0].resources.requests["cpu"]
        return int(request[:-1]) if request.endswith("m") else int(request) * 1000

    def never_overcommitted(pods: dict[str, client.V1Pod]) -> bool:
        checks[0] += 1
        used: dict[str, int] = {}
        for pod in pods.values():
            if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed"):
                used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + cpu_of(pod)
        for node, cpu in used.items():
            if cpu > capacity[node]:
                violations.append(f"{node}: {cpu}m > {capacity[node]}m")
        return False  # keep watching until cancelled

    watcher = asyncio.create_task(
        wait_for_pods(api, namespace, never_overcommitted, within=300, what="(watching)")
    )
    args = ["--config", str(config_file), "--trigger", "scheduling-failure"]
    try:
        with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args) as daemon:
            await create_replicaset(api, namespace, "small", 2, "1500m")
            await wait_for_pods(
                api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
            )
            await core.create_namespaced_pod(
                namespace,
                client.V1Pod(
                    metadata=client.V1ObjectMeta(name="big"),
                    spec=client.V1PodSpec(scheduler_name="opsche", containers=[container("4")]),
                ),
            )
            await create_replicaset(api, namespace, "burst", 10, "100m")
            await wait_for_pods(
                api,
                namespace,
                lambda p: len(p) == 13 and all(map(running, p.values())),
                within=120,
                what="the big pod, both replicas and the burst running",
            )
            assert await metric_lines(daemon.port, "opsche_plan_activations_total")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, AssertionError):
            await watcher
    assert checks[0] > 13, "the watch saw every pod arrive and change"
    assert violations == []
    await _cleanup(core, namespace)
