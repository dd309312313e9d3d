"""The in-process API server does what the local cluster does for a replay's workload.

Every test runs on the replay's virtual clock (``simulation.run.virtual_loop``): the latencies
are charged in virtual seconds, so the tests can say exactly when each change is seen.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

import pytest

from opsche_daemon.simulation.apiserver import ApiError, VirtualApiServer
from opsche_daemon.simulation.cluster import node_object
from opsche_daemon.simulation.latency import Latencies
from opsche_daemon.simulation.run import virtual_loop

Test = Callable[[], Coroutine[Any, Any, None]]


def virtual(test: Test) -> Callable[[], None]:
    """Run the async test on a fresh virtual-time loop (not pytest-asyncio's real one)."""

    @functools.wraps(test)
    def run() -> None:
        with asyncio.Runner(loop_factory=virtual_loop) as runner:
            runner.run(test())

    return run


LAT = Latencies(
    write_service_s=0.0, watch_s=0.01, create_pods_s=0.1, bind_s=0.05, write_s=0.02,
    running_s=0.2, delete_s=0.3, collect_s=0.5,
)  # fmt: skip


def replicaset(name: str, replicas: int = 2, klass: str | None = "high") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "opsche",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
    }
    if klass:
        spec["priorityClassName"] = klass
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


class Seen:
    """Every change a watcher saw, with the virtual time it saw it."""

    def __init__(self, api: VirtualApiServer) -> None:
        self.events: list[tuple[float, str, str, dict[str, Any]]] = []
        api.watch(lambda kind, type_, obj: self.events.append((api.now(), kind, type_, obj)))

    def pods(self, type_: str | None = None) -> list[tuple[float, str, dict[str, Any]]]:
        return [
            (t, ty, obj) for t, kind, ty, obj in self.events
            if kind == "Pod" and (type_ is None or ty == type_)
        ]  # fmt: skip


def cluster() -> tuple[VirtualApiServer, Seen]:
    api = VirtualApiServer(LAT, seed=1)
    api.add_node(node_object("n1", 4000, 8192))
    api.add_namespace("ns")
    api.add_priority_class("high", 5000)
    return api, Seen(api)


def pod_of(api: VirtualApiServer, prefix: str) -> dict[str, Any]:
    return next(p for (ns, name), p in api.pods.items() if name.startswith(prefix))


async def running_pod(api: VirtualApiServer) -> dict[str, Any]:
    """One replica of a fresh ReplicaSet, bound to n1 and Running."""
    await api.create_replicaset("ns", replicaset("web", 1))
    await asyncio.sleep(1)
    pod = pod_of(api, "web-")
    await api.bind("ns", pod["metadata"]["name"], pod["metadata"]["uid"], "n1")
    await asyncio.sleep(1)
    return pod


@virtual
async def test_a_replicaset_creates_its_pods_with_the_admitted_priority_later() -> None:
    api, seen = cluster()
    start = api.now()
    await api.create_replicaset("ns", replicaset("web", 2))
    assert api.now() == pytest.approx(start + LAT.write_s)  # the POST's round trip
    await asyncio.sleep(1)
    added = seen.pods("ADDED")
    assert len(added) == 2
    for t, _, pod in added:
        assert t == pytest.approx(start + LAT.create_pods_s + LAT.watch_s)
        assert pod["metadata"]["name"].startswith("web-") and len(pod["metadata"]["name"]) == 9
        assert pod["spec"]["priority"] == 5000
        assert pod["metadata"]["ownerReferences"][0]["controller"] is True
        assert pod["status"]["phase"] == "Pending"


@virtual
async def test_a_pod_whose_priority_class_is_missing_is_not_admitted() -> None:
    api, seen = cluster()
    await api.create_replicaset("ns", replicaset("web", 1, klass="nope"))
    await asyncio.sleep(1)
    assert seen.pods() == []


@virtual
async def test_a_bound_pod_runs_after_running_s_and_cannot_be_bound_twice() -> None:
    api, seen = cluster()
    await api.create_replicaset("ns", replicaset("web", 1))
    await asyncio.sleep(1)
    pod = pod_of(api, "web-")
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    bound_at = api.now()
    await api.bind("ns", name, uid, "n1")
    assert api.now() == pytest.approx(bound_at + LAT.bind_s)
    with pytest.raises(ApiError) as twice:
        await api.bind("ns", name, uid, "n1")
    assert twice.value.status == 409
    with pytest.raises(ApiError) as gone:
        await api.bind("ns", "other", "", "n1")
    assert gone.value.status == 404
    await asyncio.sleep(1)
    phases = [(obj["spec"].get("nodeName"), obj["status"]["phase"]) for _, _, obj in seen.pods()]
    assert phases == [(None, "Pending"), ("n1", "Pending"), ("n1", "Running")]
    running_at = seen.pods()[-1][0]
    # KWOK sees the binding when it is committed, not when the caller gets its answer.
    assert running_at == pytest.approx(bound_at + LAT.running_s + LAT.watch_s)


