"""The heuristic solver: greedy placement, repair by moves, evictions only for higher priority.

Problems are built from Snapshots with ``build_problem`` (the scheduler's own filters decide
feasibility) and solutions are mapped back to plans with ``plan_from_solution``, so the tests
read as pods, nodes, placements, moves and evictions.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

import pytest

from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.plan import Plan, PlanStatus
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.selectors import Taint, Toleration
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.heuristic import HeuristicSolver, counting_bound, heuristic_counts
from opsche_daemon.optimiser.problem import (
    Problem,
    Solution,
    build_problem,
    current_counts,
    plan_from_solution,
    usage,
)
from tests import factories
from tests.factories import GiB

SCHEDULER = "opsche"
GPU = "example.com/gpu"


def node(
    name: str,
    cpu: int,
    memory: int = 16 * GiB,
    pods: int = 110,
    *,
    gpus: int = 0,
    taints: tuple[Taint, ...] = (),
    labels: dict[str, str] | None = None,
) -> Node:
    """A node labelled with its hostname, with ``gpus`` of ``GPU``."""
    return factories.node(
        name,
        cpu,
        memory=memory,
        pods=pods,
        scalars={GPU: gpus} if gpus else None,
        labels={"kubernetes.io/hostname": name, **(labels or {})},
        taints=taints,
    )


def pod(
    name: str,
    cpu: int,
    memory: int = GiB,
    *,
    owner: str | None = None,
    priority: int = 0,
    on: str = "",
    gpus: int = 0,
    selector: dict[str, str] | None = None,
    tolerate: bool = False,
) -> Pod:
    """A pod of this scheduler, running on ``on`` or pending; owned by ReplicaSet ``owner``."""
    return factories.pod(
        name,
        cpu,
        memory=memory,
        scalars={GPU: gpus} if gpus else None,
        on=on,
        priority=priority,
        scheduler=SCHEDULER,
        owner=factories.controller(owner or f"rs-{name}"),
        node_selector=selector,
        tolerations=(Toleration("dedicated", "Exists"),) if tolerate else (),
    )


def problem_of(nodes: Sequence[Node], pods: Sequence[Pod]) -> Problem:
    return build_problem(
        factories.snapshot_of(nodes, pods), scheduler_name=SCHEDULER, protected=lambda p: False
    )


def solve(problem: Problem, seconds: float = 30.0) -> tuple[Solution, Plan]:
    solution = HeuristicSolver().solve(problem, time.monotonic() + seconds, threading.Event())
    assert_valid(problem, solution)
    return solution, plan_from_solution(problem, solution, "heuristic")


def assert_valid(problem: Problem, solution: Solution) -> None:
    """Every constraint of the model holds, and no pending member is left that fits as is."""
    counts = solution.counts
    for (g, n), count in counts.items():
        group = problem.groups[g]
        assert count >= 0
        assert n in group.feasible, (g, n)
        assert count <= group.limit(n), (g, n, count)
    for group in problem.groups:
        assert sum(counts.get((group.index, n), 0) for n in group.feasible) <= group.size
    used = usage(problem, counts)
    for n, spec in enumerate(problem.nodes):
        for d, amount in enumerate(used[n]):
            assert amount <= spec.free[d], (spec.name, problem.dimensions[d], amount, spec.free[d])
    # A pending member that still fits somewhere without moving anything is a bug.
    for group in problem.groups:
        if sum(counts.get((group.index, n), 0) for n in group.feasible) >= group.size:
            continue
        for n in group.feasible:
            if counts.get((group.index, n), 0) >= group.limit(n):
                continue
            free = [f - u for f, u in zip(problem.nodes[n].free, used[n], strict=True)]
            assert not all(r <= f for r, f in zip(group.requests, free, strict=True)), (
                f"group {group.index} fits on {problem.nodes[n].name} but is left pending"
            )


def moves(plan: Plan) -> set[tuple[str, str, str]]:
    return {(m.name, m.from_node, m.to_node) for m in plan.moves}


def placements(plan: Plan) -> set[tuple[str, str]]:
    return {(p.name, p.node) for p in plan.placements}


def evictions(plan: Plan) -> set[tuple[str, str]]:
    return {(e.name, e.node) for e in plan.evictions}


# -- the paper's example and plain placement --------------------------------------------------


def test_figure_one_moves_one_pod_to_place_the_pending_one() -> None:
    # Node 1 hosts pod1, node 2 pod2 and pod3; pod4 fits on node 2 only if pod3 goes to node 1.
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            pod("pod1", 3000, on="n1"),
            pod("pod2", 2000, on="n2"),
            pod("pod3", 1000, on="n2"),
            pod("pod4", 2000),
        ],
    )
    solution, plan = solve(problem)
    assert solution.status is PlanStatus.FEASIBLE
    assert moves(plan) == {("pod3", "n2", "n1")}
    assert placements(plan) == {("pod4", "n2")}
    assert not plan.evictions
    (tier,) = solution.tiers
    assert tier.priority == 0
    assert tier.placed == 4
    assert tier.placed_bound == 4
    assert solution.placed_bound == 4
    assert tier.disruption_score == 2 * 2 + 1  # pod1 and pod2 stay, pod3 moves
    assert tier.optimal is False


def test_pending_pods_that_fit_are_placed_without_moves_best_fit() -> None:
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000), node("n3", 8000)],
        [
            pod("a", 3000, on="n1"),
            pod("b", 1000, on="n2"),
            pod("small", 1000),  # fits on all three; n1 is the tightest
            pod("big", 5000),  # fits on n3 only
            *(pod(f"r{i}", 1000, owner="rs-r") for i in range(3)),
        ],
    )
    solution, plan = solve(problem)
    assert not plan.moves
    assert not plan.evictions
    assert ("small", "n1") in placements(plan)
    assert ("big", "n3") in placements(plan)
    assert len(plan.placements) == 5
    assert solution.status is PlanStatus.FEASIBLE


def test_larger_pending_pods_go_first_within_a_priority() -> None:
    # First-fit decreasing: the 3-cpu pods go first, one per node, and the 2-cpu ones fill the
    # rest. Smallest first, best fit would put both 2-cpu pods on one node and strand a 3-cpu one.
    problem = problem_of(
        [node("n1", 5000), node("n2", 5000)],
        [
            pod("s1", 2000, owner="rs-s"),
            pod("s2", 2000, owner="rs-s"),
            pod("l1", 3000, owner="rs-l"),
            pod("l2", 3000, owner="rs-l"),
        ],
    )
    _, plan = solve(problem)
    assert len(plan.placements) == 4
    assert not plan.moves


def test_nothing_to_do_is_status_none() -> None:
    problem = problem_of([node("n1", 4000)], [pod("a", 1000, on="n1")])
    solution, plan = solve(problem)
    assert solution.status is PlanStatus.NONE
    assert plan.empty
    assert solution.counts == current_counts(problem)


def test_members_of_a_group_are_placed_in_bulk_across_nodes() -> None:
    problem = problem_of(
        [node(f"n{i}", 4000) for i in range(5)],
        [pod(f"w{i}", 1000, owner="rs-web") for i in range(18)],
    )
    solution, plan = solve(problem)
    assert len(plan.placements) == 18
    (group,) = problem.groups
    # Best fit fills one node before opening the next.
    assert sorted(solution.counts.values()) == [2, 4, 4, 4, 4]
    assert sum(c for (g, _), c in solution.counts.items() if g == group.index) == 18


# -- moves, evictions, priorities --------------------------------------------------------------


def test_higher_priority_moves_before_it_evicts() -> None:
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            pod("pod1", 3000, on="n1", priority=0),
            pod("pod2", 2000, on="n2", priority=0),
            pod("pod3", 1000, on="n2", priority=0),
            pod("vip", 2000, priority=100),
        ],
    )
    _, plan = solve(problem)
    assert moves(plan) == {("pod3", "n2", "n1")}
    assert placements(plan) == {("vip", "n2")}
    assert not plan.evictions


def test_higher_priority_evicts_lower_when_moving_is_not_enough() -> None:
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            *(pod(f"low{i}", 1000, owner="rs-low", on="n1") for i in range(4)),
            pod("big", 4000, on="n2"),
            pod("vip", 2000, priority=100),
        ],
    )
    solution, plan = solve(problem)
    assert not plan.moves
    # The fewest evictions: the single 4-cpu pod on n2 rather than two 1-cpu pods on n1.
    assert evictions(plan) == {("big", "n2")}
    assert placements(plan) == {("vip", "n2")}
    tiers = {t.priority: t for t in solution.tiers}
    assert tiers[100].placed == 1
    assert tiers[0].placed == 5
    assert tiers[0].disruption_score == 2 * 4  # the four small pods stay


def test_evictions_prefer_lower_priorities_over_fewer_victims() -> None:
    # Evicting one priority-10 pod or two priority-0 pods: like CP-SAT's tiers, the running
    # priority-10 pod is kept first, and more pods of priority >= 10 stay placed.
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            *(pod(f"low{i}", 1000, owner="rs-low", on="n1") for i in range(4)),
            pod("mid", 4000, on="n2", priority=10),
            pod("vip", 2000, priority=100),
        ],
    )
    solution, plan = solve(problem)
    assert placements(plan) == {("vip", "n1")}
    assert {e.priority for e in plan.evictions} == {0}
    assert len(plan.evictions) == 2
    assert not plan.moves
    tiers = {t.priority: t for t in solution.tiers}
    assert tiers[100].placed == 1
    assert tiers[10].placed == 2


def test_evictions_take_the_lowest_priority_first() -> None:
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            pod("mid", 4000, on="n1", priority=50),
            pod("low", 4000, on="n2", priority=0),
            pod("vip", 2000, priority=100),
        ],
    )
    _, plan = solve(problem)
    assert evictions(plan) == {("low", "n2")}
    assert placements(plan) == {("vip", "n2")}


def test_evicted_pods_that_find_room_elsewhere_are_moved_instead() -> None:
    # The vip needs all of n1 or n2; whatever leaves fits nowhere else except n3 (1 cpu).
    problem = problem_of(
        [node("n1", 2000), node("n2", 2000), node("n3", 1000)],
        [
            pod("a", 1000, on="n1", owner="rs-x"),
            pod("b", 1000, on="n1", owner="rs-x"),
            pod("c", 1000, on="n2", owner="rs-y", priority=5),
            pod("d", 1000, on="n2", owner="rs-y", priority=5),
            pod("e", 1000, on="n3", owner="rs-z", priority=5),
            pod("vip", 2000, priority=100),
        ],
    )
    _, plan = solve(problem)
    assert placements(plan) == {("vip", "n1")}
    assert {e.priority for e in plan.evictions} == {0}
    assert len(plan.evictions) == 2
    assert not plan.moves


def test_equal_priority_never_evicts() -> None:
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000)],
        [
            pod("a", 4000, on="n1", priority=10),
            pod("b", 3000, on="n2", priority=10),
            pod("p", 2000, priority=10),
        ],
    )
    solution, plan = solve(problem)
    assert plan.empty
    assert solution.status is PlanStatus.NONE
    assert solution.tiers[0].placed == 2


def test_lower_priority_never_evicts_higher() -> None:
    problem = problem_of(
        [node("n1", 4000)],
        [pod("a", 4000, on="n1", priority=100), pod("p", 1000, priority=0)],
    )
    _, plan = solve(problem)
    assert plan.empty


def test_moves_may_move_higher_priority_pods_only_when_placing_higher_or_equal() -> None:
    # Room for p exists on n2 only if the priority-100 pod "hi" moves to n1.
    nodes = [node("n1", 5000), node("n2", 4000)]
    running = [pod("hi", 2000, on="n2", priority=100), pod("x", 3000, on="n1", priority=100)]
    _, plan = solve(problem_of(nodes, [*running, pod("p", 3000, priority=0)]))
    assert plan.empty
    _, plan = solve(problem_of(nodes, [*running, pod("p", 3000, priority=100)]))
    assert not plan.evictions
    assert moves(plan) == {("hi", "n2", "n1")}
    assert placements(plan) == {("p", "n2")}


def test_fewest_moves_are_preferred() -> None:
    # p may use pool a only. n1 makes room by moving one 2-cpu pod, n2 by moving two 500m
    # pods; n3 (pool b) takes what moves. Pods of priority 100 cannot move for p.
    pool_a = {"pool": "a"}
    nodes = [
        node("n1", 4000, labels=pool_a),
        node("n2", 4000, labels=pool_a),
        node("n3", 4000, labels={"pool": "b"}),
    ]
    problem = problem_of(
        nodes,
        [
            pod("one", 2000, on="n1"),
            pod("fixed1", 1000, on="n1", priority=100),
            pod("a", 500, on="n2", owner="rs-a"),
            pod("b", 500, on="n2", owner="rs-a"),
            pod("fixed2", 2000, on="n2", priority=100),
            pod("fixed3", 2000, on="n3", priority=100),
            pod("p", 2000, selector=pool_a),
        ],
    )
    _, plan = solve(problem)
    assert moves(plan) == {("one", "n1", "n3")}
    assert placements(plan) == {("p", "n1")}
    assert not plan.evictions


# -- constraints ----------------------------------------------------------------------------


def test_stay_only_nodes_keep_their_members_but_take_no_more() -> None:
    tainted = node("n2", 8000, taints=(Taint("dedicated", "x", "NoSchedule"),))
    problem = problem_of(
        [node("n1", 2000), tainted],
        [
            pod("old", 1000, owner="rs-web", on="n2"),
            pod("filler", 2000, on="n1"),
            *(pod(f"new{i}", 1000, owner="rs-web") for i in range(3)),
        ],
    )
    (web,) = [g for g in problem.groups if g.pending]
    assert web.stay_only == frozenset({1})
    solution, plan = solve(problem)
    assert solution.counts.get((web.index, 1), 0) <= 1
    assert not plan.placements
    assert not plan.evictions


def test_stay_only_members_may_move_out() -> None:
    # "old" runs on n2, tainted since: it may stay or leave. p tolerates the taint and fits on
    # n2 once old moves to n1.
    taint = Taint("dedicated", "x", "NoSchedule")
    problem = problem_of(
        [node("n1", 4000), node("n2", 4000, taints=(taint,))],
        [
            pod("old", 1000, owner="rs-web", on="n2"),
            pod("n1fill", 3000, on="n1"),
            pod("other", 2000, on="n2", owner="rs-o", tolerate=True),
            pod("p", 2000, owner="rs-p", tolerate=True),
        ],
    )
    web = next(g for g in problem.groups if g.stay_only)
    solution, plan = solve(problem)
    assert moves(plan) == {("old", "n2", "n1")}
    assert placements(plan) == {("p", "n2")}
    assert solution.counts.get((web.index, 1), 0) == 0
    assert not plan.evictions


def test_extended_resources_and_pod_slots_are_respected() -> None:
    problem = problem_of(
        [node("n1", 16000, gpus=1), node("n2", 16000, pods=2, gpus=2)],
        [
            pod("g1", 1000, gpus=1, on="n2"),
            pod("t", 1000, on="n2"),
            pod("g2", 1000, gpus=1),
            pod("g3", 1000, gpus=1),
            pod("g4", 1000, gpus=1),
            pod("plain", 1000),
        ],
    )
    solution, plan = solve(problem)
    # n1 takes one gpu pod; n2 has a gpu left but no pod slot until "t" moves to n1.
    assert moves(plan) == {("t", "n2", "n1")}
    assert ("plain", "n1") in placements(plan)
    assert len(plan.placements) == 3
    assert solution.tiers[0].placed == 5


@pytest.mark.parametrize("seed", range(40))
def test_random_problems_respect_every_constraint(seed: int) -> None:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(1, 8)):
        taints = (Taint("dedicated", "x", "NoSchedule"),) if rng.random() < 0.15 else ()
        nodes.append(
            node(
                f"n{i}",
                rng.choice([2000, 4000, 8000]),
                rng.choice([4, 8, 16]) * GiB,
                rng.choice([3, 8, 110]),
                gpus=rng.choice([0, 0, 1, 2]),
                taints=taints,
            )
        )
    pods = []
    owners = [f"rs{i}" for i in range(6)]
    for j in range(rng.randint(0, 40)):
        pods.append(
            pod(
                f"p{j}",
                rng.choice([250, 500, 1000, 1500, 2000]),
                rng.choice([1, 2, 4]) * GiB // 2,
                owner=rng.choice(owners),
                priority=rng.choice([0, 0, 10, 100]),
                gpus=rng.choice([0, 0, 0, 1]),
                on=rng.choice(["", "", *(n.name for n in nodes)]),
            )
        )
    # Running pods only where they fit (the cluster as it is is always valid).
    room = {n.name: n.allocatable for n in nodes}
    kept = []
    for p in pods:
        left = room[p.node_name] - p.requests - Resources(pods=1) if p.node_name else None
        if left is None or not left.exceeded_by(Resources()):
            if left is not None:
                room[p.node_name] = left
            kept.append(p)
            continue
        kept.append(
            pod(
                p.name,
                p.requests.milli_cpu,
                p.requests.memory,
                owner=p.owner.name if p.owner else None,
                priority=p.priority,
                gpus=p.requests.scalars.get(GPU, 0),
            )
        )
    problem = problem_of(nodes, kept)
    solution, plan = solve(problem)
    placed_priorities = [p.priority for p in plan.placements]
    for eviction in plan.evictions:
        assert placed_priorities and eviction.priority < max(placed_priorities)
    for tier in solution.tiers:
        assert tier.placed <= tier.placed_bound
    assert solution.placed_bound is not None
    assert sum(solution.counts.values()) <= solution.placed_bound
    assert heuristic_counts(problem, time.monotonic() + 30, threading.Event()) == solution.counts


def test_counting_bound_counts_the_smallest_requests_that_fit() -> None:
    problem = problem_of(
        [node("n1", 4000, memory=100 * GiB)],
        [pod("a", 1000, owner="x"), pod("b", 1000, owner="x"), pod("c", 3000)],
    )
    groups = range(len(problem.groups))
    total = [sum(n.free[d] for n in problem.nodes) for d in range(len(problem.dimensions))]
    assert counting_bound(problem, groups, total) == 2


# -- scale, deadline, cancellation ---------------------------------------------------------------


def generated(nodes: int, pods: int, *, load: float, seed: int = 1) -> Problem:
    """A cluster of 16-cpu nodes with ReplicaSets of mixed sizes and priorities.

    About 85 % of the pods run (placed first-fit from random nodes), the rest are pending;
    ``load`` scales the requests against the cluster's cpu.
    """
    rng = random.Random(seed)
    cluster = [node(f"n{i}", 16000, 64 * GiB) for i in range(nodes)]
    members: list[tuple[str, int, int, int]] = []
    while len(members) < pods:
        owner = f"rs{len(members)}"
        cpu = rng.choice([100, 250, 500, 750, 1000, 1500, 2000, 4000])
        memory = min(16 * GiB, rng.choice([1, 2, 4, 8]) * GiB * max(1, cpu // 250) // 8)
        priority = rng.choice([0, 0, 0, 100, 1000])
        members += [(owner, cpu, memory, priority)] * rng.randint(1, 40)
    members = members[:pods]
    rng.shuffle(members)
    scale = 16000 * nodes * load / sum(cpu for _, cpu, _, _ in members)
    free = {n.name: [16000, 64 * GiB, 110] for n in cluster}
    placed: list[Pod] = []
    for k, (owner, size, memory, priority) in enumerate(members):
        cpu = max(50, int(size * scale))
        on = ""
        if rng.random() > 0.15:
            start = rng.randrange(nodes)
            for j in range(nodes):
                name = cluster[(start + j) % nodes].name
                left = free[name]
                if left[0] >= cpu and left[1] >= memory and left[2] >= 1:
                    left[0] -= cpu
                    left[1] -= memory
                    left[2] -= 1
                    on = name
                    break
        placed.append(pod(f"p{k}", cpu, memory, owner=owner, priority=priority, on=on))
    by_node: dict[str, list[Pod]] = {n.name: [] for n in cluster}
    for p in placed:
        if p.node_name:
            by_node[p.node_name].append(p)
    # NodeInfo without summed requests: build_problem reads only pods and allocatable.
    infos = [NodeInfo(n, tuple(by_node[n.name])) for n in cluster]
    snap = Snapshot.of(infos, tuple(p for p in placed if not p.node_name))
    return build_problem(snap, scheduler_name=SCHEDULER, protected=lambda p: False)


def timed(problem: Problem, seconds: float = 60.0) -> tuple[float, Solution, Plan]:
    """Solve and return the solver's own time (validation excluded), checking the result."""
    start = time.monotonic()
    solution = HeuristicSolver().solve(problem, start + seconds, threading.Event())
    elapsed = time.monotonic() - start
    assert_valid(problem, solution)
    return elapsed, solution, plan_from_solution(problem, solution, "heuristic")


