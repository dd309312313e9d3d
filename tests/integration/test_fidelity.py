"""One short trace replayed on the real cluster and in virtual time, under opsche: they must agree.

The virtual-time replay counts only where it agrees with the real cluster (docs/evaluation.md,
"Virtual time": on the 15-minute, 16-node evaluation traces opsche's runs agreed within 0.1 points
of usage). This test keeps that true for every change: the same generated trace (4 nodes, 2
priorities, 2 minutes at scale 1) under opsche's periodic trigger, once on the session's cluster
and once in virtual time, must agree on effective usage within ``USAGE_TOLERANCE_PP`` and on the
mean number of pending pods within ``PENDING_TOLERANCE``. The tolerances are wider than the
evaluation's because two minutes on four nodes is a small sample: a few pods placed a second
apart move usage by tenths of a point.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from kubernetes_asyncio import client

from opsche_daemon.config import SchedulerConfig, Trigger
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import running_opsche
from opsche_daemon.replay.replayer import ReplayOptions, replay
from opsche_daemon.replay.run import trace_info
from opsche_daemon.simulation.run import replay_virtual, virtual_loop
from opsche_daemon.trace.model import Trace, write_trace
from opsche_daemon.trace.result import ReplayResult, SchedulerRun
from opsche_daemon.trace.summary import check_consistency
from tests.integration.conftest import small_trace

DURATION_S = 120.0
USAGE_TOLERANCE_PP = 2.0
PENDING_TOLERANCE = 1.0


def _trace() -> Trace:
    return small_trace(seed=11)


def _virtual(trace: Trace, info: dict[str, object], options: ReplayOptions) -> ReplayResult:
    """The virtual replay on its own loop (a thread: the test's loop is a real one)."""
    config = SchedulerConfig()
    config = replace(config, optimiser=replace(config.optimiser, trigger=Trigger.PERIODIC))
    with asyncio.Runner(loop_factory=virtual_loop) as runner:
        return runner.run(replay_virtual(trace, dict(info), options, config, out=print))


def _mean_pending(result: ReplayResult) -> float:
    return sum(s.pending for s in result.samples) / len(result.samples)


async def test_virtual_time_agrees_with_the_real_cluster_under_opsche(
    api: client.ApiClient, local_cluster: Layout, tmp_path: Path
) -> None:
    trace = _trace()
    path = tmp_path / "trace.json"
    write_trace(trace, path)
    info = trace_info(trace, path)
    options = ReplayOptions(
        scheduler=SchedulerRun("periodic", "opsche", trigger="periodic"),
        duration_s=DURATION_S,
        initial_timeout_s=60,
        initial_settle_s=5,
        progress_every_s=30,
    )
    with running_opsche(
        local_cluster.kubeconfig, tmp_path / "opsche.log", ["--trigger", "periodic"]
    ) as daemon:
        real = await replay(
            api,
            trace,
            info,
            replace(options, metrics_url=f"http://127.0.0.1:{daemon.port}/metrics"),
            print,
        )
    virtual = await asyncio.to_thread(_virtual, trace, info, options)
    assert check_consistency(trace, real) == []
    assert check_consistency(trace, virtual) == []
    assert {p.workload for p in real.pods} == {p.workload for p in virtual.pods}
    gap = (virtual.summary.effective_usage - real.summary.effective_usage) * 100
    print(
        f"usage real {real.summary.effective_usage:.2%}, virtual "
        f"{virtual.summary.effective_usage:.2%} ({gap:+.2f} points); pending "
        f"{_mean_pending(real):.2f} / {_mean_pending(virtual):.2f}"
    )
    assert abs(gap) <= USAGE_TOLERANCE_PP
    assert abs(_mean_pending(real) - _mean_pending(virtual)) <= PENDING_TOLERANCE