@virtual
async def test_an_evicted_pod_is_marked_replaced_while_terminating_then_removed() -> None:
    api, seen = cluster()
    pod = await running_pod(api)
    evicted_at = api.now()
    await api.evict("ns", pod["metadata"]["name"], pod["metadata"]["uid"])
    await asyncio.sleep(2)
    old = [obj for _, _, obj in seen.pods() if obj["metadata"]["uid"] == pod["metadata"]["uid"]]
    reasons = [c.get("reason") for c in old[-1]["status"].get("conditions") or []]
    assert "EvictionByEvictionAPI" in reasons
    assert "deletionTimestamp" in old[-1]["metadata"]
    removed = [
        t for t, ty, obj in seen.pods("DELETED") if obj["metadata"]["uid"] == pod["metadata"]["uid"]
    ]
    assert removed == [pytest.approx(evicted_at + LAT.write_s + LAT.delete_s + LAT.watch_s)]
    replacement = [
        t for t, _, obj in seen.pods("ADDED") if obj["metadata"]["uid"] != pod["metadata"]["uid"]
    ]
    # The ReplicaSet controller replaces a terminating pod at once, not after it is gone.
    assert replacement == [
        pytest.approx(evicted_at + LAT.write_s + LAT.create_pods_s + LAT.watch_s)
    ]
    assert replacement[0] < removed[0]


@virtual
async def test_a_budget_refuses_an_eviction_and_leaves_the_pod_alone() -> None:
    api, seen = cluster()
    pod = await running_pod(api)
    api.add_budget("ns", "keep", {"matchLabels": {"app": "web"}}, min_available=1)
    with pytest.raises(ApiError) as refused:
        await api.evict("ns", pod["metadata"]["name"], pod["metadata"]["uid"])
    assert refused.value.status == 429
    await asyncio.sleep(1)
    still = api.pods[("ns", pod["metadata"]["name"])]
    assert "deletionTimestamp" not in still["metadata"]
    assert not any(c["type"] == "DisruptionTarget" for c in still["status"]["conditions"])
    budgets = [obj for _, kind, _, obj in seen.events if kind == "PodDisruptionBudget"]
    assert budgets[-1]["status"]["disruptionsAllowed"] == 0


@virtual
async def test_a_deleted_replicaset_takes_its_pods_with_it_and_unbound_ones_go_at_once() -> None:
    api, seen = cluster()
    await api.create_replicaset("ns", replicaset("web", 2))
    await asyncio.sleep(1)
    first = pod_of(api, "web-")
    await api.bind("ns", first["metadata"]["name"], first["metadata"]["uid"], "n1")
    await asyncio.sleep(1)
    deleted_at = api.now()
    await api.delete_replicaset("ns", "web")
    await asyncio.sleep(2)
    gone = {obj["metadata"]["name"]: t for t, _, obj in seen.pods("DELETED")}
    assert len(gone) == 2 and not api.pods
    collected = deleted_at + LAT.collect_s + LAT.watch_s
    assert gone[first["metadata"]["name"]] == pytest.approx(collected + LAT.delete_s)
    unbound = next(t for name, t in gone.items() if name != first["metadata"]["name"])
    assert unbound == pytest.approx(collected)
    with pytest.raises(ApiError):
        await api.delete_replicaset("ns", "web")


@virtual
async def test_a_watcher_sees_every_change_in_commit_order() -> None:
    api, seen = cluster()
    await api.create_replicaset("ns", replicaset("web", 1))
    await asyncio.sleep(1)
    pod = pod_of(api, "web-")
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    await api.bind("ns", name, uid, "n1")
    await api.patch_status("ns", name, {"conditions": [{"type": "X", "status": "True"}]})
    await api.delete_pod("ns", name)
    await asyncio.sleep(2)
    versions = [int(obj["metadata"]["resourceVersion"]) for _, _, obj in seen.pods()]
    assert versions == sorted(versions)
    assert [ty for _, ty, _ in seen.pods()][-1] == "DELETED"
    times = [t for t, _, _ in seen.pods()]
    assert times == sorted(times)


@virtual
async def test_writes_are_committed_one_at_a_time_so_a_burst_queues() -> None:
    service = 0.01
    api = VirtualApiServer(replace(LAT, write_service_s=service), seed=1)
    api.add_node(node_object("n1", 4000, 8192))
    api.add_namespace("ns")
    api.add_priority_class("high", 5000)
    seen = Seen(api)
    start = api.now()
    await asyncio.gather(*(api.create_replicaset("ns", replicaset(f"w{i}", 1)) for i in range(5)))
    await asyncio.sleep(1)
    sets = sorted(t for t, kind, _, _ in seen.events if kind == "ReplicaSet")
    assert sets == pytest.approx([start + service * k + LAT.watch_s for k in range(1, 6)])
    # Each ReplicaSet's pod is a write of the controller's, queued behind the ones before it.
    pods = sorted(t for t, _, _ in seen.pods("ADDED"))
    assert len(pods) == 5
    assert all(b - a >= service - 1e-9 for a, b in itertools.pairwise(pods))
