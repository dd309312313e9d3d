"""``opsche bench replay``: every trace under every scheduler configuration, one fresh cluster each.

The grid is the product traces x configurations, in a fixed order. Each run gets a fresh local
cluster of the trace's size (so no run inherits another's pods, events or etcd history), with
kube-scheduler running only in the baseline run and opsche, started here, only in its own runs:
an idle second scheduler still handles every pod event, and on a 2-core machine that would be
measured too. One result file per run, written atomically when the run is complete, makes the
grid resumable (finished runs are skipped) and shardable (``--shard I/N`` takes every N-th run).
"""

from __future__ import annotations

import re
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.daemon_process import start_opsche
from opsche_daemon.localcluster.process import cpu_seconds, machine_busy_seconds
from opsche_daemon.localcluster.versions import load_versions
from opsche_daemon.replay.replayer import Printer, ReplayOptions
from opsche_daemon.replay.run import replay_to_file
from opsche_daemon.trace.model import Trace, read_trace
from opsche_daemon.trace.result import (
    RESULT_SUFFIXES,
    ReplayResult,
    ResultFileError,
    SchedulerRun,
    read_result,
)

__all__ = [
    "BASELINE",
    "TRIGGERS",
    "GridError",
    "GridRun",
    "check_resumable",
    "existing_result",
    "parse_scheduler",
    "plan_grid",
    "result_path",
    "run_grid",
    "time_left",
]

BASELINE = "kube-scheduler"
TRIGGERS = ("periodic", "stable-queue", "scheduling-failure", "none")
_SUFFIXES = ("blocking", "no-preemption")
_TIMED = re.compile(r"(?P<trigger>periodic|stable-queue)-(?P<seconds>\d+(?:\.\d+)?)s")


class GridError(ValueError):
    """A grid that cannot be planned: a bad scheduler label, shard or trace."""


def parse_scheduler(label: str) -> SchedulerRun:
    """``kube-scheduler``, or an opsche trigger with optional -Ns, -blocking, -no-preemption.

    ``periodic``, ``stable-queue-blocking``, ``scheduling-failure-no-preemption``, ``none`` (opsche
    with plans off). Non-blocking with default preemption on is the paper's headline setting.
    ``-Ns`` after ``periodic`` or ``stable-queue`` is the paper's period and window ablation:
    ``periodic-4s`` solves every 4 s, ``stable-queue-16s`` waits for 16 s of an unchanged queue
    (recorded in ``settings`` as ``period_s`` or ``stable_window_s``).
    """
    if label == BASELINE:
        return SchedulerRun(label=label, scheduler_name="default-scheduler")
    rest = label
    flags: set[str] = set()
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if rest.endswith(f"-{suffix}"):
                rest = rest[: -len(suffix) - 1]
                flags.add(suffix)
                changed = True
    settings: dict[str, float] = {}
    timed = _TIMED.fullmatch(rest)
    if timed is not None:
        rest, seconds = timed["trigger"], float(timed["seconds"])
        if seconds <= 0:
            raise GridError(f"scheduler {label!r}: {timed['seconds']}s must be positive")
        settings["period_s" if rest == "periodic" else "stable_window_s"] = seconds
    if rest not in TRIGGERS:
        raise GridError(
            f"scheduler {label!r}: expected {BASELINE} or one of {', '.join(TRIGGERS)}, "
            f"optionally with -Ns (periodic, stable-queue), -blocking and/or -no-preemption"
        )
    return SchedulerRun(
        label=label,
        scheduler_name="opsche",
        trigger=rest,
        blocking="blocking" in flags,
        preemption="no-preemption" not in flags,
        settings=dict(settings),
    )


@dataclass(frozen=True)
class GridRun:
    """One cell of the grid."""

    index: int
    trace_path: Path
    scheduler: SchedulerRun


def result_path(out_dir: Path, trace_path: Path, label: str) -> Path:
    """Where a run's result goes: one compressed file per (trace, configuration)."""
    return out_dir / f"{trace_path.stem}__{label}{RESULT_SUFFIXES[0]}"


def existing_result(out_dir: Path, trace_path: Path, label: str) -> Path | None:
    """The run's finished result, compressed or (as written before compression) plain JSON.

    Results committed as ``.json`` by earlier grids resume as they are, so a directory may hold
    both kinds; a run is done when either exists.
    """
    for suffix in RESULT_SUFFIXES:
        path = out_dir / f"{trace_path.stem}__{label}{suffix}"
        if path.exists():
            return path
    return None


