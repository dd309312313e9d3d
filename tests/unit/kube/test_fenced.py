"""A replica that does not lead writes nothing: binds raise, evictions fail, the rest is dropped."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from opsche_daemon.kube.fenced import FencedWriter, NotLeaderError
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Pod
from tests.factories import pod


@dataclass
class Recorder:
    """A WriteApi that records every write it receives."""

    calls: list[str] = field(default_factory=list)

    async def bind(self, target: Pod, node_name: str) -> None:
        self.calls.append(f"bind {target.name} {node_name}")

    async def set_unschedulable(
        self,
        target: Pod,
        message: str,
        nominated_node: str | None = None,
        *,
        reason: str = "Unschedulable",
    ) -> None:
        self.calls.append(f"status {target.name} {reason}")

    async def mark_disruption_target(self, target: Pod, preemptor: Pod) -> None:
        self.calls.append(f"mark {target.name}")

    async def evict(self, target: Pod) -> EvictionResult:
        self.calls.append(f"evict {target.name}")
        return EvictionResult(target.key, EvictionOutcome.EVICTED)

    def event(
        self, target: Pod, reason: str, note: str, *, action: str = "", type_: str = "Normal"
    ) -> None:
        self.calls.append(f"event {reason} {target.name}")

    async def drain_events(self, within: float = 5.0) -> None:
        self.calls.append("drain")


async def writes(fenced: FencedWriter) -> EvictionResult:
    p = pod("p", on="n1")
    await fenced.bind(p, "n1")
    await fenced.set_unschedulable(p, "no room")
    await fenced.mark_disruption_target(p, pod("high"))
    fenced.event(p, "Scheduled", "assigned")
    return await fenced.evict(p)


async def test_the_leader_writes_through() -> None:
    inner = Recorder()
    fenced = FencedWriter(inner, lambda: True)
    result = await writes(fenced)
    assert result.outcome is EvictionOutcome.EVICTED
    assert inner.calls == [
        "bind p n1",
        "status p Unschedulable",
        "mark p",
        "event Scheduled p",
        "evict p",
    ]
    assert fenced.refused == 0


async def test_a_replica_that_may_not_act_writes_nothing() -> None:
    inner = Recorder()
    fenced = FencedWriter(inner, lambda: False)
    with pytest.raises(NotLeaderError, match="not the leader"):
        await fenced.bind(pod("p"), "n1")
    await fenced.set_unschedulable(pod("p"), "no room")
    await fenced.mark_disruption_target(pod("p"), pod("high"))
    fenced.event(pod("p"), "Scheduled", "assigned")
    result = await fenced.evict(pod("p", on="n1"))
    assert result.outcome is EvictionOutcome.ERROR
    assert result.message == "not the leader"
    await fenced.drain_events()
    assert inner.calls == ["drain"]
    assert fenced.refused == 4  # the event is dropped without a log line


async def test_the_fence_is_asked_at_every_write() -> None:
    inner, leading = Recorder(), [True]
    fenced = FencedWriter(inner, lambda: leading[0])
    await fenced.bind(pod("a"), "n1")
    leading[0] = False  # the renew deadline passed
    with pytest.raises(NotLeaderError):
        await fenced.bind(pod("b"), "n1")
    assert inner.calls == ["bind a n1"]
