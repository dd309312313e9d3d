"""The paper's Figure 1 in virtual time: opsche's real flow moves a replica to place a big pod.

Two nodes of 4 cpu, a ReplicaSet of two 2-cpu replicas spread over both, then a 4-cpu pod that
fits nowhere: the scheduling-failure trigger solves, the plan evicts one replica through the
(in-process) Eviction API, the ReplicaSet recreates it, and the plan pins the big pod and the
new replica so both run. Everything but the API server is opsche's own code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from opsche_daemon.config import SchedulerConfig, Trigger
from opsche_daemon.simulation.apiserver import VirtualApiServer
from opsche_daemon.simulation.cluster import node_object
from opsche_daemon.simulation.opsche import SolverTime, VirtualOpsche
from opsche_daemon.simulation.run import virtual_loop


def replicaset(name: str, replicas: int, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "opsche",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                },
            },
        },
    }


def running(api: VirtualApiServer, prefix: str) -> list[str]:
    return [
        str(pod["spec"]["nodeName"])
        for (_, name), pod in api.pods.items()
        if name.startswith(prefix)
        and pod["status"].get("phase") == "Running"
        and "deletionTimestamp" not in pod["metadata"]
    ]


async def until(api: VirtualApiServer, ok: Callable[[], bool], within: float) -> bool:
    """Wait (virtual seconds, bounded) for ``ok()``, checked after every change the API sends."""
    done = asyncio.Event()

    def check(_kind: str, _type: str, _obj: dict[str, Any]) -> None:
        if ok():
            done.set()

    api.watch(check)
    try:
        await asyncio.wait_for(done.wait(), within)
    except TimeoutError:
        return False
    return True


async def _figure_1(
    solver_time: SolverTime = "real", limit_s: float | None = None
) -> tuple[dict[str, float], list[str], list[str], float]:
    api = VirtualApiServer(seed=3)
    for name in ("n1", "n2"):
        api.add_node(node_object(name, 4000, 16384))
    api.add_namespace("ns")
    config = SchedulerConfig()
    optimiser = replace(config.optimiser, trigger=Trigger.SCHEDULING_FAILURE)
    if limit_s is not None:
        optimiser = replace(optimiser, solve_time_limit_s=limit_s)
    config = replace(config, optimiser=optimiser)
    opsche = VirtualOpsche(config, api, solver_time)
    await opsche.start()
    try:
        await api.create_replicaset("ns", replicaset("web", 2, "2000m"))
        assert await until(api, lambda: len(running(api, "web-")) == 2, within=10)
        assert sorted(running(api, "web-")) == ["n1", "n2"]  # spread, as kube-scheduler does
        started = api.now()
        await api.create_replicaset("ns", replicaset("big", 1, "4000m"))
        assert await until(api, lambda: bool(running(api, "big-")), within=60)
        took = api.now() - started
        # The moved replica's replacement runs again, beside the other one.
        assert await until(api, lambda: len(running(api, "web-")) == 2, within=30)
        assert opsche.composed is not None
        await asyncio.wait_for(opsche.composed.flow.wait(), 30)  # the run ends, counted
        return await opsche.counters() or {}, running(api, "big-"), running(api, "web-"), took
    finally:
        await opsche.stop()
        await api.close()


def test_a_plan_moves_one_replica_and_places_the_pod_that_fit_nowhere() -> None:
    with asyncio.Runner(loop_factory=virtual_loop) as runner:
        counters, big, web, took = runner.run(_figure_1())
    assert len(big) == 1
    assert sorted(web) == [n for n in ("n1", "n2") if n != big[0]] * 2  # both replicas run again
    assert counters["plan_activations"] == 1
    assert counters["plan_pods_moved"] == 1
    assert counters["plan_pods_evicted"] == 0
    assert counters["plan_pods_placed"] == 1
    assert took < 10  # a failure, one solve, one eviction and a recreated replica: seconds


def test_with_solver_time_limit_a_solve_costs_its_whole_time_limit_in_virtual_time() -> None:
    with asyncio.Runner(loop_factory=virtual_loop) as runner:
        counters, big, _, took = runner.run(_figure_1("limit", limit_s=25.0))
    assert len(big) == 1  # the same plan, placed
    assert counters["plan_pods_placed"] == 1
    # The solve proved its plan optimal in well under a second of real time, but was charged
    # all 25 s before the plan was validated and enforced.
    assert 25 <= took < 35
