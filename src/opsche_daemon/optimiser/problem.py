"""From a Snapshot to the problem every solver works on, and from a solution back to a Plan.

Why groups: a ReplicaSet's 200 replicas are interchangeable, and a model with one boolean per pod
and node drowns CP-SAT in symmetric solutions (seed notes: presolve alone ate the budget at
50 nodes x 1000 pods). Pods with the same controller, requests, priority and feasible nodes form
one group, and solvers decide *how many* of a group go on each node.

Who may change (decided here once for every solver; the safety rules themselves are
``opsche_daemon.safety``'s):

* pending pods of this scheduler can be placed, except pods with pairwise constraints the model
  does not capture (inter-pod affinity, topology spread, host ports) or with volumes opsche cannot
  schedule: those are left to the scheduling cycle;
* running pods may be moved or evicted only when ``safety.disturb_refusals`` has no objection
  (this scheduler's, controller-managed, not protected, not terminating) and they have no
  pairwise constraints;
  every other running pod is fixed, its requests simply reduce its node's capacity;
* terminating and terminal pods are ignored (their room is not counted on as free until they go).

Feasibility of a group on a node comes from the scheduler's own Filter plugins
(NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeResourcesFit against the empty
node), so the optimiser and the scheduler share one definition of "fits"; with scheduler
extenders configured, their filters narrow it once per group and solve (``extra_filter``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from opsche_daemon.framework.interface import CycleState
from opsche_daemon.framework.registry import DEFAULT_PLUGINS, build_framework
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.plan import Eviction, Move, Placement, Plan, PlanStatus, TierResult
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.safety import Protected, disturb_refusals

# Asked once per group with its first pod and its statically feasible nodes: the names of those
# nodes the scheduler extenders' filters accept (the flow answers it over HTTP, see
# ``plans.extenders``). None: no extenders.
ExtraFilter = Callable[[Pod, Sequence[NodeInfo]], Collection[str]]

__all__ = [
    "STATIC_FILTERS",
    "ExtraFilter",
    "Group",
    "NodeSpec",
    "Problem",
    "Solution",
    "StaticFeasibility",
    "build_problem",
    "current_counts",
    "fill_greedily",
    "plan_from_solution",
]

# The filters that depend only on the pod and the node, not on other pods.
STATIC_FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
)


@dataclass(frozen=True)
class NodeSpec:
    """A node as the model sees it: room for the groups once the fixed pods are counted.

    ``free`` is allocatable minus the fixed pods' requests, but never less than what the groups
    use there now: a node that is already over-committed (capacity shrank under its pods) stays
    as it is in the current solution, and nothing may be added to it.
    """

    name: str
    capacity: tuple[int, ...]  # allocatable per dimension
    free: tuple[int, ...]  # per dimension, for the groups


@dataclass(frozen=True)
class Group:
    """Interchangeable pods: same controller, requests, priority and feasible nodes."""

    index: int
    priority: int
    requests: tuple[int, ...]  # per dimension (the pods dimension counts 1)
    feasible: tuple[int, ...]  # node indices where members may be (statically feasible or running)
    running: Mapping[int, tuple[Pod, ...]]  # node index -> members running there
    pending: tuple[Pod, ...]  # members not bound yet
    # Nodes where members run although the filters now reject them (a taint added later, say):
    # they may stay, but no member may be added there. ``limit(n)`` encodes it for solvers.
    stay_only: frozenset[int] = frozenset()

    @property
    def size(self) -> int:
        """All members, running and pending."""
        return len(self.pending) + sum(len(p) for p in self.running.values())

    @property
    def running_count(self) -> int:
        """Members currently running."""
        return sum(len(p) for p in self.running.values())

    def current(self, node: int) -> int:
        """Members running on ``node`` now."""
        return len(self.running.get(node, ()))

    def limit(self, node: int) -> int:
        """Most members ``node`` may hold: the group's size, or its current count if stay-only."""
        return self.current(node) if node in self.stay_only else self.size


