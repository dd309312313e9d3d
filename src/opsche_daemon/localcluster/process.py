"""Start, identify and stop the control-plane processes by PID, never by name.

``opsche cluster down`` must stop exactly the processes ``up`` started, even if the user runs other
etcd or kube-apiserver processes on the same machine, and must not kill an unrelated process that
inherited a recycled PID. So each process is recorded with its PID *and* its start time in clock
ticks (field 22 of ``/proc/PID/stat``); a PID whose start time differs is not ours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Managed", "cpu_seconds", "log_tail", "machine_busy_seconds", "start", "stop"]


@dataclass(frozen=True)
class Managed:
    """A process started by ``up``: enough to find it again and tell it from a recycled PID."""

    name: str
    pid: int
    start_ticks: int
    log: Path

    def alive(self) -> bool:
        """True while this very process runs (not a zombie, not a reused PID)."""
        return _start_ticks(self.pid) == self.start_ticks

    def to_json(self) -> dict[str, Any]:
        """The state-file form."""
        return {
            "name": self.name,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "log": str(self.log),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Managed:
        """Inverse of ``to_json``."""
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),
            start_ticks=int(data["start_ticks"]),
            log=Path(data["log"]),
        )


def _start_ticks(pid: int) -> int | None:
    """Start time of a live, non-zombie process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time the process has used so far, or None if it is gone.

    A benchmark reads it before and after a run for every component, so a run says which process
    the machine's cores went to (fields 14 and 15 of ``/proc/PID/stat``, in clock ticks).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores have spent busy since boot (``/proc/stat``), or None off Linux.

    Beside the components' own seconds it shows what else the machine was doing during a run.
    """
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


# Children this process started, by PID, until reaped (see ``start``).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def start(name: str, argv: list[str], log: Path, cwd: Path) -> Managed:
    """Start ``argv`` detached from our session with output appended to ``log``.

    A new session keeps the component alive after the ``opsche cluster up`` command returns and
    keeps a Ctrl-C in the user's terminal from reaching it.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        handle.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
        handle.flush()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    ticks = _start_ticks(proc.pid)
    if ticks is None:  # it died at once; keep a record so the caller reports its log
        ticks = -1
    # We do not wait() here; a dead child would stay a zombie until we exit (or ``stop`` reaps
    # it), which _start_ticks already treats as "not alive". The handle is kept, not dropped:
    # a Popen collected while its child runs warns (ResourceWarning), and reaping through it
    # keeps its returncode true.
    _CHILDREN[proc.pid] = proc
    return Managed(name=name, pid=proc.pid, start_ticks=ticks, log=log)


def stop(process: Managed, timeout: float = 15.0) -> bool:
    """SIGTERM, wait up to ``timeout`` s, then SIGKILL. Returns False if it was not running."""
    if not process.alive():
        _reap(process.pid)
        return False
    _signal(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            # Reap after the check: it may have exited (as a zombie) between a reap and it.
            _reap(process.pid)
            return True
        time.sleep(0.05)
    _signal(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while process.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    _reap(process.pid)
    return True


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie (no-op for others)."""
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is not None:
            del _CHILDREN[pid]
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def log_tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a component's log, for error messages."""
    try:
        with log.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode(errors="replace")
    except OSError:
        return f"(no log at {log})"
    return "\n".join(text.splitlines()[-lines:])
