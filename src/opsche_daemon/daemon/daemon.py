"""The composition root: builds every part, runs them as named guarded tasks, shuts down cleanly.

Nothing else wires components together, so the object graph of a running opsche can be read here
top to bottom. Every long-lived coroutine is a named task whose end is logged; if any of them ends
unexpectedly the daemon stops (a scheduler with a dead watch or a dead loop must not look alive),
and SIGTERM/SIGINT take the same single shutdown path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kopf
import structlog
from aiohttp import web
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from opsche_daemon.cache import Cache
from opsche_daemon.config import SchedulerConfig
from opsche_daemon.daemon.failpoints import FailpointError, parse_failpoints
from opsche_daemon.framework.interface import Plugin, PostFilterResult
from opsche_daemon.framework.plugins.default_preemption import DefaultPreemption
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.kube.client import api_client
from opsche_daemon.kube.intake import build_registry, initial_sync
from opsche_daemon.kube.writer import Writer
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.pod import Pod
from opsche_daemon.plan.plugins import PlanState, plan_plugins
from opsche_daemon.queue import QueueSettings, SchedulingQueue
from opsche_daemon.scheduler import Binder, Scheduler
from opsche_daemon.triggers import FlowSettings, OptimizationFlow, run_trigger

__all__ = [
    "DaemonOptions",
    "StartupError",
    "configure_logging",
    "is_protected",
    "run_daemon",
]

log = structlog.get_logger("opsche.daemon")

OPT_OUT_ANNOTATION = "opsche.dev/evictable"


@dataclass(frozen=True)
class DaemonOptions:
    """What ``opsche run`` was asked for, beyond the config file."""

    kubeconfig: Path | None
    metrics_address: str = "0.0.0.0"  # noqa: S104 - Prometheus scrapes the pod from outside
    metrics_port: int | None = None
    log_level: str = "info"


def configure_logging(level: str) -> None:
    """Structured JSON logs on stderr: ISO UTC timestamps, level, logger, event and context."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    # Client libraries log request bodies at debug level: far too much, even for debugging opsche.
    for noisy in ("kubernetes_asyncio", "aiohttp", "kopf", "asyncio"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def is_protected(pod: Pod) -> bool:
    """Pods opsche never evicts or moves: kube-system, DaemonSet and mirror pods, opted-out pods."""
    return (
        pod.namespace == "kube-system"
        or pod.is_daemonset
        or pod.is_mirror
        or pod.annotations.get(OPT_OUT_ANNOTATION) == "false"
    )


class StartupError(RuntimeError):
    """The daemon cannot start (port taken, API server unreachable); the message says why."""


class KubeBinder(Binder):
    """The scheduler's API side, over the rate-limited writer."""

    def __init__(self, writer: Writer, respect_pdbs: bool) -> None:
        self.writer = writer
        self.respect_pdbs = respect_pdbs

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST the Binding."""
        await self.writer.bind(pod, node_name)

    def event(self, pod: Pod, reason: str, note: str, *, type_: str = "Normal") -> None:
        """Post an event in the background."""
        self.writer.event(pod, reason, note, type_=type_)

    async def set_unschedulable(self, pod: Pod, message: str, nominated_node: str | None) -> None:
        """PodScheduled=False with the FailedScheduling message (and nominatedNodeName)."""
        await self.writer.set_unschedulable(pod, message, nominated_node)

    async def preempt(self, preemptor: Pod, result: PostFilterResult) -> bool:
        """Mark each victim a DisruptionTarget, then evict it through the Eviction API."""
        ok = True
        for victim in result.victims:
            await self.writer.mark_disruption_target(victim, preemptor)
            outcome = await self.writer.evict(victim)
            log.info(
                "preemption eviction",
                victim=victim.key,
                preemptor=preemptor.key,
                outcome=outcome.outcome,
                message=outcome.message,
            )
            if outcome.outcome in ("evicted", "not_found"):
                self.writer.event(
                    victim,
                    "Preempted",
                    f"Preempted by pod {preemptor.uid} on node {result.nominated_node}",
                    action="Preempting",
                )
            else:
                ok = False
                if self.respect_pdbs:
                    break
        return ok


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
        config = self.config
        preemption = DefaultPreemption(
            self._framework,
            config.plugin_args.get("DefaultPreemption"),
            respect_pdbs=config.preemption_respect_pdb,
            protected=is_protected,
            nominated=self._nominated,
        )
        self.plan_state = PlanState(protected=is_protected)
        extra: list[Plugin] = [preemption] if config.preemption_enabled else []
        extra += plan_plugins(self.plan_state)
        args = {k: v for k, v in config.plugin_args.items() if k != "DefaultPreemption"}
        self.framework = build_framework(
            disabled=config.disabled_plugins,
            weights=config.weights,
            plugin_args=args,
            extra=extra,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        )
        queue = SchedulingQueue(
            self.framework.pre_enqueue,
            QueueSettings(config.initial_backoff_s, config.max_backoff_s),
        )
        self.scheduler = Scheduler(
            config.scheduler_name,
            self.framework,
            queue,
            self.cache,
            KubeBinder(writer, config.preemption_respect_pdb),
            self.metrics,
            bind_workers=config.bind_workers,
            preemption=config.preemption_enabled,
        )
        self.scheduler.preemption_paused = lambda: self.plan_state.is_active
        self.flow = OptimizationFlow(
            self.scheduler,
            self.plan_state,
            writer.evict,
            FlowSettings(
                trigger=config.trigger,
                blocking=config.blocking,
                solver=config.solver,
                solve_time_limit_s=config.solve_time_limit_s,
                period_s=config.period_s,
                stable_window_s=config.stable_window_s,
                plan_timeout_s=config.plan_timeout_s,
                failure_cooldown_s=config.failure_cooldown_s,
            ),
            is_protected,
            before_validate=self.failpoints.get("before-validate"),
        )
        return self.scheduler

    def _nominated(self) -> dict[str, list[Pod]]:
        return self.scheduler.nominated() if self.scheduler is not None else {}

    def _framework(self) -> Framework:
        if self.framework is None:
            raise RuntimeError("framework not built yet")
        return self.framework

    async def _serve_http(self) -> web.AppRunner:
        async def metrics(_: web.Request) -> web.Response:
            return web.Response(
                body=generate_latest(self.metrics.registry),
                headers={"Content-Type": CONTENT_TYPE_LATEST},
            )

        async def healthz(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def readyz(_: web.Request) -> web.Response:
            if self.ready:
                return web.Response(text="ok")
            return web.Response(status=503, text="cache not synced")

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = (
            self.options.metrics_port
            if self.options.metrics_port is not None
            else self.config.metrics_port
        )
        site = web.TCPSite(runner, self.options.metrics_address, port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise StartupError(
                f"cannot serve metrics on {self.options.metrics_address}:{port}: {exc.strerror}"
                " (choose another with --metrics-port)"
            ) from None
        log.info("serving metrics and health", address=self.options.metrics_address, port=port)
        return runner

    async def run(self) -> int:
        """Run until a signal or a task failure; returns the exit code."""
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
            qps=self.config.qps,
            burst=self.config.burst,
        )
        scheduler = self._build(writer)
        runner: web.AppRunner | None = None
        try:
            runner = await self._serve_http()
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
            nodes, pods = await initial_sync(api, scheduler)
        except (TimeoutError, OSError, ApiException) as exc:
            raise StartupError(
                f"cannot list the cluster's nodes and pods from {api.configuration.host}: {exc}"
            ) from None
        log.info("cache synced", nodes=nodes, pods=pods, pending=len(scheduler.queue.pending()))

    async def _supervise(self, scheduler: Scheduler, stop: asyncio.Event) -> int:
        """Run the named tasks until a signal or until one of them ends; then stop them all."""
        loop = asyncio.get_running_loop()
        kopf_stop: asyncio.Future[Any] = loop.create_future()
        tasks = {
            "watch": loop.create_task(
                kopf.operator(
                    registry=build_registry(scheduler),
                    clusterwide=True,
                    standalone=True,
                    stop_flag=kopf_stop,
                ),
                name="watch",
            ),
            "scheduling-loop": loop.create_task(scheduler.run(), name="scheduling-loop"),
            "queue-flush": loop.create_task(scheduler.flush_loop(), name="queue-flush"),
        }
        if self.config.trigger in ("periodic", "stable-queue"):
            tasks["trigger"] = loop.create_task(run_trigger(self.flow), name="trigger")
        elif self.config.trigger == "scheduling-failure":
            await run_trigger(self.flow)
        self.ready = True
        log.info("opsche is running", scheduler_name=self.config.scheduler_name)
        stopper = loop.create_task(stop.wait(), name="signal")
        done, _ = await asyncio.wait(
            {stopper, *tasks.values()}, return_when=asyncio.FIRST_COMPLETED
        )
        code = 0
        for task in done:
            failure = None if task is stopper or task.cancelled() else task.exception()
            if task is stopper or (task.get_name() == "watch" and failure is None):
                # kopf installs its own SIGTERM/SIGINT handlers and returns cleanly on them.
                log.info("shutting down on signal")
                continue
            log.error(
                "task ended unexpectedly; stopping", task=task.get_name(), error=repr(failure)
            )
            code = 1
        self.ready = False
        if not kopf_stop.done():
            kopf_stop.set_result(None)
        for name in ("scheduling-loop", "queue-flush", "trigger"):
            if name in tasks:
                tasks[name].cancel()
        scheduler.queue.close()
        stopper.cancel()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(tasks["watch"], timeout=10)
        return code


def run_daemon(config: SchedulerConfig, options: DaemonOptions) -> int:
    """Entry point used by ``opsche run``."""
    configure_logging(options.log_level)
    return asyncio.run(Daemon(config, options).run())
