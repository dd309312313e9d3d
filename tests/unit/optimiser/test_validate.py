from opsche_daemon.model.plan import Eviction, Move, Placement, Plan, PlanStatus
from opsche_daemon.model.selectors import Taint
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.validate import validate_plan
from opsche_daemon.safety import is_protected
from tests.factories import GiB, controller, node, pod, snapshot_of

OWNER = controller("rs", uid="u")
MEMORY = 4 * GiB


def snapshot() -> Snapshot:
    n1 = node("n1", 2000, memory=MEMORY)
    n2 = node("n2", 2000, memory=MEMORY, taints=(Taint("t", "", "NoSchedule"),))
    n3 = node("n3", 2000, memory=MEMORY, unschedulable=True)
    running = (
        pod("rs-a", 1500, namespace="ns", uid="", on="n1", scheduler="opsche", owner=OWNER),
        pod("bare", 250, namespace="ns", uid="", on="n1", scheduler="opsche"),
        pod("sys", 100, namespace="kube-system", uid="", on="n1", scheduler="opsche", owner=OWNER),
    )
    pending = (pod("p", 1000, namespace="ns", uid="u-p", scheduler="opsche", priority=10),)
    return snapshot_of([n1, n2, n3], running + pending, generation=3)


def validate(
    *,
    placements: tuple[Placement, ...] = (),
    moves: tuple[Move, ...] = (),
    evictions: tuple[Eviction, ...] = (),
) -> list[str]:
    plan = Plan(
        generation=3,
        solver="t",
        status=PlanStatus.FEASIBLE,
        placements=placements,
        moves=moves,
        evictions=evictions,
    )
    return validate_plan(plan, snapshot(), scheduler_name="opsche", protected=is_protected)


def test_a_valid_plan_has_no_errors() -> None:
    assert (
        validate(
            placements=(Placement("ns", "p", "n1", "u-p", 10),),
            evictions=(Eviction("ns", "rs-a", "n1"),),
        )
        == []
    )


def test_over_capacity_is_caught() -> None:
    errors = validate(placements=(Placement("ns", "p", "n1"),))
    assert errors == ["node n1 over capacity in cpu: 2850 > 2000"]


def test_filters_and_cordons_are_checked() -> None:
    assert any(
        "does not pass the filters on node n2" in e
        for e in validate(placements=(Placement("ns", "p", "n2"),))
    )
    assert any(
        "does not pass the filters on node n3" in e
        for e in validate(placements=(Placement("ns", "p", "n3"),))
    )


def test_bare_and_protected_pods_are_never_disturbed() -> None:
    errors = validate(
        moves=(Move("ns", "bare", "n1", "n1"), Move("kube-system", "sys", "n1", "n1"))
    )
    assert any("no controller" in e for e in errors)
    assert any("protected" in e for e in errors)


def test_evictions_need_a_higher_priority_placement() -> None:
    errors = validate(evictions=(Eviction("ns", "rs-a", "n1"),))
    assert errors == ["eviction of ns/rs-a: priority 0 is not below every pod the plan places"]


def test_stale_plans_are_rejected() -> None:
    errors = validate(
        placements=(Placement("ns", "gone", "n1"), Placement("ns", "p", "n1", "other-uid")),
        moves=(Move("ns", "rs-a", "n2", "n1"),),
    )
    assert "placement of ns/gone: the pod is no longer pending" in errors
    assert "placement of ns/p: the pod was replaced (uid changed)" in errors
    assert "move of ns/rs-a: the pod is no longer running on n2" in errors
