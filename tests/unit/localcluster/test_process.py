import sys
import time
from pathlib import Path

from opsche_daemon.localcluster import process


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "sleeper.log"
    argv = [sys.executable, "-c", "import time; print('hello', flush=True); time.sleep(60)"]
    managed = process.start("sleeper", argv, log, tmp_path)
    assert managed.alive()
    assert process.Managed.from_json(managed.to_json()) == managed
    assert process.stop(managed, timeout=5) is True
    assert not managed.alive()
    # Reaped, not left a zombie: a benchmark stops dozens of clusters in one process.
    assert not Path(f"/proc/{managed.pid}").exists()
    assert process.stop(managed) is False  # already gone: nothing to stop


def test_a_recycled_pid_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    managed = process.start(
        "sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], log, tmp_path
    )
    impostor = process.Managed(managed.name, managed.pid, managed.start_ticks + 1, log)
    assert not impostor.alive()
    assert process.stop(impostor) is False
    assert managed.alive(), "stopping the impostor must not touch the real process"
    process.stop(managed)


def test_ignores_sigterm_then_killed(tmp_path: Path) -> None:
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    log = tmp_path / "stubborn.log"
    managed = process.start("stubborn", [sys.executable, "-c", code], log, tmp_path)
    # Wait (bounded) until it has installed its handler, proven by its output.
    deadline = time.monotonic() + 10
    while "ready" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "ready" in log.read_text()
    assert process.stop(managed, timeout=0.5) is True
    assert not managed.alive()
    assert not Path(f"/proc/{managed.pid}").exists()


def test_log_tail_returns_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert process.log_tail(log, 3).splitlines() == ["line 97", "line 98", "line 99"]
    assert "no log" in process.log_tail(tmp_path / "missing.log")
