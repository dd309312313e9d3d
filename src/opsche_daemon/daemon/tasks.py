"""Named, guarded long-lived tasks: the first to end (or a stop signal) stops the daemon.

A scheduler whose watch died, or whose loop raised, must not look alive: it would keep answering
``/healthz`` while placing nothing. So every long-lived coroutine runs as a named task here, the
daemon waits for the first of them (or the signal) to end, logs how each ended, and stops the
rest on one path. No anonymous ``create_task`` in the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

__all__ = ["Ended", "Supervisor"]


@dataclass(frozen=True)
class Ended:
    """A task that ended: its name, and its exception (None if it returned or was the signal)."""

    name: str
    error: BaseException | None
    signal: bool = False


class Supervisor:
    """Starts named tasks, waits for the first to end, stops the others."""

    SIGNAL = "signal"

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._started = asyncio.Event()  # a task started while ``first_to_end`` waits

    def start(self, name: str, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as the task ``name`` (names are unique); also while being waited on.

        A replica starts its scheduling tasks only once it leads, long after the wait began.
        """
        if name in self._tasks:
            raise ValueError(f"a task named {name} is already running")
        self._tasks[name] = asyncio.get_running_loop().create_task(coro, name=name)
        self._started.set()

    async def first_to_end(self, stop: asyncio.Event) -> list[Ended]:
        """Wait until ``stop`` is set or a task ends; what ended (one or more at once)."""
        loop = asyncio.get_running_loop()
        stopper = loop.create_task(stop.wait(), name=self.SIGNAL)
        while True:
            self._started.clear()
            started = loop.create_task(self._started.wait())
            done, _ = await asyncio.wait(
                {stopper, started, *self._tasks.values()}, return_when=asyncio.FIRST_COMPLETED
            )
            started.cancel()
            done.discard(started)
            if done:
                break
        stopper.cancel()
        ended = []
        for task in done:
            if task is stopper:
                ended.append(Ended(self.SIGNAL, None, signal=True))
            else:
                error = None if task.cancelled() else task.exception()
                ended.append(Ended(task.get_name(), error))
        return ended

    def cancel(self, *names: str) -> None:
        """Cancel the named tasks that exist (a trigger task, say, runs only for some triggers)."""
        for name in names:
            task = self._tasks.get(name)
            if task is not None:
                task.cancel()

    async def join(self, name: str, within: float) -> None:
        """Wait (bounded) for a task asked to stop by other means; its end is not an error."""
        task = self._tasks.get(name)
        if task is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, timeout=within)
