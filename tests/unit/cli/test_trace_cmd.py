"""``opsche trace generate|show`` end to end on small traces; errors are exit 2, no traceback."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from opsche_daemon.cli import trace_cmd
from opsche_daemon.cli.main import main
from opsche_daemon.trace.model import read_trace

SMALL = ["--nodes", "4", "--hours", "0.25"]


def test_generate_then_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    assert main(["trace", "generate", *SMALL, "--priorities", "4", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    trace = read_trace(out)
    progress = captured.err.splitlines()
    assert len(progress) == len(trace.calibration)
    assert all(line.startswith("calibration ") for line in progress)
    summary = captured.out.splitlines()
    assert len(summary) == 1
    assert summary[0].startswith(f"{out}: {len(trace.workloads)} workloads")
    assert f"after {len(trace.calibration)} iterations" in summary[0]
    assert (trace.nodes, trace.horizon_s, trace.priorities, trace.seed) == (4, 900.0, 4, 1)
    assert trace.achieved_usage is not None
    assert abs(trace.achieved_usage - 0.9) <= 0.009

    assert main(["trace", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "4 nodes of 8000m cpu, 32768Mi memory" in shown
    assert f"calibration: {len(trace.calibration)} iterations" in shown
    assert "100%+" in shown


def test_flags_override_the_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("nodes: 16\nhours: 2\npriorities: {levels: 4}\nseed: 9\n")
    out = tmp_path / "t.json"
    argv = ["trace", "generate", "--config", str(config), *SMALL, "--iat", "4", "--seed", "3"]
    argv += ["--node-cpu", "4", "--node-memory", "16Gi", "--target-usage", "0.8", "-o", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    trace = read_trace(out)
    assert (trace.nodes, trace.priorities, trace.seed, trace.target_usage) == (4, 4, 3, 0.8)
    assert (trace.node.cpu_millis, trace.node.memory_mib) == (4000, 16384)
    assert trace.config["interArrival"] == {
        "meanSeconds": 4.0,
        "minSeconds": 0.0001,
        "maxSeconds": 64.0,  # 16 x the overriding mean
    }
    # The same command twice writes the same file.
    again = tmp_path / "again.json"
    assert main([*argv[:-1], str(again)]) == 0
    assert again.read_text() == out.read_text()


def _error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> list[str]:
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith("calibration ")]
    assert all(line.startswith("opsche: error: ") for line in lines)
    return [line.removeprefix("opsche: error: ") for line in lines]


def test_errors_exit_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-dir" / "t.json"
    assert _error(capsys, ["trace", "generate", *SMALL, "-o", str(missing)]) == [
        f"-o {missing}: directory {missing.parent} does not exist"
    ]
    assert not missing.parent.exists()
    assert _error(capsys, ["trace", "generate", *SMALL, "-o", str(tmp_path)]) == [
        f"-o {tmp_path}: is a directory, expected a file name"
    ]
    out = str(tmp_path / "t.json")
    assert _error(capsys, ["trace", "generate", "--nodes", "0", "--iat", "-3", "-o", out]) == [
        "--nodes (nodes): must be at least 1, got 0",
        "--iat (interArrival.meanSeconds): must be positive, got -3",
    ]
    assert _error(capsys, ["trace", "generate", "--node-memory", "lots", "-o", out]) == [
        "--node-memory (node.memory): 'lots' is not a Kubernetes quantity "
        "(examples: 4, 500m, 16Gi, 1.5G, 1e3)"
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodez: 4\ncpu: {mean: 0.7}\n")
    assert _error(capsys, ["trace", "generate", "--config", str(bad), "-o", out]) == [
        f"{bad}: nodez: unknown key, got 4 (did you mean nodes?)",
        f"{bad}: cpu.mean: must be between min 0.05 and max 0.5, got 0.7",
    ]
    assert not Path(out).exists()


def test_an_explicit_max_inter_arrival_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("interArrival: {maxSeconds: 50}\n")
    out = str(tmp_path / "t.json")
    assert _error(
        capsys, ["trace", "generate", "--config", str(config), "--iat", "60", "-o", out]
    ) == [f"{config}: interArrival.maxSeconds: must be above meanSeconds 60, got 50"]


def test_an_unreachable_target_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("lifetime: {maxSeconds: 10}\n")
    out = tmp_path / "t.json"
    lines = _error(capsys, ["trace", "generate", "--config", str(config), "-o", str(out)], code=1)
    assert len(lines) == 1
    assert "needs a mean lifetime above lifetime.maxSeconds" in lines[0]
    assert "best achieved" in lines[0]
    assert not out.exists()


def test_show_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert _error(capsys, ["trace", "show", str(missing)]) == [
        f"{missing}: cannot read: No such file or directory"
    ]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "opsche-trace/v1", "nodes": 0}))
    assert _error(capsys, ["trace", "show", str(bad)]) == [
        f"{bad}: nodes must be at least 1, got 0"
    ]


def test_register_returns_the_trace_subparsers() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    sub = trace_cmd.register(commands)
    extra = sub.add_parser("replay")
    extra.set_defaults(handler=lambda args: 0)
    args = parser.parse_args(["trace", "replay"])
    assert args.trace_command == "replay"


def test_generate_loads_no_cluster_client_and_no_solver(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    script = (
        "import sys; from opsche_daemon.cli.main import main; code = main(sys.argv[1:]); "
        "heavy = {m.split('.')[0] for m in sys.modules} & "
        "{'kubernetes_asyncio', 'kopf', 'aiohttp', 'kubernetes', 'ortools'}; "
        "print(code, sorted(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "trace", "generate", *SMALL, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "0 []"
