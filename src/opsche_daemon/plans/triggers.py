"""When a run starts: the three triggers of seed 000 (Algorithms 5-7) as small policies.

* ``scheduling-failure``: a scheduling cycle found a pod unschedulable (a hook the scheduler calls
  from its failure handling; no task of its own);
* ``periodic``: every ``period_s``, when a pod of this scheduler is pending;
* ``stable-queue``: the set of pending pods unchanged for ``stable_window_s`` (polled every
  ``poll_s``); a solve in progress is cancelled when the set changes, its answer being stale.

With ``min_pending_s`` set, the two background triggers also wait until some pending pod has
waited that long since its first scheduling attempt: a pod that just arrived is usually placed by
the next scheduling cycle, and a plan made for it is either raced (stale at validation) or moves
running pods to place a pod that needed no move a few seconds later.

Every trigger skips a cluster state the last run already solved
(``OptimizationFlow.already_solved``), and a run never starts while another is in progress or
during the cool-down after a failed plan.
``none`` turns plans off.
"""

from __future__ import annotations

import asyncio

from opsche_daemon.config import Trigger
from opsche_daemon.model.pod import Pod
from opsche_daemon.plans.flow import OptimizationFlow

__all__ = ["has_background_task", "run_trigger"]


def has_background_task(trigger: Trigger) -> bool:
    """Triggers that poll (and so run as a named task); the others only install a hook."""
    return trigger in (Trigger.PERIODIC, Trigger.STABLE_QUEUE)


async def run_trigger(flow: OptimizationFlow) -> None:
    """The configured trigger's loop (Algorithm 6); returns at once for none and failure."""
    trigger = flow.settings.trigger
    if trigger == Trigger.SCHEDULING_FAILURE:
        _on_scheduling_failure(flow)
    elif trigger == Trigger.PERIODIC:
        await _periodic(flow)
    elif trigger == Trigger.STABLE_QUEUE:
        await _stable_queue(flow)


def _on_scheduling_failure(flow: OptimizationFlow) -> None:
    def on_failure(_pod: Pod) -> None:
        if not flow.in_progress and not flow.already_solved():
            flow.request(Trigger.SCHEDULING_FAILURE)

    flow.scheduler.on_unschedulable.append(on_failure)


def _has_pending(flow: OptimizationFlow) -> bool:
    """A pod of this scheduler is pending (and, with ``min_pending_s``, has waited long enough)."""
    scheduler = flow.scheduler
    if flow.settings.min_pending_s <= 0:
        return any(p.scheduler_name == scheduler.name for p in scheduler.cache.unbound())
    return _waited_long_enough(flow)


def _waited_long_enough(flow: OptimizationFlow) -> bool:
    """Some queued pod has waited ``min_pending_s`` since its first attempt (always, at 0)."""
    wait = flow.settings.min_pending_s
    if wait <= 0:
        return True
    now = flow.clock()
    return any(
        info.initial_attempt_at is not None and now - info.initial_attempt_at >= wait
        for info in flow.scheduler.queue.pending()
    )


async def _periodic(flow: OptimizationFlow) -> None:
    while True:
        await asyncio.sleep(flow.settings.period_s)
        # No pending pod, nothing to place: a run would only count as a solver run.
        if _has_pending(flow) and not flow.in_progress and not flow.already_solved():
            flow.request(Trigger.PERIODIC)


async def _stable_queue(flow: OptimizationFlow) -> None:
    settings, scheduler = flow.settings, flow.scheduler
    last: frozenset[str] = frozenset()
    since = flow.clock()
    while True:
        await asyncio.sleep(settings.poll_s)
        pending = frozenset(
            p.key for p in scheduler.cache.unbound() if p.scheduler_name == scheduler.name
        )
        if pending != last:
            last, since = pending, flow.clock()
            if flow.in_progress and flow.cancellable and not flow.state.is_active:
                flow.cancel.set()  # the pending set changed under a running solve
            continue
        if (
            not pending
            or flow.in_progress
            or not _waited_long_enough(flow)
            or flow.already_solved()
        ):
            continue
        if flow.clock() - since >= settings.stable_window_s:
            flow.request(Trigger.STABLE_QUEUE)
