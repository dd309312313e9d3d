"""The composition root: builds every part, runs them as named guarded tasks, shuts down cleanly.

Nothing else wires components together, so the object graph of a running opsche can be read here
top to bottom: ``Daemon.run`` makes the ``Writer`` (rate-limited API writes) and
``daemon.compose`` builds the rest over it, the one builder the virtual-time replay shares:

    Writer -> KubeBinder (the scheduler's API side)
    Framework (default plugins + DefaultPreemption + the plan plugins over one PlanState)
    SchedulingQueue (its PreEnqueue is the framework's) -> Scheduler (cycle) + EventHandlers
    OptimizationFlow (Algorithm 1) + its trigger

``Daemon.run`` then connects, syncs the cache, starts the tasks (watch, scheduling loop, queue
flush, trigger) and waits for a signal or for any of them to end; SIGTERM/SIGINT and a task
failure take the same single shutdown path.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kopf
import structlog
from aiohttp import web
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from opsche_daemon.cache import Cache
from opsche_daemon.config import SchedulerConfig
from opsche_daemon.daemon.compose import compose
from opsche_daemon.daemon.errors import StartupError
from opsche_daemon.daemon.failpoints import FailpointError, parse_failpoints
from opsche_daemon.daemon.logs import configure_logging
from opsche_daemon.daemon.server import serve_http
from opsche_daemon.daemon.tasks import Supervisor
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.kube.client import api_client
from opsche_daemon.kube.intake import build_registry, initial_sync
from opsche_daemon.kube.writer import Writer
from opsche_daemon.metrics import Metrics
from opsche_daemon.plans import has_background_task, run_trigger
from opsche_daemon.scheduler import Scheduler

__all__ = ["Daemon", "DaemonOptions", "run_daemon"]

log = structlog.get_logger("opsche.daemon")


@dataclass(frozen=True)
class DaemonOptions:
    """What ``opsche run`` was asked for, beyond the config file."""

    kubeconfig: Path | None
    metrics_address: str = "0.0.0.0"  # noqa: S104 - Prometheus scrapes the pod from outside
    metrics_port: int | None = None
    log_level: str = "info"


class Daemon:
    """One running opsche: its parts and their tasks."""

    def __init__(self, config: SchedulerConfig, options: DaemonOptions) -> None:
        self.config = config
        self.options = options
        self.metrics = Metrics()
        self.cache = Cache()
        self.ready = False
        self.framework: Framework | None = None
        self.scheduler: Scheduler | None = None
        try:
            self.failpoints = parse_failpoints(os.environ)
        except FailpointError as exc:
            raise StartupError(str(exc)) from None

    def _build(self, writer: Writer) -> Scheduler:
        composed = compose(
            self.config,
            writer,
            self.cache,
            self.metrics,
            before_validate=self.failpoints.get("before-validate"),
        )
        self.framework = composed.framework
        self.scheduler = composed.scheduler
        self.flow = composed.flow
        self.plan_state = composed.plan_state
        return composed.scheduler

    async def run(self) -> int:
        """Run until a signal or a task failure; returns the exit code."""
        # The CLI imports OR-Tools only when CP-SAT runs; the daemon loads it now, or the first
        # plan would spend up to a second of its solve budget importing it (seen as an empty
        # first plan with solveTimeLimitSeconds: 1).
        importlib.import_module("opsche_daemon.optimiser.cpsat")
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        kubeconfig = self.options.kubeconfig
        if kubeconfig is not None:
            # kopf's built-in login reads $KUBECONFIG; point it at the same file we use.
            os.environ["KUBECONFIG"] = str(kubeconfig)
        api = await api_client(kubeconfig, pool_size=max(64, self.config.bind_workers * 2))
        writer = Writer(
            api,
            scheduler_name=self.config.scheduler_name,
            qps=self.config.client.qps,
            burst=self.config.client.burst,
        )
        scheduler = self._build(writer)
        runner: web.AppRunner | None = None
        port = (
            self.options.metrics_port
            if self.options.metrics_port is not None
            else self.config.metrics_port
        )
        try:
            runner = await serve_http(
                self.metrics.registry, lambda: self.ready, self.options.metrics_address, port
            )
            await self._sync(api, scheduler)
            code = await self._supervise(scheduler, stop)
            await scheduler.drain()
            await writer.drain_events()
        finally:
            self.ready = False
            if runner is not None:
                await runner.cleanup()
            await api.close()
        log.info("opsche stopped", scheduled=scheduler.scheduled)
        return code

    async def _sync(self, api: ApiClient, scheduler: Scheduler) -> None:
        try:
            nodes, pods = await initial_sync(api, scheduler.events)
        except (TimeoutError, OSError, ApiException) as exc:
            raise StartupError(
                f"cannot list the cluster's nodes and pods from {api.configuration.host}: {exc}"
            ) from None
        log.info("cache synced", nodes=nodes, pods=pods, pending=len(scheduler.queue.pending()))

    async def _supervise(self, scheduler: Scheduler, stop: asyncio.Event) -> int:
        """Run the named tasks until a signal or until one of them ends; then stop them all."""
        kopf_stop: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        tasks = Supervisor()
        tasks.start(
            "watch",
            kopf.operator(
                registry=build_registry(scheduler.events),
                clusterwide=True,
                standalone=True,
                stop_flag=kopf_stop,
            ),
        )
        tasks.start("scheduling-loop", scheduler.run())
        tasks.start("queue-flush", scheduler.flush_loop())
        if has_background_task(self.config.optimiser.trigger):
            tasks.start("trigger", run_trigger(self.flow))
        else:
            await run_trigger(self.flow)  # installs the failure hook, or nothing for none
        self.ready = True
        log.info("opsche is running", scheduler_name=self.config.scheduler_name)
        code = 0
        for ended in await tasks.first_to_end(stop):
            if ended.signal or (ended.name == "watch" and ended.error is None):
                # kopf installs its own SIGTERM/SIGINT handlers and returns cleanly on them.
                log.info("shutting down on signal")
                continue
            log.error("task ended unexpectedly; stopping", task=ended.name, error=repr(ended.error))
            code = 1
        self.ready = False
        if not kopf_stop.done():
            kopf_stop.set_result(None)
        tasks.cancel("scheduling-loop", "queue-flush", "trigger")
        self.flow.close()  # no new run (a deferred preemptor's included), the current one stops
        scheduler.queue.close()
        await tasks.join("watch", within=10)
        return code


def run_daemon(config: SchedulerConfig, options: DaemonOptions) -> int:
    """Entry point used by ``opsche run``."""
    configure_logging(options.log_level)
    return asyncio.run(Daemon(config, options).run())
