"""Scheduler extenders on the real cluster, with ``opsche score serve`` as the real service.

1. The same ``extenders:`` fragment under the real kube-scheduler and under opsche places the same
   pods on the same nodes. The service scores by free cpu from the Nodes it is sent (no cluster
   view), on nodes of 2, 4, 6 and 8 cores, with a weight that makes its scores decide: a wrong
   scaling (x10 per point), weight or filter step would place differently.
2. Failures: an ignorable extender that is too slow or down is skipped (every pod scheduled, the
   timeouts counted); a non-ignorable one that is down keeps the pod pending with upstream's
   SchedulerError and the error as the event, until the service comes up.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import DaemonProcess, free_port, running_opsche
from opsche_daemon.localcluster.versions import load_versions
from tests.integration.waiting import running, wait_for, wait_for_pods

pytest.importorskip("fastapi", reason="the learn extra (make setup installs it)")

CORES = (2, 4, 6, 8)
PODS = 16


def fragment(port: int, **overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "urlPrefix": f"http://127.0.0.1:{port}",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 10,
        "httpTimeout": "5s",
        "nodeCacheCapable": False,
        "ignorable": False,
    }
    entry.update(overrides)
    return entry


class Service:
    """An ``opsche score serve`` process."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log

    def calls(self, verb: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        pattern = rf'opsche_score_requests_total{{code="200",verb="{verb}"}} ([0-9.e+]+)'
        found = re.search(pattern, text)
        return float(found.group(1)) if found else 0.0


@contextmanager
def serving(port: int, log: Path, *args: str) -> Iterator[Service]:
    argv = [sys.executable, "-m", "opsche_daemon.cli.main", "score", "serve",
            "--model", "free-cpu", "--filter", "--port", str(port), *args]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    service = Service(process, port, log)
    deadline = time.monotonic() + 30
    try:
        while True:  # no event to await from another process: /healthz is its own signal
            if process.poll() is not None:
                raise AssertionError(f"score serve exited: {log.read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"score serve not up: {log.read_text()}") from None
                time.sleep(0.1)
        yield service
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def service_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, service_port: int) -> Iterator[Layout]:
    """A cluster whose kube-scheduler runs with the extender fragment."""
    root = tmp_path_factory.mktemp("extenders")
    extra = f"extenders:\n- {json.dumps(fragment(service_port))}\n"
    versions = load_versions()
    local = LocalCluster(root / "cluster", versions, out=lambda line: print(line, flush=True))
    try:
        yield local.up(ClusterSpec(nodes=len(CORES), scheduler_extra_config=extra))
    finally:
        local.down()


@pytest.fixture(scope="module")
async def core(cluster: Layout) -> Any:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(cluster.kubeconfig), client_configuration=configuration
    )
    api = client.ApiClient(configuration)
    core = client.CoreV1Api(api)
    for index, cores in enumerate(CORES):
        resources = {"cpu": str(cores), "memory": "16Gi", "pods": "110"}
        await core.patch_node_status(
            f"kwok-node-{index}", {"status": {"capacity": resources, "allocatable": resources}}
        )
    yield core
    await api.close()


@pytest.fixture
async def ns(core: Any, request: pytest.FixtureRequest) -> Any:
    """A fresh namespace per test on this module's cluster, gone (with its pods) afterwards."""
    name = "x-" + request.node.name.lower().replace("_", "-")[:50].strip("-")
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await core.delete_namespace(name)
    await wait_for(
        core.list_namespace, None, lambda n: name not in n, within=60, what=f"{name} deleted"
    )


def pod_body(name: str, scheduler: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
        },
    }


async def place_one_by_one(core: Any, namespace: str, scheduler: str) -> list[str]:
    nodes = []
    for index in range(PODS):
        name = f"{scheduler[:4]}-{index:02d}"
        await core.create_namespaced_pod(namespace, pod_body(name, scheduler))

        def up(pods: dict[str, Any], name: str = name) -> bool:
            return name in pods and running(pods[name])

        pods = await wait_for_pods(
            core.api_client,
            namespace,
            up,
            within=60,
            what=f"{name} running",
        )
        nodes.append(str(pods[name].spec.node_name))
    return nodes


async def delete_all(core: Any, namespace: str) -> None:
    await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    await wait_for_pods(core.api_client, namespace, lambda p: not p, within=60, what="no pods")


def opsche_config(path: Path, extenders: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"extenders": extenders}))  # JSON is YAML
    return path


async def test_kube_scheduler_and_opsche_place_alike_with_the_same_extender(
    cluster: Layout, core: Any, ns: str, service_port: int, tmp_path: Path
) -> None:
    with serving(service_port, tmp_path / "serve.log") as service:
        by_kube = await place_one_by_one(core, ns, "default-scheduler")
        kube_calls = service.calls("prioritize"), service.calls("filter")
        await delete_all(core, ns)
        config_file = opsche_config(tmp_path / "opsche.yaml", [fragment(service_port)])
        with running_opsche(
            cluster.kubeconfig, tmp_path / "opsche.log", ["--config", str(config_file)]
        ):
            by_opsche = await place_one_by_one(core, ns, "opsche")
        opsche_calls = (
            service.calls("prioritize") - kube_calls[0],
            service.calls("filter") - kube_calls[1],
        )
    assert by_opsche == by_kube
    # The extender decided: the 8-core node filled first, then the 6-core one.
    assert by_kube[:8] == ["kwok-node-3"] * 8
    assert by_kube[8:14] == ["kwok-node-2"] * 6
    assert kube_calls[1] == PODS and opsche_calls[1] == PODS  # filter asked for every pod
    assert kube_calls[0] == opsche_calls[0] > 0  # prioritize only where 2+ nodes passed


