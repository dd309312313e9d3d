"""Algorithm 1 without a cluster: the real scheduler, queue, cache, framework and solver on the
paper's Figure 1, with a recording fake in place of the API server's eviction and event calls.

The end-to-end tests show the same runs against kube-apiserver; these pin down the flow's
decisions one by one (what is evicted, when scheduling is paused, what every outcome releases).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
import structlog

from opsche_daemon.cache import Cache
from opsche_daemon.config import OptimiserSettings, QueueSettings, Trigger
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.plans import (
    OptimizationFlow,
    PlanState,
    RunOutcome,
    plan_plugins,
    run_trigger,
    state_key,
)
from opsche_daemon.queue import SchedulingQueue
from opsche_daemon.safety import is_protected
from opsche_daemon.scheduler import Scheduler
from tests import factories
from tests.factories import controller, node
from tests.unit.scheduler.test_scheduler import FakeBinder

TIMEOUT = 10.0
WEB = controller("web", api_version="apps/v1")


async def until(condition: Callable[[], bool], within: float = TIMEOUT) -> None:
    """Wait for a condition the flow's own loop makes true (it has no event to await)."""
    for _ in range(int(within / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not true within {within}s")


@dataclass
class FakeEvictions:
    """Records each eviction; answers with ``outcome``."""

    outcome: EvictionOutcome = EvictionOutcome.EVICTED
    calls: list[str] = field(default_factory=list)

    async def __call__(self, pod: Pod) -> EvictionResult:
        self.calls.append(pod.key)
        return EvictionResult(pod.key, self.outcome)


def pod(name: str, cpu: int, *, on: str = "", owner: Owner | None = WEB) -> Pod:
    """A pod of opsche owned by ``owner`` (web), 1 MiB, the same requests for fit and scoring."""
    return factories.pod(
        name,
        cpu,
        memory=2**20,
        non_zero=True,
        namespace="ns",
        on=on,
        scheduler="opsche",
        owner=owner,
    )


@dataclass
class Env:
    flow: OptimizationFlow
    scheduler: Scheduler
    evictions: FakeEvictions
    binder: FakeBinder
    metrics: Metrics

    async def run(self) -> str:
        assert self.flow.request(Trigger.PERIODIC)
        await asyncio.wait_for(self.flow.wait(), TIMEOUT)
        return self.flow.outcomes[-1]

    def solving(self) -> bool:
        """Whether a run is in progress, read afresh (the flow changes it behind our back)."""
        return self.flow.in_progress

    def sample(self, name: str, labels: dict[str, str]) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0


def figure_1(*, blocking: bool = False, owner: Owner | None = WEB, **settings: float) -> Env:
    """Two 4-cpu nodes, a 2-cpu replica on each, and a pending 4-cpu pod."""
    state = PlanState(protected=is_protected)
    framework = build_framework(extra=plan_plugins(state), rng=random.Random(0))
    queue = SchedulingQueue(framework.pre_enqueue, QueueSettings(1.0, 10.0))
    binder = FakeBinder()
    metrics = Metrics()
    scheduler = Scheduler("opsche", framework, queue, Cache(), binder, metrics, preemption=False)
    for name in ("n1", "n2"):
        scheduler.events.node_changed(node(name))
    scheduler.events.pod_changed(pod("web-a", 2000, on="n1", owner=owner))
    scheduler.events.pod_changed(pod("web-b", 2000, on="n2", owner=owner))
    scheduler.events.pod_changed(pod("big", 4000, owner=None))
    evictions = FakeEvictions()
    flow_settings = OptimiserSettings(
        trigger=Trigger.SCHEDULING_FAILURE,
        blocking=blocking,
        solve_time_limit_s=2.0,
        convergence_interval_s=0.01,
        plan_timeout_s=settings.get("plan_timeout_s", 0.2),
    )
    flow = OptimizationFlow(scheduler, state, evictions, flow_settings, is_protected)
    return Env(flow, scheduler, evictions, binder, metrics)


async def test_a_plan_evicts_one_replica_through_the_eviction_call_and_says_why() -> None:
    env = figure_1()
    outcome = await env.run()
    # No controller recreates the replica here, so the plan cannot converge: it times out.
    assert outcome == "timed_out"
    assert len(env.evictions.calls) == 1
    assert env.evictions.calls[0] in ("ns/web-a", "ns/web-b")
    [event] = [e for e in env.binder.events if e.reason == "OpscheMoved"]
    assert event.pod == env.evictions.calls[0]
    assert "moved by plan" in event.note
    assert env.sample("opsche_plan_pods_moved_total", {}) == 1
    assert env.sample("opsche_plan_outcomes_total", {"outcome": "timed_out"}) == 1
    assert not env.flow.state.is_active
    assert not env.scheduler.paused


async def test_across_plans_the_budget_credits_what_earlier_plans_left_unused() -> None:
    env = figure_1()
    flow = env.flow
    assert await env.run() == "timed_out"  # one replica moved; "big" never placed here
    assert (flow.enforcer.placed_total, flow.enforcer.disrupted_total) == (0, 1)
    assert flow.disruption_credit() == 0.0  # no budget configured: no credit
    flow.settings = replace(
        flow.settings, max_disruptions_per_placement=1.5, budget_across_plans=True
    )
    assert flow.disruption_credit() == 0.0  # overspent (1 for 0 placed): no debt either
    flow.enforcer.placed_total = 4  # as if later plans had placed four pods
    assert flow.disruption_credit() == 5.0  # 1.5 x 4 - 1
    flow.settings = replace(flow.settings, budget_across_plans=False)
    assert flow.disruption_credit() == 0.0  # per plan only


async def test_a_plan_made_stale_before_validation_is_discarded_not_applied() -> None:
    env = figure_1()

    async def cordon() -> None:  # a concurrent change lands between solve and validation
        env.scheduler.events.node_changed(node("n1", unschedulable=True))

    env.flow.before_validate = cordon
    assert await env.run() == "invalid"
    assert env.evictions.calls == []
    assert not any(e.reason == "OpscheMoved" for e in env.binder.events)
    assert env.sample("opsche_solver_runs_total", {"trigger": "periodic", "result": "invalid"}) == 1
    assert env.sample("opsche_plan_activations_total", {}) == 0
    assert not env.flow.state.is_active
    # Never installed: the pending pod goes back to the scheduler, and the state solved is
    # forgotten so the periodic and stable-queue triggers solve it again.
    assert env.flow.last_solved is None
    assert env.scheduler.queue.where("ns/big") in ("active", "backoff")


@pytest.mark.parametrize("repair", [False, True])
async def test_a_stale_plan_is_cut_down_to_its_valid_part_when_repair_is_on(repair: bool) -> None:
    env = figure_1()
    env.flow.settings = replace(env.flow.settings, repair_stale_plans=repair)
    # A third node with room for one more small pod: the plan places it there too.
    env.scheduler.events.node_changed(node("n3"))
    env.scheduler.events.pod_changed(pod("filler", 3500, on="n3", owner=None))
    env.scheduler.events.pod_changed(pod("small", 500, owner=None))

    async def delete_small() -> None:  # the small pod goes away between solve and validation
        env.scheduler.events.pod_deleted(pod("small", 500, owner=None))

    env.flow.before_validate = delete_small
    outcome = await env.run()
    runs = {
        result: env.sample("opsche_solver_runs_total", {"trigger": "periodic", "result": result})
        for result in ("invalid", "repaired")
    }
    if repair:
        # The move and the big pod's placement still hold: they are enforced (and time out
        # here, as no controller recreates the moved replica).
        assert outcome == "timed_out"
        assert len(env.evictions.calls) == 1
        assert runs == {"invalid": 0, "repaired": 1}
    else:
        assert outcome == "invalid"
        assert env.evictions.calls == []
        assert runs == {"invalid": 1, "repaired": 0}


async def test_a_refused_eviction_aborts_the_plan_and_releases_everything() -> None:
    env = figure_1()
    env.evictions.outcome = EvictionOutcome.BLOCKED  # a PodDisruptionBudget said no (HTTP 429)
    assert await env.run() == "eviction_refused"
    assert len(env.evictions.calls) == 1
    assert not any(e.reason == "OpscheMoved" for e in env.binder.events)
    assert env.sample("opsche_plan_outcomes_total", {"outcome": "eviction_refused"}) == 1
    assert not env.flow.state.is_active
    assert env.sample("opsche_plan_pods_held", {}) == 0
    assert not env.scheduler.paused


async def test_pods_without_a_controller_are_never_evicted() -> None:
    env = figure_1(owner=None)
    assert await env.run() == "empty"
    assert env.evictions.calls == []
    assert env.sample("opsche_plan_activations_total", {}) == 0


async def test_the_run_ended_line_says_how_long_the_solve_took_and_none_without_one() -> None:
    env = figure_1()
    with structlog.testing.capture_logs() as logs:
        assert await env.run() == "timed_out"
    [ended] = [line for line in logs if line["event"] == "optimisation run ended"]
    assert ended["outcome"] == "timed_out" and 0 < ended["solve_s"] < 2.5
    env = figure_1()
    env.scheduler.events.pod_deleted(pod("big", 4000, owner=None))
    with structlog.testing.capture_logs() as logs:
        assert await env.run() == "nothing_pending"
    [ended] = [line for line in logs if line["event"] == "optimisation run ended"]
    assert ended["solve_s"] is None


async def test_nothing_pending_means_no_solve() -> None:
    env = figure_1()
    env.scheduler.events.pod_deleted(pod("big", 4000, owner=None))
    assert await env.run() == "nothing_pending"
    assert env.flow.last_solved is None
    assert env.sample("opsche_solver_runs_total", {"trigger": "periodic", "result": "plan"}) == 0


@pytest.mark.parametrize("blocking", [True, False])
async def test_blocking_pauses_scheduling_from_the_snapshot_on_non_blocking_only_to_enforce(
    blocking: bool,
) -> None:
    env = figure_1(blocking=blocking)
    paused_before_validation: list[bool] = []

    async def look() -> None:
        paused_before_validation.append(env.scheduler.paused)

    env.flow.before_validate = look
    await env.run()
    assert paused_before_validation == [blocking]
    assert not env.scheduler.paused, "teardown always resumes scheduling"


async def test_only_one_run_at_a_time_and_the_state_solved_is_remembered() -> None:
    env = figure_1()
    gate = asyncio.Event()

    async def hold() -> None:
        await gate.wait()

    env.flow.before_validate = hold
    assert env.flow.request(Trigger.PERIODIC)
    assert not env.flow.request(Trigger.PERIODIC), "a second run while one is in progress"
    gate.set()
    await asyncio.wait_for(env.flow.wait(), TIMEOUT)
    assert len(env.flow.outcomes) == 1
    assert env.flow.last_solved is not None


def test_the_state_key_ignores_heartbeats_but_not_placements() -> None:
    env = figure_1()
    scheduler = env.scheduler
    key = state_key(scheduler.plan_snapshot(), "opsche")
    scheduler.events.pod_changed(replace(pod("web-a", 2000, on="n1"), phase="Running"))
    assert state_key(scheduler.plan_snapshot(), "opsche") == key
    scheduler.events.node_changed(node("n1", unschedulable=True))
    assert state_key(scheduler.plan_snapshot(), "opsche") != key


async def test_a_failed_run_starts_a_cool_down_that_doubles_and_resets_on_success() -> None:
    env = figure_1()
    assert await env.run() == "timed_out"
    assert not env.flow.request(Trigger.PERIODIC), "no run during the cool-down: no eviction churn"
    first = env.flow.not_before - env.flow.clock()
    assert 9 < first <= 10
    env.flow.not_before = 0.0
    assert await env.run() == "timed_out"
    assert 19 < env.flow.not_before - env.flow.clock() <= 20
    env.flow._finish(RunOutcome.CONVERGED)  # a success resets the doubling
    assert env.flow.failures_in_a_row == 0


async def test_the_failure_trigger_does_not_solve_the_same_state_twice() -> None:
    env = figure_1(owner=None)  # bare pods: every run ends empty
    await run_trigger(env.flow)
    [on_failure] = env.scheduler.on_unschedulable
    big = pod("big", 4000, owner=None)
    on_failure(big)
    await asyncio.wait_for(env.flow.wait(), TIMEOUT)
    assert env.flow.outcomes == ["empty"]
    on_failure(big)  # the same cluster: nothing to gain from solving it again
    assert not env.solving()
    env.scheduler.events.node_changed(node("n3"))  # a new node: a new state, worth a run
    on_failure(big)
    assert env.solving()
    await asyncio.wait_for(env.flow.wait(), TIMEOUT)
    assert len(env.flow.outcomes) == 2


async def test_a_planned_pod_in_backoff_retries_as_soon_as_the_moved_pod_is_gone() -> None:
    """The moved replica takes a while to terminate; the big pod tried meanwhile, failed and
    went to backoff. When the replica is gone, the flow puts it straight back to active."""
    env = figure_1(plan_timeout_s=5.0)
    queue = env.scheduler.queue
    assert env.flow.request(Trigger.PERIODIC)

    # Enforcing: evicted, the placements activated and scheduling resumed.
    await until(lambda: bool(env.evictions.calls) and not env.scheduler.paused)
    info = queue.pop_nowait()
    assert info is not None and info.key == "ns/big"
    info.attempts = 5  # several failed tries: a long backoff
    queue.requeue_unschedulable(info, {"NodeResourcesFit"}, queue.scheduling_cycle)
    assert queue.where("ns/big") in ("backoff", "unschedulable")
    [moved] = env.evictions.calls
    name = moved.split("/")[1]
    env.scheduler.events.pod_deleted(pod(name, 2000, on="n1" if name == "web-a" else "n2"))

    await until(lambda: queue.where("ns/big") == "active", within=2.0)
    env.flow._finish(RunOutcome.CONVERGED)


async def test_the_periodic_trigger_solves_each_period_but_not_an_unchanged_cluster_twice() -> None:
    env = figure_1(owner=None)  # bare pods: every run ends empty and the cluster stays the same
    env.flow.settings = replace(env.flow.settings, trigger=Trigger.PERIODIC, period_s=0.02)
    task = asyncio.get_running_loop().create_task(run_trigger(env.flow))
    try:
        await until(lambda: len(env.flow.outcomes) == 1)
        # Nothing to await for an absence: ten periods pass without a second run.
        await asyncio.sleep(0.2)
        assert env.flow.outcomes == ["empty"]
        # A new state (a node too small to help): the next period solves it again.
        env.scheduler.events.node_changed(node("n3", cpu=1000))
        await until(lambda: len(env.flow.outcomes) == 2)
        labels = {"trigger": "periodic", "result": "empty"}
        assert env.sample("opsche_solver_runs_total", labels) == 2
    finally:
        task.cancel()


async def test_the_periodic_trigger_starts_no_run_while_nothing_is_pending() -> None:
    env = figure_1(owner=None)
    env.scheduler.events.pod_deleted(pod("big", 4000, owner=None))
    env.flow.settings = replace(env.flow.settings, trigger=Trigger.PERIODIC, period_s=0.01)
    task = asyncio.get_running_loop().create_task(run_trigger(env.flow))
    try:
        await asyncio.sleep(0.2)  # twenty periods: an absence has no event to await
        assert env.flow.outcomes == []
        assert env.flow.runs_started == 0
        env.scheduler.events.pod_changed(pod("big", 4000, owner=None))
        await until(lambda: len(env.flow.outcomes) == 1)
        assert env.flow.outcomes == ["empty"]
    finally:
        task.cancel()


async def test_with_a_minimum_wait_the_periodic_trigger_leaves_fresh_pods_to_the_scheduler() -> (
    None
):
    env = figure_1(owner=None)
    offset = [0.0]
    env.flow.clock = lambda: time.monotonic() + offset[0]  # the queue stamps time.monotonic()
    env.flow.settings = replace(
        env.flow.settings, trigger=Trigger.PERIODIC, period_s=0.01, min_pending_s=8.0
    )
    queue = env.scheduler.queue
    task = asyncio.get_running_loop().create_task(run_trigger(env.flow))
    try:
        await asyncio.sleep(0.1)  # ten periods with "big" pending but never tried: no run
        assert env.flow.runs_started == 0
        info = queue.pop_nowait()
        assert info is not None and info.key == "ns/big"
        queue.requeue_unschedulable(info, {"NodeResourcesFit"}, queue.scheduling_cycle)
        await asyncio.sleep(0.1)  # tried and failed, but only just: still no run
        assert env.flow.runs_started == 0
        offset[0] = 8.0  # it has now waited 8 s since its first attempt
        await until(lambda: len(env.flow.outcomes) == 1)
        assert env.flow.outcomes == ["empty"]
    finally:
        task.cancel()


async def test_the_stable_queue_trigger_waits_for_the_pending_set_to_settle() -> None:
    env = figure_1(owner=None)
    env.flow.settings = replace(
        env.flow.settings, trigger=Trigger.STABLE_QUEUE, poll_s=0.01, stable_window_s=5.0
    )
    now = [100.0]
    env.flow.clock = lambda: now[0]
    task = asyncio.get_running_loop().create_task(run_trigger(env.flow))
    try:
        await asyncio.sleep(0.1)  # ten polls within the window: no run yet
        assert env.flow.outcomes == []
        now[0] += 4.0
        env.scheduler.events.pod_changed(pod("late", 4000, owner=None))  # the set changes
        await asyncio.sleep(0.1)
        now[0] += 4.0  # 8 s since the start, but only 4 s since the set last changed
        await asyncio.sleep(0.1)
        assert env.flow.outcomes == []
        now[0] += 1.5
        await until(lambda: len(env.flow.outcomes) == 1)
        labels = {"trigger": "stable-queue", "result": "empty"}
        assert env.sample("opsche_solver_runs_total", labels) == 1
    finally:
        task.cancel()


async def test_the_stable_queue_trigger_cancels_a_solve_when_the_pending_set_changes() -> None:
    env = figure_1(owner=None)
    env.flow.settings = replace(env.flow.settings, trigger=Trigger.STABLE_QUEUE, poll_s=0.01)
    task = asyncio.get_running_loop().create_task(run_trigger(env.flow))
    try:
        await asyncio.sleep(0.05)  # the trigger has seen the pending set
        env.flow.in_progress = True  # as if a solve were running (no plan installed yet)
        cancel = env.flow.cancel
        env.scheduler.events.pod_changed(pod("late", 4000, owner=None))
        await until(cancel.is_set)
    finally:
        task.cancel()
        env.flow.in_progress = False


async def test_stopping_at_shutdown_tears_an_enforced_plan_down_at_once() -> None:
    env = figure_1(plan_timeout_s=60.0)  # the plan would wait a minute to converge
    assert env.flow.request(Trigger.PERIODIC)
    await until(lambda: env.flow.state.is_active)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await env.flow.stop(within=5.0)
    assert loop.time() - started < 2.0
    assert env.flow.outcomes[-1] == "cancelled"
    assert not env.flow.state.is_active  # held pods released
    assert env.sample("opsche_plan_pods_held", {}) == 0
    assert not env.scheduler.paused
    assert not env.flow.request(Trigger.PERIODIC)  # closed: no run starts any more
