"""Plan repair: the part of a stale plan that is still valid, instead of none of it.

A non-blocking solve takes up to its time limit while the scheduler keeps binding pods, so the
fresh snapshot a plan is validated against often differs from the one it was solved for: a pod
it places was bound elsewhere meanwhile, a node it fills took a new pod. The paper discards such
a plan; on the real 16-node, 4-priority grid that was half the solves (12 of 22 under the
periodic trigger). Most of such a plan usually still holds, so this keeps what does:

1. drop every action whose own pod is wrong now (no longer pending or running where planned,
   replaced, refused by the safety rules, failing the filters, an eviction no longer below every
   pod placed);
2. while a node is over capacity (or cordoned and receiving), drop the lowest-priority action
   that brings a pod onto it; dropping a move keeps its pod at home, which may push that node
   over in turn, so this runs to a fixpoint;
3. drop every eviction, then every move, that the rest no longer needs (the plan stays valid
   without it), the costliest first: a disruption that buys nothing is not made; an eviction
   that only makes room for pods of its victim's priority or lower is dropped too, with them
   (the solver evicts only for higher priorities; the validator's rule, below the highest pod
   placed anywhere, is too weak for a plan cut down after the fact);
4. a plan left without placements is no plan (moves alone only disrupt), nor one over the
   disruption budget (``optimiser.maxDisruptionsPerPlacement``).

Every step only removes actions, and the result is checked again from scratch by the same
``PlanChecker`` enforcement relies on, so a repaired plan is exactly as safe as a valid one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from opsche_daemon.model.plan import Eviction, Move, Placement, Plan, PlanStatus
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.budget import Budget
from opsche_daemon.optimiser.validate import PlanChecker
from opsche_daemon.safety import Protected

__all__ = ["Repaired", "repair_plan"]

Action = Placement | Move | Eviction


@dataclass(frozen=True)
class Repaired:
    """The valid part of a plan and what was dropped to get it (one line per action)."""

    plan: Plan
    dropped: tuple[str, ...]


def _into(action: Action) -> str | None:
    """The node an action brings a pod onto."""
    if isinstance(action, Placement):
        return action.node
    if isinstance(action, Move):
        return action.to_node
    return None


def _describe(action: Action, why: str) -> str:
    if isinstance(action, Placement):
        return f"placement of {action.key} on {action.node}: {why}"
    if isinstance(action, Move):
        return f"move of {action.key} to {action.to_node}: {why}"
    return f"eviction of {action.key}: {why}"


def _with(plan: Plan, actions: list[Action]) -> Plan:
    return replace(
        plan,
        placements=tuple(a for a in actions if isinstance(a, Placement)),
        moves=tuple(a for a in actions if isinstance(a, Move)),
        evictions=tuple(a for a in actions if isinstance(a, Eviction)),
    )


def _settle(
    checker: PlanChecker, plan: Plan, actions: list[Action]
) -> tuple[list[Action], list[str]]:
    """Steps 1 and 2: drop wrong actions, then arrivals on over-full nodes, to a fixpoint."""
    actions = list(actions)
    dropped: list[str] = []
    for _ in range(len(actions) + 1):  # each pass drops at least one action, or stops
        found = checker.check(_with(plan, actions))
        wrong = [a for a in actions if a.key in found.by_pod]
        if wrong:
            for action in wrong:
                actions.remove(action)
                dropped.append(_describe(action, found.by_pod[action.key][0]))
            continue
        if not found.by_node:
            break
        node = min(found.by_node)
        incoming = [a for a in actions if _into(a) == node]
        if not incoming:
            break  # over without anything of the plan's arriving: the final check refuses it
        action = min(incoming, key=lambda a: (a.priority, a.key))
        actions.remove(action)
        dropped.append(_describe(action, found.by_node[node][0]))
    return actions, dropped


def repair_plan(
    plan: Plan,
    snapshot: Snapshot,
    *,
    scheduler_name: str,
    protected: Protected,
    budget: Budget | None = None,
) -> Repaired | None:
    """The largest valid part of ``plan`` on ``snapshot`` this greedy finds, or None.

    ``budget`` is the plan's disruption budget, r disruptions per pod
    placed (``optimiser.maxDisruptionsPerPlacement``): a repaired plan keeps within it too.
    """
    checker = PlanChecker(snapshot, scheduler_name, protected)
    actions, dropped = _settle(checker, plan, [*plan.placements, *plan.moves, *plan.evictions])

    # Step 3, the costliest disruptions first: evictions, then moves, highest priority first.
    # An eviction stays only if a pod of higher priority than its victim would lose its place
    # without it: a repair must not evict a pod for lower-priority ones (the solver never does).
    disruptions = sorted(
        (a for a in actions if not isinstance(a, Placement)),
        key=lambda a: (not isinstance(a, Eviction), -a.priority, a.key),
    )
    for action in disruptions:
        if action not in actions:
            continue  # dropped by an earlier trial that was adopted
        trial, lost = _settle(checker, plan, [a for a in actions if a is not action])
        lost_placements = [a for a in actions if isinstance(a, Placement) and a not in trial]
        if not lost:
            why = "not needed by the rest of the plan"
        elif isinstance(action, Eviction) and all(
            p.priority <= action.priority for p in lost_placements
        ):
            why = "it made room only for pods of its own priority or lower"
        else:
            continue
        actions = trial
        dropped += [_describe(action, why), *lost]

    repaired = replace(
        _with(plan, actions),
        status=PlanStatus.FEASIBLE,  # no longer what the solver proved anything about
        notes=(*plan.notes, f"repaired: {len(dropped)} actions dropped"),
    )
    if not repaired.placements or checker.check(repaired).errors:
        return None
    if budget is not None:
        disrupted = len(repaired.moves) + len(repaired.evictions)
        if not budget.allows(disrupted, len(repaired.placements)):
            return None
    return Repaired(repaired, tuple(dropped))
