"""The object graph of one opsche, built from its config, an API writer and a clock.

``opsche run`` builds it over the real API server (``Daemon``); the virtual-time replay
(``opsche_daemon.simulation``) builds the very same graph over an in-process API and the event
loop's virtual clock. Keeping one builder is what makes the simulation opsche's own code rather
than a model of it: the only things that differ are the ``writer`` (where writes go), the
``clock`` (which time the queue's backoffs, the triggers, the plan timeouts and the preemption
deferral read) and what feeds ``scheduler.events`` (a watch, or the in-process API).

    WriteApi -> KubeBinder (the scheduler's API side)
    Framework (default plugins + DefaultPreemption + the plan plugins over one PlanState)
    SchedulingQueue (its PreEnqueue is the framework's) -> Scheduler (cycle) + EventHandlers
    OptimizationFlow (Algorithm 1) + PreemptionDeferral (plans before preemption)
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from opsche_daemon.cache import Cache
from opsche_daemon.config import SchedulerConfig, SolverKind, Trigger
from opsche_daemon.framework.extender import Extender
from opsche_daemon.framework.interface import Plugin
from opsche_daemon.framework.plugins.default_preemption import DefaultPreemption
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.kube.binder import KubeBinder, WriteApi
from opsche_daemon.metrics import Metrics
from opsche_daemon.plans import OptimizationFlow, PlanState, PreemptionDeferral, plan_plugins
from opsche_daemon.queue import SchedulingQueue
from opsche_daemon.safety import is_protected
from opsche_daemon.scheduler import Nominator, Scheduler

__all__ = ["Composed", "compose"]

Clock = Callable[[], float]


@dataclass
class Composed:
    """The parts of one opsche that run and are inspected."""

    framework: Framework
    scheduler: Scheduler
    flow: OptimizationFlow
    plan_state: PlanState


def compose(
    config: SchedulerConfig,
    writer: WriteApi,
    cache: Cache,
    metrics: Metrics,
    *,
    clock: Clock = time.monotonic,
    before_validate: Callable[[], Awaitable[None]] | None = None,
    extenders: Sequence[Extender] = (),
) -> Composed:
    """Build the scheduler, its framework and the optimisation flow over ``writer``.

    ``extenders`` are the clients of ``config.extenders`` (the daemon makes them over HTTP); the
    scheduling cycle calls them, and plans only place pods where their filters agree.
    """
    nominator = Nominator()
    built: list[Framework] = []

    def framework() -> Framework:
        # DefaultPreemption runs the framework's filters in its dry runs, and is itself one of
        # the framework's plugins: it gets the framework once built.
        return built[0]

    preemption = DefaultPreemption(
        framework,
        config.profile.plugin_args.get("DefaultPreemption"),
        respect_pdbs=config.preemption.respect_pdbs,
        avoid_bare_victims=config.preemption.avoid_bare_victims,
        protected=is_protected,
        nominated=nominator.nominated,
    )
    plan_state = PlanState(protected=is_protected)
    extra: list[Plugin] = [preemption] if config.preemption.enabled else []
    extra += plan_plugins(plan_state)
    args = {k: v for k, v in config.profile.plugin_args.items() if k != "DefaultPreemption"}
    ignored = [r for e in config.extenders for r in e.ignored_resources]
    if ignored:
        # Upstream: extender-managed resources with ignoredByScheduler replace NodeResourcesFit's
        # ignoredResources, so the scheduler leaves their accounting to the extender.
        fit_args = dict(args.get("NodeResourcesFit") or {})
        fit_args["ignoredResources"] = ignored
        args["NodeResourcesFit"] = fit_args
    built.append(
        build_framework(
            disabled=config.profile.disabled,
            weights=config.profile.weights,
            plugin_args=args,
            extra=extra,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        )
    )
    queue = SchedulingQueue(built[0].pre_enqueue, config.queue, clock=clock)
    scheduler = Scheduler(
        config.scheduler_name,
        built[0],
        queue,
        cache,
        KubeBinder(writer, config.preemption.respect_pdbs),
        metrics,
        bind_workers=config.bind_workers,
        preemption=config.preemption.enabled,
        nominator=nominator,
        extenders=extenders,
    )
    flow = OptimizationFlow(
        scheduler,
        plan_state,
        writer.evict,
        config.optimiser,
        is_protected,
        clock=clock,
        before_validate=before_validate,
    )
    optimiser = config.optimiser
    if config.preemption.plans_first and optimiser.trigger is not Trigger.NONE:
        deferral = PreemptionDeferral(
            flow,
            optimiser.trigger,
            scheduler.queue.activate,
            max_wait_s=optimiser.solve_time_limit_s + optimiser.plan_timeout_s + 2.0,
            clock=clock,
            on_result=lambda result: metrics.preemption_deferrals.labels(result).inc(),
        )
        scheduler.preemption_gate = deferral.gate
    if optimiser.trigger is not Trigger.NONE and optimiser.solver == SolverKind.CPSAT:
        # OR-Tools takes about a second to load (more on a busy machine): at start-up, not in
        # the first solve's thread, where it would delay the first plan and, in virtual time,
        # be charged to it.
        importlib.import_module("opsche_daemon.optimiser.cpsat")
    return Composed(built[0], scheduler, flow, plan_state)
