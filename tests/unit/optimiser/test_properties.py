"""Property tests: every plan either solver returns is valid and safe on its snapshot.

Random clusters: nodes of a few sizes, some tainted or cordoned; running pods that are
controller-managed, bare, DaemonSet, kube-system or belong to another scheduler (placed at
random, so some nodes start over-committed); pending pods of several priorities, some with node
selectors or tolerations. For each, both solvers must return a plan that

1. places only pending pods of this scheduler, each once, on a node whose cordon, node selector
   and taints it passes;
2. moves or evicts only running pods found where the plan says, each once, that have a
   controller, are not protected (kube-system, DaemonSet), belong to this scheduler and are not
   terminating; a move's target passes the same node checks;
3. leaves no node over its allocatable cpu, memory or pod count, unless the node was already
   over in that dimension and the plan does not make it worse;
4. evicts only pods of lower priority than some pod it places;
5. leaves no pending pod unplaced while a node still has room for it afterwards.

``solve_snapshot`` already runs ``validate_plan`` and raises on an invalid plan, so asserting
``validate_plan(...) == []`` here would repeat that call and could never fail. These checks are
computed from the snapshot and the plan alone, so a rule validation misses is still caught.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import Taint, Toleration
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.api import solve_snapshot
from opsche_daemon.safety import is_protected
from tests.factories import GiB, controller, node, pod, snapshot_of

SCHEDULER = "opsche"
UNTOLERATED_EFFECTS = ("NoSchedule", "NoExecute")


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    node_count = draw(st.integers(1, 5))
    nodes = []
    for i in range(node_count):
        cpu = draw(st.sampled_from([2000, 4000, 8000]))
        memory = draw(st.sampled_from([4, 8, 16])) * GiB
        taints = (Taint("dedicated", "x", "NoSchedule"),) if draw(st.integers(0, 5)) == 0 else ()
        nodes.append(
            node(
                f"n{i}",
                cpu,
                memory=memory,
                pods=draw(st.sampled_from([4, 110])),
                labels={"kubernetes.io/hostname": f"n{i}", "disk": "ssd" if i % 2 else "hdd"},
                taints=taints,
                unschedulable=draw(st.integers(0, 7)) == 0,
            )
        )
    owners = [controller(f"rs{i}") for i in range(3)]
    running = []
    for j in range(draw(st.integers(0, 12))):
        on = draw(st.sampled_from(nodes)).name
        kind = draw(st.sampled_from(["rs", "rs", "rs", "bare", "daemonset", "system", "other"]))
        owner = draw(st.sampled_from(owners)) if kind in ("rs", "system", "other") else None
        if kind == "daemonset":
            owner = controller("ds", "DaemonSet")
        cpu = draw(st.sampled_from([250, 500, 1000, 1500]))
        running.append(
            pod(
                f"run-{j}",
                cpu,
                memory=(cpu // 250) * GiB // 4,
                namespace="kube-system" if kind == "system" else "default",
                on=on,
                scheduler="default-scheduler" if kind == "other" else SCHEDULER,
                priority=draw(st.sampled_from([0, 0, 100])),
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
            pod(
                f"pend-{k}",
                cpu,
                memory=(cpu // 250) * GiB // 4,
                scheduler=SCHEDULER,
                priority=draw(st.sampled_from([0, 100, 1000])),
                node_selector=selector,
                tolerations=tolerations,
                owner=owner,
                created=float(k),
            )
        )
    return snapshot_of(nodes, running + pending, generation=7)


def node_accepts(info: NodeInfo, pod: Pod) -> bool:
    """Not cordoned, the pod's node selector matches and every hard taint is tolerated."""
    n = info.node
    return (
        not n.unschedulable
        and all(n.labels.get(k) == v for k, v in pod.node_selector.items())
        and all(
            any(t.tolerates(taint) for t in pod.tolerations)
            for taint in n.taints
            if taint.effect in UNTOLERATED_EFFECTS
        )
    )