def plan_grid(
    traces: Sequence[Path], labels: Sequence[str], shard: tuple[int, int] = (1, 1)
) -> list[GridRun]:
    """The runs of this shard, traces in the given order, each trace's configurations together."""
    index, count = shard
    if count < 1 or not 1 <= index <= count:
        raise GridError(f"--shard {index}/{count}: expected I/N with 1 <= I <= N")
    stems = [t.stem for t in traces]
    if len(set(stems)) != len(stems):
        raise GridError("two traces have the same file name; results are keyed by it")
    schedulers = [parse_scheduler(label) for label in labels]
    runs = []
    for i, (trace, scheduler) in enumerate((t, s) for t in traces for s in schedulers):
        if i % count == index - 1:
            runs.append(GridRun(i, trace, scheduler))
    return runs


def _opsche_args(scheduler: SchedulerRun, config: Path | None) -> list[str]:
    args = ["--log-level", "info", "--trigger", str(scheduler.trigger)]
    if scheduler.blocking:
        args.append("--blocking")
    if scheduler.preemption is False:
        args.append("--no-preemption")
    if "period_s" in scheduler.settings:
        args += ["--period", f"{scheduler.settings['period_s']:g}"]
    if "stable_window_s" in scheduler.settings:
        args += ["--stable-window", f"{scheduler.settings['stable_window_s']:g}"]
    if config is not None:
        args += ["--config", str(config)]
    return args


def _run_one(
    run: GridRun,
    trace: Trace,
    out_dir: Path,
    options: ReplayOptions,
    opsche_config: Path | None,
    out: Printer,
) -> None:
    baseline = run.scheduler.label == BASELINE
    logs = out_dir / "logs"
    logs.mkdir(exist_ok=True)
    stem = f"{run.trace_path.stem}__{run.scheduler.label}"
    with tempfile.TemporaryDirectory(prefix="opsche-replay-") as tmp:
        state = Path(tmp) / "cluster"
        cluster = LocalCluster(state, load_versions(), out=lambda _line: None)
        spec = ClusterSpec(
            nodes=trace.nodes,
            node_cpu=trace.node.cpu_quantity(),
            node_memory=trace.node.memory_quantity(),
            default_scheduler=baseline,
        )
        daemon = None
        try:
            layout = cluster.up(spec)
            metrics_url = None
            if not baseline:
                daemon = start_opsche(
                    layout.kubeconfig,
                    logs / f"{stem}.opsche.log",
                    _opsche_args(run.scheduler, opsche_config),
                )
                metrics_url = f"http://127.0.0.1:{daemon.port}/metrics"
            run_options = replace(options, scheduler=run.scheduler, metrics_url=metrics_url)
            output = result_path(out_dir, run.trace_path, run.scheduler.label)
            pids = {row.name: row.pid for row in cluster.status()[0] if row.running}
            if daemon is not None:
                pids["opsche"] = daemon.process.pid
            before = _cpu(pids)

            def record_cpu(result: ReplayResult) -> None:
                result.environment["cpu_s"] = _cpu_used(before, _cpu(pids))

            replay_to_file(
                layout.kubeconfig, trace, run.trace_path, run_options, output, out, record_cpu
            )
            if daemon is not None and daemon.process.poll() is not None:
                # A run whose scheduler died is not a result: keep it aside, never resume past it.
                failed = output.with_name(f"{stem}.failed")
                output.replace(failed)
                raise GridError(
                    f"opsche exited with {daemon.process.returncode} during the replay; "
                    f"see {logs / f'{stem}.opsche.log'} (result kept as {failed.name})"
                )
        finally:
            try:
                if daemon is not None:
                    code = daemon.stop()
                    if code not in (0, -15):
                        out(f"  opsche exited with {code}; see {logs / f'{stem}.opsche.log'}")
                kube_log = state / "logs" / "kube-scheduler.log"
                if baseline and kube_log.exists():
                    shutil.copy(kube_log, logs / f"{stem}.kube-scheduler.log")
            finally:
                cluster.down()  # whatever happened above: its processes outlive us otherwise


def _cpu(pids: dict[str, int]) -> dict[str, float | None]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        **{name: cpu_seconds(pid) for name, pid in pids.items()},
        "replayer": usage.ru_utime + usage.ru_stime,
        "machine": machine_busy_seconds(),  # every process, this run's and any other
    }


def _cpu_used(
    before: Mapping[str, float | None], after: Mapping[str, float | None]
) -> dict[str, float]:
    """Each process's CPU seconds over the replay (those seen at both ends): where cores went."""
    used = {}
    for name, start in before.items():
        end = after.get(name)
        if start is not None and end is not None:
            used[name] = round(end - start, 2)
    return used


