"""Commands that need no cluster load no cluster client: checked in a fresh interpreter.

``opsche solve`` is a pure computation on a file, and a bad config file is rejected before the
daemon (kopf, aiohttp, the Kubernetes client) is imported. A module imported at the top of any
``cli/*_cmd.py`` would show up here, since the entry module imports them all. Checking a config
file does not even load the solver (OR-Tools and its numpy/pandas take about a second).
"""

import json
import subprocess
import sys
from pathlib import Path

from opsche_daemon.model.snapshot_file import dump_snapshot

HEAVY = ("kubernetes_asyncio", "kopf", "aiohttp", "kubernetes")
WATCHED = (*HEAVY, "ortools")
SCRIPT = f"""
import json, sys
from opsche_daemon.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({WATCHED!r}))
print(json.dumps({{"code": code, "heavy": heavy}}))
"""


def _run(*argv: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    return result["code"], result["heavy"], done.stdout + done.stderr


def _snapshot(path: Path) -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    pending = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "schedulerName": "opsche",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    }
    dump_snapshot(path, nodes=[node], pods=[pending])


def test_solve_loads_no_kubernetes_client_kopf_or_aiohttp(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    _snapshot(path)
    code, heavy, output = _run("solve", str(path), "--time-limit", "1")
    assert code == 0, output
    assert "PLACE  ns/p -> n1" in output
    assert heavy == ["ortools"]  # CP-SAT solved it; nothing else was loaded


def test_a_bad_config_is_rejected_before_the_daemon_is_imported(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("profile: {disabled: [ImageLocalty]}\n")
    code, heavy, output = _run("run", "--config", str(path), "--kubeconfig", "/nonexistent")
    assert code == 2, output
    assert "unknown plugin 'ImageLocalty'" in output
    assert heavy == []


def test_checking_a_config_file_loads_neither_the_daemon_nor_the_solver(tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text("optimiser: {trigger: periodic}\nprofile: {disabled: [ImageLocality]}\n")
    code, heavy, output = _run("config", "check", str(path))
    assert code == 0, output
    assert heavy == []