@pytest.mark.parametrize("load", [0.9, 1.05, 1.3])
def test_500_nodes_10000_pods_benchmark(load: float) -> None:
    problem = generated(500, 10_000, load=load)
    elapsed, solution, plan = timed(problem)
    print(
        f"\nheuristic 500 nodes / 10000 pods, load {load}: {elapsed:.3f} s "
        f"(solver {solution.seconds:.3f} s), {len(problem.groups)} groups, "
        f"{problem.pending_count} pending, {len(plan.placements)} placed, "
        f"{len(plan.moves)} moves, {len(plan.evictions)} evictions"
    )
    assert elapsed < 10.0  # target: well under 1 s; generous for slow, shared machines
    assert plan.placements


def test_2000_nodes_40000_pods_is_workable() -> None:
    problem = generated(2000, 40_000, load=1.05, seed=2)
    elapsed, solution, plan = timed(problem)
    print(
        f"\nheuristic 2000 nodes / 40000 pods: {elapsed:.3f} s, {len(problem.groups)} groups, "
        f"{problem.pending_count} pending, {len(plan.placements)} placed, "
        f"{len(plan.moves)} moves, {len(plan.evictions)} evictions"
    )
    assert elapsed < 30.0
    assert solution.status is PlanStatus.FEASIBLE


