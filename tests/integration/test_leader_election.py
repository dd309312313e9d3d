"""Two replicas of ``opsche run`` on the real API server: only the Lease holder acts.

Short Lease timings (4 s lease, 3 s renew deadline, 1 s retry) keep the waits small; the
protocol is the same as with the defaults (15/10/2). Each test has its own namespace, Lease
(in that namespace) and scheduler name, so nothing else schedules its pods.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import DaemonProcess, start_opsche
from tests.integration.waiting import Objects, wait_for, wait_for_pods

SCHEDULER = "opsche-ha"
LEASE = "opsche-ha"
LEASE_S, RENEW_S, RETRY_S = 4, 3, 1


def config_file(directory: Path, namespace: str) -> Path:
    path = directory / "opsche.yaml"
    path.write_text(
        f"schedulerName: {SCHEDULER}\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        f"  leaseDurationSeconds: {LEASE_S}\n"
        f"  renewDeadlineSeconds: {RENEW_S}\n"
        f"  retryPeriodSeconds: {RETRY_S}\n"
        f"  resourceName: {LEASE}\n"
        f"  resourceNamespace: {namespace}\n"
    )
    return path


class Replicas:
    """Starts replicas; stops whatever is left at the end."""

    def __init__(self, layout: Layout, directory: Path, namespace: str) -> None:
        self.layout = layout
        self.directory = directory
        self.config = config_file(directory, namespace)
        self.started: list[DaemonProcess] = []

    def start(self, name: str) -> DaemonProcess:
        daemon = start_opsche(
            self.layout.kubeconfig,
            self.directory / f"{name}.log",
            ["--config", str(self.config), "--trigger", "none"],
        )
        self.started.append(daemon)
        return daemon

    def stop_all(self) -> None:
        for daemon in self.started:
            if daemon.process.poll() is None:
                daemon.process.kill()
                daemon.process.wait(timeout=10)


@pytest.fixture
def replicas(local_cluster: Layout, tmp_path: Path, namespace: str) -> Iterator[Replicas]:
    started = Replicas(local_cluster, tmp_path, namespace)
    yield started
    started.stop_all()


def log_lines(daemon: DaemonProcess) -> list[dict[str, object]]:
    lines = []
    for line in daemon.log.read_text(errors="replace").splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


def scheduled(daemon: DaemonProcess) -> list[str]:
    return [str(x["pod"]) for x in log_lines(daemon) if x.get("event") == "pod scheduled"]


async def wait_for_log(
    daemon: DaemonProcess, event: str, within: float = 30.0, **fields: object
) -> None:
    """Until the daemon's log has a line with this event and these fields (no watch to await)."""
    deadline = time.monotonic() + within
    while not any(
        x.get("event") == event and all(x.get(k) == v for k, v in fields.items())
        for x in log_lines(daemon)
    ):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {event!r} in the log within {within}s:\n{daemon.log_tail()}")
        await asyncio.sleep(0.05)


async def identity(daemon: DaemonProcess) -> str:
    """The replica's Lease identity, from its log once it has said it (after /readyz, not before:
    reading the log at once failed a fresh-clone ``make test``)."""
    await wait_for_log(daemon, "waiting to lead")
    [line] = [x for x in log_lines(daemon) if x.get("event") == "waiting to lead"]
    return str(line["identity"])


async def wait_for_holder(
    api: client.ApiClient, namespace: str, holder: str, within: float = 30.0
) -> float:
    """Until the Lease names ``holder``; the monotonic time it was seen."""
    await wait_for(
        client.CoordinationV1Api(api).list_namespaced_lease,
        namespace,
        lambda leases: LEASE in leases and leases[LEASE].spec.holder_identity == holder,
        within=within,
        what=f"the Lease held by {holder}",
    )
    return time.monotonic()


def bare_pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name=SCHEDULER,
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(
                        requests={"cpu": "10m", "memory": "16Mi"}
                    ),
                )
            ],
        ),
    )


def all_bound(count: int) -> Callable[[Objects], bool]:
    return lambda pods: len(pods) == count and all(p.spec.node_name for p in pods.values())


