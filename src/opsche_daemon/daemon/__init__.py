"""The daemon: the composition root of ``opsche run``.

* ``daemon``: ``Daemon``, which builds every part and runs it (read it first);
* ``tasks``: named, guarded long-lived tasks and the one shutdown path;
* ``server``: ``/metrics``, ``/healthz``, ``/readyz``;
* ``logs``: structured JSON logging;
* ``failpoints``: test-only pauses in the real process;
* ``errors``: ``StartupError``.
"""

from __future__ import annotations

from opsche_daemon.daemon.daemon import Daemon, DaemonOptions, run_daemon
from opsche_daemon.daemon.errors import StartupError
from opsche_daemon.daemon.logs import configure_logging

__all__ = ["Daemon", "DaemonOptions", "StartupError", "configure_logging", "run_daemon"]
