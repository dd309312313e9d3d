import asyncio

import pytest

from opsche_daemon.config import QueueSettings
from opsche_daemon.framework.interface import Code, Status
from opsche_daemon.model.pod import Pod
from opsche_daemon.queue import QueuedPod, SchedulingQueue
from tests.factories import pod


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate(p: Pod) -> Status:
    if p.scheduling_gates:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("gated",), "SchedulingGates")
    return Status.success()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(gate, QueueSettings(1.0, 10.0, 300.0), clock)


async def pop_now(queue: SchedulingQueue) -> str:
    info = await asyncio.wait_for(queue.pop(), 1)
    return info.key


async def test_pops_by_priority_then_arrival(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.add(pod("low", priority=1))
    clock.now += 1
    queue.add(pod("high", priority=10))
    clock.now += 1
    queue.add(pod("low-later", priority=1))
    assert [await pop_now(queue) for _ in range(3)] == [
        "default/high",
        "default/low",
        "default/low-later",
    ]


async def test_gated_pods_wait_until_their_gates_are_removed(queue: SchedulingQueue) -> None:
    queue.add(pod("g", gates=("example.com/wait",)))
    assert queue.counts()["gated"] == 1
    queue.update(pod("g"))
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert await pop_now(queue) == "default/g"


async def test_backoff_doubles_from_one_second_up_to_ten(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(pod("p"))
    waits = []
    for _ in range(6):
        info = await asyncio.wait_for(queue.pop(), 1)
        queue.requeue_error(info)
        waits.append(info.backoff_until - clock.now)
        clock.now = info.backoff_until
        assert queue.flush_backoff_completed() == 1
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


async def test_unschedulable_pods_park_until_an_event_moves_them(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(pod("p"))
    info = await pop_now_info(queue)
    queue.requeue_unschedulable(info, {"NodeResourcesFit"}, queue.scheduling_cycle)
    assert queue.where("default/p") == "unschedulable"
    clock.now += 60
    assert queue.flush_backoff_completed() == 0  # parked pods do not leave on backoff expiry
    assert queue.move_all_to_active_or_backoff("NodeAdd") == 1
    assert queue.where("default/p") == "active"


async def test_an_event_during_the_cycle_sends_the_pod_to_backoff_not_the_pool(
    queue: SchedulingQueue,
) -> None:
    queue.add(pod("p"))
    info = await pop_now_info(queue)
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff("AssignedPodDelete")  # arrives while p is in flight
    queue.requeue_unschedulable(info, {"NodeResourcesFit"}, cycle)
    assert queue.where("default/p") == "backoff"


async def test_leftover_flush_releases_pods_parked_for_five_minutes(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(pod("p"))
    info = await pop_now_info(queue)
    queue.requeue_unschedulable(info, set(), queue.scheduling_cycle)
    clock.now += 299
    assert queue.flush_unschedulable_leftover() == 0
    clock.now += 1
    assert queue.flush_unschedulable_leftover() == 1
    assert queue.where("default/p") == "active"


async def test_deleted_pods_are_never_popped(queue: SchedulingQueue) -> None:
    queue.add(pod("a"))
    queue.add(pod("b"))
    queue.delete("default/a")
    assert await pop_now(queue) == "default/b"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.pop(), 0.05)


async def test_close_wakes_a_waiting_pop(queue: SchedulingQueue) -> None:
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    queue.close()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 1)


async def pop_now_info(queue: SchedulingQueue) -> QueuedPod:
    return await asyncio.wait_for(queue.pop(), 1)


async def test_pool_sizes_stay_exact_through_every_transition(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    def recount() -> dict[str, int]:
        pools = ("active", "backoff", "unschedulable", "gated")
        return {
            p: sum(
                1
                for k in ("default/a", "default/b", "default/c", "default/g")
                if queue.where(k) == p
            )
            for p in pools
        }

    queue.add(pod("a"))
    queue.add(pod("b"))
    queue.add(pod("c"))
    queue.add(pod("g", gates=("x",)))
    assert (
        queue.counts() == recount() == {"active": 3, "backoff": 0, "unschedulable": 0, "gated": 1}
    )
    first = await pop_now_info(queue)
    queue.requeue_unschedulable(first, set(), queue.scheduling_cycle)
    second = await pop_now_info(queue)
    queue.requeue_error(second)
    assert queue.counts() == recount()
    queue.delete("default/c")
    queue.update(pod("g"))
    clock.now += 20
    queue.flush_backoff_completed()
    queue.move_all_to_active_or_backoff("NodeAdd")
    assert (
        queue.counts() == recount() == {"active": 3, "backoff": 0, "unschedulable": 0, "gated": 0}
    )


# --- SchedulerPopFromBackoffQ (upstream, on by default since 1.33) ------------------------------


async def backed_off(queue: SchedulingQueue, name: str, priority: int = 0) -> None:
    """Add ``name``, fail it as unschedulable while an event arrives: it lands in backoff."""
    queue.add(pod(name, priority=priority))
    info = await pop_now_info(queue)
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff("AssignedPodDelete")
    queue.requeue_unschedulable(info, {"NodeResourcesFit"}, cycle)
    assert queue.where(info.key) == "backoff"


async def test_with_active_empty_a_backed_off_pod_is_tried_at_once(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    await backed_off(queue, "p")
    info = queue.info("default/p")
    assert info is not None
    assert info.backoff_until > clock.now  # its backoff has not ended
    assert await pop_now(queue) == "default/p"
    assert info.attempts == 2


async def test_active_pods_go_before_backed_off_ones(queue: SchedulingQueue) -> None:
    await backed_off(queue, "backed-off", priority=10)
    queue.add(pod("fresh", priority=1))
    assert [await pop_now(queue) for _ in range(2)] == ["default/fresh", "default/backed-off"]


async def test_backed_off_pods_go_by_backoff_window_then_priority(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    await backed_off(queue, "early-low", priority=1)
    clock.now += 0.25  # the same 1 s window of backoff expiry
    await backed_off(queue, "early-high", priority=10)
    clock.now += 1.0  # a later window
    await backed_off(queue, "late-top", priority=100)
    assert [await pop_now(queue) for _ in range(3)] == [
        "default/early-high",
        "default/early-low",
        "default/late-top",
    ]


async def test_pods_backing_off_after_an_error_wait_it_out(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.add(pod("p"))
    queue.requeue_error(await pop_now_info(queue))  # a bind conflict, an API failure
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(queue.pop(), 0.05)
    clock.now += 1.0
    assert queue.flush_backoff_completed() == 1
    assert await pop_now(queue) == "default/p"


async def test_an_idle_pop_wakes_when_an_event_moves_a_pod_to_backoff(
    queue: SchedulingQueue,
) -> None:
    queue.add(pod("p"))
    info = await pop_now_info(queue)
    queue.requeue_unschedulable(info, {"NodeResourcesFit"}, queue.scheduling_cycle)
    assert queue.where("default/p") == "unschedulable"
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.move_all_to_active_or_backoff("NodeAdd")  # within its backoff: to backoff, not active
    assert queue.where("default/p") in ("backoff", "inflight")
    assert (await asyncio.wait_for(waiter, 1)).key == "default/p"
