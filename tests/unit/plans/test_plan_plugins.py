"""Plan enforcement's core on the paper's Figure-1 situation.

Two nodes. ``web-a`` (ReplicaSet ``web``) runs on n1 and leaves n1 too full for the pending ``big``
pod. The plan moves ``web-a`` to n2 (its controller recreates it as a new, unknown pod) and
places ``big`` on n1. Everything else pending waits until the plan is done.
"""

from __future__ import annotations

import random

import pytest

from opsche_daemon.framework.interface import Code, CycleState, Status
from opsche_daemon.framework.registry import build_framework
from opsche_daemon.framework.runtime import FitError
from opsche_daemon.model.node import Node
from opsche_daemon.model.plan import Move, Placement, Plan, PlanStatus
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import Taint
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.plans import (
    ActivePlan,
    ConvergenceMonitor,
    PlanGate,
    PlanPin,
    PlanReserve,
    PlanState,
    Verdict,
    Workload,
    decide,
    plan_plugins,
)
from opsche_daemon.queue import SchedulingQueue
from opsche_daemon.safety import is_protected
from tests.factories import GiB, controller, node, pod, snapshot_of

WEB = controller("web")
WEB_KEY = Workload("ReplicaSet", "uid-web", "ns")


BIG = pod("big", 1500, namespace="ns")
REPLACEMENT = pod("web-x7k2p", 1000, namespace="ns", owner=WEB)
REPLACEMENT_2 = pod("web-q9z4m", 1000, namespace="ns", owner=WEB)
OTHER = pod("other", 500, namespace="ns")
SYSTEM = pod("coredns-1", 500, namespace="kube-system")


def two_nodes(n1: Node | None = None) -> tuple[Node, Node]:
    """n1 and n2 with 2 cpu each (``n1`` replaced when given)."""
    return n1 or node("n1", 2000, memory=4 * GiB), node("n2", 2000, memory=4 * GiB)


def snapshot(pending_pods: tuple[Pod, ...] = ()) -> Snapshot:
    web_a = pod("web-a", 1000, namespace="ns", on="n1", owner=WEB)
    return snapshot_of(two_nodes(), (web_a, *pending_pods), generation=7)


def figure1_plan(owner_uid: str = "") -> Plan:
    return Plan(
        generation=7,
        solver="test",
        status=PlanStatus.OPTIMAL,
        placements=(Placement("ns", "big", "n1", "uid-big"),),
        moves=(Move("ns", "web-a", "n1", "n2", "uid-web-a", 0, "ReplicaSet/web", owner_uid),),
    )


def installed() -> tuple[PlanState, ActivePlan]:
    state = PlanState(protected=is_protected)
    active = state.install(figure1_plan(), snapshot(), plan_id="p1")
    return state, active


def cycle() -> CycleState:
    return CycleState(snapshot())


# ---------------------------------------------------------------------- indices


def test_the_plan_is_indexed_by_pod_and_by_workload() -> None:
    _, active = installed()
    assert active.planned_node(BIG) == "n1"
    # The move's owner UID came from the snapshot the plan was validated against.
    assert active.quotas == {WEB_KEY: {"n2": 1}}
    assert active.workload_of(REPLACEMENT) == WEB_KEY
    assert active.is_planned(BIG) and active.is_planned(REPLACEMENT)
    assert not active.is_planned(OTHER)


def test_without_a_snapshot_the_workload_is_matched_by_name_or_by_the_moves_owner_uid() -> None:
    by_name = ActivePlan.build(figure1_plan())
    assert by_name.quotas == {Workload("ReplicaSet", "web", "ns"): {"n2": 1}}
    assert by_name.is_planned(REPLACEMENT)
    by_uid = ActivePlan.build(figure1_plan(owner_uid="uid-web"))
    assert by_uid.quotas == {WEB_KEY: {"n2": 1}}


def test_a_recreated_workload_or_pod_with_the_same_name_is_not_planned() -> None:
    _, active = installed()
    impostor = pod("web-z", 500, namespace="ns", owner=controller("web", uid="uid-web-v2"))
    assert not active.is_planned(impostor)
    same_name = pod("big", 1500, namespace="ns", uid="uid-big-v2")
    assert not active.is_planned(same_name)
    # Another namespace's workload of the same name is another workload.
    assert not active.is_planned(pod("web-y", 500, namespace="other-ns", owner=WEB))


def test_a_move_without_an_owner_is_reported_not_guessed() -> None:
    plan = Plan(
        generation=1,
        solver="t",
        status=PlanStatus.FEASIBLE,
        moves=(Move("ns", "bare", "n1", "n2"),),
    )
    active = ActivePlan.build(plan)
    assert active.quotas == {}
    assert active.unmatched_moves == ("ns/bare",)


