"""Extenders in the scheduling algorithm: upstream's order, scaling, and failure rules."""

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from opsche_daemon.framework.extender import (
    ExtenderError,
    interested,
    schedule_with_extenders,
)
from opsche_daemon.framework.interface import Code, CycleState, NodeScore, Status
from opsche_daemon.framework.runtime import FitError, Framework
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from tests.factories import api_pod, container, node, pod, requests_pod, snapshot_of
from tests.fake_extender import FakeExtender


class Fixed:
    """A Score plugin with a fixed table (0-100)."""

    name = "Fixed"

    def __init__(self, table: Mapping[str, int]) -> None:
        self.table = table

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        return self.table.get(node.name, 0), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        return Status.success()


def framework(table: Mapping[str, int] | None = None) -> Framework:
    return Framework([Fixed(table or {})], {"Fixed": 1})


def state(names: Sequence[str] = ("a", "b", "c")) -> CycleState:
    return CycleState(snapshot_of([node(n) for n in names]))


async def schedule(
    extenders: Sequence[FakeExtender], table: Mapping[str, int] | None = None
) -> str:
    result = await schedule_with_extenders(framework(table), extenders, state(), pod("p"))
    return result.node


async def test_extender_scores_are_scaled_by_ten_and_weighted() -> None:
    # Plugins prefer a by 90 points; the extender's 1-point edge for b, weight 10, is 100.
    extender = FakeExtender(is_filter=False, is_prioritizer=True, scores={"b": 1}, weight=10)
    assert await schedule([extender], {"a": 90}) == "b"
    extender = FakeExtender(is_filter=False, is_prioritizer=True, scores={"b": 1}, weight=8)
    assert await schedule([extender], {"a": 90}) == "a"


async def test_filters_run_in_order_each_on_what_the_last_left() -> None:
    first = FakeExtender(refuse={"a": "no a"})
    second = FakeExtender(refuse={"b": "no b"})
    assert await schedule([first, second]) == "c"
    assert first.calls == [("filter", ("a", "b", "c"))]
    assert second.calls == [("filter", ("b", "c"))]


async def test_refused_nodes_are_counted_in_the_fit_error() -> None:
    extender = FakeExtender(refuse={"a": "gpu busy", "b": "gpu busy"}, unresolvable={"c": "no gpu"})
    with pytest.raises(FitError) as raised:
        await schedule([extender])
    assert str(raised.value) == "0/3 nodes are available: 1 no gpu, 2 gpu busy."
    statuses = raised.value.diagnosis.node_statuses
    assert statuses["c"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["a"].code == Code.UNSCHEDULABLE
    assert raised.value.code == Code.UNSCHEDULABLE  # preemption may still help on a and b


async def test_a_node_in_both_maps_is_unresolvable() -> None:
    extender = FakeExtender(refuse={"a": "busy"}, unresolvable={"a": "never"})
    assert await schedule([extender]) in {"b", "c"}
    with pytest.raises(FitError) as raised:
        await schedule(
            [FakeExtender(refuse={"a": "x", "b": "x", "c": "x"}, unresolvable={"a": "y"})]
        )
    assert raised.value.diagnosis.node_statuses["a"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


async def test_a_failing_ignorable_filter_is_skipped_and_reported() -> None:
    skipped: list[tuple[str, str]] = []
    broken = FakeExtender(fail="filter", ignorable=True)
    after = FakeExtender(refuse={"a": "x", "b": "x"})
    result = await schedule_with_extenders(
        framework(),
        [broken, after],
        state(),
        pod("p"),
        on_skip=lambda e, verb, p, error: skipped.append((verb, error.kind)),
    )
    assert result.node == "c"
    assert skipped == [("filter", "connection")]


async def test_a_failing_filter_that_is_not_ignorable_fails_the_cycle() -> None:
    with pytest.raises(ExtenderError, match="connection refused"):
        await schedule([FakeExtender(fail="filter")])


async def test_a_failing_prioritize_never_fails_the_cycle() -> None:
    skipped: list[str] = []
    extender = FakeExtender(is_filter=False, is_prioritizer=True, fail="prioritize")
    result = await schedule_with_extenders(
        framework({"b": 50}),
        [extender],
        state(),
        pod("p"),
        on_skip=lambda e, verb, p, error: skipped.append(verb),
    )
    assert result.node == "b"
    assert skipped == ["prioritize"]


async def test_prioritizers_are_called_at_once() -> None:
    slow = [
        FakeExtender(is_filter=False, is_prioritizer=True, delay=0.2, scores={"c": 10})
        for _ in range(3)
    ]
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await schedule(slow) == "c"
    assert loop.time() - started < 0.5  # three 0.2 s calls in sequence would take 0.6 s


async def test_one_feasible_node_is_not_scored() -> None:
    scorer = FakeExtender(is_prioritizer=True, refuse={"a": "x", "b": "x"})
    assert await schedule([scorer]) == "c"
    assert [verb for verb, _ in scorer.calls] == ["filter"]


async def test_uninterested_extenders_are_not_called() -> None:
    gpu = FakeExtender(
        refuse={"a": "x", "b": "x", "c": "x"}, managed=frozenset({"example.com/gpu"})
    )
    assert await schedule([gpu]) in {"a", "b", "c"}
    assert gpu.calls == []


def test_interest_reads_requests_and_limits() -> None:
    managed = frozenset({"example.com/gpu"})
    assert interested(pod("p"), frozenset())
    assert not interested(pod("p"), managed)
    assert interested(pod("p", scalars={"example.com/gpu": 1}), managed)
    assert not interested(requests_pod("q", {"cpu": "1"}), managed)
    limited = container("c")
    limited["resources"] = {"limits": {"example.com/gpu": "1"}}
    assert interested(api_pod("r", containers=[limited]), managed)


async def test_a_refusing_extender_is_named_as_the_rejecting_plugin() -> None:
    with pytest.raises(FitError) as raised:
        await schedule([FakeExtender(refuse={"a": "x", "b": "x", "c": "x"})])
    assert raised.value.diagnosis.unschedulable_plugins == {"Extender"}