@dataclass(frozen=True)
class Problem:
    """Everything a solver needs; indices refer to ``nodes`` and ``groups``."""

    generation: int
    dimensions: tuple[str, ...]
    nodes: tuple[NodeSpec, ...]
    groups: tuple[Group, ...]
    tiers: tuple[int, ...]  # distinct priorities of groups, highest first
    untouched_pending: tuple[Pod, ...] = ()  # pending pods left to the scheduling cycle
    notes: tuple[str, ...] = ()

    @property
    def pending_count(self) -> int:
        """Pending pods the model may place."""
        return sum(len(g.pending) for g in self.groups)


@dataclass
class Solution:
    """A solver's answer: how many members of each group go on each node, plus its figures."""

    counts: dict[tuple[int, int], int]  # (group index, node index) -> members there
    status: PlanStatus
    tiers: list[TierResult] = field(default_factory=list)
    placed_bound: int | None = None
    seconds: float = 0.0


def _dimensions(infos: Sequence[NodeInfo]) -> tuple[str, ...]:
    scalars = sorted({name for info in infos for name in info.node.allocatable.scalars})
    return ("cpu", "memory", "ephemeral-storage", "pods", *scalars)


def _vector(resources: Resources, dims: tuple[str, ...], pods: int) -> tuple[int, ...]:
    return tuple(pods if d == "pods" else resources.get(d) for d in dims)


def _movable(pod: Pod, scheduler_name: str, protected: Protected) -> bool:
    """Running pods a plan may move or evict.

    Only this scheduler's pods: a moved pod is recreated by its controller and must be pinned to
    its new node by this scheduler, which another scheduler's pods never reach.
    """
    return (
        not disturb_refusals(pod, pod.key, scheduler_name, protected)
        and not _pairwise(pod)
        and not pod.terminal
    )


def _pairwise(pod: Pod) -> bool:
    """Constraints between pods that the model does not capture."""
    return bool(pod.has_pod_affinity or pod.topology_spread or pod.host_ports)


def _signature(pod: Pod) -> tuple[object, ...]:
    """What decides static feasibility and interchangeability of two pods."""
    owner = (pod.owner.kind, pod.owner.uid) if pod.owner else ("", pod.key)
    r = pod.requests
    return (
        owner,
        pod.priority,
        (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalars.items()))),
        tuple(sorted(pod.node_selector.items())),
        pod.required_node_affinity,
        pod.tolerations,
    )


class StaticFeasibility:
    """Static pod-node feasibility from the scheduler's Filter plugins, cached per signature."""

    def __init__(self, nodes: Sequence[NodeInfo], snapshot: Snapshot) -> None:
        self.index = {info.name: i for i, info in enumerate(nodes)}
        disabled = [p for p in DEFAULT_PLUGINS if p not in STATIC_FILTERS]
        self.framework: Framework = build_framework(disabled=disabled)
        self.empty = [NodeInfo.build(info.node) for info in nodes]
        self.snapshot = Snapshot.of(self.empty, generation=snapshot.generation)
        self.cache: dict[tuple[object, ...], tuple[int, ...]] = {}

    def of(self, pod: Pod) -> tuple[int, ...]:
        """Indices of the nodes where ``pod`` passes every static filter."""
        key = _signature(pod)[1:]
        found = self.cache.get(key)
        if found is None:
            bare = Pod(
                pod.namespace,
                pod.name,
                requests=pod.requests,
                non_zero_requests=pod.non_zero_requests,
                node_selector=pod.node_selector,
                required_node_affinity=pod.required_node_affinity,
                tolerations=pod.tolerations,
                priority=pod.priority,
            )
            state = CycleState(self.snapshot)
            allowed, status = self.framework.run_pre_filter(state, bare, self.empty)
            if not status.ok:
                found = ()
            else:
                found = tuple(
                    i
                    for i, info in enumerate(self.empty)
                    if (allowed is None or info.name in allowed)
                    and self.framework.run_filters(state, bare, info).ok
                )
            self.cache[key] = found
        return found


