"""Named guarded tasks: the first to end stops the daemon, and it says which and why."""

from __future__ import annotations

import asyncio

import pytest

from opsche_daemon.daemon.tasks import Supervisor


async def forever() -> None:
    await asyncio.Event().wait()


async def fails_after(event: asyncio.Event) -> None:
    await event.wait()
    raise RuntimeError("watch lost")


async def test_a_failing_task_ends_the_wait_with_its_name_and_error() -> None:
    tasks = Supervisor()
    go = asyncio.Event()
    tasks.start("watch", fails_after(go))
    tasks.start("scheduling-loop", forever())
    go.set()
    ended = await asyncio.wait_for(tasks.first_to_end(asyncio.Event()), timeout=5)
    assert [(e.name, repr(e.error), e.signal) for e in ended] == [
        ("watch", "RuntimeError('watch lost')", False)
    ]
    tasks.cancel("scheduling-loop", "no-such-task")
    await tasks.join("scheduling-loop", within=5)


async def test_the_stop_signal_ends_the_wait_and_join_is_bounded() -> None:
    tasks = Supervisor()
    tasks.start("scheduling-loop", forever())
    stop = asyncio.Event()
    stop.set()
    ended = await asyncio.wait_for(tasks.first_to_end(stop), timeout=5)
    assert [(e.name, e.error, e.signal) for e in ended] == [("signal", None, True)]
    loop = asyncio.get_running_loop()
    started = loop.time()
    await tasks.join("scheduling-loop", within=0.05)  # a task that never ends is cut off
    assert loop.time() - started < 2


async def test_task_names_are_unique() -> None:
    tasks = Supervisor()
    tasks.start("watch", forever())
    coro = forever()
    with pytest.raises(ValueError, match="already running"):
        tasks.start("watch", coro)
    coro.close()
    tasks.cancel("watch")
    await tasks.join("watch", within=5)


async def test_a_task_started_during_the_wait_is_waited_for_too() -> None:
    # A follower starts its scheduling tasks once it leads, long after the wait began.
    tasks = Supervisor()
    tasks.start("watch", forever())
    waiting = asyncio.get_running_loop().create_task(tasks.first_to_end(asyncio.Event()))
    await asyncio.sleep(0)
    go = asyncio.Event()
    tasks.start("scheduling-loop", fails_after(go))
    await asyncio.sleep(0)
    assert not waiting.done()
    go.set()
    ended = await asyncio.wait_for(waiting, timeout=5)
    assert [(e.name, repr(e.error)) for e in ended] == [
        ("scheduling-loop", "RuntimeError('watch lost')")
    ]
    tasks.cancel("watch")