# ---------------------------------------------------------------------- PreEnqueue


def test_gate_admits_only_planned_pods_and_holds_the_others() -> None:
    state, active = installed()
    gate = PlanGate(state)
    assert gate.pre_enqueue(BIG).ok
    assert gate.pre_enqueue(REPLACEMENT).ok
    held = gate.pre_enqueue(OTHER)
    assert held == Status(Code.PENDING, ("held back while plan p1 is enforced",), "PlanGate")
    assert state.held == {"ns/other"}
    gate.pre_enqueue(OTHER)  # re-checked on an update: still held, counted once
    assert active.counters.held_back == 1


def test_gate_lets_protected_pods_through() -> None:
    state, _ = installed()
    assert PlanGate(state).pre_enqueue(SYSTEM).ok
    assert state.held == set()


def test_without_a_plan_every_plugin_stands_aside() -> None:
    state = PlanState(protected=is_protected)
    gate, pin, reserve = plan_plugins(state)
    assert gate.pre_enqueue(OTHER).ok
    assert pin.pre_filter(cycle(), OTHER, ()) == (None, Status.success())
    assert reserve.reserve(cycle(), OTHER, "n2").ok


# ---------------------------------------------------------------------- PreFilter


def test_pin_narrows_planned_pods_to_their_nodes() -> None:
    state, _ = installed()
    pin = PlanPin(state)
    result, status = pin.pre_filter(cycle(), BIG, ())
    assert status.ok and result is not None and result.node_names == frozenset({"n1"})
    result, status = pin.pre_filter(cycle(), REPLACEMENT, ())
    assert status.ok and result is not None and result.node_names == frozenset({"n2"})
    assert pin.pre_filter(cycle(), OTHER, ()) == (None, Status.success())
    assert pin.pre_filter(cycle(), SYSTEM, ()) == (None, Status.success())


def test_pin_rejects_a_workload_pod_once_the_quota_is_used_up() -> None:
    state, active = installed()
    assert active.reserve(REPLACEMENT, "n2")
    result, status = PlanPin(state).pre_filter(cycle(), REPLACEMENT_2, ())
    assert result is None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("plan p1 has no quota left for workload ReplicaSet/web",)


# ---------------------------------------------------------------------- Reserve / Unreserve


def test_reserve_consumes_the_quota_and_unreserve_refunds_it_once() -> None:
    state, active = installed()
    plugin = PlanReserve(state)
    first, second = cycle(), cycle()
    assert plugin.reserve(first, REPLACEMENT, "n2").ok
    assert active.remaining(WEB_KEY) == 0
    refused = plugin.reserve(second, REPLACEMENT_2, "n2")
    assert refused == Status.unschedulable(
        "PlanReserve", "plan p1 has no quota left on node n2 for workload ReplicaSet/web"
    )
    plugin.unreserve(second, REPLACEMENT_2, "n2")  # the runtime unreserves a failed Reserve too
    assert active.remaining(WEB_KEY) == 0
    plugin.unreserve(first, REPLACEMENT, "n2")
    plugin.unreserve(first, REPLACEMENT, "n2")  # a second Unreserve gives nothing more back
    assert active.remaining(WEB_KEY) == 1
    assert plugin.reserve(second, REPLACEMENT_2, "n2").ok
    assert active.counters.reservations == 2
    assert active.counters.rejections == 1
    assert active.counters.refunds == 1


def test_a_placed_pod_is_refused_on_another_node() -> None:
    state, active = installed()
    status = PlanReserve(state).reserve(cycle(), BIG, "n2")
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == "plan p1 places ns/big on node n1, not n2"
    assert PlanReserve(state).reserve(cycle(), BIG, "n1").ok
    assert active.reserved("ns/big") == "n1"


def test_an_unplanned_pod_reaching_reserve_is_refused_but_a_protected_one_is_not() -> None:
    state, _ = installed()
    plugin = PlanReserve(state)
    assert plugin.reserve(cycle(), OTHER, "n2") == Status.unschedulable(
        "PlanReserve", "held back while plan p1 is enforced"
    )
    assert plugin.reserve(cycle(), SYSTEM, "n2").ok


def test_unreserve_refunds_into_the_plan_it_reserved_on() -> None:
    state, active = installed()
    plugin = PlanReserve(state)
    reserved = cycle()
    assert plugin.reserve(reserved, REPLACEMENT, "n2").ok
    state.uninstall()
    newer = state.install(figure1_plan(), snapshot(), plan_id="p2")
    plugin.unreserve(reserved, REPLACEMENT, "n2")
    assert active.remaining(WEB_KEY) == 1
    assert newer.counters.refunds == 0


