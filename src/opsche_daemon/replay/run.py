"""One replay from start to result file: a client from a kubeconfig, the replay, the file.

Shared by ``opsche trace replay`` (any cluster) and ``opsche bench replay`` (a fresh local
cluster per run), so both write exactly the same result.
"""

from __future__ import annotations

import asyncio
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opsche_daemon.kube.client import api_client
from opsche_daemon.replay.replayer import Printer, ReplayOptions, replay
from opsche_daemon.trace.model import Trace
from opsche_daemon.trace.result import ReplayResult, write_result

__all__ = ["replay_to_file", "trace_info"]


def trace_info(trace: Trace, path: Path) -> dict[str, Any]:
    """What a result records about its trace: enough to group and pair runs without the file."""
    return {
        "name": path.stem,
        "path": str(path),
        "nodes": trace.nodes,
        "node": {"cpu_millis": trace.node.cpu_millis, "memory_mib": trace.node.memory_mib},
        "priorities": trace.priorities,
        "mean_interarrival_s": trace.mean_interarrival_s,
        "seed": trace.seed,
        "horizon_s": trace.horizon_s,
        "workloads": len(trace.workloads),
        "pods": trace.pods(),
        "mean_lifetime_s": trace.mean_lifetime_s,
        "achieved_usage": trace.achieved_usage,
    }


async def _replay(
    kubeconfig: Path | None,
    trace: Trace,
    info: dict[str, Any],
    options: ReplayOptions,
    out: Printer,
) -> ReplayResult:
    api = await api_client(kubeconfig, pool_size=32)
    async with api:
        return await replay(api, trace, info, options, out)


def source_commit() -> str | None:
    """The git commit of the opsche source that ran, when it runs from a checkout (else None).

    Results outlive the code that made them; a report that mixes runs of two commits must say so.
    """
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def replay_to_file(
    kubeconfig: Path | None,
    trace: Trace,
    trace_path: Path,
    options: ReplayOptions,
    output: Path,
    out: Printer = print,
    finish: Callable[[ReplayResult], None] | None = None,
) -> ReplayResult:
    """Replay and write the result atomically to ``output``; Ctrl-C leaves no file behind.

    ``finish`` may add to the result once the replay is over, before it is written (the
    benchmark's CPU accounting).
    """
    result = asyncio.run(_replay(kubeconfig, trace, trace_info(trace, trace_path), options, out))
    if finish is not None:
        finish(result)
    result.environment.setdefault("cpus", os.cpu_count())
    result.environment.setdefault("python", sys.version.split()[0])
    result.environment.setdefault("machine", platform.machine())
    result.environment.setdefault("source_commit", source_commit())
    # Replays run in real time: another busy process on the machine shows in latency, so the
    # load at the end is kept with the numbers it may have touched.
    result.environment.setdefault("loadavg_1_5_15", [round(x, 2) for x in os.getloadavg()])
    write_result(result, output)
    return result
