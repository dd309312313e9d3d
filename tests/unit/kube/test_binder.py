"""KubeBinder's preemption: mark, evict, report; a refusal stops it when PDBs are respected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pytest

from opsche_daemon.framework.interface import PostFilterResult
from opsche_daemon.kube.binder import KubeBinder
from opsche_daemon.kube.writer import Writer
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Pod
from tests.factories import pod


@dataclass
class FakeWriter:
    """Answers evictions from ``answers`` (by pod name) and records every call."""

    answers: dict[str, EvictionOutcome]
    calls: list[str] = field(default_factory=list)

    async def mark_disruption_target(self, victim: Pod, preemptor: Pod) -> None:
        self.calls.append(f"mark {victim.name} for {preemptor.name}")

    async def evict(self, victim: Pod) -> EvictionResult:
        self.calls.append(f"evict {victim.name}")
        return EvictionResult(victim.key, self.answers.get(victim.name, EvictionOutcome.EVICTED))

    def event(
        self, target: Pod, reason: str, note: str, *, action: str = "", type_: str = "Normal"
    ) -> None:
        self.calls.append(f"event {reason} {target.name} ({action})")


VICTIMS = (pod("low-a", on="n1"), pod("low-b", on="n1"), pod("low-c", on="n1"))
HIGH = pod("high", priority=100)


async def preempt(
    answers: dict[str, EvictionOutcome], respect_pdbs: bool
) -> tuple[bool, list[str]]:
    writer = FakeWriter(answers)
    binder = KubeBinder(cast(Writer, writer), respect_pdbs=respect_pdbs)
    ok = await binder.preempt(HIGH, PostFilterResult("n1", VICTIMS))
    return ok, writer.calls


async def test_every_victim_is_marked_then_evicted_and_gets_a_preempted_event() -> None:
    ok, calls = await preempt({"low-b": EvictionOutcome.NOT_FOUND}, respect_pdbs=False)
    assert ok
    assert calls == [
        "mark low-a for high",
        "evict low-a",
        "event Preempted low-a (Preempting)",
        "mark low-b for high",
        "evict low-b",
        "event Preempted low-b (Preempting)",  # already gone counts as evicted
        "mark low-c for high",
        "evict low-c",
        "event Preempted low-c (Preempting)",
    ]


@pytest.mark.parametrize("refusal", [EvictionOutcome.BLOCKED, EvictionOutcome.ERROR])
async def test_a_refusal_fails_the_preemption_and_stops_it_when_pdbs_are_respected(
    refusal: EvictionOutcome,
) -> None:
    ok, calls = await preempt({"low-b": refusal}, respect_pdbs=True)
    assert not ok
    assert calls[-1] == "evict low-b"  # low-c is left alone
    ok, calls = await preempt({"low-b": refusal}, respect_pdbs=False)
    assert not ok
    assert "evict low-c" in calls
    assert "event Preempted low-b (Preempting)" not in calls
