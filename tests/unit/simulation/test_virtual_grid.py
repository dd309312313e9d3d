"""The grid in virtual time: the baseline stands in for kube-scheduler; runs go in parallel."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opsche_daemon.bench.replay import (
    GridError,
    check_resumable,
    existing_result,
    parse_scheduler,
    plan_grid,
    result_path,
    time_left,
)
from opsche_daemon.bench.virtual_grid import run_virtual_grid, virtual_config, virtual_scheduler
from opsche_daemon.config import SchedulerConfig, Trigger, decision_settings
from opsche_daemon.replay.driver import ReplayOptions
from opsche_daemon.trace.model import read_trace
from opsche_daemon.trace.result import SchedulerRun, read_result

TRACES = Path(__file__).parents[3] / "traces" / "samples"


def test_the_virtual_baseline_is_opsche_with_plans_off_under_the_baseline_label() -> None:
    base = virtual_scheduler(parse_scheduler("kube-scheduler"))
    assert (base.label, base.scheduler_name, base.trigger) == ("kube-scheduler", "opsche", "none")
    assert base.settings == {"backend": "virtual", "stands_in_for": "kube-scheduler"}
    config = virtual_config(base, SchedulerConfig())
    assert config.optimiser.trigger is Trigger.NONE
    assert config.preemption.enabled


def test_a_virtual_run_takes_its_labels_flags_over_the_config_file() -> None:
    run = virtual_scheduler(parse_scheduler("stable-queue-blocking-no-preemption"))
    config = virtual_config(run, SchedulerConfig())
    assert config.optimiser.trigger is Trigger.STABLE_QUEUE
    assert config.optimiser.blocking
    assert not config.preemption.enabled
    assert config.scheduler_name == "opsche"


def test_a_virtual_run_takes_its_labels_period_or_window() -> None:
    config = virtual_config(virtual_scheduler(parse_scheduler("periodic-16s")), SchedulerConfig())
    assert (config.optimiser.trigger, config.optimiser.period_s) == (Trigger.PERIODIC, 16.0)
    config = virtual_config(
        virtual_scheduler(parse_scheduler("stable-queue-4s")), SchedulerConfig()
    )
    assert config.optimiser.stable_window_s == 4.0
    assert config.optimiser.period_s == SchedulerConfig().optimiser.period_s


def test_time_left_is_the_mean_replay_times_what_remains_shared_by_the_workers() -> None:
    # The first of two concurrent 300 s replays ends at 300 s: elapsed time over finished runs
    # would say 300 s per run and 10 runs x 300 s = 50 min; two at a time it is 25 min.
    assert time_left([300.0], remaining=10, workers=2) == pytest.approx(1500.0)
    assert time_left([100.0, 300.0], remaining=3, workers=1) == pytest.approx(600.0)
    assert time_left([], remaining=10, workers=2) == 0.0
    assert time_left([300.0], remaining=0, workers=2) == 0.0


def test_a_small_grid_runs_in_parallel_and_resumes(tmp_path: Path) -> None:
    traces = [TRACES / "n4-p1-iat8-15min-seed1.json"]
    runs = plan_grid(traces, ["kube-scheduler", "scheduling-failure"])
    options = ReplayOptions(scheduler=SchedulerRun("", ""), duration_s=120.0)
    lines: list[str] = []
    assert run_virtual_grid(runs, tmp_path, options, jobs=2, out=lines.append) == (2, 0)
    baseline = read_result(result_path(tmp_path, traces[0], "kube-scheduler"))
    opsche = read_result(result_path(tmp_path, traces[0], "scheduling-failure"))
    assert baseline.environment["backend"] == opsche.environment["backend"] == "virtual"
    assert baseline.scheduler.trigger == "none"
    assert opsche.scheduler.trigger == "scheduling-failure"
    assert baseline.duration_s == opsche.duration_s == 120.0
    assert any("2 at a time" in line for line in lines)
    assert sum(line.startswith("[") for line in lines) == 2
    # Resuming skips both; another duration, or a real-cluster directory, is refused.
    assert run_virtual_grid(runs, tmp_path, options, jobs=2, out=lines.append) == (0, 2)
    with pytest.raises(GridError, match="another --out"):
        longer = ReplayOptions(scheduler=SchedulerRun("", ""), duration_s=60.0)
        run_virtual_grid(runs, tmp_path, longer, jobs=1, out=lines.append)
    with pytest.raises(GridError, match="is a virtual run; this grid is cluster"):
        check_resumable(runs, tmp_path, options, {traces[0]: read_trace(traces[0])})
    with pytest.raises(GridError, match="charged solves their real time"):
        run_virtual_grid(runs, tmp_path, options, jobs=1, out=lines.append, solver_time="limit")
    # Each result records what opsche decided with; a grid under other settings is refused.
    assert opsche.environment["settings"] == decision_settings(
        virtual_config(virtual_scheduler(runs[1].scheduler), SchedulerConfig())
    )
    slower = tmp_path / "stall.yaml"
    slower.write_text("optimiser:\n  solveStallSeconds: 0.3\n")
    with pytest.raises(GridError, match=r"optimiser.solve_stall_s = 0.1; this grid has 0.3"):
        run_virtual_grid(runs, tmp_path, options, slower, jobs=1, out=lines.append)


def test_plain_json_results_resume_and_results_without_settings_are_refused(
    tmp_path: Path,
) -> None:
    """Grids committed before compression resume as they are; their settings must be known."""
    traces = [TRACES / "n4-p1-iat8-15min-seed1.json"]
    runs = plan_grid(traces, ["kube-scheduler"])
    options = ReplayOptions(scheduler=SchedulerRun("", ""), duration_s=60.0)
    assert run_virtual_grid(runs, tmp_path, options, jobs=1, out=lambda _: None) == (1, 0)
    packed = result_path(tmp_path, traces[0], "kube-scheduler")
    plain = packed.with_name(packed.name.removesuffix(".gz"))
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    assert existing_result(tmp_path, traces[0], "kube-scheduler") == plain
    assert run_virtual_grid(runs, tmp_path, options, jobs=1, out=lambda _: None) == (0, 1)
    data = json.loads(plain.read_text())
    del data["environment"]["settings"]
    plain.write_text(json.dumps(data))
    with pytest.raises(GridError, match="does not record the settings it was made with"):
        run_virtual_grid(runs, tmp_path, options, jobs=1, out=lambda _: None)


def test_sigterm_stops_a_running_grid_at_once_and_leaves_no_result(tmp_path: Path) -> None:
    """Stopping must not wait for the replays in flight (minutes each); they rerun on resume."""
    trace = TRACES / "n16-p1-iat8-seed1.json"  # 2 h under periodic: minutes of real time
    out = tmp_path / "grid"
    argv = [sys.executable, "-m", "opsche_daemon.cli.main", "bench", "replay", str(trace)]
    argv += ["--backend", "virtual", "--schedulers", "periodic", "--jobs", "1", "--out", str(out)]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as grid:
        assert grid.stdout is not None
        for line in grid.stdout:  # the pool is about to start its worker
            if "virtual replays, 1 at a time" in line:
                break
        else:
            pytest.fail(f"the grid never started (exit {grid.wait(10)})")
        workers = _workers(grid.pid, within=30.0)
        started = time.monotonic()
        grid.send_signal(signal.SIGTERM)
        assert grid.wait(timeout=30) != 0
        took = time.monotonic() - started
    assert took < 15, f"the grid took {took:.1f}s to stop"
    assert [pid for pid in workers if _alive(pid)] == []
    assert [*out.glob("*.json"), *out.glob("*.json.gz")] == []


def _workers(parent: int, within: float) -> list[int]:
    """The grid's worker processes (children running multiprocessing's spawn_main)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                cmdline = (stat.parent / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue  # the process went away meanwhile
            if ppid == parent and b"spawn_main" in cmdline:
                found.append(int(stat.parent.name))
        if found:
            return found
        time.sleep(0.1)  # a process appearing has no event to await
    raise AssertionError(f"no worker process within {within}s")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
