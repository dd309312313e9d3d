"""Run ``opsche run`` as a child process against a local cluster, and wait until it is ready.

The benchmark, the demo and the integration tests all need a real opsche daemon beside a local
cluster, started the way a user starts it; this is the one place that does it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DaemonProcess",
    "DaemonStartError",
    "free_port",
    "running_opsche",
    "start_opsche",
    "wait_until_ready",
]


class DaemonStartError(RuntimeError):
    """The daemon exited or did not become ready; the message ends with its log tail."""


@dataclass
class DaemonProcess:
    """A started daemon: its process, metrics port and log file."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the daemon's log, for failure messages."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait; SIGKILL if it does not stop in ``timeout`` seconds. Returns the code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                return self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
                raise DaemonStartError(f"opsche did not stop within {timeout:.0f}s") from None
        return int(self.process.returncode)


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (for a process to listen on)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_opsche(
    kubeconfig: Path,
    log: Path,
    args: Sequence[str] = (),
    ready_within: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> DaemonProcess:
    """Start ``opsche run`` serving metrics on a free loopback port; return once /readyz is 200.

    ``env`` adds to this process's environment (the tests' failpoints).
    """
    port = free_port()
    argv = [
        sys.executable, "-m", "opsche_daemon.cli.main", "run",
        "--kubeconfig", str(kubeconfig),
        "--metrics-address", "127.0.0.1", "--metrics-port", str(port),
        *args,
    ]  # fmt: skip
    with log.open("wb") as handle:
        process = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    return wait_until_ready(DaemonProcess(process, port, log), ready_within)


def wait_until_ready(daemon: DaemonProcess, within: float = 60.0) -> DaemonProcess:
    """Return once the daemon's /readyz answers 200; stop it and raise if it exits or times out.

    There is no event to await from another process: /readyz is the daemon's own signal.
    """
    process = daemon.process
    deadline = time.monotonic() + within
    url = f"http://127.0.0.1:{daemon.port}/readyz"
    while True:
        if process.poll() is not None:
            raise DaemonStartError(f"opsche exited with {process.returncode}:\n{daemon.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return daemon
        except OSError:
            pass
        if time.monotonic() > deadline:
            daemon.stop()
            raise DaemonStartError(f"opsche not ready after {within:.0f}s:\n{daemon.log_tail()}")
        time.sleep(0.1)


@contextmanager
def running_opsche(
    kubeconfig: Path, log: Path, args: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> Iterator[DaemonProcess]:
    """``start_opsche`` as a context manager that stops the daemon on exit."""
    daemon = start_opsche(kubeconfig, log, args, env=env)
    try:
        yield daemon
    finally:
        daemon.stop()