def check_disturbable(running: dict[str, tuple[str, Pod]], key: str, node_name: str) -> Pod:
    """The pod ``key`` runs on ``node_name`` and a plan may move or evict it."""
    found = running.get(key)
    assert found is not None, f"{key} is not running"
    on, p = found
    assert on == node_name, f"{key} runs on {on}, not {node_name}"
    assert p.owner is not None, f"{key} has no controller"
    assert p.namespace != "kube-system", f"{key} is a kube-system pod"
    assert p.owner.kind != "DaemonSet", f"{key} is a DaemonSet pod"
    assert p.scheduler_name == SCHEDULER, f"{key} belongs to {p.scheduler_name}"
    assert not p.deleting, f"{key} is terminating"
    return p


def check(snapshot: Snapshot, plan: Plan) -> None:
    assert plan.generation == snapshot.generation
    running = {p.key: (info.name, p) for info, p in snapshot.pods()}
    pending = {p.key: p for p in snapshot.pending}
    keys = [
        *(p.key for p in plan.placements),
        *(m.key for m in plan.moves),
        *(e.key for e in plan.evictions),
    ]
    assert len(keys) == len(set(keys)), f"a pod appears twice in {keys}"

    # (1) and (2); collect what arrives on and leaves each node.
    arriving: dict[str, list[Pod]] = {name: [] for name in snapshot.nodes}
    leaving: dict[str, list[Pod]] = {name: [] for name in snapshot.nodes}
    for placement in plan.placements:
        placed = pending.get(placement.key)
        assert placed is not None, f"{placement.key} is placed but was not pending"
        assert placement.uid == placed.uid
        assert placed.scheduler_name == SCHEDULER
        target = snapshot.nodes.get(placement.node)
        assert target is not None and node_accepts(target, placed), (placement, target)
        arriving[placement.node].append(placed)
    for move in plan.moves:
        moved = check_disturbable(running, move.key, move.from_node)
        target = snapshot.nodes.get(move.to_node)
        assert target is not None and node_accepts(target, moved), (move, target)
        leaving[move.from_node].append(moved)
        arriving[move.to_node].append(moved)
    for eviction in plan.evictions:
        leaving[eviction.node].append(check_disturbable(running, eviction.key, eviction.node))

    # (3) Capacity after the plan, in every dimension these clusters use.
    room: dict[str, Resources] = {}
    for name, info in snapshot.nodes.items():
        before = info.requested
        after = before
        for p in arriving[name]:
            after += p.requests
        for p in leaving[name]:
            after -= p.requests
        allocatable = info.node.allocatable
        for dim in ("cpu", "memory"):
            limit = max(allocatable.get(dim), before.get(dim))
            assert after.get(dim) <= limit, f"node {name} over in {dim}: {after.get(dim)}"
        count = len(info.pods) + len(arriving[name]) - len(leaving[name])
        assert count <= max(allocatable.pods, len(info.pods)), f"node {name}: {count} pods"
        room[name] = allocatable - after

    # (4) Evictions only make room for a pod of higher priority.
    if plan.evictions:
        top = max(pending[p.key].priority for p in plan.placements)
        assert all(running[e.key][1].priority < top for e in plan.evictions)

    # (5) Maximality: an unplaced pending pod must not fit anywhere in what the plan leaves.
    placed_keys = {p.key for p in plan.placements}
    counts = Counter({name: len(info.pods) for name, info in snapshot.nodes.items()})
    counts.update({name: len(arriving[name]) - len(leaving[name]) for name in snapshot.nodes})
    for waiting in snapshot.pending:
        if waiting.key in placed_keys:
            continue
        for name, info in snapshot.nodes.items():
            if not node_accepts(info, waiting) or counts[name] + 1 > info.node.allocatable.pods:
                continue
            left = room[name]
            fits = (
                waiting.requests.milli_cpu <= left.milli_cpu
                and waiting.requests.memory <= left.memory
            )
            assert not fits, f"{waiting.key} left pending although node {name} has room"


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
