"""Plans enforced on the real cluster, on two nodes, for every trigger variant.

The paper's Figure 1: two nodes of 4 cpu; a ReplicaSet of two 2-cpu pods lands one per node
(LeastAllocated spreads them), leaving 2 cpu free on each; then a 4-cpu pod arrives. No node fits
it, but moving one replica next to the other frees a whole node. kube-scheduler would leave it
pending forever; opsche's plan moves exactly one pod and places it. Around it: pods without a
controller, a plan that cannot converge in time, a burst during enforcement, and a plan made
stale between solve and validation. Every test runs for the six trigger variants, each with
default preemption on and off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from opsche_daemon.daemon.failpoints import ENV as FAILPOINTS
from opsche_daemon.daemon.failpoints import wait_for_file
from opsche_daemon.localcluster.cluster import LocalCluster
from opsche_daemon.localcluster.daemon_process import running_opsche
from tests.integration.plans import (
    Variant,
    bare_pod,
    cluster_api,
    create_namespace,
    create_replicaset,
    delete_namespace,
    metric_at_least,
    metric_lines,
    metric_value,
    module_cluster,
    scenario,
    scrape,
    variants,
    write_config,
)
from tests.integration.waiting import Objects, running, wait_for, wait_for_pods

NODES = ("kwok-node-0", "kwok-node-1")


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    yield from module_cluster(tmp_path_factory, "plans", 2, default_scheduler=False)


@pytest.fixture(scope="module")
async def api(two_nodes: tuple[LocalCluster, Path]) -> AsyncIterator[client.ApiClient]:
    async for api_client in cluster_api(two_nodes[0]):
        yield api_client


async def two_replicas(api: client.ApiClient, namespace: str, cpu: str = "2") -> Objects:
    """Two replicas running, one per node."""
    await create_replicaset(api, namespace, "small", 2, cpu)
    before = await wait_for_pods(
        api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
    )
    assert len({p.spec.node_name for p in before.values()}) == 2, "one replica per node"
    return before


async def figure_1(api: client.ApiClient, namespace: str, small_cpu: str = "2") -> Objects:
    """Two replicas running one per node, then the pending 4-cpu ``big`` pod; the replicas."""
    before = await two_replicas(api, namespace, small_cpu)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, bare_pod("big", "4"))
    return before


async def big_running_after_one_move(
    api: client.ApiClient, namespace: str, before: dict[str, client.V1Pod], *, within: float = 90
) -> list[str]:
    """Wait for Figure 1's end state and check it; the names of the replicas moved."""
    after = await wait_for_pods(
        api,
        namespace,
        lambda p: (
            "big" in p
            and running(p["big"])
            and sum(1 for n, q in p.items() if n != "big" and running(q)) == 2
        ),
        within=within,
        what="the big pod running and both replicas running",
    )
    small = [p for n, p in after.items() if n != "big"]
    assert {p.spec.node_name for p in small} == {
        n for n in NODES if n != after["big"].spec.node_name
    }, "both replicas share the node the big pod does not use"
    moved = [n for n in before if n not in after]
    assert len(moved) == 1, f"exactly one replica was moved (replaced): {moved}"
    return moved


# ---------------------------------------------------------------------- Figure 1
@variants
async def test_figure_1_one_move_places_the_pending_pod(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    """With default preemption on and off: the paper's ablation."""
    cluster, config_file = two_nodes
    namespace = f"fig1-{variant.short}"
    core = client.CoreV1Api(api)
    args = variant.args(config_file)
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        before = await figure_1(api, namespace)
        moved = await big_running_after_one_move(api, namespace, before)
        events = await wait_for(
            core.list_namespaced_event,
            namespace,
            lambda evs: any(e.reason == "OpscheMoved" for e in evs.values()),
            what="an OpscheMoved event",
        )
        moved_events = [e for e in events.values() if e.reason == "OpscheMoved"]
        assert [e.involved_object.name for e in moved_events] == moved
        assert "moved by plan" in moved_events[0].message
        assert await metric_lines(daemon.port, 'opsche_plan_outcomes_total{outcome="converged"}')


# ---------------------------------------------------------------------- pods without a controller
@variants
async def test_pods_without_a_controller_are_never_moved(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    """Figure 1 with bare pods: the only fix would move one, so there is no plan at all."""
    cluster, config_file = two_nodes
    namespace = f"bare-{variant.short}"
    core = client.CoreV1Api(api)
    args = variant.args(config_file)
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        for i in range(2):
            await core.create_namespaced_pod(namespace, bare_pod(f"bare-{i}", "2"))
        before = await wait_for_pods(
            api, namespace, lambda p: len(p) == 2 and all(map(running, p.values()))
        )
        await core.create_namespaced_pod(namespace, bare_pod("big", "4"))
        # The trigger starts a run, and the run must end without a plan (nothing may move).
        series = f'opsche_solver_runs_total{{result="empty",trigger="{variant.trigger}"}}'
        assert await metric_lines(daemon.port, series), daemon.log_tail()
        pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(namespace)).items}
        for name, pod in before.items():
            assert pods[name].metadata.uid == pod.metadata.uid, f"{name} was replaced"
            assert pods[name].spec.node_name == pod.spec.node_name
        assert not pods["big"].spec.node_name
        assert metric_value(await scrape(daemon.port), "opsche_plan_activations_total") == 0


