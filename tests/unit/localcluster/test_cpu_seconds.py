"""CPU accounting of a benchmark run: a process's own seconds and the machine's busy seconds."""

from __future__ import annotations

import os
import select
import subprocess
import sys

from opsche_daemon.localcluster.process import cpu_seconds, machine_busy_seconds

# Burns 0.3 s of CPU, says so, then waits for a line before exiting.
_BURN = (
    "import sys, time\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 0.3: pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.readline()\n"
)


def test_a_busy_child_shows_its_cpu_seconds_and_a_gone_one_none() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        ready, _, _ = select.select([child.stdout], [], [], 30)
        assert ready, "the child did not finish burning within 30 s"
        assert child.stdout.readline() == b"burnt\n"
        used = cpu_seconds(child.pid)
        assert used is not None
        assert 0.3 <= used < 10
    finally:
        child.communicate(b"\n", timeout=10)
    assert cpu_seconds(child.pid) is None  # reaped: gone


def test_the_machine_counts_at_least_this_process() -> None:
    mine = cpu_seconds(os.getpid())
    busy = machine_busy_seconds()
    assert mine is not None
    assert busy is not None
    assert busy >= mine
