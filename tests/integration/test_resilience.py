"""opsche keeps working through an API server restart, without losing a pending pod.

A dedicated small cluster (the restart would disturb the session cluster's other clients), opsche
as the only scheduler. A pod that fits nowhere waits in opsche's unschedulable pool; the API server
is restarted; then a node that fits it is added. The pod must end up Running on that node, which
only happens if opsche's watches resumed and its queue kept the pod.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from opsche_daemon.localcluster.cluster import MANAGED_LABEL, ClusterSpec, LocalCluster
from opsche_daemon.localcluster.daemon_process import running_opsche
from opsche_daemon.localcluster.versions import load_versions
from tests.integration.waiting import running, wait_for_pods


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, Path]]:
    root = tmp_path_factory.mktemp("resilience")
    local = LocalCluster(
        root / "cluster", load_versions(), out=lambda line: print(line, flush=True)
    )
    try:
        layout = local.up(ClusterSpec(nodes=2, node_cpu="4", default_scheduler=False))
        with running_opsche(layout.kubeconfig, root / "opsche.log") as daemon:
            yield local, daemon.log
            assert daemon.process.poll() is None, f"opsche died: {daemon.log_tail()}"
    finally:
        local.down()


async def connect(kubeconfig: Path) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


@pytest.fixture
async def api(cluster: tuple[LocalCluster, Path]) -> AsyncIterator[client.ApiClient]:
    local, _ = cluster
    api_client = await connect(local.kubeconfig)
    try:
        yield api_client
    finally:
        await api_client.close()


def pod(name: str, cpu: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name="opsche",
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": cpu}),
                )
            ],
        ),
    )


async def test_pending_pod_survives_an_api_server_restart(
    cluster: tuple[LocalCluster, Path], api: client.ApiClient
) -> None:
    local, _ = cluster
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod("default", pod("waiting", "6"))
    await wait_for_pods(
        api,
        "default",
        lambda p: (
            "waiting" in p
            and any(
                c.type == "PodScheduled" and c.status == "False"
                for c in p["waiting"].status.conditions or []
            )
        ),
        what="opsche to report the pod unschedulable",
    )
    local.restart("kube-apiserver")
    fresh = await connect(local.kubeconfig)
    try:
        fresh_core = client.CoreV1Api(fresh)
        await fresh_core.create_node(
            client.V1Node(
                metadata=client.V1ObjectMeta(
                    name="big",
                    annotations={"kwok.x-k8s.io/node": "fake"},
                    labels={MANAGED_LABEL: "true", "kubernetes.io/hostname": "big"},
                ),
                spec=client.V1NodeSpec(provider_id="kwok://big"),
                status=client.V1NodeStatus(
                    capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
                    allocatable={"cpu": "8", "memory": "16Gi", "pods": "110"},
                ),
            )
        )
        await fresh_core.create_namespaced_pod("default", pod("after", "100m"))
        pods = await wait_for_pods(
            fresh,
            "default",
            lambda p: all(n in p and running(p[n]) for n in ("waiting", "after")),
            within=90,
            what="the waiting pod on the new node and a new pod running",
        )
        assert pods["waiting"].spec.node_name == "big"
    finally:
        await fresh.close()
