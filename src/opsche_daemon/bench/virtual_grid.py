"""``opsche bench replay --backend virtual``: the grid in virtual time, several runs at once.

Each run is one process (``--jobs``, one per core by default): a replay in virtual time is
CPU-bound Python plus CP-SAT, so processes, not tasks, are what use the cores. The grid is the
same as on the real cluster (``bench.replay.plan_grid``: same order, same ``--shard`` slices,
one result file per run, so it resumes), with one difference: there is no kube-scheduler in
virtual time, so the ``kube-scheduler`` runs are opsche with plans off (``--trigger none``),
recorded under the ``kube-scheduler`` label so reports pair them, and marked as standing in for
it (``settings.stands_in_for``; the report says so).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from opsche_daemon.bench.replay import (
    BASELINE,
    GridRun,
    check_resumable,
    existing_result,
    result_path,
    time_left,
)
from opsche_daemon.bench.report import disruptions_per_placed
from opsche_daemon.config import SchedulerConfig, Trigger, decision_settings, load_config
from opsche_daemon.replay.driver import Printer, ReplayOptions
from opsche_daemon.simulation.opsche import SolverTime
from opsche_daemon.trace.model import read_trace
from opsche_daemon.trace.result import SchedulerRun

__all__ = ["default_jobs", "run_virtual_grid", "virtual_config", "virtual_scheduler"]


def default_jobs() -> int:
    """One replay per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def virtual_scheduler(run: SchedulerRun) -> SchedulerRun:
    """The run as the virtual backend records it (the baseline becomes opsche, plans off)."""
    settings = {**run.settings, "backend": "virtual"}
    if run.label == BASELINE:
        return SchedulerRun(
            label=BASELINE,
            scheduler_name="opsche",
            trigger=str(Trigger.NONE),
            blocking=False,
            preemption=True,
            settings={**settings, "stands_in_for": BASELINE},
        )
    return replace(run, settings=settings)


def virtual_config(run: SchedulerRun, base: SchedulerConfig) -> SchedulerConfig:
    """The config of opsche for ``run`` (``virtual_scheduler``'s): the file's, with its flags."""
    config = replace(base, scheduler_name=run.scheduler_name)
    if run.preemption is False:
        config = replace(config, preemption=replace(config.preemption, enabled=False))
    optimiser = replace(
        config.optimiser,
        trigger=Trigger(run.trigger or Trigger.NONE),
        blocking=bool(run.blocking) or config.optimiser.blocking,
    )
    if "period_s" in run.settings:
        optimiser = replace(optimiser, period_s=float(run.settings["period_s"]))
    if "stable_window_s" in run.settings:
        optimiser = replace(optimiser, stable_window_s=float(run.settings["stable_window_s"]))
    return replace(config, optimiser=optimiser)


@dataclass(frozen=True)
class _Job:
    trace_path: Path
    scheduler: SchedulerRun
    output: Path
    options: ReplayOptions
    opsche_config: Path | None
    solver_time: SolverTime


def _run_job(job: _Job) -> tuple[str, float]:
    """One replay in a worker process; returns its summary line and its real seconds."""
    from opsche_daemon.daemon.logs import configure_logging  # noqa: PLC0415
    from opsche_daemon.simulation.run import replay_virtual_to_file  # noqa: PLC0415

    configure_logging("error")  # a worker's per-pod lines would interleave with the progress
    started = time.monotonic()
    config = virtual_config(job.scheduler, load_config(job.opsche_config))
    options = replace(job.options, scheduler=job.scheduler, progress_every_s=1e12)
    result = replay_virtual_to_file(
        read_trace(job.trace_path),
        job.trace_path,
        options,
        config,
        job.output,
        out=lambda _: None,
        solver_time=job.solver_time,
    )
    s = result.summary
    p50 = "n/a" if s.latency_p50_ms is None else f"{s.latency_p50_ms:.0f} ms"
    line = (
        f"usage {s.effective_usage:.2%} (pooled {s.pooled_usage:.2%}), p50 {p50}, "
        f"disruptions {s.disruptions}, solver runs {s.solver_runs}"
    )
    per_placed = disruptions_per_placed(result)
    if per_placed is not None:
        line += f", {per_placed:.2f} evictions per placed pod"
    return line, time.monotonic() - started


def run_virtual_grid(
    runs: Sequence[GridRun],
    out_dir: Path,
    options: ReplayOptions,
    opsche_config: Path | None = None,
    jobs: int | None = None,
    out: Printer = print,
    solver_time: SolverTime = "real",
) -> tuple[int, int]:
    """Run every run whose result is missing, ``jobs`` at a time; return (ran, skipped)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    traces = {path: read_trace(path) for path in {r.trace_path for r in runs}}
    base = load_config(opsche_config)

    def settings(run: GridRun) -> dict[str, Any]:
        return decision_settings(virtual_config(virtual_scheduler(run.scheduler), base))

    check_resumable(
        runs,
        out_dir,
        options,
        traces,
        backend="virtual",
        solver_time=solver_time,
        settings=settings,
    )
    todo = [r for r in runs if existing_result(out_dir, r.trace_path, r.scheduler.label) is None]
    skipped = len(runs) - len(todo)
    if skipped:
        out(f"{skipped} of {len(runs)} runs already have results in {out_dir}; skipping them")
    workers = min(jobs or default_jobs(), max(1, len(todo)))
    if todo:
        out(f"{len(todo)} virtual replays, {workers} at a time")
    took_s: list[float] = []
    context = multiprocessing.get_context("spawn")  # no inherited threads or event loops
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {
            pool.submit(
                _run_job,
                _Job(
                    run.trace_path,
                    virtual_scheduler(run.scheduler),
                    result_path(out_dir, run.trace_path, run.scheduler.label),
                    options,
                    opsche_config,
                    solver_time,
                ),
            ): run
            for run in todo
        }
        try:
            for future in concurrent.futures.as_completed(futures):
                run = futures[future]
                line, took = future.result()
                took_s.append(took)
                done = len(took_s)
                left = time_left(took_s, len(todo) - done, workers)
                out(
                    f"[{done}/{len(todo)}] {run.trace_path.stem} under {run.scheduler.label}: "
                    f"{line} ({took:.0f}s; about {left / 60:.0f} min left)"
                )
        except BaseException:
            _stop_now(pool)
            raise
    return len(todo), skipped


def _stop_now(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """On Ctrl-C or SIGTERM: drop the queued replays and end the running ones at once.

    Leaving the ``with`` block would otherwise wait for every replay in flight, minutes each.
    A worker ended mid-replay loses only that replay: results are written atomically, so its
    run has no result file and a resumed grid runs it again. The executor has no public way to
    stop a running task, so its worker processes are terminated directly.
    """
    workers = list(getattr(pool, "_processes", {}).values())  # CPython's executor internals
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(timeout=10)
