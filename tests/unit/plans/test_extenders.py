"""Plans respect filter extenders: groups are only placed or moved where the extenders agree."""

import asyncio
import threading

from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.api import solve_snapshot
from opsche_daemon.optimiser.problem import build_problem
from opsche_daemon.plans.extenders import extender_filter
from tests import factories
from tests.fake_extender import FakeExtender

SCHEDULER = "opsche"


def cluster() -> Snapshot:
    """Three empty nodes, a pending pod and a running one (controller-owned, movable)."""
    return factories.snapshot_of(
        [factories.node(n, 4000) for n in ("a", "b", "c")],
        [
            factories.pod(
                "pending", 1000, scheduler=SCHEDULER, owner=factories.controller("rs-pending")
            ),
            factories.pod(
                "running", 1000, on="a", scheduler=SCHEDULER, owner=factories.controller("rs-run")
            ),
        ],
    )


def feasible_names(snapshot: Snapshot, extenders: list[FakeExtender]) -> dict[str, set[str]]:
    """Each group's feasible node names, with the problem built in a thread as the flow does."""

    async def build() -> dict[str, set[str]]:
        problem = await asyncio.to_thread(
            build_problem,
            snapshot,
            scheduler_name=SCHEDULER,
            protected=lambda p: False,
            extra_filter=extender_filter(extenders, threading.Event()),
        )
        names = [n.name for n in problem.nodes]
        out = {}
        for group in problem.groups:
            first = (group.pending or next(iter(group.running.values())))[0]
            out[first.name] = {names[i] for i in group.feasible}
        return out

    return asyncio.run(build())


def test_without_filter_extenders_there_is_no_extra_filter() -> None:
    async def check() -> None:
        assert extender_filter([], threading.Event()) is None
        assert (
            extender_filter([FakeExtender(is_filter=False, is_prioritizer=True)], threading.Event())
            is None
        )

    asyncio.run(check())


def test_refused_nodes_leave_the_groups_domain_but_a_running_pod_may_stay() -> None:
    extender = FakeExtender(refuse={"a": "reserved", "b": "reserved"})
    feasible = feasible_names(cluster(), [extender])
    assert feasible == {"pending": {"c"}, "running": {"a", "c"}}  # 'running' may stay on a
    assert len(extender.calls) == 2  # once per group


def test_a_failing_extender_is_asked_once_per_solve() -> None:
    strict = FakeExtender(fail="filter")
    feasible = feasible_names(cluster(), [strict])
    # Not ignorable: nothing new for anyone; the running pod may only stay.
    assert feasible == {"pending": set(), "running": {"a"}}
    assert len(strict.calls) == 1
    lenient = FakeExtender(fail="filter", ignorable=True)
    feasible = feasible_names(cluster(), [lenient])
    assert feasible == {"pending": {"a", "b", "c"}, "running": {"a", "b", "c"}}
    assert len(lenient.calls) == 1


def test_a_plan_places_the_pod_where_the_extender_accepts_it() -> None:
    extender = FakeExtender(refuse={"a": "reserved", "b": "reserved"})

    async def solve() -> str:
        plan = await asyncio.to_thread(
            solve_snapshot,
            cluster(),
            scheduler_name=SCHEDULER,
            protected=lambda p: False,
            solver="heuristic",
            time_limit=2.0,
            extra_filter=extender_filter([extender], threading.Event()),
        )
        (placement,) = plan.placements
        return placement.node

    assert asyncio.run(solve()) == "c"


def test_a_cancelled_run_asks_no_extender_and_places_nothing_new() -> None:
    extender = FakeExtender()
    cancel = threading.Event()
    cancel.set()

    async def build() -> list[tuple[int, ...]]:
        problem = await asyncio.to_thread(
            build_problem,
            cluster(),
            scheduler_name=SCHEDULER,
            protected=lambda p: False,
            extra_filter=extender_filter([extender], cancel),
        )
        return [g.feasible for g in problem.groups]

    feasible = asyncio.run(build())
    assert extender.calls == []
    assert sorted(feasible) == [(), (0,)]  # the pending pod nowhere, the running one stays on a