# ---------------------------------------------------------------------- timeout
@variants
async def test_a_plan_that_cannot_converge_in_time_releases_every_held_pod(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    """A plan timeout shorter than a replacement takes to appear: the run times out and
    tears down, the held-pod gauge returns to 0, and scheduling carries on.

    The timeout is below the convergence poll interval (0.25 s), and the deadline is checked
    before convergence, so the first poll times the plan out however fast the cluster is: with
    pods retried at once from backoff, Figure 1 converges in under 0.3 s here.
    """
    cluster, _ = two_nodes
    namespace = f"timeout-{variant.short}"
    config_file = write_config(tmp_path / "fast-timeout.yaml", plan_timeout_s=0.1)
    args = variant.args(config_file)
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        await figure_1(api, namespace)
        timed_out = 'opsche_plan_outcomes_total{outcome="timed_out"}'
        assert await metric_lines(daemon.port, timed_out), daemon.log_tail()
        assert metric_value(await scrape(daemon.port), "opsche_plan_pods_held") == 0
        # Released, the replica's replacement is scheduled normally (wherever it fits).
        await wait_for_pods(
            api,
            namespace,
            lambda p: sum(1 for n, q in p.items() if n != "big" and running(q)) == 2,
            within=60,
            what="both replicas running again after the teardown",
        )
        # The failed plan's cool-down: no second plan evicts again right away.
        text = await scrape(daemon.port)
        assert metric_value(text, "opsche_plan_activations_total") == 1


# ---------------------------------------------------------------------- burst
@variants
async def test_a_burst_during_enforcement_never_overcommits_a_node(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    """Figure 1 with a burst of ten unrelated 100m pods arriving as the plan is computed and
    enforced. A watch checks every node's bound requests against its capacity on every pod
    event, not only at the end. Everything fits exactly (2 x 4 cpu = 4 + 2 x 1.5 + 10 x 0.1),
    so all thirteen pods must end up running, whatever the burst did meanwhile.
    """
    cluster, config_file = two_nodes
    namespace = f"burst-{variant.short}"
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
        violations.extend(f"{n}: {cpu}m > 4000m" for n, cpu in used.items() if cpu > 4000)
        return False  # keep watching until cancelled

    args = variant.args(config_file)
    async with scenario(api, cluster, namespace, args, tmp_path / "opsche.log") as daemon:
        # Watching before the first pod exists: every bind and change is checked.
        watcher = asyncio.create_task(
            wait_for_pods(api, namespace, never_overcommitted, within=300, what="(watching)")
        )
        try:
            await figure_1(api, namespace, small_cpu="1500m")
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


# ---------------------------------------------------------------------- stale plan
@variants
async def test_a_plan_made_stale_by_a_concurrent_change_is_discarded_not_applied(
    two_nodes: tuple[LocalCluster, Path],
    api: client.ApiClient,
    tmp_path: Path,
    variant: Variant,
) -> None:
    """Figure 1, with the daemon held (by a failpoint) between solve and validation while a
    2-cpu pod is bound straight onto kwok-node-0, as a kubelet's static pod or another
    scheduler would. Either node the plan uses would now be over-committed by it: the plan
    must be found stale and discarded, with nothing evicted. Once the intruder leaves, a new
    plan places the pod.
    """
    cluster, config_file = two_nodes
    namespace = f"stale-{variant.short}"
    core = client.CoreV1Api(api)
    await create_namespace(core, namespace)
    failpoint = tmp_path / "failpoint"
    env = {FAILPOINTS: f"before-validate=pause:{failpoint}"}
    args = variant.args(config_file)
    # The replicas are placed first, by a daemon without the failpoint: no run but the one
    # for the big pod may reach it.
    with running_opsche(cluster.kubeconfig, tmp_path / "setup.log", args):
        before = await two_replicas(api, namespace)
    with running_opsche(cluster.kubeconfig, tmp_path / "opsche.log", args, env=env) as daemon:
        await core.create_namespaced_pod(namespace, bare_pod("big", "4"))
        assert await asyncio.to_thread(wait_for_file, failpoint / "reached", 60), daemon.log_tail()
        pods_series = 'opsche_scheduler_cache_size{type="pods"}'
        cached = metric_value(await scrape(daemon.port), pods_series)
        await core.create_namespaced_pod(namespace, bare_pod("intruder", "2", node_name=NODES[0]))
        # Release only once opsche's cache holds the intruder: then the change is concurrent
        # with the plan, not later than its validation.
        assert await metric_at_least(daemon.port, pods_series, cached + 1) >= cached + 1
        (failpoint / "release").touch()
        invalid = f'opsche_solver_runs_total{{result="invalid",trigger="{variant.trigger}"}}'
        assert await metric_lines(daemon.port, invalid), daemon.log_tail()
        text = await scrape(daemon.port)
        assert metric_value(text, "opsche_plan_activations_total") == 0
        assert metric_value(text, "opsche_plan_pods_moved_total") == 0
        pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(namespace)).items}
        for name, pod in before.items():
            assert pods[name].metadata.uid == pod.metadata.uid, f"{name} was evicted"
        assert not pods["big"].spec.node_name
        events = (await core.list_namespaced_event(namespace)).items
        assert not [e for e in events if e.reason in ("OpscheMoved", "OpscheEvicted")]
        # The intruder leaves; the next run's plan is valid and places the pod.
        await core.delete_namespaced_pod("intruder", namespace, grace_period_seconds=0)
        await big_running_after_one_move(api, namespace, before)
        assert daemon.process.poll() is None, daemon.log_tail()
    await delete_namespace(api, namespace)