def metric(daemon: DaemonProcess, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def all_running(core: Any, namespace: str, count: int, scheduler: str) -> None:
    for index in range(count):
        await core.create_namespaced_pod(namespace, pod_body(f"p-{index}", scheduler, "100m"))
    await wait_for_pods(
        core.api_client,
        namespace,
        lambda p: len(p) == count and all(running(x) for x in p.values()),
        within=60,
        what=f"{count} pods running",
    )


async def test_an_ignorable_extender_that_is_too_slow_is_skipped(
    cluster: Layout, core: Any, ns: str, tmp_path: Path
) -> None:
    port = free_port()
    slow = fragment(port, ignorable=True, httpTimeout="100ms")
    config_file = opsche_config(tmp_path / "opsche.yaml", [slow])
    with (
        serving(port, tmp_path / "serve.log", "--delay", "500"),
        running_opsche(
            cluster.kubeconfig, tmp_path / "opsche.log", ["--config", str(config_file)]
        ) as daemon,
    ):
        await all_running(core, ns, 5, "opsche")
        timeouts = metric(daemon, "opsche_extender_errors_total", kind="timeout", ignored="true")
    assert timeouts >= 5  # at least each pod's filter call
    assert "extender skipped" in daemon.log.read_text()


async def test_an_ignorable_extender_that_is_down_is_skipped(
    cluster: Layout, core: Any, ns: str, tmp_path: Path
) -> None:
    down = fragment(free_port(), ignorable=True)
    config_file = opsche_config(tmp_path / "opsche.yaml", [down])
    with running_opsche(
        cluster.kubeconfig, tmp_path / "opsche.log", ["--config", str(config_file)]
    ) as daemon:
        await all_running(core, ns, 5, "opsche")
        failures = metric(daemon, "opsche_extender_errors_total", kind="connection", verb="filter")
    assert failures >= 5


async def test_a_required_extender_that_is_down_holds_the_pod_until_it_is_up(
    cluster: Layout, core: Any, ns: str, tmp_path: Path
) -> None:
    port = free_port()
    config_file = opsche_config(tmp_path / "opsche.yaml", [fragment(port)])
    with running_opsche(
        cluster.kubeconfig, tmp_path / "opsche.log", ["--config", str(config_file)]
    ):
        await core.create_namespaced_pod(ns, pod_body("waits", "opsche", "100m"))

        def scheduler_error(pods: Any) -> bool:
            pod = pods.get("waits")
            conditions = (pod.status.conditions or []) if pod is not None else []
            return any(
                c.type == "PodScheduled" and c.reason == "SchedulerError" for c in conditions
            )

        pods = await wait_for_pods(
            core.api_client, ns, scheduler_error, within=60, what="SchedulerError"
        )
        condition = next(c for c in pods["waits"].status.conditions if c.type == "PodScheduled")
        assert condition.message.startswith(f'Post "http://127.0.0.1:{port}/filter": ')
        assert not pods["waits"].spec.node_name

        events = await wait_for(
            core.list_namespaced_event,
            ns,
            lambda e: any(x.reason == "FailedScheduling" for x in e.values()),
            within=30,
            what="FailedScheduling event",
        )
        messages = {x.message for x in events.values() if x.reason == "FailedScheduling"}
        assert condition.message in messages
        with serving(port, tmp_path / "serve.log"):
            await wait_for_pods(
                core.api_client,
                ns,
                lambda p: "waits" in p and running(p["waits"]),
                within=60,  # retried after its backoff (at most podMaxBackoffSeconds, 10 s)
                what="waits running once the extender is up",
            )


async def test_the_service_counts_running_pods_through_its_watch(
    cluster: Layout, core: Any, ns: str, tmp_path: Path
) -> None:
    port = free_port()
    with serving(port, tmp_path / "serve.log", "--kubeconfig", str(cluster.kubeconfig)):
        big = pod_body("big", "default-scheduler", "7")
        big["spec"]["nodeName"] = "kwok-node-3"  # the 8-core node, now 1 core free
        await core.create_namespaced_pod(ns, big)
        await wait_for_pods(
            core.api_client, ns, lambda p: "big" in p and running(p["big"]), within=60, what="big"
        )
        nodes = (await core.list_node()).items
        items = [core.api_client.sanitize_for_serialization(n) for n in nodes]
        args = {"Pod": pod_body("probe", "opsche"), "Nodes": {"items": items}, "NodeNames": None}

        def ask() -> dict[str, int]:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/prioritize",
                data=json.dumps(args).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=5) as r:  # noqa: S310 - http loopback
                return {h["Host"]: h["Score"] for h in json.loads(r.read())}

        deadline = time.monotonic() + 30
        scores = ask()
        while scores.get("kwok-node-3") != 0 and time.monotonic() < deadline:
            # The service's own watch may trail the test's; it offers no event to await.
            await asyncio.sleep(0.2)
            scores = ask()
    # free cpu 2, 4, 6 and 1: the busy 8-core node is now the worst candidate
    assert scores == {"kwok-node-0": 2, "kwok-node-1": 6, "kwok-node-2": 10, "kwok-node-3": 0}