def test_reserving_again_on_another_node_gives_the_first_unit_back() -> None:
    plan = Plan(
        generation=1,
        solver="t",
        status=PlanStatus.FEASIBLE,
        moves=(
            Move("ns", "web-a", "n1", "n2", owner="ReplicaSet/web"),
            Move("ns", "web-b", "n1", "n3", owner="ReplicaSet/web"),
        ),
    )
    active = ActivePlan.build(plan)
    assert active.reserve(REPLACEMENT, "n2")
    assert active.reserve(REPLACEMENT, "n2")  # idempotent
    assert active.allowed_nodes(REPLACEMENT_2) == frozenset({"n3"})
    assert active.reserve(REPLACEMENT, "n3")
    assert active.allowed_nodes(REPLACEMENT_2) == frozenset({"n2"})


# ---------------------------------------------------------------------- convergence


def test_converged_only_when_the_placed_pod_is_on_its_node_and_the_quota_is_used() -> None:
    _, active = installed()
    waiting = {WEB_KEY: 1}
    assert not active.converged({"ns/big": ""}, waiting)  # still pending
    assert not active.converged({"ns/big": "n2"}, waiting)  # on the wrong node
    assert not active.converged({"ns/big": "n1"}, waiting)  # replacement pending, quota left
    assert active.reserve(REPLACEMENT, "n2")
    assert active.converged({"ns/big": "n1"}, {})


def test_a_gone_pod_or_a_workload_without_pending_pods_counts_as_done() -> None:
    _, active = installed()
    assert active.converged({}, {})  # big deleted, web scaled down
    assert not active.converged({}, {WEB_KEY: 1})
    # Strict mode (first seconds after the evictions) waits for the replacement to show up.
    assert not active.converged({}, {}, strict=True)


def test_observe_reads_placed_pods_and_pending_workload_pods_from_a_snapshot() -> None:
    _, active = installed()
    before = active.observe(snapshot(pending_pods=(BIG, REPLACEMENT, OTHER)))
    assert before.bound == {"ns/big": ""}
    assert before.pending_by_workload == {WEB_KEY: 1}
    placed = pod("big", namespace="ns", on="n1")
    after = snapshot_of(two_nodes(), (placed, REPLACEMENT))
    assert active.observe(after).bound == {"ns/big": "n1"}
    terminating = pod("big", namespace="ns", deleting=True)
    assert active.observe(Snapshot.of([], (terminating,))).bound == {}


def test_decide_times_out_first_then_converges_or_waits() -> None:
    _, active = installed()
    common = {"started_at": 100.0, "timeout_s": 30.0}
    assert (
        decide(active, now=131.0, bound={"ns/big": "n1"}, pending_by_workload={}, **common)
        is Verdict.TIMED_OUT
    )
    assert (
        decide(active, now=101.0, bound={"ns/big": ""}, pending_by_workload={}, **common)
        is Verdict.WAITING
    )
    assert (
        decide(active, now=101.0, bound={"ns/big": "n1"}, pending_by_workload={}, **common)
        is Verdict.CONVERGED
    )
    # Within the settle window an unused quota is waited for even with no pending pod.
    assert (
        decide(
            active,
            now=101.0,
            bound={"ns/big": "n1"},
            pending_by_workload={},
            settle_s=2.0,
            **common,
        )
        is Verdict.WAITING
    )


def test_monitor_with_an_injected_clock() -> None:
    _, active = installed()
    now = [10.0]
    monitor = ConvergenceMonitor(active, timeout_s=5.0, settle_s=1.0, clock=lambda: now[0])
    assert monitor.started_at == 10.0
    observed = active.observe(snapshot(pending_pods=(BIG, REPLACEMENT)))
    assert monitor.check(observed) is Verdict.WAITING
    now[0] = 15.0
    assert monitor.check(observed) is Verdict.TIMED_OUT
    assert monitor.check(observed) is Verdict.TIMED_OUT  # sticky


def test_monitor_converges_after_the_placed_pod_binds_and_the_quota_is_used() -> None:
    _, active = installed()
    now = [0.0]
    monitor = ConvergenceMonitor(active, timeout_s=60.0, settle_s=1.0, clock=lambda: now[0])
    assert active.reserve(REPLACEMENT, "n2") and active.reserve(BIG, "n1")
    placed = pod("big", namespace="ns", on="n1")
    moved = pod(REPLACEMENT.name, namespace="ns", uid="", on="n2", owner=WEB)
    after = snapshot_of(two_nodes(), (placed, moved))
    now[0] = 0.5
    assert monitor.check(active.observe(after)) is Verdict.CONVERGED


