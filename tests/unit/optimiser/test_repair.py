"""Plan repair: a stale plan cut down to its valid part, never made less safe."""

from __future__ import annotations

from opsche_daemon.model.plan import Eviction, Move, Placement, Plan, PlanStatus
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.budget import Budget
from opsche_daemon.optimiser.repair import Repaired, repair_plan
from opsche_daemon.optimiser.validate import validate_plan
from opsche_daemon.safety import is_protected
from tests.factories import GiB, controller, node, pod, snapshot_of


def replica(name: str, cpu: int, on: str = "", priority: int = 0) -> Pod:
    return pod(
        name,
        cpu,
        memory=GiB,
        namespace="ns",
        uid="",
        on=on,
        priority=priority,
        scheduler="opsche",
        owner=controller(f"rs-{name}", uid=f"u-{name}"),
    )


def cluster(*pods: Pod) -> Snapshot:
    return snapshot_of([node(n, 4000, memory=16 * GiB) for n in ("a", "b", "c")], pods)


def plan(*actions: Placement | Move | Eviction) -> Plan:
    return Plan(
        generation=1,
        solver="cpsat",
        status=PlanStatus.OPTIMAL,
        placements=tuple(a for a in actions if isinstance(a, Placement)),
        moves=tuple(a for a in actions if isinstance(a, Move)),
        evictions=tuple(a for a in actions if isinstance(a, Eviction)),
    )


def repair(stale: Plan, fresh: Snapshot) -> Repaired | None:
    result = repair_plan(stale, fresh, scheduler_name="opsche", protected=is_protected)
    if result is not None:  # whatever it keeps is valid, checked by the validator itself
        assert (
            validate_plan(result.plan, fresh, scheduler_name="opsche", protected=is_protected) == []
        )
    return result


def test_a_placement_bound_meanwhile_is_dropped_and_the_rest_kept() -> None:
    stale = plan(Placement("ns", "p1", "a"), Placement("ns", "p2", "b"))
    fresh = cluster(replica("p1", 1000, on="c"), replica("p2", 1000))  # p1 was bound to c
    result = repair(stale, fresh)
    assert result is not None
    assert [p.name for p in result.plan.placements] == ["p2"]
    assert result.dropped == (
        "placement of ns/p1 on a: placement of ns/p1: the pod is no longer pending",
    )
    assert result.plan.notes[-1] == "repaired: 1 actions dropped"


def test_a_node_filled_meanwhile_loses_the_lowest_priority_placement_onto_it() -> None:
    stale = plan(
        Placement("ns", "hi", "b", priority=10),
        Placement("ns", "lo", "b", priority=1),
        Placement("ns", "p", "a"),
    )
    fresh = cluster(
        replica("q", 1500, on="b"),  # bound to b while the plan was solved
        replica("hi", 2000, priority=10),
        replica("lo", 2000, priority=1),
        replica("p", 1000),
    )
    result = repair(stale, fresh)
    assert result is not None
    assert sorted(p.name for p in result.plan.placements) == ["hi", "p"]
    assert result.dropped[0].startswith("placement of ns/lo on b: node b over capacity in cpu")


def test_a_move_that_no_longer_fits_takes_the_placement_it_made_room_for_with_it() -> None:
    # Figure 1: r1 moves from a to b so that p fits on a; meanwhile q took b's room.
    stale = plan(Move("ns", "r1", "a", "b"), Placement("ns", "p", "a"))
    fresh = cluster(
        replica("r1", 2000, on="a"),
        replica("r2", 2000, on="b"),
        replica("q", 1000, on="b"),
        replica("p", 3000),
    )
    assert repair(stale, fresh) is None  # nothing of it places a pod any more


def test_a_move_that_buys_nothing_after_the_repair_is_not_made() -> None:
    # r1 left a to make room for p, but p was bound elsewhere meanwhile: moving r1 buys nothing.
    stale = plan(Move("ns", "r1", "a", "b"), Placement("ns", "p", "a"), Placement("ns", "p2", "c"))
    fresh = cluster(
        replica("r1", 2000, on="a"),
        replica("r2", 2000, on="b"),
        replica("p", 3000, on="c"),
        replica("p2", 1000),
    )
    result = repair(stale, fresh)
    assert result is not None
    assert [p.name for p in result.plan.placements] == ["p2"]
    assert result.plan.moves == ()
    assert result.dropped[-1] == "move of ns/r1 to b: not needed by the rest of the plan"


