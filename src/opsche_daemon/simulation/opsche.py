"""opsche itself, in-process: the daemon's object graph over the virtual API server.

``daemon.compose`` builds exactly what ``opsche run`` builds (framework, queue, scheduler,
preemption, the optimisation flow and its trigger); only three things are plugged differently:
the writer (``VirtualWriter``), the clock (the loop's, virtual under the simulation) and the
intake (the in-process API's watch calls the same ``EventHandlers`` the kopf watch calls). The
tasks are the daemon's: the scheduling loop, the queue flush and the trigger. If one of them dies,
``failed`` says so and the replay stops: a broken scheduler must not look like an idle one.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Literal

from prometheus_client import generate_latest

from opsche_daemon.cache import Cache
from opsche_daemon.config import SchedulerConfig
from opsche_daemon.daemon.compose import Composed, compose
from opsche_daemon.kube.intake import IntakeSink, disruption_budget, workload_selector
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.plans import has_background_task, run_trigger
from opsche_daemon.replay.driver import parse_counters
from opsche_daemon.simulation.apiserver import Listener, Obj, VirtualApiServer
from opsche_daemon.simulation.writer import VirtualWriter

__all__ = ["SolverTime", "VirtualOpsche", "intake"]


def intake(sink: IntakeSink) -> Listener:
    """A ``VirtualApiServer`` listener that feeds ``sink`` as ``kube.intake``'s handlers do."""

    def listener(kind: str, type_: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        deleted = type_ == "DELETED"
        if kind == "Pod":
            pod = Pod.from_api(obj)
            if deleted:
                sink.pod_deleted(pod)
            else:
                sink.pod_changed(pod)
        elif kind == "Node":
            if deleted:
                sink.node_deleted(str(meta.get("name")))
            else:
                sink.node_changed(Node.from_api(obj))
        elif kind == "Namespace":
            sink.namespace_changed(str(meta.get("name")), None if deleted else meta.get("labels"))
        elif kind == "ReplicaSet":
            selector = None if deleted else workload_selector("ReplicaSet", obj)
            sink.workload_changed(
                "ReplicaSet", str(meta.get("namespace")), str(meta.get("name")), selector
            )
        elif kind == "PodDisruptionBudget":
            sink.budget_changed(disruption_budget(obj), deleted=deleted)

    return listener


SolverTime = Literal["real", "limit"]
_CHARGE_STEP_S = 0.01  # how soon a charged solve notices a cancel, as a real one (watcher poll)


class VirtualOpsche:
    """One opsche on one ``VirtualApiServer``.

    ``solver_time`` says what a solve costs on the virtual clock: ``real``, its wall time here
    (the clock follows real time while the solver's thread works), or ``limit``, its full time
    limit however early it stopped: pessimistic, and the same on a fast or a loaded machine.
    """

    def __init__(
        self, config: SchedulerConfig, api: VirtualApiServer, solver_time: SolverTime = "real"
    ) -> None:
        self.config = config
        self.solver_time = solver_time
        self.api = api
        self.metrics = Metrics()
        self.cache = Cache()
        self.composed: Composed | None = None
        self.failed: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Build, sync the cache from the API's current objects, start the daemon's tasks."""
        loop = asyncio.get_running_loop()
        client = self.config.client
        writer = VirtualWriter(self.api, self.config.scheduler_name, client.qps, client.burst)
        composed = compose(self.config, writer, self.cache, self.metrics, clock=loop.time)
        self.composed = composed
        if self.solver_time == "limit":
            composed.flow.after_solve = self._charge_the_limit
        self.failed = loop.create_future()
        self.api.watch(intake(composed.scheduler.events))
        scheduler = composed.scheduler
        self._start("scheduling-loop", scheduler.run())
        self._start("queue-flush", scheduler.flush_loop())
        if has_background_task(self.config.optimiser.trigger):
            self._start("trigger", run_trigger(composed.flow))
        else:
            await run_trigger(composed.flow)  # installs the failure hook, or nothing for none

    async def _charge_the_limit(self, took_s: float) -> None:
        # In steps, so that a cancel (stable-queue) or a shutdown ends the charge as it would
        # end a real solve; each step is a timer, which costs the virtual clock nothing.
        flow = self.composed.flow if self.composed is not None else None
        left = self.config.optimiser.solve_time_limit_s - took_s
        while left > 0 and flow is not None and not (flow.cancel.is_set() or flow.closed):
            step = min(_CHARGE_STEP_S, left)
            await asyncio.sleep(step)
            left -= step

    def _start(self, name: str, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        task.add_done_callback(self._ended)
        self._tasks.append(task)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self.failed is None or self.failed.done():
            return
        error = task.exception()
        self.failed.set_exception(
            RuntimeError(f"opsche's {task.get_name()} task ended: {error!r}")
            if error is not None
            else RuntimeError(f"opsche's {task.get_name()} task ended")
        )

    async def counters(self) -> dict[str, float] | None:
        """The replay's scheduler counters, read from the registry a scrape would read."""
        return parse_counters(generate_latest(self.metrics.registry).decode())

    def solve_seconds(self) -> float:
        """Wall seconds spent solving, model building included (the solve histogram's sum)."""
        total = 0.0
        for family in self.metrics.registry.collect():
            if family.name == "opsche_solve_duration_seconds":
                total += sum(s.value for s in family.samples if s.name.endswith("_sum"))
        return total

    async def stop(self) -> None:
        """The daemon's shutdown: no new run, the queue closed, tasks stopped, binds drained."""
        if self.composed is None:
            return
        self.composed.flow.close()
        self.composed.scheduler.queue.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.composed.flow.wait()
        await self.composed.scheduler.drain()
        if self.failed is not None and not self.failed.done():
            self.failed.cancel()