def test_cancel_returns_the_current_state_at_once() -> None:
    problem = generated(500, 10_000, load=1.05)
    cancel = threading.Event()
    cancel.set()
    start = time.monotonic()
    solution = HeuristicSolver().solve(problem, time.monotonic() + 60, cancel)
    elapsed = time.monotonic() - start
    assert elapsed < 2.0
    assert solution.status is PlanStatus.NONE
    assert solution.counts == {k: v for k, v in current_counts(problem).items() if v}
    assert_valid_capacity(problem, solution)


def test_deadline_is_honoured_with_the_best_state_so_far() -> None:
    problem = generated(500, 10_000, load=1.3)
    for budget in (0.0, 0.02, 0.1):
        start = time.monotonic()
        solution = HeuristicSolver().solve(problem, start + budget, threading.Event())
        elapsed = time.monotonic() - start
        print(f"\nbudget {budget}: returned after {elapsed:.3f} s, status {solution.status}")
        assert elapsed < budget + 1.0
        assert_valid_capacity(problem, solution)
    past = HeuristicSolver().solve(problem, time.monotonic() - 1, threading.Event())
    assert past.status is PlanStatus.NONE


def test_cancel_from_another_thread_stops_the_solver() -> None:
    problem = generated(500, 10_000, load=1.3)
    cancel = threading.Event()
    timer = threading.Timer(0.05, cancel.set)
    timer.start()
    try:
        start = time.monotonic()
        solution = HeuristicSolver().solve(problem, time.monotonic() + 60, cancel)
        elapsed = time.monotonic() - start
    finally:
        timer.cancel()
    assert elapsed < 2.0
    assert_valid_capacity(problem, solution)


def assert_valid_capacity(problem: Problem, solution: Solution) -> None:
    """The model's constraints (a stopped solver may leave members that would fit)."""
    for (g, n), count in solution.counts.items():
        group = problem.groups[g]
        assert n in group.feasible
        assert 0 <= count <= group.limit(n)
    used = usage(problem, solution.counts)
    for n, spec in enumerate(problem.nodes):
        assert all(u <= f for u, f in zip(used[n], spec.free, strict=True))
