"""What the plan end-to-end tests share: the trigger variants, workloads, metrics and cleanup."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from pathlib import Path

from kubernetes_asyncio import client

from tests.integration.waiting import wait_for

# The six trigger variants of the issue (and the paper): each trigger, non-blocking and blocking.
VARIANTS = [
    ("scheduling-failure", False),
    ("scheduling-failure", True),
    ("periodic", False),
    ("periodic", True),
    ("stable-queue", False),
    ("stable-queue", True),
]
VARIANT_IDS = [f"{t}-{'blocking' if b else 'nonblocking'}" for t, b in VARIANTS]
# Short periods so the periodic and stable-queue variants act within seconds.
FAST_TRIGGERS = (
    "optimiser:\n  periodSeconds: 2\n  stableWindowSeconds: 1\n  solveTimeLimitSeconds: 1\n"
)


def write_config(path: Path, plan_timeout_s: float = 20.0) -> Path:
    """An opsche config with fast triggers and the given plan timeout."""
    path.write_text(FAST_TRIGGERS + f"  planTimeoutSeconds: {plan_timeout_s}\n")
    return path


def daemon_args(config_file: Path, trigger: str, blocking: bool, *extra: str) -> list[str]:
    """``opsche run`` arguments for one variant."""
    args = ["--config", str(config_file), "--trigger", trigger, *extra]
    return [*args, "--blocking"] if blocking else args


def short(trigger: str, blocking: bool) -> str:
    """A namespace-friendly name for a variant, e.g. ``sf-b``."""
    initials = "".join(word[0] for word in trigger.split("-"))
    return f"{initials}-{'b' if blocking else 'nb'}"


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


async def delete_namespace(core: client.CoreV1Api, namespace: str) -> None:
    """Delete and wait until it is gone: small nodes must be empty for the next test."""
    await core.delete_namespace(namespace)
    await wait_for(
        core.list_namespace,
        None,
        lambda namespaces: namespace not in namespaces,
        within=90,
        what=f"namespace {namespace} to be deleted",
    )


async def metric_at_least(port: int, series: str, value: float, within: float = 30.0) -> float:
    """Wait until one exact series reaches ``value``; return what it reached (or last saw)."""
    deadline = time.monotonic() + within
    seen = metric_value(await scrape(port), series)
    while seen < value and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # a metrics endpoint has no watch: poll it, bounded
        seen = metric_value(await scrape(port), series)
    return seen
