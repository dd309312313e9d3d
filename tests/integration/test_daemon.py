"""``opsche run`` against the real control plane: it schedules the pods that name it, reports
failures the way kube-scheduler does, and preempts through the Eviction API."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client

from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import start_opsche
from tests.integration.waiting import running, wait_for, wait_for_pods

SCHEDULER = "opsche"


@pytest.fixture(scope="module")
def opsche_daemon(local_cluster: Layout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A running ``opsche run`` on the session cluster; yields its metrics port."""
    log = tmp_path_factory.mktemp("opsche") / "opsche.log"
    daemon = start_opsche(local_cluster.kubeconfig, log)
    yield daemon.port
    code = daemon.stop(timeout=20)
    assert code == 0, daemon.log_tail()


def pod_spec(
    cpu: str, *, priority_class: str | None = None, node_selector: dict[str, str] | None = None
) -> client.V1PodSpec:
    return client.V1PodSpec(
        scheduler_name=SCHEDULER,
        priority_class_name=priority_class,
        node_selector=node_selector,
        containers=[
            client.V1Container(
                name="main",
                image="registry.k8s.io/pause:3.10",
                resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
            )
        ],
    )


def replicaset(name: str, replicas: int, spec: client.V1PodSpec) -> client.V1ReplicaSet:
    labels = {"app": name}
    return client.V1ReplicaSet(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1ReplicaSetSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels), spec=spec
            ),
        ),
    )


async def test_schedules_its_pods_and_they_run(
    api: client.ApiClient, namespace: str, opsche_daemon: int
) -> None:
    await client.AppsV1Api(api).create_namespaced_replica_set(
        namespace, replicaset("web", 8, pod_spec("200m"))
    )
    pods = await wait_for_pods(
        api,
        namespace,
        lambda p: len(p) == 8 and all(map(running, p.values())),
        what="8 running pods",
    )
    assert len({p.spec.node_name for p in pods.values()}) == 4, "LeastAllocated spreads them"
    name = next(iter(pods))
    # Events are posted in the background: wait for the one about this pod.
    events = await wait_for(
        client.CoreV1Api(api).list_namespaced_event,
        namespace,
        lambda evs: any(
            e.reason == "Scheduled" and e.involved_object.name == name for e in evs.values()
        ),
        what=f"a Scheduled event for {name}",
    )
    scheduled = [
        e for e in events.values() if e.reason == "Scheduled" and e.involved_object.name == name
    ]
    assert scheduled and scheduled[0].reporting_component == SCHEDULER
    assert (
        scheduled[0].message
        == f"Successfully assigned {namespace}/{name} to {pods[name].spec.node_name}"
    )
    url = f"http://127.0.0.1:{opsche_daemon}/metrics"
    metrics = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
    assert 'opsche_schedule_attempts_total{profile="opsche",result="scheduled"}' in metrics


async def test_a_pod_that_fits_nowhere_is_reported_like_kube_scheduler(
    api: client.ApiClient, namespace: str, opsche_daemon: int
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(
        namespace,
        client.V1Pod(metadata=client.V1ObjectMeta(name="huge"), spec=pod_spec("100")),
    )
    await core.create_namespaced_pod(
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="picky"),
            spec=pod_spec("100m", node_selector={"disk": "ssd"}),
        ),
    )

    def condition_set(pods: dict[str, client.V1Pod]) -> bool:
        return (
            all(
                any(
                    c.type == "PodScheduled" and c.status == "False"
                    for c in (p.status.conditions or [])
                )
                for p in pods.values()
            )
            and len(pods) == 2
        )

    pods = await wait_for_pods(api, namespace, condition_set, what="PodScheduled=False on both")
    huge = next(c for c in pods["huge"].status.conditions if c.type == "PodScheduled")
    assert huge.reason == "Unschedulable"
    assert huge.message == (
        "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: "
        "4 Preemption is not helpful for scheduling."
    )
    picky = next(c for c in pods["picky"].status.conditions if c.type == "PodScheduled")
    assert picky.message.startswith(
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
    )
    events = await wait_for(
        client.CoreV1Api(api).list_namespaced_event,
        namespace,
        lambda evs: any(e.reason == "FailedScheduling" for e in evs.values()),
        what="a FailedScheduling event",
    )
    failed = [
        e
        for e in events.values()
        if e.reason == "FailedScheduling" and e.involved_object.name == "huge"
    ]
    assert failed and failed[0].type == "Warning" and failed[0].message == huge.message


async def test_preemption_evicts_a_lower_priority_pod(
    api: client.ApiClient, namespace: str, opsche_daemon: int
) -> None:
    scheduling = client.SchedulingV1Api(api)
    for name, value in (("t-low", 10), ("t-high", 1000)):
        try:
            await scheduling.create_priority_class(
                client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value)
            )
        except client.exceptions.ApiException as exc:
            if exc.status != 409:
                raise
    core = client.CoreV1Api(api)
    # Fill every node: 4 nodes x 4 cpu, one 3500m low-priority pod each.
    for i in range(4):
        await core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name=f"low-{i}"),
                spec=pod_spec("3500m", priority_class="t-low"),
            ),
        )
    await wait_for_pods(api, namespace, lambda p: len(p) == 4 and all(map(running, p.values())))
    await core.create_namespaced_pod(
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="vip"), spec=pod_spec("2", priority_class="t-high")
        ),
    )
    pods = await wait_for_pods(
        api,
        namespace,
        lambda p: "vip" in p and running(p["vip"]) and len(p) == 4,
        within=90,
        what="the high-priority pod running after one eviction",
    )
    low_left = [n for n in pods if n.startswith("low-")]
    assert len(low_left) == 3, "exactly one victim"
    await wait_for(
        client.CoreV1Api(api).list_namespaced_event,
        namespace,
        lambda evs: any(e.reason == "Preempted" for e in evs.values()),
        what="a Preempted event on the victim",
    )
