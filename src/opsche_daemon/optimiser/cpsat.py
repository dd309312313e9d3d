"""The CP-SAT solver: the paper's lexicographic loop (Appendix C, Algorithm 8) over count variables.

The model decides how many members of each group go on each node (``problem.Group``); one boolean
per pod and node drowns CP-SAT in symmetric solutions. Variables:

* ``y[g, n]`` in ``[0, limit]`` for each node ``n`` where group ``g`` is feasible: members there
  (``limit`` is ``group.limit(n)``, tightened to how many fit in the node's room for the groups);
* ``stay[g, n]`` in ``[0, current]``, ``stay <= y``, for each node where the group runs now:
  running members that stay where they are;
* ``kept[g]`` in ``[0, running]``, ``kept <= sum_n y[g, n]``, for each group with running members:
  running members that keep running (where they are or moved): a slot goes to a running member
  before a pending one, as ``plan_from_solution`` maps counts to pods.

Constraints: ``sum_n y[g, n] <= size`` and, per node and dimension, the groups' requests within
the node's free room (requests divided by their gcd per dimension; redundant rows left out).

For each priority tier ``t`` (highest first), over the groups of priority ``>= t``:

1. maximise the pods placed ``P_t = sum y``, with the running pods of priority exactly ``t``
   kept first (``K_t``, weighted by the pending pods of priority ``>= t`` plus 1, so no number
   of placements outweighs one of them): pods of equal priority never evict each other, so a
   running pod is evicted only for a pod of higher priority, as plan validation demands
   (counting pods alone would evict one big running pod to place two small pending ones of the
   same priority). The objective is folded with phase 2's as a tie-break,
   ``M * (W * K_t + P_t) + D_t`` with ``M`` above any ``D_t``: left alone, phase 1 answers with
   pods moved for nothing, and phase 2 rarely has the time to undo that (seed notes; measured
   here too). If this phase is proved optimal, so is phase 2. Then require ``K_t`` and ``P_t``
   at least what was found;
2. maximise ``D_t = sum kept + sum stay``: a running pod that stays scores 2, a moved one 1, an
   evicted one 0 (as ``TierResult.disruption_score`` documents; the paper's formula weighs a pod
   that stays 3, which ranks the same solutions once phase 1 fixed the pods kept); then require
   ``D_t`` at least what was found.

``>=``, never ``==``, so a phase stopped before proving optimality constrains correctly. A phase
that finds nothing in its time requires the values of the solution it was hinted with. Should
the answer still evict a pod whose priority is not below every pod placed (only possible when
stopped early), the last solution without such an eviction is returned instead.

A disruption budget (``disruptions_per_placement`` r > 0, ``optimiser.maxDisruptionsPerPlacement``)
adds one constraint to every phase: running pods moved or evicted at most r per pending pod
placed, ``sum running - sum stay <= r * (sum y - sum kept)`` (r as a fraction, both sides
scaled to integers). ``kept`` is then pinned to ``min(sum_n y, running)`` per group, as
``plan_from_solution`` counts it, so a low ``kept`` cannot pass a running pod off as a pending one
placed. The lexicographic order stays: placements first, then disruption, within the budget. A
warm start over budget is replaced by the cluster as it is (no disruption), which is always within.

A price on disruption (``placement_worth`` p > 0, ``optimiser.placementWorthMoves``) replaces the
fold of phase 1 for every tier: ``a * (W' * K_t + P_t) + b * D`` with ``a / b`` half a tenth above p
(rounded down to tenths) and
``D`` the disruption score of all running pods (every tier's ``kept + stay``), so a plan places
a pending pod only where that costs at most p moves at the margin (a move costs 1, an eviction
that leaves its pod pending 2). ``W'`` keeps a running pod of the tier above any number of
placements and moves, as ``W`` does. The paper's order ranks one more higher-tier pod above any
number of moves; measured on the grid, the closer CP-SAT gets to that optimum, the more a plan
disrupts per pod it places (``docs/evaluation.md``, "Longer solves disrupt more"): a price is
where a plan stops paying for one more pod. Phase 1 then no longer proves phase 2, and its bound
no longer bounds the pods placeable. A warm start worth less under the price than the cluster as
it is (``budget.worth_its_price``) is replaced by it: the search may stop (the stall stop, the
deadline) before improving on its first solution, which would then be the answer.

Hints: before each phase the best solution so far, completed (``_Repair``): presolve drops the
groups outside the objective, and a stopped search leaves needless moves, so running members go
back home or keep running where there is room and the warm start's placements come back; all
variables are hinted, so CP-SAT takes it as its first solution. Phases whose hint already
reaches the trivial bound (everything placed, every running pod staying) are not solved.

Time, as the paper's ``get_timeout``: ``alpha`` of the time to the deadline is split equally
between the phases (two per tier); what a phase leaves unused carries over. On a large model a
phase gets at least what CP-SAT needs there to find anything (from the later phases); CP-SAT's
presolve runs only when it takes a small part of the phase; a margin proportional to the model
is kept before the deadline for CP-SAT to stop and the answer to be read. A watcher thread
stops the running search when ``cancel`` is set or the deadline comes.

Past ``max_variables`` y variables (hundreds of groups on hundreds of nodes), each group keeps
only the nodes where it runs or the warm start puts it, plus those with the most room left for
it: the answer is still valid, but no longer proved (status FEASIBLE, trivial bounds).

The model is written straight into CP-SAT's model proto: building it through ``IntVar`` objects
and linear expressions costs seconds of Python at 500 nodes and hundreds of groups.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import reduce

import numpy as np
from ortools.sat.python import cp_model

from opsche_daemon.model.plan import PlanStatus, TierResult
from opsche_daemon.optimiser.budget import Budget, budget_of, within_budget, worth_its_price
from opsche_daemon.optimiser.problem import Group, Problem, Solution, current_counts

__all__ = ["CpSatSolver", "HintProvider", "price_of"]

Counts = dict[tuple[int, int], int]
HintProvider = Callable[[Problem], Mapping[tuple[int, int], int]]

_POLL_SECONDS = 0.01  # how often the watcher looks at ``cancel`` and the deadline
_MIN_PHASE_SECONDS = 0.005  # below this a phase is not worth starting
_MAX_Y = 30_000  # y variables past which each group gets a share of candidate nodes
_MIN_CANDIDATES = 8  # nodes per group (its own included), however restricted
# Measured on 2 cores: CP-SAT's presolve costs about this per variable. Presolve pays off (proofs,
# better solutions) when it can finish well within the phase; past that it eats the phase and
# the search never starts, so a phase turns it off.
_PRESOLVE_SECONDS_PER_VARIABLE = 2.5e-5
_PRESOLVE_SHARE = 0.3
# Time to keep before the deadline per variable: CP-SAT takes a while to stop on a large model,
# and the answer must still be read back.
_STOP_SECONDS_PER_VARIABLE = 6e-6
# Measured on 2 cores: on a large model CP-SAT finds nothing better than the hint before about
# this much time (loading the model, starting the workers, the first search). A phase gets at
# least this, taken from the later phases, or the loop stops.
_USEFUL_SECONDS = 0.05
_USEFUL_SECONDS_PER_VARIABLE = 4e-5


class _Bounds:
    """Per group, aligned with ``group.feasible``: most members each node may hold.

    ``group.limit(n)``, the group's size, and how many fit in the node's room for the groups;
    never less than the members running there now (their room is counted in ``free``).
    """

    def __init__(self, problem: Problem) -> None:
        free = np.array([node.free for node in problem.nodes], dtype=np.int64).reshape(
            len(problem.nodes), len(problem.dimensions)
        )
        self.free = free
        self.feasible: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.position: list[dict[int, int]] = []  # node -> index into feasible
        for group in problem.groups:
            feasible = np.array(group.feasible, dtype=np.int64)
            upper = np.full(len(feasible), group.size, dtype=np.int64)
            dims = [d for d, r in enumerate(group.requests) if r > 0]
            if dims and len(feasible):
                requests = np.array([group.requests[d] for d in dims], dtype=np.int64)
                columns = np.array(dims, dtype=np.int64)
                fit = (free[np.ix_(feasible, columns)] // requests).min(axis=1)
                upper = np.minimum(upper, fit)
            position = {n: i for i, n in enumerate(group.feasible)}
            for n in group.stay_only:
                upper[position[n]] = 0
            for n, pods in group.running.items():
                i = position[n]
                upper[i] = max(int(upper[i]), len(pods))
            self.feasible.append(feasible)
            self.upper.append(upper)
            self.position.append(position)

    def admits(self, problem: Problem, counts: Mapping[tuple[int, int], int]) -> bool:
        """Whether counts are a solution of the (unrestricted) model."""
        placed = [0] * len(problem.groups)
        for (g, n), value in counts.items():
            if value == 0:
                continue
            i = self.position[g].get(n) if 0 <= g < len(placed) else None
            if i is None or not 0 < value <= self.upper[g][i]:
                return False
            placed[g] += value
        if any(placed[g.index] > g.size for g in problem.groups):
            return False
        used = _usage(problem, counts)
        return all(
            u <= f
            for node, row in zip(problem.nodes, used, strict=True)
            for u, f in zip(row, node.free, strict=True)
        )

    def room(self, problem: Problem, counts: Mapping[tuple[int, int], int]) -> np.ndarray:
        """Per node and dimension, the room ``counts`` leave."""
        used = np.array(_usage(problem, counts), dtype=np.int64).reshape(self.free.shape)
        return np.asarray(self.free - used)

    def candidates(
        self,
        group: Group,
        placed_by_start: Mapping[int, list[int]],
        room: np.ndarray,
        share: int,
    ) -> np.ndarray:
        """Indices into ``group.feasible``: where it runs or ``start`` puts it, then most room."""
        feasible = self.feasible[group.index]
        possible = self.upper[group.index] > 0
        must = np.zeros(len(feasible), dtype=bool)
        position = self.position[group.index]
        for n in group.running:
            must[position[n]] = True
        for n in placed_by_start.get(group.index, ()):
            must[position[n]] = True
        dims = [d for d, r in enumerate(group.requests) if r > 0]
        if dims:
            requests = np.array([group.requests[d] for d in dims], dtype=np.int64)
            columns = np.array(dims, dtype=np.int64)
            spare = (room[np.ix_(feasible, columns)] // requests).min(axis=1)
        else:
            spare = np.zeros(len(feasible), dtype=np.int64)
        # Most spare room first; ties by node index (stable sort).
        ranked = np.argsort(-spare, kind="stable")
        ranked = ranked[possible[ranked] & ~must[ranked]]
        extra = max(0, share - int(must.sum()))
        picked = np.concatenate([np.flatnonzero(must), ranked[:extra]])
        return np.sort(picked)


@dataclass
class _Tier:
    """Index ranges of one tier's terms in the variable vector (groups sorted by priority)."""

    priority: int
    y_end: int  # y of groups with priority >= tier: [0, y_end)
    stay_end: int  # stay of those groups: [stay_start, stay_end)
    kept_end: int  # kept of those groups: [kept_start, kept_end)
    own_kept_start: int  # kept of groups with priority == tier: [own_kept_start, kept_end)
    members: int  # members of groups with priority >= tier (bound on P_t)
    running: int  # running members of those groups (bound on D_t is 2 * running)
    weight: int  # weight of K_t in phase 1: more than the pending pods P_t can gain

    def disruption_terms(self, layout: _Layout) -> list[int]:
        """The variables of D_t: kept and stay of the tier's groups."""
        return [*range(layout.kept_start, self.kept_end), *range(layout.stay_start, self.stay_end)]

    def disruption(self, values: Sequence[int], layout: _Layout) -> int:
        """D_t under ``values`` (of the last tier: every running pod's)."""
        return sum(values[layout.kept_start : self.kept_end]) + sum(
            values[layout.stay_start : self.stay_end]
        )