async def test_failover_after_kill_and_hand_over_on_sigterm(
    api: client.ApiClient, namespace: str, replicas: Replicas
) -> None:
    core = client.CoreV1Api(api)
    a = replicas.start("a")
    await wait_for_holder(api, namespace, await identity(a))
    b = replicas.start("b")  # ready as a follower: its cache synced, it waits for the Lease

    # A stream of pod creations; the leader dies (kill -9) in the middle of it.
    total = 24

    async def stream() -> None:
        for i in range(total):
            await core.create_namespaced_pod(namespace, bare_pod(f"p{i:02d}"))
            await asyncio.sleep(0.1)

    creating = asyncio.get_running_loop().create_task(stream())
    await wait_for_pods(api, namespace, lambda pods: len(pods) >= 8, what="8 pods created")
    a.process.kill()
    killed = time.monotonic()
    took_over = await wait_for_holder(
        api, namespace, await identity(b), within=LEASE_S + RETRY_S + 10
    )
    failover = took_over - killed
    await creating
    await wait_for_pods(api, namespace, all_bound(total), what=f"{total} pods bound")
    print(f"failover after kill -9: {failover:.2f}s (lease {LEASE_S}s + retry {RETRY_S}s)")
    assert failover <= LEASE_S + RETRY_S + 1.0  # 1 s for this test's own watch and the API
    counts = Counter(scheduled(a) + scheduled(b))
    assert all(n == 1 for n in counts.values()), counts  # no pod bound by both
    assert scheduled(b), "the new leader bound the pods created after the kill"

    # SIGTERM: the leader releases the Lease on its way out, the follower takes it at once.
    c = replicas.start("c")
    await wait_for_log(c, "lease holder changed", holder=await identity(b))  # a warm follower
    terminated = time.monotonic()
    b.process.terminate()
    handed = await wait_for_holder(api, namespace, await identity(c), within=10)
    hand_over = handed - terminated
    print(f"hand-over on SIGTERM: {hand_over:.2f}s")
    assert b.process.wait(timeout=10) == 0, b.log_tail()
    assert any(x.get("event") == "released the Lease" for x in log_lines(b)), b.log_tail()
    assert hand_over < 2.0
    await core.create_namespaced_pod(namespace, bare_pod("after"))
    await wait_for_pods(api, namespace, all_bound(total + 1), what="the last pod bound by c")
    await wait_for_log(c, "pod scheduled", pod=f"{namespace}/after")


async def test_a_leader_that_loses_its_lease_stops_writing_at_once_and_exits(
    api: client.ApiClient, namespace: str, replicas: Replicas
) -> None:
    coordination, core = client.CoordinationV1Api(api), client.CoreV1Api(api)
    a = replicas.start("a")
    await wait_for_holder(api, namespace, await identity(a))
    # Someone else takes the Lease (an operator, or a partition that made it expire). The
    # leader renews every retry period, so a takeover between its renewals may meet a 409
    # Conflict: read and replace again, as any client of an optimistic-concurrency API does.
    for attempt in range(10):
        lease = await coordination.read_namespaced_lease(LEASE, namespace)
        now = datetime.now(UTC)
        lease.spec.holder_identity = "impostor"
        lease.spec.acquire_time = now
        lease.spec.renew_time = now
        try:
            await coordination.replace_namespaced_lease(LEASE, namespace, lease)
            break
        except client.ApiException as error:
            if error.status != 409 or attempt == 9:
                raise
    # Its next renewal sees the new holder: a pod created now must not be bound by it.
    await wait_for_log(a, "lease holder changed", holder="impostor")
    await core.create_namespaced_pod(namespace, bare_pod("orphan"))
    await wait_for_log(a, "write refused: not the leader")
    assert a.process.wait(timeout=RENEW_S + 10) == 1, a.log_tail()  # like kube-scheduler
    assert any(x.get("event") == "lost the Lease; stopping" for x in log_lines(a))
    assert scheduled(a) == []
    pods = await core.list_namespaced_pod(namespace)
    assert [p.spec.node_name for p in pods.items] == [None]
    # A new replica takes the Lease once the impostor's lapses, and binds the pod.
    b = replicas.start("b")
    await wait_for_holder(api, namespace, await identity(b), within=LEASE_S + RETRY_S + 10)
    await wait_for_pods(api, namespace, all_bound(1), what="the pod bound by the new leader")
    # The log line follows the bind's answer: wait for it rather than race it.
    await wait_for_log(b, "pod scheduled", pod=f"{namespace}/orphan")
    assert scheduled(b) == [f"{namespace}/orphan"]