def check_resumable(
    runs: Sequence[GridRun],
    out_dir: Path,
    options: ReplayOptions,
    traces: dict[Path, Trace],
    backend: str = "cluster",
    solver_time: str | None = None,
    settings: Callable[[GridRun], Mapping[str, Any]] | None = None,
) -> None:
    """Refuse to resume into results made with another time scale, duration, backend or solver time.

    A result is skipped on resume because its file exists; a quick look at ``--time-scale 10``
    (or a virtual-time run) in the same directory would otherwise stand in for the real run, and
    the report would mix them. With ``settings`` (what opsche would decide with, per run, as
    ``config.decision_settings`` gives it), a result must also have recorded the same settings:
    a changed default would otherwise be averaged with the old one.
    """
    for run in runs:
        path = existing_result(out_dir, run.trace_path, run.scheduler.label)
        if path is None:
            continue
        try:
            done = read_result(path)
        except ResultFileError as exc:
            raise GridError(f"{exc}; move it away to run it again") from None
        made_by = str(done.environment.get("backend") or "cluster")
        if made_by != backend:
            raise GridError(f"{path} is a {made_by} run; this grid is {backend}: use another --out")
        charged = str(done.environment.get("solver_time") or "real")
        if solver_time is not None and charged != solver_time:
            raise GridError(
                f"{path} charged solves their {charged} time; this grid asks for "
                f"--solver-time {solver_time}: use another --out"
            )
        trace = traces[run.trace_path]
        if (
            done.time_scale != options.time_scale
            or abs(done.duration_s - options.real_duration(trace)) > 1e-6
        ):
            raise GridError(
                f"{path} was made with time scale {done.time_scale:g} and {done.duration_s:g} s; "
                f"this grid asks for {options.time_scale:g} and "
                f"{options.real_duration(trace):g} s: use another --out"
            )
        if settings is not None:
            problem = _settings_problem(done.environment.get("settings"), settings(run))
            if problem is not None:
                raise GridError(f"{path} {problem}: use another --out")


def _settings_problem(recorded: object, expected: Mapping[str, Any]) -> str | None:
    """How a result's recorded settings differ from this grid's, or None if they do not."""
    if not isinstance(recorded, Mapping):
        return "does not record the settings it was made with (it predates that record)"
    for key in sorted(set(recorded) | set(expected)):
        there, here = recorded.get(key), expected.get(key)
        if isinstance(there, Mapping) and isinstance(here, Mapping):
            inner = _settings_problem(there, here)
            if inner is not None:
                return inner.replace("setting ", f"setting {key}.", 1)
        elif there != here:
            return f"was made with setting {key} = {there!r}; this grid has {here!r}"
    return None


def time_left(took: Sequence[float], remaining: int, workers: int) -> float:
    """Seconds a grid's remaining replays should take: their mean so far, ``workers`` at once.

    Elapsed time over finished replays overstates it early on: when the first of ``workers``
    concurrent replays ends, the others have run as long, so it is counted about ``workers``
    times over (the first estimate of a two-job grid came out near twice the truth).
    """
    if not took or remaining <= 0:
        return 0.0
    return sum(took) / len(took) * remaining / max(1, workers)


def run_grid(
    runs: Sequence[GridRun],
    out_dir: Path,
    options: ReplayOptions,
    opsche_config: Path | None = None,
    out: Printer = print,
) -> tuple[int, int]:
    """Run every run whose result is missing; return (ran, skipped). Ctrl-C stops cleanly."""
    out_dir.mkdir(parents=True, exist_ok=True)
    traces = {path: read_trace(path) for path in {r.trace_path for r in runs}}  # each read once
    check_resumable(runs, out_dir, options, traces)
    todo = [r for r in runs if existing_result(out_dir, r.trace_path, r.scheduler.label) is None]
    skipped = len(runs) - len(todo)
    if skipped:
        out(f"{skipped} of {len(runs)} runs already have results in {out_dir}; skipping them")
    took: list[float] = []
    for n, run in enumerate(todo, 1):
        trace = traces[run.trace_path]
        eta = ""
        if took:
            eta = f", about {time_left(took, len(todo) - n + 1, 1) / 60:.0f} min left"
        out(
            f"[{n}/{len(todo)}] {run.trace_path.stem} under {run.scheduler.label} "
            f"({trace.nodes} nodes, {options.real_duration(trace):.0f}s{eta})"
        )
        started = time.monotonic()
        _run_one(run, trace, out_dir, options, opsche_config, out)
        took.append(time.monotonic() - started)
        out(f"  done in {took[-1]:.0f}s")
    return len(todo), skipped
