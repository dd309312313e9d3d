"""``opsche cluster up|status|down`` as a user runs them: a subprocess per command, its own state.

These start a second, small cluster beside the session's one (both on free ports), which also
proves two local clusters can run side by side, as the parity benchmark needs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from opsche_daemon.localcluster.process import Managed

OPSCHE = [sys.executable, "-m", "opsche_daemon.cli.main"]


def opsche(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*OPSCHE, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    state = tmp_path / "state"
    yield state
    opsche("cluster", "down", "--state-dir", str(state))


def recorded_processes(state: Path) -> list[Managed]:
    import json

    data = json.loads((state / "state.json").read_text())
    return [Managed.from_json(p) for p in data["processes"]]


def test_up_is_idempotent_status_reports_and_down_stops_exactly_its_processes(
    state_dir: Path,
) -> None:
    first = opsche("cluster", "up", "--state-dir", str(state_dir), "--nodes", "2")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"export KUBECONFIG={state_dir / 'kubeconfig'}"
    processes = recorded_processes(state_dir)
    assert {p.name for p in processes} == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kwok",
        "kube-scheduler",
    }
    assert all(p.alive() for p in processes)

    # Again, with one more node and without kube-scheduler: same processes, reconciled.
    second = opsche(
        "cluster", "up", "--state-dir", str(state_dir), "--nodes", "3", "--no-default-scheduler"
    )
    assert second.returncode == 0, second.stderr
    assert "already running" in second.stderr
    after = {p.name: p for p in recorded_processes(state_dir)}
    assert "kube-scheduler" not in after
    for p in processes:
        if p.name != "kube-scheduler":
            assert after[p.name] == p, f"{p.name} was restarted"
        else:
            assert not p.alive()

    status = opsche("cluster", "status", "--state-dir", str(state_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "nodes: 3/3 Ready" in status.stdout
    for name in after:
        assert name in status.stdout

    down = opsche("cluster", "down", "--state-dir", str(state_dir))
    assert down.returncode == 0, down.stderr
    assert not any(p.alive() for p in after.values())
    assert not state_dir.exists()


def test_a_taken_port_is_named_and_nothing_is_left_running(state_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = opsche(
            "cluster", "up", "--state-dir", str(state_dir), "--port", f"kube-apiserver={port}"
        )
    assert result.returncode == 1
    assert f"port {port} for kube-apiserver is already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_component_that_exits_is_named_with_its_log_tail(state_dir: Path) -> None:
    # etcd cannot use a data directory that is a regular file: it exits at once.
    state_dir.mkdir(parents=True)
    (state_dir / "etcd").write_text("not a directory")
    result = opsche("cluster", "up", "--state-dir", str(state_dir), "--nodes", "1")
    assert result.returncode == 1
    assert "etcd exited while waiting for etcd" in result.stderr
    assert "Last lines of" in result.stderr
    assert "Traceback" not in result.stderr
    data_processes = recorded_processes(state_dir)
    assert data_processes == [], "a failed up leaves no process behind"


def test_kubeconfig_works_with_the_built_kubectl(state_dir: Path) -> None:
    result = opsche("cluster", "up", "--state-dir", str(state_dir), "--nodes", "1")
    assert result.returncode == 0, result.stderr
    from opsche_daemon.localcluster.build import Builder
    from opsche_daemon.localcluster.versions import cache_root, load_versions

    kubectl = Builder(load_versions(), cache_root()).bin_dir / "kubectl"
    env = dict(os.environ, KUBECONFIG=str(state_dir / "kubeconfig"))
    nodes = subprocess.run(
        [str(kubectl), "get", "nodes", "-o", "name"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert nodes.returncode == 0, nodes.stderr
    assert nodes.stdout.split() == ["node/kwok-node-0"]