# ---------------------------------------------------------------------- install / uninstall


def test_uninstall_clears_everything_and_returns_the_held_keys() -> None:
    state, _ = installed()
    gate = PlanGate(state)
    gate.pre_enqueue(OTHER)
    assert state.uninstall() == frozenset({"ns/other"})
    assert state.active is None and not state.is_active and state.held == set()
    assert gate.pre_enqueue(OTHER).ok
    assert state.uninstall() == frozenset()


def test_only_one_plan_at_a_time() -> None:
    state, _ = installed()
    with pytest.raises(RuntimeError, match="plan p1 is still installed"):
        state.install(figure1_plan())


def test_the_queue_holds_unplanned_pods_and_releases_them_on_uninstall() -> None:
    state = PlanState(protected=is_protected)
    framework = build_framework(extra=plan_plugins(state))
    queue = SchedulingQueue(framework.pre_enqueue, clock=lambda: 0.0)
    queue.add(OTHER)
    state.install(figure1_plan(), snapshot(), plan_id="p1")
    queue.gate_active()  # the gate closed: re-check the pods already queued
    queue.add(BIG)
    queue.add(SYSTEM)
    assert queue.where("ns/other") == "gated"
    assert queue.where("ns/big") == "active"
    assert queue.where("kube-system/coredns-1") == "active"
    queue.reevaluate_gated(state.uninstall())
    assert queue.where("ns/other") == "active"


# ---------------------------------------------------------------------- a real Framework


def test_the_framework_pins_reserves_and_unreserves() -> None:
    state = PlanState(protected=is_protected)
    framework = build_framework(extra=plan_plugins(state), rng=random.Random(0))
    # The evictions already ran: web-a is gone and n1 has room for big, but n1 carries a
    # PreferNoSchedule taint, so without the plan big goes to n2.
    soft_taint = (Taint("maintenance", "soon", "PreferNoSchedule"),)
    tainted = node("n1", 2000, memory=4 * GiB, taints=soft_taint)
    snap = snapshot_of(two_nodes(tainted), (BIG, REPLACEMENT, REPLACEMENT_2, OTHER))
    assert framework.schedule(CycleState(snap), BIG).node == "n2"
    active = state.install(figure1_plan(), snapshot(), plan_id="p1")

    assert framework.pre_enqueue(OTHER).code == Code.PENDING
    assert framework.pre_enqueue(REPLACEMENT).ok

    # The plan pins big to n1, and the replacement to n2.
    big_cycle = CycleState(snap)
    assert framework.schedule(big_cycle, BIG).node == "n1"
    assert framework.run_reserve(big_cycle, BIG, "n1").ok
    first = CycleState(snap)
    assert framework.schedule(first, REPLACEMENT).node == "n2"
    assert framework.run_reserve(first, REPLACEMENT, "n2").ok

    # A second replacement pod of the workload finds no quota left: PreFilter refuses it.
    with pytest.raises(FitError) as fit:
        framework.schedule(CycleState(snap), REPLACEMENT_2)
    assert fit.value.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "plan p1 has no quota left for workload ReplicaSet/web" in str(fit.value)
    # Two cycles may pass PreFilter for the last unit; Reserve lets only one through.
    racing = CycleState(snap)
    refused = framework.run_reserve(racing, REPLACEMENT_2, "n2")
    assert refused.code == Code.UNSCHEDULABLE and refused.plugin == "PlanReserve"

    # Binding the first replacement fails: Unreserve gives the unit back, once.
    framework.run_unreserve(first, REPLACEMENT, "n2")
    framework.run_unreserve(first, REPLACEMENT, "n2")
    assert active.remaining(WEB_KEY) == 1
    second = CycleState(snap)
    assert framework.schedule(second, REPLACEMENT_2).node == "n2"
    assert framework.run_reserve(second, REPLACEMENT_2, "n2").ok
    assert active.remaining(WEB_KEY) == 0

    # An unplanned pod popped before the gate closed is refused at Reserve.
    other_cycle = CycleState(snap)
    node_for_other = framework.schedule(other_cycle, OTHER).node
    assert framework.run_reserve(other_cycle, OTHER, node_for_other).plugin == "PlanReserve"

    bound = {"ns/big": "n1"}
    assert active.converged(bound, {WEB_KEY: 1})