@dataclass
class _Layout:
    """The variable vector: ``[y...][stay...][kept...]``, groups in priority order (highest first).

    Contiguous per tier, so each tier's objective is a prefix or a slice of a range.
    """

    problem: Problem
    order: list[Group]  # groups by priority, highest first
    y_start: dict[int, int] = field(default_factory=dict)  # group -> first y index
    y_nodes: dict[int, list[int]] = field(default_factory=dict)  # group -> nodes of its y
    upper: list[int] = field(default_factory=list)  # upper bound of every variable
    stay: list[tuple[int, int]] = field(default_factory=list)  # stay index -> (group, node)
    stay_current: list[int] = field(default_factory=list)  # stay index -> members there now
    stay_start: int = 0
    kept: list[int] = field(default_factory=list)  # kept index -> group
    kept_running: list[int] = field(default_factory=list)  # kept index -> running members
    kept_start: int = 0
    tiers: list[_Tier] = field(default_factory=list)
    y_index: dict[tuple[int, int], int] = field(default_factory=dict)  # (group, node) -> y
    restricted: bool = False  # some feasible y left out: bounds and optimality are not proofs

    @classmethod
    def of(cls, problem: Problem, bounds: _Bounds, start: Counts, max_y: int) -> _Layout:
        """Variables for ``problem``: y where a member fits or runs, at most about ``max_y``.

        Past ``max_y`` each group keeps the nodes where it runs or where ``start`` puts it, plus
        the nodes with the most room left for it, an equal share each (``restricted``).
        """
        order = sorted(problem.groups, key=lambda g: -g.priority)
        layout = cls(problem, order)
        chosen = [np.flatnonzero(bounds.upper[g.index] > 0) for g in problem.groups]
        total = sum(len(c) for c in chosen)
        if total > max_y:
            layout.restricted = True
            share = max(_MIN_CANDIDATES, max_y // max(1, len(problem.groups)))
            room = bounds.room(problem, start)
            placed_by_start: dict[int, list[int]] = {}
            for (g, n), value in start.items():
                if value:
                    placed_by_start.setdefault(g, []).append(n)
            for group in problem.groups:
                if len(chosen[group.index]) > share:
                    chosen[group.index] = bounds.candidates(group, placed_by_start, room, share)
        for group in order:
            feasible = bounds.feasible[group.index]
            picked = chosen[group.index]
            nodes = feasible[picked].tolist()
            base = len(layout.upper)
            layout.y_start[group.index] = base
            layout.y_nodes[group.index] = nodes
            layout.y_index.update(
                zip(
                    zip(itertools.repeat(group.index), nodes),
                    range(base, base + len(nodes)),
                    strict=False,
                )
            )
            layout.upper.extend(bounds.upper[group.index][picked].tolist())
        layout.stay_start = len(layout.upper)
        for group in order:
            for n in sorted(group.running):
                layout.stay.append((group.index, n))
                layout.stay_current.append(group.current(n))
        layout.upper.extend(layout.stay_current)
        layout.kept_start = len(layout.upper)
        for group in order:
            if group.running:
                layout.kept.append(group.index)
                layout.kept_running.append(group.running_count)
        layout.upper.extend(layout.kept_running)
        layout._tiers()
        return layout

    def _tiers(self) -> None:
        problem = self.problem
        y_end = stay_end = kept_end = 0
        members = running = pending = 0
        position = 0
        for priority in problem.tiers:
            own_kept_start = self.kept_start + kept_end
            while position < len(self.order) and self.order[position].priority >= priority:
                group = self.order[position]
                y_end += len(self.y_nodes[group.index])
                stay_end += len(group.running)
                kept_end += 1 if group.running else 0
                members += group.size
                running += group.running_count
                pending += len(group.pending)
                position += 1
            self.tiers.append(
                _Tier(
                    priority=priority,
                    y_end=y_end,
                    stay_end=self.stay_start + stay_end,
                    kept_end=self.kept_start + kept_end,
                    own_kept_start=own_kept_start,
                    members=members,
                    running=running,
                    weight=pending + 1,
                )
            )

    def vector(self, counts: Mapping[tuple[int, int], int]) -> list[int]:
        """A complete assignment from counts: stay and kept as large as the counts allow."""
        values = [0] * len(self.upper)
        placed = [0] * len(self.problem.groups)
        index = self.y_index
        for key, value in counts.items():
            if value:
                values[index[key]] = value
                placed[key[0]] += value
        start = self.stay_start
        for i, (key, current) in enumerate(zip(self.stay, self.stay_current, strict=True)):
            values[start + i] = min(counts.get(key, 0), current)
        start = self.kept_start
        for i, (g, running) in enumerate(zip(self.kept, self.kept_running, strict=True)):
            values[start + i] = min(placed[g], running)
        return values

    def counts(self, values: Sequence[int]) -> Counts:
        """The y part of an assignment as counts."""
        result: Counts = {}
        for group in self.order:
            start = self.y_start[group.index]
            for i, n in enumerate(self.y_nodes[group.index]):
                value = values[start + i]
                if value:
                    result[(group.index, n)] = int(value)
        return result


def _evicts_without_cause(problem: Problem, counts: Mapping[tuple[int, int], int]) -> bool:
    """Whether counts evict a running member whose priority is not below every pod placed.

    Plan validation refuses such evictions. Tier by tier the model never makes one at its
    optimum; a search stopped early (a lower tier not yet re-optimised) might leave one.
    """
    placed = [0] * len(problem.groups)
    for (g, _), value in counts.items():
        placed[g] += value
    highest = max(
        (g.priority for g in problem.groups if placed[g.index] > g.running_count), default=None
    )
    return any(
        placed[g.index] < g.running_count and (highest is None or g.priority >= highest)
        for g in problem.groups
    )


def _usage(problem: Problem, counts: Mapping[tuple[int, int], int]) -> list[list[int]]:
    used = [[0] * len(problem.dimensions) for _ in problem.nodes]
    groups = problem.groups
    for (g, n), value in counts.items():
        if value:
            row = used[n]
            for d, r in enumerate(groups[g].requests):
                if r:
                    row[d] += r * value
    return used


def _add_budget(model: cp_model.CpModel, layout: _Layout, budget: Budget) -> None:
    """``den * (running - sum stay) <= num * (sum y - sum kept) + credit``, ``kept`` pinned."""
    numerator, denominator, credit = budget
    var = model.get_int_var_from_proto_index
    for i, g in enumerate(layout.kept):
        start = layout.y_start[g]
        members = [var(v) for v in range(start, start + len(layout.y_nodes[g]))]
        model.add_min_equality(
            var(layout.kept_start + i), [cp_model.LinearExpr.sum(members), layout.kept_running[i]]
        )
    stay = range(layout.stay_start, layout.stay_start + len(layout.stay))
    y = range(layout.stay_start)
    kept = range(layout.kept_start, layout.kept_start + len(layout.kept))
    constraint = model.proto.constraints.add()
    constraint.linear.vars.extend([*stay, *y, *kept])
    constraint.linear.coeffs.extend(
        [denominator] * len(stay) + [numerator] * len(y) + [-numerator] * len(kept)
    )
    constraint.linear.domain.extend(
        (denominator * sum(layout.kept_running) - credit, cp_model.INT_MAX)
    )


def _build_model(layout: _Layout, budget: Budget | None = None) -> cp_model.CpModel:
    """The constraints (no objective), written directly into the model proto."""
    problem = layout.problem
    model = cp_model.CpModel()
    proto = model.proto
    text = "".join(f"variables {{ domain: 0 domain: {u} }} " for u in layout.upper)
    if text and not proto.merge_text_format(text):
        raise RuntimeError("CP-SAT rejected the variables")

    def linear(variables: Sequence[int], coeffs: Sequence[int], low: int, high: int) -> None:
        constraint = proto.constraints.add()
        constraint.linear.vars.extend(variables)
        constraint.linear.coeffs.extend(coeffs)
        constraint.linear.domain.extend((low, high))

    low = cp_model.INT_MIN
    # Members of a group on all nodes: at most its size.
    for group in layout.order:
        start = layout.y_start[group.index]
        count = len(layout.y_nodes[group.index])
        if sum(layout.upper[start : start + count]) > group.size:
            linear(range(start, start + count), [1] * count, low, group.size)
    # stay <= y where the group runs now.
    for i, (g, n) in enumerate(layout.stay):
        linear((layout.stay_start + i, layout.y_index[(g, n)]), (1, -1), low, 0)
    # kept <= sum_n y: a running member keeps running only in a slot of its group.
    for i, g in enumerate(layout.kept):
        start = layout.y_start[g]
        count = len(layout.y_nodes[g])
        variables = [layout.kept_start + i, *range(start, start + count)]
        linear(variables, [1] + [-1] * count, low, 0)
    # Capacity per node and dimension, requests divided by their gcd in that dimension.
    dims = len(problem.dimensions)
    divisors = [
        reduce(math.gcd, (g.requests[d] for g in problem.groups if g.requests[d]), 0) or 1
        for d in range(dims)
    ]
    on_node: list[list[tuple[int, int]]] = [[] for _ in problem.nodes]  # (variable, group)
    for group in layout.order:
        start = layout.y_start[group.index]
        for i, n in enumerate(layout.y_nodes[group.index]):
            on_node[n].append((start + i, group.index))
    groups = problem.groups
    for n, entries in enumerate(on_node):
        free = problem.nodes[n].free
        for d in range(dims):
            divisor = divisors[d]
            variables = [v for v, g in entries if groups[g].requests[d]]
            if not variables:
                continue
            coeffs = [groups[g].requests[d] // divisor for _, g in entries if groups[g].requests[d]]
            room = free[d] // divisor
            most = sum(c * layout.upper[v] for v, c in zip(variables, coeffs, strict=True))
            if most > room:
                linear(variables, coeffs, low, room)
    if budget is not None:
        _add_budget(model, layout, budget)
    return model


def price_of(placement_worth: float) -> tuple[int, int] | None:
    """``(a, b)``: ``placement_worth`` rounded down to tenths, plus half a tenth; None for no price.

    Just above, so that a placement costing exactly p moves is made, and by the same margin for
    every p: ``a / b = (2 * tenths + 1) / 20``, reduced. (Reducing p first and then adding half of
    its own unit made p = 1 mean 1.5 moves and p = 1.1 mean 1.15.)
    """
    if placement_worth <= 0:
        return None
    tenths = math.floor(placement_worth * 10 + 1e-9)
    ratio = Fraction(2 * tenths + 1, 20)
    return ratio.numerator, ratio.denominator


def _at_least(model: cp_model.CpModel, variables: Sequence[int], value: int) -> None:
    """``sum variables >= value``."""
    if not variables or value <= 0:
        return
    constraint = model.proto.constraints.add()
    constraint.linear.vars.extend(variables)
    constraint.linear.coeffs.extend([1] * len(variables))
    constraint.linear.domain.extend((value, cp_model.INT_MAX))


def _maximise(model: cp_model.CpModel, terms: Sequence[tuple[Sequence[int], int]]) -> None:
    """Objective ``max sum weight * var`` (CP-SAT minimises: negated, scaling factor -1)."""
    proto = model.proto
    proto.clear_objective()
    objective = proto.objective
    for variables, weight in terms:
        objective.vars.extend(variables)
        objective.coeffs.extend([-weight] * len(variables))
    objective.scaling_factor = -1.0


def _hint(model: cp_model.CpModel, values: Sequence[int]) -> None:
    model.proto.clear_solution_hint()
    hint = model.proto.solution_hint
    hint.vars.extend(range(len(values)))
    hint.values.extend(values)


class _Progress(cp_model.CpSolverSolutionCallback):
    """Notes when the running search last found a better solution (for the stall stop)."""

    def __init__(self, watcher: _Watcher) -> None:
        super().__init__()
        self.watcher = watcher

    def on_solution_callback(self) -> None:
        """CP-SAT calls this, from its own threads, on each improving solution."""
        self.watcher.last_solution = time.monotonic()


class _Watcher:
    """Stops the running search when ``cancel`` is set, the deadline passes, or it stalls.

    It stalls when ``stall`` seconds (if set) pass without a better solution, counted from the
    phase's last one (never before the first: on a large model CP-SAT needs a while to load).
    """

    def __init__(self, cancel: threading.Event, deadline: float, stall: float = 0.0) -> None:
        self.cancel = cancel
        self.deadline = deadline
        self.stall = stall
        self.last_solution: float | None = None  # during a search: when it last improved
        self.stalled = 0  # searches stopped for stalling, for the solution's figures
        self.lock = threading.Lock()
        self.solver: cp_model.CpSolver | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cpsat-watcher", daemon=True)

    def __enter__(self) -> _Watcher:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()

    def stopped(self) -> bool:
        """Whether the solve must end now."""
        return self.cancel.is_set() or time.monotonic() >= self.deadline

    def _run(self) -> None:
        # Keeps stopping while a search runs: a stop that lands before the search has started
        # is lost, the next one is not.
        while not self.done.wait(_POLL_SECONDS):
            stop = self.stopped()
            with self.lock:
                if self.solver is None:
                    continue
                last = self.last_solution
                if not stop and self.stall > 0 and last is not None:
                    stop = time.monotonic() - last >= self.stall
                    self.stalled += stop
                    if stop:
                        self.last_solution = None  # counted once
                if stop:
                    self.solver.stop_search()

    def run(self, model: cp_model.CpModel, solver: cp_model.CpSolver) -> int:
        """``solver.solve(model)``, stoppable by the watcher; returns the CP-SAT status."""
        with self.lock:
            self.solver = solver
            self.last_solution = None
        try:
            if self.stall > 0:
                return int(solver.solve(model, _Progress(self)))
            return int(solver.solve(model))
        finally:
            with self.lock:
                self.solver = None


@dataclass
class _Phase:
    """What one phase found, for the tier's figures."""

    optimal: bool = False
    bound: int | None = None
    seconds: float = 0.0


class _Repair:
    """Greedy steps towards the cluster as it is and the warm start, where the room allows.

    Groups of lower tiers are not in the objective yet, and presolve sets variables outside the
    objective to their cheapest value, so a phase's answer evicts them all (and drops their
    placements); a search stopped early also leaves moves it did not need. In order: an evicted
    member stays on its node; a moved member goes back to its node (one member fewer on a node
    where the group has more than it runs now); an evicted member moves to the first node with
    room; a group with fewer members than in the warm start gets them back on the warm start's
    nodes. Each step only adds members or brings one home, so it never lowers what a
    requirement counts: they all still hold.
    """

    def __init__(self, layout: _Layout, counts: Counts) -> None:
        self.layout = layout
        self.problem = layout.problem
        self.counts = dict(counts)
        self.placed = [0] * len(self.problem.groups)
        for (g, _), value in counts.items():
            self.placed[g] += value
        self.used: list[list[int]] = []

    def run(
        self, start_placed: Sequence[int], start_nodes: Mapping[int, list[tuple[int, int]]]
    ) -> bool:
        """All the steps; False if there was nothing to do."""
        counts, order = self.counts, self.layout.order
        displaced = [
            g
            for g in order
            if any(counts.get((g.index, n), 0) < len(pods) for n, pods in g.running.items())
        ]
        behind = [g for g in order if self.placed[g.index] < start_placed[g.index]]
        if not displaced and not behind:
            return False
        self.used = _usage(self.problem, counts)
        for group in displaced:
            self.stay_home(group)
        for group in displaced:
            self.go_back(group)
        for group in displaced:
            self.keep_running(group)
        for group in behind:
            self.restore(group, start_placed[group.index], start_nodes.get(group.index, ()))
        self.counts = {k: v for k, v in counts.items() if v}
        return True

    def fits(self, group: Group, node: int, most: int) -> int:
        """How many of ``most`` more members fit on ``node``."""
        have = self.counts.get((group.index, node), 0)
        most = min(most, self.layout.upper[self.layout.y_index[(group.index, node)]] - have)
        row, free = self.used[node], self.problem.nodes[node].free
        for d, r in enumerate(group.requests):
            if r:
                most = min(most, (free[d] - row[d]) // r)
        return max(0, most)

    def add(self, group: Group, node: int, amount: int) -> None:
        """``amount`` more (or fewer, if negative) members on ``node``."""
        key = (group.index, node)
        self.counts[key] = self.counts.get(key, 0) + amount
        self.placed[group.index] += amount
        row = self.used[node]
        for d, r in enumerate(group.requests):
            row[d] += r * amount

    def stay_home(self, group: Group) -> None:
        """Evicted members stay where they run."""
        for n in sorted(group.running):
            missing = group.running_count - self.placed[group.index]
            if missing <= 0:
                return
            back = group.current(n) - self.counts.get((group.index, n), 0)
            self.add(group, n, self.fits(group, n, min(missing, back)))

    def go_back(self, group: Group) -> None:
        """Moved members go back where they run, from nodes with more than the group runs."""
        counts = self.counts
        surplus = [
            n
            for n in self.layout.y_nodes[group.index]
            if counts.get((group.index, n), 0) > group.current(n)
        ]
        for n in sorted(group.running):
            back = group.current(n) - counts.get((group.index, n), 0)
            while back > 0 and surplus:
                source = surplus[-1]
                extra = counts[(group.index, source)] - group.current(source)
                amount = self.fits(group, n, min(back, extra))
                if amount == 0:
                    break
                self.add(group, source, -amount)
                self.add(group, n, amount)
                back -= amount
                if amount == extra:
                    surplus.pop()

    def keep_running(self, group: Group) -> None:
        """Evicted members move to the first nodes with room."""
        for n in self.layout.y_nodes[group.index]:
            missing = group.running_count - self.placed[group.index]
            if missing <= 0:
                return
            self.add(group, n, self.fits(group, n, missing))

    def restore(self, group: Group, target: int, nodes: Sequence[tuple[int, int]]) -> None:
        """Members of the warm start come back on its nodes, up to its count."""
        for n, value in nodes:
            missing = target - self.placed[group.index]
            if missing <= 0:
                return
            back = min(missing, value - self.counts.get((group.index, n), 0))
            self.add(group, n, self.fits(group, n, back))


class _Run:
    """One ``solve`` call: the model (built on first need), the best solution, the clock."""

    def __init__(
        self,
        problem: Problem,
        layout: _Layout,
        start: Counts,
        workers: int,
        watcher: _Watcher,
        budget: Budget | None = None,
    ) -> None:
        self.problem = problem
        self.budget = budget
        self.layout = layout
        self.best = start
        self.start_placed = [0] * len(problem.groups)
        self.start_nodes: dict[int, list[tuple[int, int]]] = {}
        for (g, n), value in start.items():
            if value:
                self.start_placed[g] += value
                self.start_nodes.setdefault(g, []).append((n, value))
        self.clean = start  # the last solution whose evictions validation accepts
        self.values = layout.vector(start)
        self.workers = workers
        self.watcher = watcher
        self.model: cp_model.CpModel | None = None
        self.required: list[tuple[list[int], int]] = []  # sum vars >= value, in order

    def require(self, variables: list[int], value: int) -> None:
        """Add ``sum variables >= value`` now, or when the model gets built."""
        self.required.append((variables, value))
        if self.model is not None:
            _at_least(self.model, variables, value)

    def ensure_model(self) -> cp_model.CpModel:
        """The model with every requirement so far."""
        if self.model is None:
            self.model = _build_model(self.layout, self.budget)
            for variables, value in self.required:
                _at_least(self.model, variables, value)
        return self.model

    def complete(self) -> None:
        """Greedily bring the best solution back towards the cluster as it is (see ``_Repair``)."""
        repair = _Repair(self.layout, self.best)
        if repair.run(self.start_placed, self.start_nodes) and (
            self.budget is None or within_budget(self.problem, repair.counts, self.budget)
        ):
            self.best = repair.counts
            self.values = self.layout.vector(self.best)

    def solve(
        self, objective: Sequence[tuple[Sequence[int], int]], timeout: float
    ) -> tuple[bool, bool, float | None]:
        """One phase: (found a solution, proved optimal, best objective bound)."""
        model = self.ensure_model()
        _maximise(model, objective)
        _hint(model, self.values)
        timeout = min(timeout, self.watcher.deadline - time.monotonic())
        if timeout < _MIN_PHASE_SECONDS or self.watcher.stopped():
            return False, False, None
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = self.workers
        # CP-SAT would install its own SIGINT handler, and the daemon's (drain, release the
        # Lease, log) would be gone after the first solve: Ctrl-C killed opsche outright.
        solver.parameters.catch_sigint_signal = False
        solver.parameters.max_time_in_seconds = timeout
        presolve = len(self.values) * _PRESOLVE_SECONDS_PER_VARIABLE
        solver.parameters.cp_model_presolve = presolve <= _PRESOLVE_SHARE * timeout
        status = self.watcher.run(model, solver)
        if status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
            # The hint is a solution of the model, so this is a bug here, not a hard problem.
            raise RuntimeError(f"CP-SAT found the model {solver.status_name(status)}")
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return False, False, None
        values = [int(v) for v in solver.response_proto.solution]
        self.best = self.layout.counts(values)
        self.values = self.layout.vector(self.best)
        return True, status == cp_model.OPTIMAL, float(solver.best_objective_bound)


class CpSatSolver:
    """Lexicographic CP-SAT over group counts; see the module docstring."""

    def __init__(
        self,
        *,
        alpha: float = 0.8,
        workers: int = 2,
        hint: HintProvider | None = None,
        max_variables: int = _MAX_Y,
        disruptions_per_placement: float = 0.0,
        stall: float = 0.0,
        disruption_credit: float = 0.0,
        placement_worth: float = 0.0,
    ) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], not {alpha}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.alpha = alpha
        self.workers = workers
        self.hint = hint
        self.max_variables = max_variables
        self.budget = budget_of(disruptions_per_placement, disruption_credit)
        if stall < 0:
            raise ValueError(f"stall must be at least 0, not {stall}")
        self.stall = stall
        if placement_worth < 0:
            raise ValueError(f"placement_worth must be at least 0, not {placement_worth}")
        self.price = price_of(placement_worth)

    @property
    def name(self) -> str:
        """``cpsat``."""
        return "cpsat"

    def solve(self, problem: Problem, deadline: float, cancel: threading.Event) -> Solution:
        """The best solution found by ``deadline`` or cancellation (never worse than the hint)."""
        started = time.monotonic()
        bounds = _Bounds(problem)
        start = self._warm_start(problem, bounds)
        layout = _Layout.of(problem, bounds, start, self.max_variables)
        phases = {t.priority: (_Phase(), _Phase()) for t in layout.tiers}
        if cancel.is_set() or time.monotonic() >= deadline or not layout.tiers:
            return self._solution(layout, start, phases, started, complete=not layout.tiers)
        margin = 0.005 + _STOP_SECONDS_PER_VARIABLE * len(layout.upper)
        with _Watcher(cancel, deadline - margin, self.stall) as watcher:
            run = _Run(problem, layout, start, self.workers, watcher, self.budget)
            complete = self._loop(run, started, phases)
        run.complete()
        best = run.best
        if _evicts_without_cause(problem, best):
            best, complete = run.clean, False
        return self._solution(layout, best, phases, started, complete=complete)

    def _warm_start(self, problem: Problem, bounds: _Bounds) -> Counts:
        if self.hint is not None:
            given = {k: int(v) for k, v in self.hint(problem).items() if v}
            if (
                bounds.admits(problem, given)
                and (self.budget is None or within_budget(problem, given, self.budget))
                and (self.price is None or worth_its_price(problem, given, self.price))
            ):
                return given
        return current_counts(problem)

    def _loop(self, run: _Run, started: float, phases: dict[int, tuple[_Phase, _Phase]]) -> bool:
        """Both phases of every tier; False if stopped before the end.

        Phase ``k`` (from 1) may run until ``started + k * share``: what earlier phases leave
        unused carries over, and an overrun is taken from the next ones. On a large model a
        phase gets at least the time CP-SAT needs there to find anything at all.
        """
        layout = run.layout
        share = self.alpha * (run.watcher.deadline - started) / (2 * len(layout.tiers))
        useful = _USEFUL_SECONDS + _USEFUL_SECONDS_PER_VARIABLE * len(layout.upper)
        k = 0
        for tier in layout.tiers:
            first, second = phases[tier.priority]
            for phase in (first, second):
                k += 1
                if run.watcher.stopped():
                    return False
                run.complete()
                began = time.monotonic()
                if run.watcher.deadline - began < useful / 2:
                    return False  # too little time left to find anything better
                budget = max(started + k * share - began, useful)
                if phase is first:
                    self._placement_phase(run, tier, phase, budget, second)
                else:
                    self._disruption_phase(run, tier, phase, budget)
                phase.seconds = time.monotonic() - began
                if not _evicts_without_cause(run.problem, run.best):
                    run.clean = run.best
        return True

    def _placement_phase(
        self, run: _Run, tier: _Tier, phase: _Phase, budget: float, second: _Phase
    ) -> None:
        """Maximise W * K_t + P_t; then require both at least what was found.

        Folded with the next phase's objective as a tie-break, ``M * (W * K_t + P_t) + D_t``, so
        that the solution (the next phase's starting point) does not move pods for nothing.
        """
        layout = run.layout
        y = list(range(tier.y_end))
        own = list(range(tier.own_kept_start, tier.kept_end))
        disruption = tier.disruption_terms(layout)

        def figures(values: Sequence[int]) -> tuple[int, int]:
            return sum(values[: tier.y_end]), sum(values[tier.own_kept_start : tier.kept_end])

        placed, kept = figures(run.values)
        own_running = sum(layout.upper[i] for i in own)
        everyone = layout.tiers[-1]
        undisrupted = everyone.disruption(run.values, layout) == 2 * everyone.running
        if placed == tier.members and kept == own_running and (self.price is None or undisrupted):
            phase.optimal, phase.bound = True, placed  # the hint reaches the trivial bound
        elif self.price is not None:
            a, b = self.price
            weight = a * tier.members + 2 * b * everyone.running + 1
            objective = [(y, a), (own, weight), (everyone.disruption_terms(layout), b)]
            _, phase.optimal, _ = run.solve(objective, budget)
            placed, kept = figures(run.values)
            phase.bound = tier.members  # what is worth placing, not what is placeable
        else:
            fold = 2 * tier.running + 1
            objective = [(y, fold), (own, tier.weight * fold), (disruption, 1)]
            found, optimal, bound = run.solve(objective, budget)
            placed, kept = figures(run.values)
            if optimal:
                phase.optimal, phase.bound = True, placed
                second.optimal = True  # the tie-break was optimal too: that is phase 2
            elif found and bound is not None:
                # At the lexicographic optimum K_t >= kept, so P_t <= bound - W * kept.
                ceiling = math.floor(bound / fold + 1e-9) - tier.weight * kept
                phase.optimal = ceiling <= placed
                phase.bound = max(placed, min(tier.members, ceiling))
        run.require(own, kept)
        run.require(y, placed)

    def _disruption_phase(self, run: _Run, tier: _Tier, phase: _Phase, budget: float) -> None:
        """Maximise D_t = kept + stay over the tier's groups; then require it."""
        layout = run.layout
        terms = tier.disruption_terms(layout)
        if phase.optimal or tier.disruption(run.values, layout) == 2 * tier.running:
            phase.optimal = True  # the folded first phase proved it, or every running pod stays
        else:
            _, phase.optimal, _ = run.solve([(terms, 1)], budget)
        run.require(terms, tier.disruption(run.values, layout))

    def _solution(
        self,
        layout: _Layout,
        counts: Counts,
        phases: dict[int, tuple[_Phase, _Phase]],
        started: float,
        *,
        complete: bool,
    ) -> Solution:
        values = layout.vector(counts)
        results: list[TierResult] = []
        for tier in layout.tiers:
            first, second = phases[tier.priority]
            proved = not layout.restricted  # a restricted model's bounds prove nothing
            results.append(
                TierResult(
                    priority=tier.priority,
                    placed=sum(values[: tier.y_end]),
                    placed_bound=first.bound
                    if proved and first.bound is not None
                    else tier.members,
                    disruption_score=tier.disruption(values, layout),
                    optimal=proved and first.optimal and second.optimal,
                    seconds=first.seconds + second.seconds,
                )
            )
        optimal = complete and all(r.optimal for r in results)
        return Solution(
            counts=dict(counts),
            status=PlanStatus.OPTIMAL if optimal else PlanStatus.FEASIBLE,
            tiers=results,
            placed_bound=results[-1].placed_bound if results else 0,
            seconds=time.monotonic() - started,
        )
