"""Plans before preemption: a preemptor first gets a cluster-wide solve; preemption is the fallback.

Why: DefaultPreemption acts inside the failing cycle and looks at one node at a time. When the
pod could be placed by moving a few controller-managed pods (nothing lost, every pod running
again), preempting instead deletes lower-priority pods, and a bare victim is gone for good; a
plan computed right after may then move more pods for the same preemptor. So when plans are on
and preemption has found victims for a pod, the gate (``Scheduler.preemption_gate``) defers the
evictions once, and requests a solve that starts after the deferral (a run already in progress
took its snapshot before and may not know the pod). When that run ends:

* it placed the pod: nothing was preempted;
* it did not (no plan, an invalid one, a plan that timed out): the pod goes back to the active
  queue, and its next attempt preempts as kube-scheduler would.

Deferral is bounded: the answering run is the first that starts after the deferral (so at most
the rest of a run in progress and one more), and a pod that comes back to the gate ``max_wait_s``
after its deferral preempts at once. No deferral while the flow cools down after a failed plan,
for a cluster state already solved (that solve did not place it), or when no run can start (the
daemon is shutting down). Other pods are scheduled meanwhile, except what any run does anyway
(blocking mode pauses scheduling during the solve; an enforced plan holds back other pods).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from opsche_daemon.config import Trigger
from opsche_daemon.model.pod import Pod
from opsche_daemon.plans.outcomes import RunOutcome

__all__ = ["PreemptionDeferral"]

log = structlog.get_logger("opsche.preemption")


class _Flow(Protocol):
    """What the deferral needs of ``OptimizationFlow``."""

    in_progress: bool
    not_before: float
    runs_started: int
    on_finish: list[Callable[[int, RunOutcome], None]]

    def request(self, trigger: Trigger, *, cancellable: bool = True) -> bool: ...

    def already_solved(self) -> bool: ...


@dataclass
class _Waiting:
    since: float
    after_run: int  # the first run whose end answers this pod
    answered: bool = False


class PreemptionDeferral:
    """The gate and its bookkeeping: which preemptors wait for which run."""

    def __init__(
        self,
        flow: _Flow,
        trigger: Trigger,
        activate: Callable[[list[str]], object],
        max_wait_s: float,
        clock: Callable[[], float] = time.monotonic,
        on_result: Callable[[str], None] | None = None,
    ) -> None:
        """``activate`` puts pods back in the active queue; ``on_result`` counts outcomes."""
        self.flow = flow
        self.trigger = trigger
        self.activate = activate
        self.max_wait_s = max_wait_s
        self.clock = clock
        self.on_result = on_result or (lambda _result: None)
        self.waiting: dict[str, _Waiting] = {}
        flow.on_finish.append(self._run_finished)

    def gate(self, pod: Pod) -> bool:
        """True: preempt now. False: wait for the solve this call requested (or is awaiting)."""
        now = self.clock()
        self._prune(now)
        entry = self.waiting.get(pod.key)
        if entry is not None:
            if entry.answered or now - entry.since >= self.max_wait_s:
                del self.waiting[pod.key]
                result = "fallback" if entry.answered else "timeout"
                log.info("preemption after the plan's turn", pod=pod.key, result=result)
                self.on_result(result)
                return True
            return False
        if now < self.flow.not_before or self.flow.already_solved():
            return True
        next_run = self.flow.runs_started + 1
        if not self.flow.in_progress and not self.flow.request(self.trigger, cancellable=False):
            return True  # no run can answer it (the flow is closing): preempt now
        self.waiting[pod.key] = _Waiting(since=now, after_run=next_run)
        log.info("preemption deferred to a cluster-wide plan", pod=pod.key, run=next_run)
        self.on_result("deferred")
        return False

    def _run_finished(self, number: int, outcome: RunOutcome) -> None:
        # Pods answered by an earlier run and not back at the gate since were placed (by the
        # plan or a later cycle) or deleted: forget them, so a pod that needs preemption again
        # later (or a new pod of the same name) is deferred afresh.
        for key in [k for k, e in self.waiting.items() if e.answered]:
            del self.waiting[key]
        answered = []
        later = False
        for key, entry in self.waiting.items():
            if entry.answered:
                continue
            if entry.after_run <= number:
                entry.answered = True
                answered.append(key)
            else:
                later = True
        if answered:
            log.info("plan run ended; deferred preemptors retry", run=number, outcome=outcome,
                     pods=answered)  # fmt: skip
            self.activate(answered)
        if later and not self.flow.request(self.trigger, cancellable=False):
            # Cooling down: no run will answer the others soon, so they may preempt now.
            for key, entry in self.waiting.items():
                if not entry.answered:
                    entry.answered = True
                    answered.append(key)
            self.activate([k for k, e in self.waiting.items() if e.answered])

    def _prune(self, now: float) -> None:
        """Forget pods that were placed or deleted without coming back to the gate."""
        stale = [k for k, e in self.waiting.items() if now - e.since > 10 * self.max_wait_s]
        for key in stale:
            del self.waiting[key]
