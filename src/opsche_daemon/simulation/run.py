"""One replay in virtual time, from trace to result file.

The event loop is ``looptime``'s (a well-kept asyncio time patcher, written for kopf's tests):
its clock jumps to the next timer whenever nothing is runnable, so a 2 h trace's sleeps take no
real time, while everything opsche computes runs for real. When a thread is busy (``to_thread``:
the CP-SAT solve) the clock instead moves with real time in steps of ``_SYNC_STEP_S``: a 2 s
solve costs 2 virtual seconds, and non-blocking scheduling goes on meanwhile, as on a cluster.

The result is the same file a real replay writes (``trace.result``), marked as virtual in
``environment.backend`` with the latencies it charged, so a report never mistakes one for the
other. ``kube-scheduler`` has no virtual twin: the baseline of a virtual run is opsche with plans
off (``--trigger none``), which the parity test shows decides as kube-scheduler does; its label
says so (``kube-scheduler`` runs are refused here).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import looptime

from opsche_daemon.config import SchedulerConfig, decision_settings
from opsche_daemon.replay.driver import Printer, ReplayError, ReplayOptions, drive
from opsche_daemon.replay.replayer import replicaset_manifest
from opsche_daemon.replay.run import source_commit, trace_info
from opsche_daemon.simulation.apiserver import VirtualApiServer
from opsche_daemon.simulation.cluster import VirtualReplayCluster
from opsche_daemon.simulation.latency import Latencies
from opsche_daemon.simulation.opsche import SolverTime, VirtualOpsche
from opsche_daemon.trace.model import Trace, Workload
from opsche_daemon.trace.result import ReplayResult, write_result

__all__ = ["VIRTUAL_BASELINE", "replay_virtual", "replay_virtual_to_file", "virtual_loop"]

VIRTUAL_BASELINE = "baseline-none"  # opsche --trigger none, standing in for kube-scheduler
_SYNC_STEP_S = 0.001  # how finely the virtual clock follows real time while a thread works
# looptime spins 42 idle loop cycles before each jump of the clock by default, in case a thread or
# socket is about to wake the loop. Here nothing outside the loop can: the only thread is the
# solver's, which looptime tracks by its future and steps real time for. One cycle keeps the jump
# safe and halves a baseline replay (2 h, 16 nodes: 28.9 s -> 13.4 s of real time).
_NOOP_CYCLES = 1


async def replay_virtual(
    trace: Trace,
    info: dict[str, Any],
    options: ReplayOptions,
    config: SchedulerConfig,
    latencies: Latencies | None = None,
    *,
    seed: int = 0,
    out: Printer = print,
    solver_time: SolverTime = "real",
) -> ReplayResult:
    """Replay ``trace`` under opsche (``config``) on a fresh in-process cluster."""
    if options.scheduler.scheduler_name != config.scheduler_name:
        raise ReplayError(
            f"the pods name scheduler {options.scheduler.scheduler_name!r} but opsche is "
            f"{config.scheduler_name!r}; in virtual time opsche schedules every run"
        )
    api = VirtualApiServer(latencies, seed=seed)
    opsche = VirtualOpsche(config, api, solver_time)
    cluster = VirtualReplayCluster(api, trace, options.scheduler.label)
    await opsche.start()
    cluster.scheduler_failed = opsche.failed

    def manifest(workload: Workload) -> dict[str, Any]:
        return replicaset_manifest(workload, trace, config.scheduler_name)

    try:
        result = await drive(
            cluster, trace, info, options, manifest, counters=opsche.counters, out=out
        )
    finally:
        await opsche.stop()
        await api.close()
    result.environment["backend"] = "virtual"
    result.environment["latencies"] = dataclasses.asdict(api.latencies)
    result.environment["bindings"] = api.bindings
    result.environment["solve_s"] = round(opsche.solve_seconds(), 3)
    result.environment["solver_time"] = solver_time
    result.environment["settings"] = decision_settings(config)
    return result


def virtual_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop on the virtual clock (starting at 0), for ``asyncio.Runner``."""
    return looptime.new_event_loop(start=0.0, idle_step=_SYNC_STEP_S, noop_cycles=_NOOP_CYCLES)


def replay_virtual_to_file(
    trace: Trace,
    trace_path: Path,
    options: ReplayOptions,
    config: SchedulerConfig,
    output: Path,
    latencies: Latencies | None = None,
    out: Printer = print,
    solver_time: SolverTime = "real",
) -> ReplayResult:
    """Replay in virtual time and write the result atomically to ``output``."""
    started = time.monotonic()
    with asyncio.Runner(loop_factory=virtual_loop) as runner:
        result = runner.run(
            replay_virtual(
                trace,
                trace_info(trace, trace_path),
                options,
                config,
                latencies,
                out=out,
                solver_time=solver_time,
            )
        )
    result.environment["real_s"] = round(time.monotonic() - started, 3)
    # What the replay's real time went to: solving (charged in virtual time too), the rest.
    result.environment["solve_share"] = round(
        result.environment["solve_s"] / max(result.environment["real_s"], 1e-9), 3
    )
    result.environment.setdefault("cpus", os.cpu_count())
    result.environment.setdefault("python", sys.version.split()[0])
    result.environment.setdefault("machine", platform.machine())
    result.environment.setdefault("source_commit", source_commit())
    write_result(result, output)
    return result