def _make_groups(
    members: Mapping[tuple[object, ...], list[tuple[int | None, Pod]]],
    dims: tuple[str, ...],
    feasibility: StaticFeasibility,
    infos: Sequence[NodeInfo],
    extra_filter: ExtraFilter | None = None,
) -> tuple[list[Group], list[list[int]]]:
    """Groups from signature buckets, and what the groups use on each node now."""
    groups: list[Group] = []
    group_usage = [[0] * len(dims) for _ in infos]
    for signature_members in members.values():
        first = signature_members[0][1]
        running: dict[int, list[Pod]] = {}
        pending: list[Pod] = []
        for node_index, pod in signature_members:
            if node_index is None:
                pending.append(pod)
            else:
                running.setdefault(node_index, []).append(pod)
        requests = _vector(first.requests, dims, 1)
        for node_index, pods in running.items():
            for d, amount in enumerate(requests):
                group_usage[node_index][d] += amount * len(pods)
        statically = set(feasibility.of(first))
        if extra_filter is not None and statically:
            accepted = set(extra_filter(first, [infos[i] for i in sorted(statically)]))
            statically = {i for i in statically if infos[i].name in accepted}
        groups.append(
            Group(
                index=len(groups),
                priority=first.priority,
                requests=requests,
                feasible=tuple(sorted(statically | set(running))),
                running={n: tuple(p) for n, p in running.items()},
                pending=tuple(sorted(pending, key=lambda p: (p.created, p.key))),
                stay_only=frozenset(set(running) - statically),
            )
        )
    return groups, group_usage


def build_problem(
    snapshot: Snapshot,
    *,
    scheduler_name: str,
    protected: Protected,
    extra_filter: ExtraFilter | None = None,
) -> Problem:
    """The optimisation problem for ``snapshot``'s pending pods of ``scheduler_name``.

    ``extra_filter`` narrows each group's feasible nodes further (scheduler extenders): a group
    may then only stay where it runs, never move to or be placed on a node it refuses.
    """
    infos = snapshot.node_infos()
    dims = _dimensions(infos)
    feasibility = StaticFeasibility(infos, snapshot)
    fixed_usage = [Resources() for _ in infos]
    fixed_pods = [0] * len(infos)
    members: dict[tuple[object, ...], list[tuple[int | None, Pod]]] = {}
    notes: list[str] = []
    for index, info in enumerate(infos):
        for pod in info.pods:
            if pod.terminal:
                continue
            if _movable(pod, scheduler_name, protected):
                members.setdefault(_signature(pod), []).append((index, pod))
            else:
                fixed_usage[index] += pod.requests
                fixed_pods[index] += 1
    untouched: list[Pod] = []
    for pod in snapshot.pending:
        if pod.scheduler_name != scheduler_name or pod.deleting or pod.terminal:
            continue
        if _pairwise(pod) or pod.unsupported_volumes or pod.scheduling_gates:
            untouched.append(pod)
            continue
        members.setdefault(_signature(pod), []).append((None, pod))
    if untouched:
        notes.append(
            f"{len(untouched)} pending pod(s) with pod affinity, topology spread, host ports, "
            "unsupported volumes or scheduling gates are left to the scheduling cycle"
        )
    groups, group_usage = _make_groups(members, dims, feasibility, infos, extra_filter)
    nodes = []
    for i, info in enumerate(infos):
        capacity = _vector(info.node.allocatable, dims, info.node.allocatable.pods)
        fixed = _vector(fixed_usage[i], dims, fixed_pods[i])
        free = tuple(
            max(c - f, used) for c, f, used in zip(capacity, fixed, group_usage[i], strict=True)
        )
        nodes.append(NodeSpec(info.name, capacity, free))
    tiers = tuple(sorted({g.priority for g in groups if g.pending or g.running}, reverse=True))
    return Problem(
        generation=snapshot.generation,
        dimensions=dims,
        nodes=tuple(nodes),
        groups=tuple(groups),
        tiers=tiers,
        untouched_pending=tuple(untouched),
        notes=tuple(notes),
    )


