"""Plans before preemption: who waits for which run, and when preemption gets its turn."""

from __future__ import annotations

from collections.abc import Callable

from opsche_daemon.config import Trigger
from opsche_daemon.plans.deferral import PreemptionDeferral
from opsche_daemon.plans.outcomes import RunOutcome
from tests.factories import pod


class FakeFlow:
    """The flow's surface the deferral uses: runs are started and finished by the test."""

    def __init__(self) -> None:
        self.in_progress = False
        self.not_before = 0.0
        self.runs_started = 0
        self.on_finish: list[Callable[[int, RunOutcome], None]] = []
        self.solved = False
        self.requests: list[bool] = []  # each request's ``cancellable``
        self.refuse = False

    def request(self, trigger: Trigger, *, cancellable: bool = True) -> bool:
        if self.in_progress or self.refuse:
            return False
        self.requests.append(cancellable)
        self.in_progress = True
        self.runs_started += 1
        return True

    def already_solved(self) -> bool:
        return self.solved

    def finish(self, outcome: RunOutcome = RunOutcome.EMPTY) -> None:
        self.in_progress = False
        for hook in self.on_finish:
            hook(self.runs_started, outcome)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make() -> tuple[FakeFlow, Clock, list[list[str]], list[str], PreemptionDeferral]:
    flow, clock = FakeFlow(), Clock()
    activated: list[list[str]] = []
    results: list[str] = []
    deferral = PreemptionDeferral(
        flow, Trigger.PERIODIC, activated.append, 8.0, clock, on_result=results.append
    )
    return flow, clock, activated, results, deferral


def test_first_attempt_waits_for_a_solve_and_preempts_only_after_it() -> None:
    flow, _clock, activated, results, deferral = make()
    preemptor = pod("high", 4000, priority=10)
    assert deferral.gate(preemptor) is False
    assert flow.requests == [False]  # a run the stable-queue trigger must not cancel
    assert deferral.gate(preemptor) is False  # still waiting: the run has not ended
    flow.finish()
    assert activated == [[preemptor.key]]  # back to the active queue at once
    assert deferral.gate(preemptor) is True
    assert results == ["deferred", "fallback"]
    assert deferral.waiting == {}


def test_a_run_already_in_progress_does_not_answer_a_pod_it_never_saw() -> None:
    flow, _clock, activated, _results, deferral = make()
    flow.request(Trigger.PERIODIC)  # run 1 took its snapshot before the pod failed
    preemptor = pod("high", 4000, priority=10)
    assert deferral.gate(preemptor) is False
    flow.finish()  # run 1 ends: the deferral asks for run 2
    assert activated == []
    assert flow.runs_started == 2 and flow.in_progress
    assert deferral.gate(preemptor) is False
    flow.finish()
    assert activated == [[preemptor.key]]
    assert deferral.gate(preemptor) is True


def test_no_deferral_during_a_cool_down_or_for_a_state_already_solved() -> None:
    flow, clock, _activated, _results, deferral = make()
    flow.not_before = clock.now + 5
    assert deferral.gate(pod("a", 1000)) is True
    flow.not_before = 0.0
    flow.solved = True
    assert deferral.gate(pod("b", 1000)) is True
    assert flow.requests == []


def test_the_wait_is_bounded() -> None:
    _flow, clock, _activated, results, deferral = make()
    preemptor = pod("high", 4000, priority=10)
    assert deferral.gate(preemptor) is False
    clock.now += 8.0  # the run never ended (a slow enforcement): preemption goes ahead
    assert deferral.gate(preemptor) is True
    assert results == ["deferred", "timeout"]


def test_pods_left_waiting_when_no_run_can_start_are_released() -> None:
    flow, _clock, activated, _results, deferral = make()
    flow.request(Trigger.PERIODIC)
    preemptor = pod("high", 4000, priority=10)
    assert deferral.gate(preemptor) is False
    flow.refuse = True  # the run failed and the flow cools down
    flow.finish(RunOutcome.TIMED_OUT)
    assert activated == [[preemptor.key]]
    assert deferral.gate(preemptor) is True


def test_no_deferral_when_no_run_can_start_and_answered_pods_are_forgotten() -> None:
    flow, _clock, _activated, _results, deferral = make()
    flow.refuse = True  # as at shutdown: the flow starts no run any more
    assert deferral.gate(pod("a", 1000)) is True
    assert deferral.waiting == {}
    flow.refuse = False
    placed = pod("placed", 1000)
    assert deferral.gate(placed) is False
    flow.finish()  # answered; the plan placed it, so it never comes back to the gate
    assert deferral.waiting[placed.key].answered
    other = pod("other", 1000)
    assert deferral.gate(other) is False  # starts run 2
    flow.finish()
    assert placed.key not in deferral.waiting
    # Needing preemption again later, it is deferred afresh rather than preempting at once.
    assert deferral.gate(placed) is False
