"""Property tests: every plan either solver returns is valid and safe on its snapshot.

Random clusters: nodes of a few sizes, some tainted or cordoned; running pods that are
controller-managed, bare, DaemonSet, kube-system or belong to another scheduler; pending pods of
several priorities, some with node selectors. For each, both solvers must return a plan that
(1) passes validation (capacity in every dimension, filters, safety), (2) never disturbs a pod
without a controller or a protected pod, (3) evicts only pods of lower priority than some pod it
places, and (4) leaves no pending pod unplaced while a node still has room for it afterwards.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsche_daemon.daemon import is_protected
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import Taint, Toleration
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.api import solve_snapshot
from opsche_daemon.optimiser.validate import validate_plan

GiB = 2**30
SCHEDULER = "opsche"


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(1, 5))
    nodes = []
    for i in range(node_count):
        cpu = draw(st.sampled_from([2000, 4000, 8000]))
        memory = draw(st.sampled_from([4, 8, 16])) * GiB
        taints = (Taint("dedicated", "x", "NoSchedule"),) if draw(st.integers(0, 5)) == 0 else ()
        nodes.append(
            Node(
                f"n{i}",
                labels={"kubernetes.io/hostname": f"n{i}", "disk": "ssd" if i % 2 else "hdd"},
                taints=taints,
                allocatable=Resources(cpu, memory, 0, draw(st.sampled_from([4, 110]))),
                unschedulable=draw(st.integers(0, 7)) == 0,
            )
        )
    owners = [Owner("ReplicaSet", f"rs{i}", f"uid-rs{i}") for i in range(3)]
    running: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    for j in range(draw(st.integers(0, 12))):
        node = draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(["rs", "rs", "rs", "bare", "daemonset", "system", "other"]))
        owner = draw(st.sampled_from(owners)) if kind in ("rs", "system", "other") else None
        if kind == "daemonset":
            owner = Owner("DaemonSet", "ds", "uid-ds")
        cpu = draw(st.sampled_from([250, 500, 1000, 1500]))
        running[node.name].append(
            Pod(
                "kube-system" if kind == "system" else "default",
                f"run-{j}",
                uid=f"uid-run-{j}",
                scheduler_name="default-scheduler" if kind == "other" else SCHEDULER,
                node_name=node.name,
                phase="Running",
                priority=draw(st.sampled_from([0, 0, 100])),
                requests=Resources(cpu, (cpu // 250) * GiB // 4),
                owner=owner,
            )
        )
    pending = []
    for k in range(draw(st.integers(0, 8))):
        cpu = draw(st.sampled_from([250, 500, 1000, 2000, 3000]))
        selector = {"disk": "ssd"} if draw(st.integers(0, 4)) == 0 else {}
        tolerations = (Toleration("dedicated", "Exists"),) if draw(st.booleans()) else ()
        owner = draw(st.sampled_from([None, *owners]))
        pending.append(
            Pod(
                "default",
                f"pend-{k}",
                uid=f"uid-pend-{k}",
                scheduler_name=SCHEDULER,
                priority=draw(st.sampled_from([0, 100, 1000])),
                requests=Resources(cpu, (cpu // 250) * GiB // 4),
                node_selector=selector,
                tolerations=tolerations,
                owner=owner,
                created=float(k),
            )
        )
    infos = [NodeInfo.build(n, tuple(running[n.name])) for n in nodes]
    return Snapshot.of(infos, tuple(pending), generation=7)


def leftover_room(snapshot: Snapshot, plan: Plan) -> dict[str, Resources]:
    """Each node's free resources after the plan."""
    free = {name: info.node.allocatable - info.requested for name, info in snapshot.nodes.items()}
    pods = {p.key: p for _, p in snapshot.pods()} | {p.key: p for p in snapshot.pending}
    for p in plan.placements:
        free[p.node] -= pods[p.key].requests
    for m in plan.moves:
        free[m.from_node] += pods[m.key].requests
        free[m.to_node] -= pods[m.key].requests
    for e in plan.evictions:
        free[e.node] += pods[e.key].requests
    return free


def check(snapshot: Snapshot, plan: Plan) -> None:
    assert plan.generation == snapshot.generation
    assert validate_plan(plan, snapshot, scheduler_name=SCHEDULER, protected=is_protected) == []
    running = {p.key: p for _, p in snapshot.pods()}
    for disturbed in [*plan.moves, *plan.evictions]:
        pod = running[disturbed.key]
        assert pod.owner is not None and not is_protected(pod)
        assert pod.scheduler_name == SCHEDULER
    if plan.evictions:
        top = max(p.priority for p in plan.placements)
        assert all(running[e.key].priority < top for e in plan.evictions)
    # Maximality: an unplaced pending pod must not fit anywhere in what the plan leaves.
    placed = {p.key for p in plan.placements}
    room = leftover_room(snapshot, plan)
    counts = Counter(p.node for p in plan.placements) + Counter(m.to_node for m in plan.moves)
    counts.subtract(
        Counter(m.from_node for m in plan.moves) + Counter(e.node for e in plan.evictions)
    )
    for pod in snapshot.pending:
        if pod.key in placed:
            continue
        for name, info in snapshot.nodes.items():
            node = info.node
            if node.unschedulable or not pod.matches_node_selector_and_affinity(name, node.labels):
                continue
            if pod.untolerated_taint(node.taints, ("NoSchedule", "NoExecute")) is not None:
                continue
            if len(info.pods) + counts[name] + 1 > node.allocatable.pods:
                continue
            left = room[name]
            fits = pod.requests.milli_cpu <= left.milli_cpu and pod.requests.memory <= left.memory
            assert not fits, f"{pod.key} left pending although node {name} has room"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_heuristic_plans_are_valid_and_safe(snapshot: Snapshot) -> None:
    plan = solve_snapshot(
        snapshot, scheduler_name=SCHEDULER, protected=is_protected, solver="heuristic"
    )
    check(snapshot, plan)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_cpsat_plans_are_valid_and_safe(snapshot: Snapshot) -> None:
    plan = solve_snapshot(
        snapshot, scheduler_name=SCHEDULER, protected=is_protected, solver="cpsat", time_limit=2.0
    )
    check(snapshot, plan)
