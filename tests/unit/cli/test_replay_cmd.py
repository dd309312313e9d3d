"""``opsche trace replay`` and ``opsche bench replay``: bad input is a message, not a traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from opsche_daemon.cli import replay_cmd
from opsche_daemon.cli.main import main
from opsche_daemon.daemon import logs


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "not JSON"),
        (json.dumps({"format": "opsche-trace/v1", "nodes": 0}), "nodes must be at least 1"),
    ],
)
def test_a_bad_trace_file_is_named_with_its_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    for argv in (
        ["trace", "replay", str(path), "-o", str(tmp_path / "r.json")],
        ["bench", "replay", str(path), "--out", str(tmp_path / "out")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(path) in err and says in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--time-scale", "0"], "--time-scale 0: must be positive"),
        (["--duration", "-1"], "--duration -1: must be positive"),
        (["--schedulers", "kube-scheduler,fastest"], "scheduler 'fastest'"),
        (["--shard", "3/2"], "--shard 3/2"),
    ],
)
def test_bench_replay_checks_its_flags_before_any_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    trace = Path(__file__).parents[3] / "traces" / "samples" / "n4-p1-iat8-15min-seed1.json"
    code = main(["bench", "replay", str(trace), "--out", str(tmp_path / "out"), *argv])
    assert code == 1
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_trace_replay_refuses_an_output_in_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = Path(__file__).parents[3] / "traces" / "samples" / "n4-p1-iat8-15min-seed1.json"
    assert main(["trace", "replay", str(trace), "-o", str(tmp_path / "no" / "r.json")]) == 1
    assert "does not exist" in capsys.readouterr().err


SAMPLE = Path(__file__).parents[3] / "traces" / "samples" / "n4-p1-iat8-15min-seed1.json"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--trigger", "periodic"], "--trigger: opsche's settings apply with --backend virtual"),
        (["--no-preemption"], "--no-preemption: opsche's settings apply with --backend virtual"),
        (["--backend", "virtual", "--time-scale", "2"], "a virtual replay needs none"),
        (["--backend", "virtual", "--metrics-url", "http://x"], "are for --backend cluster"),
        (["--period", "4"], "--period: opsche's settings apply with --backend virtual"),
        (["--solver-time", "limit"], "--solver-time: opsche's settings apply"),
        (["--profile", "p.pstats"], "--profile: opsche's settings apply"),
    ],
)
def test_trace_replay_keeps_each_backends_flags_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code = main(["trace", "replay", str(SAMPLE), "-o", str(tmp_path / "r.json"), *argv])
    assert code == 1
    assert says in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_virtual_replay_writes_a_result_from_one_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command sets process-wide signal handlers and logging; keep them out of the session.
    monkeypatch.setattr(replay_cmd, "_interruptible", lambda: None)
    monkeypatch.setattr(logs, "configure_logging", lambda _level: None)
    out = tmp_path / "r.json"
    argv = ["trace", "replay", str(SAMPLE), "--backend", "virtual", "--trigger", "none"]
    profile = tmp_path / "replay.pstats"
    flags = [
        "--duration",
        "60",
        "--solver-time",
        "limit",
        "--period",
        "4",
        "--profile",
        str(profile),
    ]
    assert main([*argv, *flags, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    last = captured.out.splitlines()[-1]  # after opsche's own lines
    assert last.startswith("none: usage ")
    assert "(to bound " in last  # the latency split at the Binding
    assert "virtual s in" in captured.err
    assert profile.stat().st_size > 0
    assert "function calls" in captured.err  # where the real time went
    written = json.loads(out.read_text())
    environment = written["environment"]
    assert (environment["backend"], environment["solver_time"]) == ("virtual", "limit")
    assert written["scheduler"]["settings"]["period_s"] == 4.0  # a run says how it differed


def test_bench_replay_refuses_jobs_on_the_cluster_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "replay", str(SAMPLE), "--out", str(tmp_path / "o"), "--jobs", "2"])
    assert code == 1
    assert "with --backend virtual only" in capsys.readouterr().err


def test_bench_replay_refuses_solver_time_on_the_cluster_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "replay", str(SAMPLE), "--out", str(tmp_path / "o")]
    assert main([*argv, "--solver-time", "limit"]) == 1
    assert "--solver-time: for --backend virtual only" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-4", "soon", "inf"])
def test_trigger_timing_flags_take_positive_seconds(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--period", value])
    assert exited.value.code == 2
    assert "--period" in capsys.readouterr().err


def test_period_and_window_flags_override_the_config_file() -> None:
    from opsche_daemon.cli.run_cmd import apply_flags
    from opsche_daemon.config import SchedulerConfig

    flags = {"scheduler_name": None, "no_preemption": False, "trigger": None, "blocking": False}
    both = argparse.Namespace(**flags, period=4.0, stable_window=16.0)
    optimiser = apply_flags(SchedulerConfig(), both).optimiser
    assert (optimiser.period_s, optimiser.stable_window_s) == (4.0, 16.0)
    neither = argparse.Namespace(**flags, period=None, stable_window=None)
    assert apply_flags(SchedulerConfig(), neither) == SchedulerConfig()