def test_an_eviction_left_without_a_higher_priority_placement_is_dropped() -> None:
    stale = plan(
        Eviction("ns", "low", "a", priority=1),
        Placement("ns", "high", "a", priority=10),
        Placement("ns", "mid", "c", priority=1),
    )
    fresh = cluster(
        replica("low", 3000, on="a", priority=1),
        replica("high", 3000, on="b", priority=10),  # placed by the scheduler meanwhile
        replica("mid", 1000, priority=1),
    )
    result = repair(stale, fresh)
    assert result is not None
    assert [p.name for p in result.plan.placements] == ["mid"]
    assert result.plan.evictions == ()  # nobody above priority 1 is placed any more


def test_a_protected_pod_is_never_disturbed_by_a_repair() -> None:
    bare = pod("bare", 2000, memory=GiB, namespace="ns", uid="", on="a", scheduler="opsche")
    stale = plan(Move("ns", "bare", "a", "b"), Placement("ns", "p", "a"))
    fresh = cluster(bare, replica("p", 3000))
    assert repair(stale, fresh) is None  # the move is refused, so p does not fit


def test_an_eviction_is_not_kept_for_pods_of_its_victims_priority_or_lower() -> None:
    # e (5) was evicted on a to place h (10) and l (1) there; h was bound elsewhere meanwhile.
    # l alone does not justify evicting e, though m (6, on c) is above e: e stays, and l goes.
    stale = plan(
        Eviction("ns", "e", "a", priority=5),
        Placement("ns", "h", "a", priority=10),
        Placement("ns", "l", "a", priority=1),
        Placement("ns", "m", "c", priority=6),
    )
    fresh = cluster(
        replica("e", 3000, on="a", priority=5),
        replica("h", 2000, on="b", priority=10),
        replica("l", 2000, priority=1),
        replica("m", 1000, priority=6),
    )
    result = repair(stale, fresh)
    assert result is not None
    assert result.plan.evictions == ()
    assert [p.name for p in result.plan.placements] == ["m"]
    assert any("made room only for pods of its own priority or lower" in d for d in result.dropped)


def test_of_two_victims_the_one_of_higher_priority_is_spared() -> None:
    # v1 (1) and v5 (5) made room on a for h1 and h2 (10); h2 was bound elsewhere meanwhile:
    # one eviction is enough now, and it is the lower-priority victim's.
    stale = plan(
        Eviction("ns", "v1", "a", priority=1),
        Eviction("ns", "v5", "a", priority=5),
        Placement("ns", "h1", "a", priority=10),
        Placement("ns", "h2", "a", priority=10),
    )
    fresh = cluster(
        replica("v1", 2000, on="a", priority=1),
        replica("v5", 2000, on="a", priority=5),
        replica("h1", 2000, priority=10),
        replica("h2", 2000, on="b", priority=10),
    )
    result = repair(stale, fresh)
    assert result is not None
    assert [e.name for e in result.plan.evictions] == ["v1"]
    assert [p.name for p in result.plan.placements] == ["h1"]


def test_a_repaired_plan_keeps_within_the_disruption_budget() -> None:
    # Two moves empty a for p, and q was to go on c; q was bound meanwhile: 2 moves for 1 pod.
    stale = plan(
        Move("ns", "x1", "a", "b"),
        Move("ns", "x2", "a", "c"),
        Placement("ns", "p", "a"),
        Placement("ns", "q", "c"),
    )
    fresh = cluster(
        replica("x1", 1000, on="a"),
        replica("x2", 1000, on="a"),
        replica("y", 2000, on="b"),
        replica("z", 2000, on="c"),
        replica("p", 4000),
        replica("q", 1000, on="b"),
    )
    unbounded = repair(stale, fresh)
    assert unbounded is not None
    assert (len(unbounded.plan.placements), len(unbounded.plan.moves)) == (1, 2)
    assert unbounded.plan.status is PlanStatus.FEASIBLE
    result = repair_plan(
        stale, fresh, scheduler_name="opsche", protected=is_protected, budget=Budget(1, 1)
    )
    assert result is None  # 2 disruptions for 1 pod placed: over a budget of 1