def plan_from_solution(problem: Problem, solution: Solution, solver: str) -> Plan:
    """Turn per-group counts into concrete placements, moves and evictions.

    Within a group members are interchangeable, so: members already on a node stay there up to
    the node's count; running members displaced from a node fill the remaining slots first (a
    move keeps a running replica running), then pending members fill what is left; running
    members without a slot are evicted. Pending members are taken oldest first.
    """
    placements: list[Placement] = []
    moves: list[Move] = []
    evictions: list[Eviction] = []
    for group in problem.groups:
        target = {n: solution.counts.get((group.index, n), 0) for n in group.feasible}
        free_slots: list[int] = []
        displaced: list[tuple[int, Pod]] = []
        for node, count in target.items():
            here = group.running.get(node, ())
            free_slots += [node] * max(0, count - len(here))
            displaced += [(node, p) for p in here[count:]]
        for node, pods in group.running.items():
            if node not in target:
                displaced += [(node, p) for p in pods]
        slots = iter(free_slots)
        for from_node, pod in displaced:
            to_node = next(slots, None)
            if to_node is None:
                evictions.append(
                    Eviction(
                        pod.namespace,
                        pod.name,
                        problem.nodes[from_node].name,
                        pod.uid,
                        pod.priority,
                    )
                )
            else:
                owner = f"{pod.owner.kind}/{pod.owner.name}" if pod.owner else ""
                moves.append(
                    Move(
                        pod.namespace,
                        pod.name,
                        problem.nodes[from_node].name,
                        problem.nodes[to_node].name,
                        pod.uid,
                        pod.priority,
                        owner,
                        owner_uid=pod.owner.uid if pod.owner else "",
                    )
                )
        for pod, node in zip(group.pending, slots, strict=False):
            placements.append(
                Placement(pod.namespace, pod.name, problem.nodes[node].name, pod.uid, pod.priority)
            )
    status = solution.status if (placements or moves or evictions) else PlanStatus.NONE
    return Plan(
        generation=problem.generation,
        solver=solver,
        status=status,
        placements=tuple(placements),
        moves=tuple(moves),
        evictions=tuple(evictions),
        tiers=tuple(solution.tiers),
        pending=problem.pending_count + len(problem.untouched_pending),
        placed_bound=solution.placed_bound,
        seconds=solution.seconds,
        notes=problem.notes,
    )


def usage(problem: Problem, counts: Mapping[tuple[int, int], int]) -> list[list[int]]:
    """Per node, per dimension: what the groups use under ``counts`` (for checks and repairs)."""
    used = [[0] * len(problem.dimensions) for _ in problem.nodes]
    for (g, n), count in counts.items():
        if count:
            req = problem.groups[g].requests
            row = used[n]
            for d, amount in enumerate(req):
                row[d] += amount * count
    return used


def current_counts(problem: Problem) -> dict[tuple[int, int], int]:
    """The counts of the cluster as it is (nothing moved, nothing placed)."""
    return {(g.index, n): len(pods) for g in problem.groups for n, pods in g.running.items()}


def placed_by_priority(problem: Problem, counts: Mapping[tuple[int, int], int]) -> Counter[int]:
    """Members placed per priority under ``counts``."""
    placed: Counter[int] = Counter()
    for (g, _), count in counts.items():
        placed[problem.groups[g].priority] += count
    return placed


def fill_greedily(
    problem: Problem, counts: Mapping[tuple[int, int], int]
) -> dict[tuple[int, int], int]:
    """Place every still-pending member that fits in the room ``counts`` leaves; keep the rest.

    Applied to every solver's answer, so that no plan leaves a pending pod unplaced while a node
    has room for it, even when a solver stopped at its deadline with a merely feasible solution.
    Highest priority first; for each group, the nodes with the least room left first (best fit),
    as many members per node as fit there.
    """
    result = dict(counts)
    used = usage(problem, result)
    placed = Counter[int]()
    for (g, _), count in result.items():
        placed[g] += count
    order = sorted(problem.groups, key=lambda g: (-g.priority, -sum(g.requests)))
    for group in order:
        missing = group.size - placed[group.index]
        if missing <= 0:
            continue
        dims = [(d, r) for d, r in enumerate(group.requests) if r]
        candidates: list[tuple[float, int, int]] = []
        for n in group.feasible:
            room = group.limit(n) - result.get((group.index, n), 0)
            node, row = problem.nodes[n], used[n]
            fit = min([room] + [(node.free[d] - row[d]) // r for d, r in dims])
            if fit > 0:
                # Leftover as a fraction of each dimension, so bytes do not outweigh cores.
                slack = sum((node.free[d] - row[d]) / node.free[d] for d, _ in dims)
                candidates.append((slack, n, fit))
        candidates.sort()
        for _, n, fit in candidates:
            take = min(fit, missing)
            result[(group.index, n)] = result.get((group.index, n), 0) + take
            for d, r in dims:
                used[n][d] += r * take
            missing -= take
            if missing == 0:
                break
    return result
