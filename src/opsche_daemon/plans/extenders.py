"""Plans respect scheduler extenders: their filters narrow where each group may go, once per solve.

A plan that placed a pod on a node an extender refuses would be enforced in vain: the pod's
scheduling cycle asks the same extender and fails, and the plan times out after its moves and
evictions were made. So the problem is built with an ``extra_filter`` that asks every interested
filter extender about each group's first pod, with the group's statically feasible nodes as the
candidates, as the scheduling cycle would ask (only extenders interested in the pod, in order).

The calls count against the solve's time limit (the problem is built inside it): an extender
that answers in milliseconds costs a few per group. The problem is built in the solver's worker
thread; the HTTP calls run on the event loop, which
the thread waits for (``run_coroutine_threadsafe``), so the scheduler's own extender calls and
these share one client and one connection pool. Failures are handled as the cycle would, with
one difference that keeps a solve bounded: an extender that fails once is not asked again in the
same solve. An ignorable one then accepts every node (the cycle would skip it too); for a
non-ignorable one the group may not be placed or moved anywhere new (the cycle would fail the
pod), so a plan never counts on a node the extender might refuse.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Collection, Sequence

import structlog

from opsche_daemon.framework.extender import Extender, ExtenderError
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.optimiser.problem import ExtraFilter

__all__ = ["extender_filter"]

log = structlog.get_logger("opsche.plans")


class _PerSolve:
    """The filter for one solve: remembers the extenders that failed during it."""

    def __init__(
        self,
        extenders: Sequence[Extender],
        loop: asyncio.AbstractEventLoop,
        cancel: threading.Event,
        bound_s: float,
    ) -> None:
        self.extenders = list(extenders)  # the filter extenders
        self.loop = loop
        self.cancel = cancel
        self.bound_s = bound_s
        self.failed: set[str] = set()

    def __call__(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Collection[str]:
        accepted = [n.name for n in nodes]
        for extender in self.extenders:
            if not accepted:
                break
            if self.cancel.is_set():
                return ()  # the run is over (cancelled, shutting down): place nothing new
            if extender.name in self.failed:
                if not extender.ignorable:
                    return ()
                continue
            keep = set(accepted)
            candidates = [n for n in nodes if n.name in keep]
            try:
                accepted = self._ask(extender, pod, candidates)
            except ExtenderError as error:
                self.failed.add(extender.name)
                log.warning(
                    "extender failed while a plan was computed",
                    extender=extender.name,
                    pod=pod.key,
                    ignorable=extender.ignorable,
                    error=str(error),
                )
                if not extender.ignorable:
                    return ()
        return accepted

    def _ask(self, extender: Extender, pod: Pod, nodes: Sequence[NodeInfo]) -> list[str]:
        async def call() -> list[str]:
            if not extender.is_interested(pod):
                return [n.name for n in nodes]
            result = await extender.filter(
                pod, nodes
            )  # failures reach the caller, ignorable or not
            return list(result.nodes)

        future = asyncio.run_coroutine_threadsafe(call(), self.loop)
        try:
            # The extender's own httpTimeout bounds the call; this bound only guards a loop
            # that stopped running (shutdown) from leaving the solver thread waiting forever.
            return future.result(timeout=self.bound_s)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise ExtenderError(
                f"no answer from the event loop within {self.bound_s:g}s", "timeout"
            ) from exc


def extender_filter(extenders: Sequence[Extender], cancel: threading.Event) -> ExtraFilter | None:
    """A fresh filter for one solve (call it on the event loop), or None without extenders.

    ``cancel`` is the run's: once set, no extender is asked any more. The solver thread waits a
    little longer than the longest ``httpTimeout`` for the loop to answer.
    """
    filters = [e for e in extenders if e.is_filter]
    if not filters:
        return None
    bound_s = max(e.timeout_s for e in filters) + 5.0
    return _PerSolve(filters, asyncio.get_running_loop(), cancel, bound_s)
