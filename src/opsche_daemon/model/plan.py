"""A plan: what the optimiser wants changed, as data.

Plans are computed from a Snapshot (whose generation they record), checked by validation against a
fresh one, and enforced by ``plans.enforcement.PlanEnforcer``; none of those steps needs more than
this data. Pods are named by ``namespace/name`` and, where known, UID, so a plan can never be
applied to a different pod that reused a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Eviction", "Move", "Placement", "Plan", "PlanStatus", "TierResult"]


class PlanStatus(StrEnum):
    """How good the plan is known to be."""

    OPTIMAL = "optimal"  # every phase of every tier proved optimal
    FEASIBLE = "feasible"  # valid, but some phase stopped before proving optimality
    NONE = "none"  # nothing better than the current state was found (or nothing to do)


@dataclass(frozen=True, slots=True)
class Placement:
    """Bind a pending pod to a node."""

    namespace: str
    name: str
    node: str
    uid: str = ""
    priority: int = 0

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Move:
    """Evict a controller-managed running pod so that its replacement runs on ``to``."""

    namespace: str
    name: str
    from_node: str
    to_node: str
    uid: str = ""
    priority: int = 0
    owner: str = ""  # kind/name of the controller that recreates it
    # UID of that controller, when known: a workload deleted and recreated under the same name
    # is then not mistaken for the one the plan moved. Not part of the JSON form.
    owner_uid: str = ""

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Eviction:
    """Evict a running pod (of lower priority than a pod the plan places) without a new home."""

    namespace: str
    name: str
    node: str
    uid: str = ""
    priority: int = 0

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class TierResult:
    """One priority tier's lexicographic phases."""

    priority: int
    placed: int  # pods of priority >= this tier placed (phase 1 objective)
    placed_bound: int  # upper bound proved for phase 1
    disruption_score: int  # phase 2 objective: 2 per running pod that stays, 1 per moved pod
    optimal: bool
    seconds: float


@dataclass(frozen=True)
class Plan:
    """Placements, moves and evictions computed from snapshot ``generation``."""

    generation: int
    solver: str
    status: PlanStatus
    placements: tuple[Placement, ...] = ()
    moves: tuple[Move, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    tiers: tuple[TierResult, ...] = ()
    pending: int = 0  # pending pods in the problem
    placed_bound: int | None = None  # best upper bound on pods placeable (all tiers)
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """Nothing to do."""
        return not (self.placements or self.moves or self.evictions)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``opsche solve --format json``)."""
        return {
            "placements": [
                {"namespace": p.namespace, "name": p.name, "node": p.node} for p in self.placements
            ],
            "moves": [
                {"namespace": m.namespace, "name": m.name, "from": m.from_node, "to": m.to_node}
                for m in self.moves
            ],
            "evictions": [
                {"namespace": e.namespace, "name": e.name, "node": e.node} for e in self.evictions
            ],
            "stats": {
                "solver": self.solver,
                "status": str(self.status),
                "generation": self.generation,
                "pending": self.pending,
                "placed": len(self.placements),
                "moves": len(self.moves),
                "evictions": len(self.evictions),
                "placed_bound": self.placed_bound,
                "seconds": round(self.seconds, 4),
                "tiers": [
                    {
                        "priority": t.priority,
                        "placed": t.placed,
                        "placed_bound": t.placed_bound,
                        "disruption_score": t.disruption_score,
                        "optimal": t.optimal,
                        "seconds": round(t.seconds, 4),
                    }
                    for t in self.tiers
                ],
                "notes": list(self.notes),
            },
        }
