"""Unit tests of the scheduling cycle: real cache, queue, framework and metrics; a fake binder."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace

import pytest

from opsche_daemon.cache import Cache
from opsche_daemon.config import QueueSettings
from opsche_daemon.framework.interface import PostFilterResult
from opsche_daemon.framework.plugins.default_preemption import DefaultPreemption
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.queue import SchedulingQueue
from opsche_daemon.safety import is_protected
from opsche_daemon.scheduler import Binder, Scheduler
from tests import factories
from tests.factories import node
from tests.fake_extender import FakeExtender

NAME = "opsche"
TIMEOUT = 5.0


# ---------------------------------------------------------------------- fakes and builders
class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Event:
    pod: str
    reason: str
    note: str
    type_: str


@dataclass
class FakeBinder(Binder):
    """Records every call; ``bind`` may block on ``release`` or raise ``fail_with``."""

    block: bool = False
    fail_with: Exception | None = None
    preempt_ok: bool = True
    release: asyncio.Event = field(default_factory=asyncio.Event)
    bind_calls: list[tuple[str, str]] = field(default_factory=list)
    bound: list[tuple[str, str]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    conditions: list[tuple[str, str, str | None]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    preemptions: list[tuple[str, PostFilterResult]] = field(default_factory=list)
    on_bind: Callable[[Pod, str], None] | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def bind(self, pod: Pod, node_name: str) -> None:
        self.bind_calls.append((pod.key, node_name))
        if self.on_bind is not None:
            self.on_bind(pod, node_name)
        await self._notify()
        if self.block:
            await self.release.wait()
        if self.fail_with is not None:
            raise self.fail_with
        self.bound.append((pod.key, node_name))
        await self._notify()

    def event(self, pod: Pod, reason: str, note: str, *, type_: str = "Normal") -> None:
        self.events.append(Event(pod.key, reason, note, type_))

    async def set_unschedulable(
        self, pod: Pod, message: str, nominated_node: str | None, *, reason: str = "Unschedulable"
    ) -> None:
        self.conditions.append((pod.key, message, nominated_node))
        self.reasons.append(reason)
        await self._notify()

    async def preempt(self, preemptor: Pod, result: PostFilterResult) -> bool:
        self.preemptions.append((preemptor.key, result))
        return self.preempt_ok

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        async def wait() -> None:
            async with self.changed:
                await self.changed.wait_for(predicate)

        await asyncio.wait_for(wait(), TIMEOUT)

    def events_for(self, key: str, reason: str) -> list[Event]:
        return [e for e in self.events if e.pod == key and e.reason == reason]


def pod(
    name: str,
    cpu: int = 1000,
    *,
    node_name: str = "",
    priority: int = 0,
    scheduler: str = NAME,
    phase: str | None = None,
    created: float = 0.0,
) -> Pod:
    """A pod of this scheduler (by default) with 1 MiB, the same requests for fit and scoring."""
    return factories.pod(
        name,
        cpu,
        memory=2**20,
        non_zero=True,
        namespace="ns",
        on=node_name,
        phase=phase,
        priority=priority,
        scheduler=scheduler,
        created=created,
    )


@dataclass
class Env:
    scheduler: Scheduler
    binder: FakeBinder
    queue: SchedulingQueue
    cache: Cache
    clock: FakeClock
    metrics: Metrics

    async def cycle(self) -> None:
        """One driven scheduling cycle, then wait for its bind / condition tasks."""
        info = await asyncio.wait_for(self.queue.pop(), TIMEOUT)
        await self.scheduler.schedule_one(info)
        await self.scheduler.drain(TIMEOUT)

    def free_cpu(self, node_name: str) -> int:
        return self.cache.snapshot().nodes[node_name].free.milli_cpu

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        value = self.metrics.registry.get_sample_value(name, labels or {})
        return value or 0.0


def make_env(
    *,
    preemption: bool = False,
    nodes: tuple[Node, ...] = (),
    extenders: Sequence[FakeExtender] = (),
) -> Env:
    clock = FakeClock()
    cache = Cache()
    metrics = Metrics()
    binder = FakeBinder()
    holder: dict[str, Scheduler] = {}
    framework: Framework | None = None

    def framework_ref() -> Framework:
        assert framework is not None
        return framework

    def nominated() -> dict[str, list[Pod]]:
        return holder["s"].nominated()  # the scheduler is built after its framework

    extra = []
    if preemption:
        extra.append(
            DefaultPreemption(
                framework_ref,
                protected=is_protected,
                rng=random.Random(0),
                nominated=nominated,
            )
        )
    framework = build_framework(extra=extra, rng=random.Random(0))
    queue = SchedulingQueue(framework.pre_enqueue, QueueSettings(1.0, 10.0, 300.0), clock)
    scheduler = Scheduler(
        NAME,
        framework,
        queue,
        cache,
        binder,
        metrics,
        bind_workers=16,
        preemption=preemption,
        extenders=extenders,
    )
    holder["s"] = scheduler
    for n in nodes:
        scheduler.events.node_changed(n)
    return Env(scheduler, binder, queue, cache, clock, metrics)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    e = make_env(nodes=(node("n1"), node("n2")))
    yield e
    e.binder.release.set()
    await e.scheduler.drain(TIMEOUT)


# ---------------------------------------------------------------------- 1. the happy path
async def test_pending_pod_is_enqueued_assumed_on_the_best_node_and_bound() -> None:
    e = make_env(nodes=(node("busy"), node("idle")))
    e.scheduler.events.pod_changed(pod("existing", 3000, node_name="busy"))
    e.scheduler.events.pod_changed(pod("p", 500))
    assert e.queue.where("ns/p") == "active"
    assert e.sample("opsche_queue_incoming_pods_total", {"queue": "active", "event": "PodAdd"}) == 1

    e.binder.block = True
    info = await asyncio.wait_for(e.queue.pop(), TIMEOUT)
    await e.scheduler.schedule_one(info)
    # Assumed before the bind completes: counted on the node and out of the queue.
    assert e.cache.is_assumed("ns/p")
    assert e.cache.placement("ns/p") == "idle"
    assert e.free_cpu("idle") == 3500
    assert "ns/p" not in e.queue
    e.binder.release.set()
    await e.scheduler.drain(TIMEOUT)

    assert e.binder.bind_calls == [("ns/p", "idle")]
    assert e.binder.bound == [("ns/p", "idle")]
    assert e.scheduler.scheduled == 1
    assert e.binder.events == [
        Event("ns/p", "Scheduled", "Successfully assigned ns/p to idle", "Normal")
    ]
    assert e.sample("opsche_schedule_attempts_total", {"result": "scheduled", "profile": NAME}) == 1
    # The watch then confirms the binding.
    e.scheduler.events.pod_changed(replace(info.pod, node_name="idle", phase="Running"))
    assert not e.cache.is_assumed("ns/p")
    assert e.free_cpu("idle") == 3500


# ---------------------------------------------------------------------- 2. intake filter
async def test_pods_this_scheduler_is_not_responsible_for_are_not_enqueued(env: Env) -> None:
    s = env.scheduler.events
    s.pod_changed(pod("other", scheduler="default-scheduler"))
    s.pod_changed(pod("bound", node_name="n1"))
    s.pod_changed(pod("done", phase="Succeeded"))
    s.pod_changed(pod("failed", phase="Failed"))
    s.pod_changed(replace(pod("leaving"), deleting=True))
    assert env.queue.pending() == []
    assert env.queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    # The bound one still counts in the cache.
    assert env.cache.placement("ns/bound") == "n1"
    assert env.free_cpu("n1") == 3000


async def test_a_queued_pod_leaves_the_queue_when_bound_elsewhere_or_deleting(env: Env) -> None:
    s = env.scheduler.events
    s.pod_changed(pod("a"))
    s.pod_changed(pod("b"))
    assert env.queue.counts()["active"] == 2
    s.pod_changed(pod("a", node_name="n2"))  # bound by someone else
    s.pod_changed(replace(pod("b"), deleting=True))
    assert "ns/a" not in env.queue
    assert "ns/b" not in env.queue
    assert env.queue.pop_nowait() is None
    assert env.sample("opsche_pending_pods", {"queue": "active"}) == 0


# ---------------------------------------------------------------------- 3. burst, no over-commit
async def test_a_burst_lands_on_distinct_nodes_while_binds_are_in_flight() -> None:
    names = ("n1", "n2", "n3")
    e = make_env(nodes=tuple(node(n, 2000) for n in names))
    e.binder.block = True
    for i in range(3):
        e.scheduler.events.pod_changed(pod(f"p{i}", 1500))
    for _ in range(3):
        info = await asyncio.wait_for(e.queue.pop(), TIMEOUT)
        await e.scheduler.schedule_one(info)
    await e.binder.wait_until(lambda: len(e.binder.bind_calls) == 3)
    assert e.binder.bound == []  # every bind is still blocked
    assert sorted(node for _, node in e.binder.bind_calls) == sorted(names)
    assert e.cache.stats().assumed_pods == 3
    assert all(e.free_cpu(n) == 500 for n in names)

    # A fourth pod of the same size fits nowhere while the others are only assumed.
    e.scheduler.events.pod_changed(pod("p3", 1500))
    info = await asyncio.wait_for(e.queue.pop(), TIMEOUT)
    await e.scheduler.schedule_one(info)
    assert e.queue.where("ns/p3") == "unschedulable"
    assert len(e.binder.bind_calls) == 3

    e.binder.release.set()
    await e.scheduler.drain(TIMEOUT)
    assert sorted(e.binder.bound) == sorted(e.binder.bind_calls)
    assert e.scheduler.scheduled == 3
    assert len([ev for ev in e.binder.events if ev.reason == "Scheduled"]) == 3


# ---------------------------------------------------------------------- 4. failed bind
async def test_a_failed_bind_forgets_the_assumption_and_backs_off(env: Env) -> None:
    env.binder.fail_with = RuntimeError("conflict: pod already bound")
    env.scheduler.events.pod_changed(pod("p", 3000))
    await env.cycle()

    assert len(env.binder.bind_calls) == 1
    assert env.binder.bound == []
    assert env.scheduler.scheduled == 0
    assert not env.cache.is_assumed("ns/p")
    assert env.cache.placement("ns/p") is None
    assert env.free_cpu("n1") == 4000
    assert env.free_cpu("n2") == 4000
    assert [p.key for p in env.cache.unbound()] == ["ns/p"]
    assert env.queue.where("ns/p") == "backoff"
    requeued = env.queue.info("ns/p")
    assert requeued is not None
    assert requeued.attempts == 1
    assert requeued.backoff_until == env.clock.now + 1.0
    failed = env.binder.events_for("ns/p", "FailedScheduling")
    assert [(ev.note, ev.type_) for ev in failed] == [
        ("Binding rejected: conflict: pod already bound", "Warning")
    ]
    assert env.binder.events_for("ns/p", "Scheduled") == []
    assert env.sample("opsche_schedule_attempts_total", {"result": "error", "profile": NAME}) == 1

    # Once the backoff has passed, the next attempt binds it.
    assert env.queue.flush_backoff_completed() == 0
    env.clock.now += 1.0
    assert env.queue.flush_backoff_completed() == 1
    env.binder.fail_with = None
    await env.cycle()
    assert len(env.binder.bound) == 1
    assert env.queue.info("ns/p") is None
    assert env.scheduler.scheduled == 1


async def test_a_pod_deleted_while_its_bind_fails_is_not_requeued(env: Env) -> None:
    env.binder.block = True
    env.binder.fail_with = RuntimeError('pods "p" not found')
    p = pod("p", 3000)
    env.scheduler.events.pod_changed(p)
    info = await asyncio.wait_for(env.queue.pop(), TIMEOUT)
    await env.scheduler.schedule_one(info)
    await env.binder.wait_until(lambda: len(env.binder.bind_calls) == 1)
    env.scheduler.events.pod_deleted(p)
    env.binder.release.set()
    await env.scheduler.drain(TIMEOUT)

    assert "ns/p" not in env.queue
    assert list(env.cache.unbound()) == []
    assert env.free_cpu("n1") == 4000
    assert env.free_cpu("n2") == 4000


# ---------------------------------------------------------------------- 5. nothing fits
async def test_unschedulable_pod_is_reported_parked_and_moved_by_a_new_node() -> None:
    e = make_env(preemption=True, nodes=(node("n1"), node("n2")))
    e.scheduler.events.pod_changed(pod("big", 6000))
    await e.cycle()

    expected = (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )
    failed = e.binder.events_for("ns/big", "FailedScheduling")
    assert [(ev.note, ev.type_) for ev in failed] == [(expected, "Warning")]
    assert e.binder.conditions == [("ns/big", expected, None)]
    assert e.binder.bind_calls == []
    assert e.binder.preemptions == []
    assert e.queue.where("ns/big") == "unschedulable"
    info = e.queue.info("ns/big")
    assert info is not None
    assert info.unschedulable_plugins == {"NodeResourcesFit"}
    assert e.sample("opsche_pending_pods", {"queue": "unschedulable"}) == 1
    assert (
        e.sample("opsche_schedule_attempts_total", {"result": "unschedulable", "profile": NAME})
        == 1
    )

    # An update of a known node that cannot help leaves it parked.
    e.clock.now += 1.0  # past the first backoff, so a move goes straight to active
    e.scheduler.events.node_changed(replace(node("n1"), resource_version="2"))
    assert e.queue.where("ns/big") == "unschedulable"

    e.scheduler.events.node_changed(node("huge", 8000))
    assert e.queue.where("ns/big") == "active"
    assert (
        e.sample("opsche_queue_incoming_pods_total", {"queue": "active", "event": "NodeAdd"}) == 1
    )
    await e.cycle()
    assert e.binder.bound == [("ns/big", "huge")]
    assert "ns/big" not in e.queue


async def test_an_extender_refusing_a_node_sends_the_pod_elsewhere() -> None:
    extender = FakeExtender(refuse={"n1": "n1 is reserved"})
    e = make_env(nodes=(node("n1", 8000), node("n2")), extenders=[extender])
    e.scheduler.events.pod_changed(pod("p"))
    await e.cycle()
    assert e.binder.bound == [("ns/p", "n2")]
    assert extender.calls == [("filter", ("n1", "n2"))]


async def test_a_failing_extender_fails_the_cycle_as_a_scheduler_error() -> None:
    e = make_env(nodes=(node("n1"), node("n2")), extenders=[FakeExtender(fail="filter")])
    e.scheduler.events.pod_changed(pod("p"))
    await e.cycle()
    message = 'Post "http://127.0.0.1:1/filter": connection refused'
    assert [ev.note for ev in e.binder.events_for("ns/p", "FailedScheduling")] == [message]
    assert e.binder.conditions == [("ns/p", message, None)]
    assert e.binder.reasons == ["SchedulerError"]
    assert e.binder.bind_calls == []
    assert e.queue.where("ns/p") == "backoff"
    assert e.sample("opsche_schedule_attempts_total", {"result": "error", "profile": NAME}) == 1


async def test_a_pod_deleted_during_its_extender_calls_is_not_assumed_or_requeued() -> None:
    e = make_env(nodes=(node("n1"), node("n2")))
    victim = pod("p")
    extender = FakeExtender(during=lambda: e.scheduler.events.pod_deleted(victim))
    e.scheduler.extenders = (extender,)
    e.scheduler.events.pod_changed(victim)
    await e.cycle()
    assert e.binder.bind_calls == []
    assert "ns/p" not in e.queue
    assert e.cache.placement("ns/p") is None and not e.cache.is_assumed("ns/p")


async def test_an_ignorable_extender_that_fails_is_skipped() -> None:
    broken = FakeExtender(fail="filter", ignorable=True)
    e = make_env(nodes=(node("n1"),), extenders=[broken])
    e.scheduler.events.pod_changed(pod("p"))
    await e.cycle()
    assert e.binder.bound == [("ns/p", "n1")]


async def test_a_move_during_backoff_sends_the_pod_to_backoff_not_active() -> None:
    e = make_env(nodes=(node("n1"),))
    e.scheduler.events.pod_changed(pod("big", 6000))
    await e.cycle()
    # Without preemption the message is the bare FitError.
    assert e.binder.conditions == [("ns/big", "0/1 nodes are available: 1 Insufficient cpu.", None)]
    e.scheduler.events.node_changed(node("huge", 8000))
    assert e.queue.where("ns/big") == "backoff"
    e.clock.now += 1.0
    assert e.queue.flush_backoff_completed() == 1
    await e.cycle()
    assert e.binder.bound == [("ns/big", "huge")]


# ---------------------------------------------------------------------- 6. preemption
async def test_preemption_evicts_the_lowest_priority_victim_and_nominates_the_node() -> None:
    e = make_env(preemption=True, nodes=(node("n1"), node("n2")))
    s = e.scheduler.events
    s.pod_changed(pod("low", 2000, node_name="n1", priority=0))
    s.pod_changed(pod("mid", 2000, node_name="n1", priority=5))
    s.pod_changed(pod("n2-a", 2000, node_name="n2", priority=50))
    s.pod_changed(pod("n2-b", 2000, node_name="n2", priority=50))
    high = pod("high", 2000, priority=100)
    s.pod_changed(high)
    await e.cycle()

    assert len(e.binder.preemptions) == 1
    preemptor, result = e.binder.preemptions[0]
    assert preemptor == "ns/high"
    assert result.nominated_node == "n1"
    assert [v.key for v in result.victims] == ["ns/low"]
    assert e.scheduler.nominated() == {"n1": [high]}
    assert e.binder.bind_calls == []
    assert len(e.binder.conditions) == 1
    key, message, nominated = e.binder.conditions[0]
    assert (key, nominated) == ("ns/high", "n1")
    assert message == "0/2 nodes are available: 2 Insufficient cpu."
    assert e.queue.where("ns/high") == "unschedulable"
    assert e.sample("opsche_preemption_attempts_total") == 1

    # The victim leaves while the preemptor is still backing off: it moves to backoff.
    s.pod_deleted(pod("low", 2000, node_name="n1", priority=0))
    assert e.queue.where("ns/high") == "backoff"
    assert e.free_cpu("n1") == 2000
    # A lower-priority pod cannot take the room held for the nominated preemptor.
    s.pod_changed(pod("sneaky", 2000, priority=1))
    await e.cycle()
    assert e.binder.bind_calls == []
    assert e.queue.where("ns/sneaky") in ("unschedulable", "backoff")
    assert e.scheduler.nominated() == {"n1": [high]}
    # Once its backoff is over, the preemptor binds to its nominated node.
    e.clock.now += 1.0
    assert e.queue.flush_backoff_completed() == 1
    await e.cycle()
    assert e.binder.bound == [("ns/high", "n1")]
    assert e.scheduler.nominated() == {}


async def test_a_refused_eviction_does_not_nominate() -> None:
    e = make_env(preemption=True, nodes=(node("n1"),))
    e.binder.preempt_ok = False
    e.scheduler.events.pod_changed(pod("low", 4000, node_name="n1"))
    e.scheduler.events.pod_changed(pod("high", 2000, priority=100))
    await e.cycle()
    assert len(e.binder.preemptions) == 1
    assert e.scheduler.nominated() == {}
    assert e.binder.conditions == [
        (
            "ns/high",
            "0/1 nodes are available: 1 Insufficient cpu. preemption: an eviction was refused.",
            None,
        )
    ]


async def test_protected_pods_are_never_victims() -> None:
    e = make_env(preemption=True, nodes=(node("n1"),))
    e.scheduler.events.pod_changed(
        replace(pod("dns", 4000, node_name="n1"), namespace="kube-system")
    )
    e.scheduler.events.pod_changed(pod("high", 2000, priority=100))
    await e.cycle()
    assert e.binder.preemptions == []
    assert e.scheduler.nominated() == {}
    assert e.queue.where("ns/high") == "unschedulable"


# ---------------------------------------------------------------------- 7. pod deletion moves
async def test_deleting_a_bound_pod_moves_parked_pods(env: Env) -> None:
    s = env.scheduler.events
    s.pod_changed(pod("a", 4000, node_name="n1"))
    s.pod_changed(pod("b", 4000, node_name="n2"))
    s.pod_changed(pod("waiting", 3000))
    await env.cycle()
    assert env.queue.where("ns/waiting") == "unschedulable"
    env.clock.now += 1.0

    # Deleting a pod that was never bound frees nothing: no move.
    s.pod_changed(pod("other-pending", scheduler="default-scheduler"))
    s.pod_deleted(pod("other-pending", scheduler="default-scheduler"))
    assert env.queue.where("ns/waiting") == "unschedulable"

    s.pod_deleted(pod("a", 4000, node_name="n1"))
    assert env.queue.where("ns/waiting") == "active"
    assert (
        env.sample(
            "opsche_queue_incoming_pods_total", {"queue": "active", "event": "AssignedPodDelete"}
        )
        == 1
    )
    await env.cycle()
    assert env.binder.bound == [("ns/waiting", "n1")]


# ---------------------------------------------------------------------- 8. the run loop
@contextlib.asynccontextmanager
async def running(scheduler: Scheduler) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.get_running_loop().create_task(scheduler.run(), name="test-run")
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await scheduler.drain(TIMEOUT)


async def test_run_schedules_several_pods_in_one_turn() -> None:
    e = make_env(nodes=(node("n1"), node("n2")))
    e.scheduler.turn_budget_s = 60.0
    assumed_at_bind: list[int] = []
    e.binder.on_bind = lambda _p, _n: assumed_at_bind.append(e.cache.stats().assumed_pods)
    for i in range(4):
        e.scheduler.events.pod_changed(pod(f"p{i}", 1000))
    async with running(e.scheduler) as task:
        await e.binder.wait_until(lambda: len(e.binder.bound) == 4)
        assert not task.done()
    # Every pod was assumed in the same turn, before the loop yielded to the first bind.
    assert assumed_at_bind[0] == 4
    assert sorted(k for k, _ in e.binder.bound) == [f"ns/p{i}" for i in range(4)]
    assert e.free_cpu("n1") + e.free_cpu("n2") == 4000
    assert e.scheduler.scheduled == 4


async def test_run_yields_between_turns_when_the_budget_is_spent() -> None:
    e = make_env(nodes=(node("n1"), node("n2")))
    e.scheduler.turn_budget_s = 0.0  # one pod per turn
    assumed_at_bind: list[int] = []
    e.binder.on_bind = lambda _p, _n: assumed_at_bind.append(e.cache.stats().assumed_pods)
    for i in range(3):
        e.scheduler.events.pod_changed(pod(f"p{i}", 1000))
    async with running(e.scheduler):
        await e.binder.wait_until(lambda: len(e.binder.bound) == 3)
    assert assumed_at_bind[0] == 1


async def test_run_waits_for_new_pods_and_survives_a_failing_cycle() -> None:
    e = make_env(nodes=(node("n1"),))
    async with running(e.scheduler) as task:
        e.scheduler.events.pod_changed(pod("first"))
        await e.binder.wait_until(lambda: len(e.binder.bound) == 1)
        # A pod no node fits does not stop the loop.
        e.scheduler.events.pod_changed(pod("too-big", 9000))
        await e.binder.wait_until(lambda: len(e.binder.conditions) == 1)
        e.scheduler.events.pod_changed(pod("second"))
        await e.binder.wait_until(lambda: len(e.binder.bound) == 2)
        assert not task.done()
    assert [k for k, _ in e.binder.bound] == ["ns/first", "ns/second"]
    assert e.queue.where("ns/too-big") == "unschedulable"


async def test_a_pod_failing_again_for_the_same_reason_is_not_patched_again() -> None:
    e = make_env(nodes=(node("n1"),))
    e.scheduler.events.pod_changed(pod("big", 6000))
    await e.cycle()
    message = "0/1 nodes are available: 1 Insufficient cpu."
    assert e.binder.conditions == [("ns/big", message, None)]
    # The watch brings the condition back on the pod; a node event sends the pod round again.
    conditioned = replace(pod("big", 6000), unschedulable_message=message)
    e.scheduler.events.pod_changed(conditioned)
    e.clock.now += 1.0
    e.scheduler.events.node_changed(replace(node("n1"), labels={"changed": "yes"}))
    e.queue.activate(["ns/big"])
    await e.cycle()
    assert len(e.binder.events_for("ns/big", "FailedScheduling")) == 2  # reported again
    assert e.binder.conditions == [("ns/big", message, None)]  # but not written again
