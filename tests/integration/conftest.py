"""A real control plane for the whole test session: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok on 127.0.0.1, started once and torn down at the end.

If it cannot start, every integration test errors with the reason (the component and the tail of
its log); nothing is skipped silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.versions import load_versions
from opsche_daemon.trace.config import TraceConfig
from opsche_daemon.trace.generate import generate_trace
from opsche_daemon.trace.model import Trace
from tests.integration.waiting import wait_for

NODES = 4
NODE_CPU = "4"
NODE_MEMORY = "16Gi"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    """The session's cluster: 4 KWOK nodes of 4 cpu / 16Gi, kube-scheduler running."""
    state = tmp_path_factory.mktemp("cluster")
    cluster = LocalCluster(state, load_versions(), out=lambda line: print(line, flush=True))
    try:
        layout = cluster.up(ClusterSpec(nodes=NODES, node_cpu=NODE_CPU, node_memory=NODE_MEMORY))
        yield layout
    finally:
        cluster.down()


@pytest.fixture(scope="session")
async def api(local_cluster: Layout) -> AsyncIterator[client.ApiClient]:
    """A kubernetes-asyncio client on the session's cluster (the library the daemon uses)."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(local_cluster.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace per test, deleted afterwards, so tests never see each other's pods."""
    core = client.CoreV1Api(api)
    name = "t-" + request.node.name.lower().replace("_", "-")[:50].strip("-")
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await core.delete_namespace(name)
    # Wait until it is gone, so its pods no longer hold node capacity for the next test.
    await wait_for(
        core.list_namespace,
        None,
        lambda namespaces: name not in namespaces,
        within=60,
        what=f"namespace {name} to be deleted",
    )


@pytest.fixture
def kubeconfig(local_cluster: Layout) -> Path:
    """Path of the session cluster's admin kubeconfig."""
    return local_cluster.kubeconfig


def small_trace(seed: int) -> Trace:
    """A generated trace that fits the session's cluster: 3 minutes, 2 priorities, 3 s arrivals."""
    config = TraceConfig(
        nodes=NODES,
        node_cpu=NODE_CPU,
        node_memory=NODE_MEMORY,
        hours=0.05,
        interarrival_mean_s=3.0,
        priority_levels=2,
        seed=seed,
    )
    return generate_trace(config)
