from opsche_daemon.daemon import is_protected
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.plan import Eviction, Move, Placement, Plan, PlanStatus
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import Taint
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.validate import validate_plan

OWNER = Owner("ReplicaSet", "rs", "u")


def snapshot() -> Snapshot:
    n1 = Node("n1", allocatable=Resources(2000, 2**32, 0, 110))
    n2 = Node(
        "n2", allocatable=Resources(2000, 2**32, 0, 110), taints=(Taint("t", "", "NoSchedule"),)
    )
    n3 = Node("n3", allocatable=Resources(2000, 2**32, 0, 110), unschedulable=True)
    running = (
        Pod(
            "ns",
            "rs-a",
            node_name="n1",
            phase="Running",
            scheduler_name="opsche",
            requests=Resources(1500),
            owner=OWNER,
            priority=0,
        ),
        Pod(
            "ns",
            "bare",
            node_name="n1",
            phase="Running",
            scheduler_name="opsche",
            requests=Resources(250),
        ),
        Pod(
            "kube-system",
            "sys",
            node_name="n1",
            phase="Running",
            scheduler_name="opsche",
            requests=Resources(100),
            owner=OWNER,
        ),
    )
    pending = (
        Pod("ns", "p", uid="u-p", scheduler_name="opsche", requests=Resources(1000), priority=10),
    )
    return Snapshot.of(
        [NodeInfo.build(n1, running), NodeInfo.build(n2), NodeInfo.build(n3)], pending, generation=3
    )


def validate(**parts: object) -> list[str]:
    plan = Plan(generation=3, solver="t", status=PlanStatus.FEASIBLE, **parts)  # type: ignore[arg-type]
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
