"""What the plan end-to-end tests share: clusters, trigger variants, workloads, metrics, cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pytest
from kubernetes_asyncio import client

from opsche_daemon.kube.client import api_client
from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.daemon_process import DaemonProcess, running_opsche
from opsche_daemon.localcluster.versions import load_versions
from tests.integration.waiting import wait_for


class Variant(NamedTuple):
    """One way to run opsche: a trigger, blocking or not, default preemption on or off."""

    trigger: str
    blocking: bool
    preemption: bool

    @property
    def id(self) -> str:
        return (
            f"{self.trigger}-{'blocking' if self.blocking else 'nonblocking'}"
            f"-{'preemption' if self.preemption else 'no-preemption'}"
        )

    @property
    def short(self) -> str:
        """A namespace-friendly name, e.g. ``sf-b-np``."""
        initials = "".join(word[0] for word in self.trigger.split("-"))
        return f"{initials}-{'b' if self.blocking else 'nb'}-{'p' if self.preemption else 'np'}"

    def args(self, config_file: Path) -> list[str]:
        """``opsche run`` arguments for this variant."""
        args = ["--config", str(config_file), "--trigger", self.trigger]
        args += ["--blocking"] if self.blocking else []
        return args + ([] if self.preemption else ["--no-preemption"])


# The six trigger variants (each trigger, non-blocking and blocking), each with default
# preemption on and off: the paper's ablation.
VARIANTS = [
    Variant(trigger, blocking, preemption)
    for trigger in ("scheduling-failure", "periodic", "stable-queue")
    for blocking in (False, True)
    for preemption in (True, False)
]
variants = pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
# Short periods so the periodic and stable-queue variants act within seconds.
FAST_TRIGGERS = (
    "optimiser:\n  periodSeconds: 2\n  stableWindowSeconds: 1\n  solveTimeLimitSeconds: 1\n"
)


def write_config(path: Path, plan_timeout_s: float = 20.0) -> Path:
    """An opsche config with fast triggers and the given plan timeout."""
    path.write_text(FAST_TRIGGERS + f"  planTimeoutSeconds: {plan_timeout_s}\n")
    return path


def container(cpu: str) -> client.V1Container:
    return client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={"cpu": cpu, "memory": "64Mi"}),
    )


def bare_pod(name: str, cpu: str, *, node_name: str | None = None) -> client.V1Pod:
    """A pod without a controller, for opsche (or bound directly to ``node_name``)."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name="opsche", node_name=node_name, containers=[container(cpu)]
        ),
    )


async def create_replicaset(
    api: client.ApiClient,
    namespace: str,
    name: str,
    replicas: int,
    cpu: str,
    scheduler_name: str = "opsche",
) -> None:
    """A ReplicaSet of ``replicas`` pods requesting ``cpu``, labelled ``app: name``."""
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
                    spec=client.V1PodSpec(
                        scheduler_name=scheduler_name, containers=[container(cpu)]
                    ),
                ),
            ),
        ),
    )


async def scrape(port: int) -> str:
    url = f"http://127.0.0.1:{port}/metrics"
    return await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())


def metric_value(text: str, series: str) -> float:
    """The value of one exact series (``name{labels}``) in a scrape; 0 when absent."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


async def metric_lines(port: int, prefix: str, within: float = 30.0) -> list[str]:
    """Lines of /metrics starting with ``prefix`` and a value > 0, once there are any."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = await scrape(port)
        lines = [
            line for line in text.splitlines()
            if line.startswith(prefix) and float(line.split()[-1]) > 0
        ]  # fmt: skip
        if lines:
            return lines
        await asyncio.sleep(0.2)  # a metrics endpoint has no watch: poll it, bounded
    return []


async def create_namespace(core: client.CoreV1Api, namespace: str) -> None:
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))


async def delete_namespace(api: client.ApiClient, namespace: str) -> None:
    """Empty the namespace at once and delete it; return when its pods are gone.

    Small nodes must be empty for the next test, and the namespace controller takes seconds to
    finish a namespace; so the ReplicaSets go first (nothing is recreated), then the pods with
    no grace period, and only the pods are waited for.
    """
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    await apps.delete_collection_namespaced_replica_set(namespace)
    await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    await wait_for(
        core.list_namespaced_pod,
        namespace,
        lambda pods: not pods,
        within=90,
        what=f"the pods of namespace {namespace} to be deleted",
    )
    await core.delete_namespace(namespace)


async def metric_at_least(port: int, series: str, value: float, within: float = 30.0) -> float:
    """Wait until one exact series reaches ``value``; return what it reached (or last saw)."""
    deadline = time.monotonic() + within
    seen = metric_value(await scrape(port), series)
    while seen < value and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # a metrics endpoint has no watch: poll it, bounded
        seen = metric_value(await scrape(port), series)
    return seen


def module_cluster(
    tmp_path_factory: pytest.TempPathFactory, name: str, nodes: int, *, default_scheduler: bool
) -> Iterator[tuple[LocalCluster, Path]]:
    """A test module's own cluster of ``nodes`` nodes of 4 cpu, and an opsche config with fast
    triggers; for a module-scoped fixture to ``yield from``."""
    root = tmp_path_factory.mktemp(name)
    cluster = LocalCluster(
        root / "cluster", load_versions(), out=lambda line: print(line, flush=True)
    )
    spec = ClusterSpec(
        nodes=nodes, node_cpu="4", node_memory="16Gi", default_scheduler=default_scheduler
    )
    try:
        cluster.up(spec)
        yield cluster, write_config(root / "opsche.yaml")
    finally:
        cluster.down()


async def cluster_api(cluster: LocalCluster) -> AsyncIterator[client.ApiClient]:
    """A kubernetes-asyncio client on ``cluster``, made as the daemon makes its own."""
    async with await api_client(cluster.kubeconfig) as api:
        yield api


@contextlib.asynccontextmanager
async def scenario(
    api: client.ApiClient,
    cluster: LocalCluster,
    namespace: str,
    args: list[str],
    log: Path,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[DaemonProcess]:
    """One test's namespace and ``opsche run``. If the test passes, the daemon must still be
    alive at the end; pass or fail, the namespace is emptied for the next test."""
    await create_namespace(client.CoreV1Api(api), namespace)
    try:
        with running_opsche(cluster.kubeconfig, log, args, env=env) as daemon:
            yield daemon
            assert daemon.process.poll() is None, daemon.log_tail()
    finally:
        # Also after a failure: pods left behind would fill the nodes of every later test.
        await delete_namespace(api, namespace)
