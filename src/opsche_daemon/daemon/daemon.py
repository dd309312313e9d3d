"""The composition root: builds every part, runs them as named guarded tasks, shuts down cleanly.

Nothing else wires components together, so the object graph of a running opsche can be read here
top to bottom: ``Daemon.run`` makes the ``Writer`` (rate-limited API writes) and
``daemon.compose`` builds the rest over it, the one builder the virtual-time replay shares:

    Writer -> KubeBinder (the scheduler's API side)
    Framework (default plugins + DefaultPreemption + the plan plugins over one PlanState)
    SchedulingQueue (its PreEnqueue is the framework's) -> Scheduler (cycle) + EventHandlers
    OptimizationFlow (Algorithm 1) + its trigger

``Daemon.run`` then connects, syncs the cache, starts the watch and, once this replica leads
(at once without leader election), the scheduling loop, queue flush and trigger; then it waits
for a signal or for any task to end. SIGTERM/SIGINT, a task failure and a lost Lease take the
same single shutdown path, in an order that loses nothing: stop taking work, tear the plan down
(held pods released), finish in-flight binds (bounded), post the last events, release the Lease
(the successor leads at once), stop the watch. A second signal exits at once.

With leader election (``kube.leader``) a follower keeps its cache and queue warm from the
watch, so it schedules the moment it leads; every write goes through a ``FencedWriter``, so a
leader past its renew deadline writes nothing more, and exits (code 1) as kube-scheduler does.
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
from opsche_daemon.config import LeaderElect, LeaderElectionSettings, SchedulerConfig
from opsche_daemon.daemon.compose import compose
from opsche_daemon.daemon.errors import StartupError
from opsche_daemon.daemon.failpoints import FailpointError, parse_failpoints
from opsche_daemon.daemon.logs import configure_logging
from opsche_daemon.daemon.server import serve_http
from opsche_daemon.daemon.tasks import Supervisor
from opsche_daemon.extender import build_extenders
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.kube.binder import WriteApi
from opsche_daemon.kube.client import api_client
from opsche_daemon.kube.fenced import FencedWriter
from opsche_daemon.kube.intake import build_registry, initial_sync
from opsche_daemon.kube.leader import LeaderElector, LeadershipLost
from opsche_daemon.kube.writer import Writer
from opsche_daemon.metrics import Metrics
from opsche_daemon.plans import has_background_task, run_trigger
from opsche_daemon.scheduler import Scheduler

__all__ = ["Daemon", "DaemonOptions", "elects_leader", "run_daemon"]

log = structlog.get_logger("opsche.daemon")

_SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
_SHUTDOWN_BOUND_S = 10.0  # longest wait for each shutdown step (binds, events, the watch)


def elects_leader(settings: LeaderElectionSettings, token: Path = _SERVICE_ACCOUNT_TOKEN) -> bool:
    """Whether to elect a leader: as configured, or (auto) when running inside a pod."""
    if settings.leader_elect is LeaderElect.AUTO:
        return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and token.exists()
    return settings.leader_elect is LeaderElect.TRUE


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
        self.elector: LeaderElector | None = None
        self.stop = asyncio.Event()
        # Pods keep their API objects only for extenders, which are sent them.
        self.keep_raw = bool(config.extenders)
        try:
            self.extenders = build_extenders(config.extenders, self.metrics)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise StartupError(f"extenders: cannot set up TLS: {exc}") from None
        try:
            self.failpoints = parse_failpoints(os.environ)
        except FailpointError as exc:
            raise StartupError(str(exc)) from None

    def _build(self, writer: WriteApi) -> Scheduler:
        composed = compose(
            self.config,
            writer,
            self.cache,
            self.metrics,
            before_validate=self.failpoints.get("before-validate"),
            extenders=self.extenders,
        )
        self.framework = composed.framework
        self.scheduler = composed.scheduler
        self.flow = composed.flow
        self.plan_state = composed.plan_state
        return composed.scheduler

    async def run(self) -> int:
        """Run until a signal, a task failure or a lost Lease; returns the exit code."""
        # The CLI imports OR-Tools only when CP-SAT runs; the daemon loads it now, or the first
        # plan would spend up to a second of its solve budget importing it (seen as an empty
        # first plan with solveTimeLimitSeconds: 1).
        importlib.import_module("opsche_daemon.optimiser.cpsat")
        self._handle_signals()
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
        writes: WriteApi = writer
        if elects_leader(self.config.leader_election):
            self.elector = LeaderElector(api, self.config.leader_election, self.metrics)
            writes = FencedWriter(writer, self.elector.leadership.may_act)
        scheduler = self._build(writes)
        runner: web.AppRunner | None = None
        port = (
            self.options.metrics_port
            if self.options.metrics_port is not None
            else self.config.metrics_port
        )
        try:
            runner = await serve_http(
                self.metrics.registry,
                lambda: self.ready,
                self.options.metrics_address,
                port,
                role=self.role,
            )
            await self._sync(api, scheduler)
            code = await self._supervise(scheduler, writer)
        finally:
            self.ready = False
            if runner is not None:
                await runner.cleanup()
            await api.close()
        log.info("opsche stopped", scheduled=scheduler.scheduled, code=code)
        return code

    def role(self) -> str:
        """``leader``, ``follower``, or ``single`` (no leader election), for ``/readyz``."""
        if self.elector is None:
            return "single"
        return "leader" if self.elector.leadership.may_act() else "follower"

    def _handle_signals(self) -> None:
        """SIGTERM/SIGINT: shut down; a second one: exit now (kopf's handlers are replaced)."""
        loop = asyncio.get_running_loop()

        def on_signal(number: signal.Signals) -> None:
            if self.stop.is_set():
                log.warning("second signal; exiting now", signal=number.name)
                os._exit(1)
            log.info("shutting down on signal", signal=number.name)
            self.stop.set()

        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, on_signal, number)

    async def _sync(self, api: ApiClient, scheduler: Scheduler) -> None:
        try:
            nodes, pods = await initial_sync(api, scheduler.events, keep_raw=self.keep_raw)
        except (TimeoutError, OSError, ApiException) as exc:
            raise StartupError(
                f"cannot list the cluster's nodes and pods from {api.configuration.host}: {exc}"
            ) from None
        log.info("cache synced", nodes=nodes, pods=pods, pending=len(scheduler.queue.pending()))

    async def _supervise(self, scheduler: Scheduler, writer: Writer) -> int:
        """Run the named tasks until a signal, a lost Lease or any task's end; then shut down."""
        kopf_stop: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        kopf_ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        tasks = Supervisor()
        tasks.start(
            "watch",
            kopf.operator(
                registry=build_registry(scheduler.events, keep_raw=self.keep_raw),
                clusterwide=True,
                standalone=True,
                stop_flag=kopf_stop,
                ready_flag=kopf_ready,
            ),
        )
        # kopf installs SIGTERM/SIGINT handlers of its own once started, which would stop the
        # watch first and cancel every other task after 5 s; ours go back on top.
        tasks.start("signals", self._reclaim_signals(kopf_ready))
        if self.elector is None:
            await self._start_acting(tasks)
        else:
            tasks.start("leader-election", self._lead(self.elector, tasks))
        self.ready = True
        log.info("opsche is running", scheduler_name=self.config.scheduler_name, role=self.role())
        code = 0
        for ended in await tasks.first_to_end(self.stop):
            if ended.signal or (ended.name == "watch" and ended.error is None):
                continue  # logged by the signal handler (or kopf's, before ours were back)
            if isinstance(ended.error, LeadershipLost):
                log.error("lost the Lease; stopping", error=str(ended.error))
            else:
                log.error("task ended unexpectedly; stopping", task=ended.name,
                          error=repr(ended.error))  # fmt: skip
            code = 1
        await self._shut_down(tasks, scheduler, writer, kopf_stop)
        return code

    async def _reclaim_signals(self, kopf_ready: asyncio.Future[Any]) -> None:
        await kopf_ready
        await asyncio.sleep(0)  # kopf adds its handlers right after setting the flag
        self._handle_signals()
        await asyncio.Event().wait()  # a task that ends would read as a failure

    async def _lead(self, elector: LeaderElector, tasks: Supervisor) -> None:
        """Follow (the watch keeps the cache warm) until leading; act; renew until lost."""
        await elector.acquire()
        await self._start_acting(tasks)
        await elector.hold()  # raises LeadershipLost

    async def _start_acting(self, tasks: Supervisor) -> None:
        scheduler = self.scheduler
        if scheduler is None:
            raise RuntimeError("the scheduler is built before any task starts")
        tasks.start("scheduling-loop", scheduler.run())
        tasks.start("queue-flush", scheduler.flush_loop())
        if has_background_task(self.config.optimiser.trigger):
            tasks.start("trigger", run_trigger(self.flow))
        else:
            await run_trigger(self.flow)  # installs the failure hook, or nothing for none
        if self.elector is not None:
            log.info("scheduling as the leader", pending=len(scheduler.queue.pending()))

    async def _shut_down(
        self,
        tasks: Supervisor,
        scheduler: Scheduler,
        writer: Writer,
        kopf_stop: asyncio.Future[Any],
    ) -> None:
        """Stop taking work, tear the plan down, finish binds, release the Lease, stop watching."""
        self.ready = False
        tasks.cancel("scheduling-loop", "queue-flush", "trigger", "leader-election", "signals")
        scheduler.queue.close()
        await self.flow.stop(within=_SHUTDOWN_BOUND_S)  # no new run; the current one torn down
        await scheduler.drain(within=_SHUTDOWN_BOUND_S)
        await writer.drain_events(within=_SHUTDOWN_BOUND_S)
        for extender in self.extenders:
            await extender.aclose()
        if self.elector is not None:
            await self.elector.release()
        if not kopf_stop.done():
            kopf_stop.set_result(None)
        await tasks.join("watch", within=_SHUTDOWN_BOUND_S)


def run_daemon(config: SchedulerConfig, options: DaemonOptions) -> int:
    """Entry point used by ``opsche run``."""
    configure_logging(options.log_level)
    return asyncio.run(Daemon(config, options).run())
