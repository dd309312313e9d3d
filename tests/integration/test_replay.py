"""A generated trace replayed on the real cluster under kube-scheduler and under opsche.

The replay is short (a few minutes of trace on a compressed clock) but complete: PriorityClasses,
the initial state, ReplicaSets created and deleted on the trace clock, the 1 s monitor, opsche's
counters scraped from its metrics, and everything the replayer made deleted afterwards. The
result files must account for every pod and add up (``check_consistency``).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from kubernetes_asyncio import client

from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import running_opsche
from opsche_daemon.replay.replayer import PRIORITY_CLASS_PREFIX, ReplayOptions, replay
from opsche_daemon.replay.run import trace_info
from opsche_daemon.trace.model import Trace, write_trace
from opsche_daemon.trace.result import DeletionCause, ReplayResult, SchedulerRun
from opsche_daemon.trace.summary import check_consistency
from tests.integration.conftest import NODES, small_trace

TIME_SCALE = 3.0
DURATION_S = 50.0  # real seconds: 150 s of the trace's clock


def _trace() -> Trace:
    return small_trace(seed=7)


async def _leftovers(api: client.ApiClient) -> tuple[list[str], list[str]]:
    namespaces = await client.CoreV1Api(api).list_namespace()
    classes = await client.SchedulingV1Api(api).list_priority_class()
    return (
        [n.metadata.name for n in namespaces.items if n.metadata.name.startswith("replay-")],
        [
            c.metadata.name
            for c in classes.items
            if c.metadata.name.startswith(PRIORITY_CLASS_PREFIX)
        ],
    )


def _assert_complete(trace: Trace, result: ReplayResult) -> None:
    assert check_consistency(trace, result) == []
    assert len(result.samples) >= DURATION_S - 1
    assert all(s.cpu <= 1.0 and s.memory <= 1.0 for s in result.samples)
    arrived = {
        w.name for w in trace.workloads if not w.initial and w.start_s / TIME_SCALE < DURATION_S - 2
    }
    recorded = {p.workload for p in result.pods if not p.initial}
    assert arrived <= recorded, f"workloads with no pod recorded: {sorted(arrived - recorded)}"
    ended = {w.name for w in trace.workloads if w.end_s / TIME_SCALE < DURATION_S - 5}
    for pod in result.pods:
        if pod.workload in ended:  # the trace deleted it: every one of its pods is gone
            assert pod.deleted_s is not None, pod
        if pod.cause is DeletionCause.WORKLOAD_END:
            end = next(w.end_s for w in trace.workloads if w.name == pod.workload)
            assert pod.deleted_s is not None and pod.deleted_s >= end / TIME_SCALE - 0.5
    summary = result.summary
    assert summary.pods_created == sum(1 for p in result.pods if not p.initial)
    assert summary.pods_ran + summary.never_ran == summary.pods_created
    assert 0 < summary.effective_usage <= summary.limit_usage + 0.02
    assert summary.latency_p50_ms is not None and summary.latency_p50_ms > 0


async def test_replay_under_kube_scheduler_and_opsche(
    api: client.ApiClient, local_cluster: Layout, tmp_path: Path
) -> None:
    trace = _trace()
    path = tmp_path / "trace.json"
    write_trace(trace, path)
    info = trace_info(trace, path)
    base = ReplayOptions(
        scheduler=SchedulerRun("kube-scheduler", "default-scheduler"),
        time_scale=TIME_SCALE,
        duration_s=DURATION_S,
        initial_timeout_s=60,
        initial_settle_s=5,
        progress_every_s=10,
    )
    baseline = await replay(api, trace, info, base, print)
    _assert_complete(trace, baseline)
    assert baseline.summary.solver_runs is None
    assert {p.node for p in baseline.pods if p.node} <= {f"kwok-node-{i}" for i in range(NODES)}
    assert await _leftovers(api) == ([], [])

    with running_opsche(
        local_cluster.kubeconfig, tmp_path / "opsche.log", ["--trigger", "periodic"]
    ) as daemon:
        options = replace(
            base,
            scheduler=SchedulerRun("periodic", "opsche", trigger="periodic"),
            metrics_url=f"http://127.0.0.1:{daemon.port}/metrics",
        )
        result = await replay(api, trace, info, options, print)
    _assert_complete(trace, result)
    assert result.summary.solver_runs is not None and result.summary.plan_activations is not None
    assert result.environment["scheduler_counters"]["solver_runs"] == result.summary.solver_runs
    assert await _leftovers(api) == ([], [])
    # Same trace, same clock: both replays saw the same workloads arrive.
    assert {p.workload for p in baseline.pods} == {p.workload for p in result.pods}


def test_replay_refuses_a_cluster_that_does_not_match(
    local_cluster: Layout, tmp_path: Path
) -> None:
    trace = replace(_trace(), nodes=NODES + 1)
    path = tmp_path / "trace.json"
    write_trace(trace, path)
    done = subprocess.run(
        [sys.executable, "-m", "opsche_daemon.cli.main", "trace", "replay", str(path),
         "--kubeconfig", str(local_cluster.kubeconfig), "-o", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"needs {NODES + 1} schedulable nodes, the cluster has {NODES}" in done.stderr
    assert "--nodes 5" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.json").exists()


async def test_ctrl_c_stops_a_replay_and_removes_what_it_made(
    api: client.ApiClient, local_cluster: Layout, tmp_path: Path
) -> None:
    path = tmp_path / "trace.json"
    write_trace(_trace(), path)
    output = tmp_path / "r.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "opsche_daemon.cli.main", "trace", "replay", str(path),
        "--kubeconfig", str(local_cluster.kubeconfig), "-o", str(output),
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    seen: list[str] = []
    async with asyncio.timeout(120):
        while not any("arriving workloads" in line for line in seen):  # arrivals have begun
            line = (await process.stderr.readline()).decode()
            assert line, f"the replay ended early: {seen}"
            seen.append(line)
        namespaces, classes = await _leftovers(api)
        assert len(namespaces) == 1 and classes, "the replay made its namespace and classes"
        process.send_signal(signal.SIGINT)
        rest = (await process.stderr.read()).decode()
        assert await process.wait() == 130, rest
    assert "interrupted" in rest and "Traceback" not in rest
    assert await _leftovers(api) == ([], [])
    assert not output.exists()
