"""The solver seam: ``solve(problem, deadline, cancel) -> Solution``, interruptible at any time.

A solver runs in a worker thread (``asyncio.to_thread``); the event loop keeps scheduling. It
must return by ``deadline`` (``time.monotonic()`` seconds) and as soon as possible after
``cancel`` is set, with the best solution found so far — never worse than the current state,
which is always a valid solution.
"""

from __future__ import annotations

import threading
from typing import Protocol

from opsche_daemon.optimiser.problem import Problem, Solution

__all__ = ["Solver"]


class Solver(Protocol):
    """Anything that turns a Problem into a Solution within a deadline."""

    @property
    def name(self) -> str:
        """``cpsat`` or ``heuristic``."""
        ...

    def solve(self, problem: Problem, deadline: float, cancel: threading.Event) -> Solution:
        """The best solution found by ``deadline`` (monotonic seconds) or cancellation."""
        ...
