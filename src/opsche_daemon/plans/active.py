"""An installed plan, indexed for the scheduling hot path: who is planned, where, and how much.

A plan names two kinds of pods (paper, Section 3 and Algorithm 7):

* **identity-stable** pods: the plan's placements. They are pending already and keep their name,
  so they are pinned by ``namespace/name`` (and UID, when both sides know it) to one node.
* **identity-unstable** pods: the replacements of moved pods. Evicting a controller-managed pod
  makes its controller create a *new* pod with a name nobody knows in advance, so a move becomes
  a per-workload, per-node quota: ``quota[workload][to_node] += 1``. Any pending pod of that
  workload may use a unit; pods of one workload are interchangeable to the optimiser.

A workload is ``(owner kind, owner UID or name, namespace)``: the UID when the plan or the
snapshot it was validated against tells it (a workload deleted and recreated under the same name
then does not match), else the name.

Reservations are a ledger keyed by pod: Reserve records which unit a pod took, Unreserve gives
back exactly that unit once, so a failed Reserve (whose Unreserve the runtime still calls) or a
repeated Unreserve never refunds twice. Everything here is pure and synchronous; the scheduler and
the enforcer call it from the event loop only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot

__all__ = ["ActivePlan", "Observation", "PlanCounters", "Workload"]


class Workload(NamedTuple):
    """A controller whose pods share a quota: kind, UID (or name when unknown), namespace."""

    kind: str
    ref: str
    namespace: str


@dataclass
class PlanCounters:
    """What enforcement did, for metrics and logs (monotonic while the plan is installed)."""

    held_back: int = 0  # distinct pods the gate kept out of the queue
    reservations: int = 0  # successful Reserve of a planned pod
    rejections: int = 0  # Reserve refused: wrong node for a placed pod, or no quota left
    refunds: int = 0  # Unreserve that gave a reservation back


@dataclass(frozen=True, slots=True)
class Observation:
    """The cluster as convergence reads it.

    ``bound``: every live pod the plan cares about, ``namespace/name`` to its node, ``""`` while
    still pending; a pod absent from it is gone (deleted, terminated, or replaced under the same
    name). ``pending_by_workload``: how many pending pods each quota'd workload has.
    """

    bound: Mapping[str, str]
    pending_by_workload: Mapping[Workload, int]


@dataclass(frozen=True, slots=True)
class _Identity:
    node: str
    uid: str


@dataclass
class ActivePlan:
    """A plan being enforced: placement and quota indices plus the reservation ledger."""

    plan: Plan
    plan_id: str
    placements: dict[str, _Identity] = field(default_factory=dict)
    quotas: dict[Workload, dict[str, int]] = field(default_factory=dict)
    # Moves whose workload could not be identified (no owner): their replacements are unplanned.
    unmatched_moves: tuple[str, ...] = ()
    counters: PlanCounters = field(default_factory=PlanCounters)
    _used: dict[Workload, dict[str, int]] = field(default_factory=dict, init=False)
    _ledger: dict[str, tuple[Workload | None, str]] = field(default_factory=dict, init=False)
    _held: set[str] = field(default_factory=set, init=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls, plan: Plan, snapshot: Snapshot | None = None, *, plan_id: str | None = None
    ) -> ActivePlan:
        """Index ``plan``; ``snapshot`` (the one it was validated against) supplies owner UIDs.

        ``plan_id`` names the plan in messages and logs (default: ``g<generation>``).
        """
        placements = {p.key: _Identity(p.node, p.uid) for p in plan.placements}
        running: dict[str, Pod] = {}
        if snapshot is not None:
            running = {pod.key: pod for _, pod in snapshot.pods()}
        quotas: dict[Workload, dict[str, int]] = {}
        unmatched: list[str] = []
        for move in plan.moves:
            kind, _, name = move.owner.partition("/")
            uid = move.owner_uid
            pod = running.get(move.key)
            if pod is not None and move.uid and pod.uid and pod.uid != move.uid:
                pod = None  # a different pod under the same name: it tells nothing
            if pod is not None and pod.owner is not None:
                if not move.owner:
                    kind, name = pod.owner.kind, pod.owner.name
                if not uid and (pod.owner.kind, pod.owner.name) == (kind, name):
                    uid = pod.owner.uid
            if not kind or not name:
                unmatched.append(move.key)
                continue
            workload = Workload(kind, uid or name, move.namespace)
            per_node = quotas.setdefault(workload, {})
            per_node[move.to_node] = per_node.get(move.to_node, 0) + 1
        return cls(
            plan,
            plan_id or f"g{plan.generation}",
            placements,
            quotas,
            tuple(unmatched),
        )

    # ------------------------------------------------------------------ classification
    def _identity(self, pod: Pod) -> _Identity | None:
        found = self.placements.get(pod.key)
        if found is None or (found.uid and pod.uid and found.uid != pod.uid):
            return None
        return found

    def planned_node(self, pod: Pod) -> str | None:
        """The node a placed (identity-stable) pod must go to, or None for any other pod."""
        identity = self._identity(pod)
        return identity.node if identity is not None else None

    def workload_of(self, pod: Pod) -> Workload | None:
        """The quota'd workload ``pod`` belongs to, or None (matched by UID first, then name)."""
        owner = pod.owner
        if owner is None:
            return None
        if owner.uid:
            by_uid = Workload(owner.kind, owner.uid, pod.namespace)
            if by_uid in self.quotas:
                return by_uid
        by_name = Workload(owner.kind, owner.name, pod.namespace)
        return by_name if by_name in self.quotas else None

    def is_planned(self, pod: Pod) -> bool:
        """A placed pod, or a pod of a workload that has a quota (used up or not)."""
        return self._identity(pod) is not None or self.workload_of(pod) is not None

    def remaining(self, workload: Workload, node: str | None = None) -> int:
        """Quota units not reserved, on ``node`` or (None) summed over the workload's nodes."""
        quota = self.quotas.get(workload, {})
        used = self._used.get(workload, {})
        nodes = quota if node is None else (node,)
        return sum(max(0, quota.get(n, 0) - used.get(n, 0)) for n in nodes)

    def allowed_nodes(self, pod: Pod) -> frozenset[str] | None:
        """Where the plan lets ``pod`` go; None when the plan does not constrain it.

        A placed pod: its node. A workload's pod: the nodes where quota is left (possibly none).
        """
        identity = self._identity(pod)
        if identity is not None:
            return frozenset((identity.node,))
        workload = self.workload_of(pod)
        if workload is None:
            return None
        return frozenset(n for n in self.quotas[workload] if self.remaining(workload, n) > 0)

    # ------------------------------------------------------------------ reservations
    def reserve(self, pod: Pod, node: str) -> bool:
        """Claim ``pod``'s place on ``node``: False on the wrong node or with no quota left.

        Pods the plan does not cover reserve nothing and get True (the caller decides whether
        they may be scheduled at all). A pod that already holds a unit on ``node`` keeps it; one
        holding a unit elsewhere gives that back first.
        """
        identity = self._identity(pod)
        workload = None if identity is not None else self.workload_of(pod)
        if identity is None and workload is None:
            return True
        held = self._ledger.get(pod.key)
        if held is not None:
            if held[1] == node:
                return True
            self.unreserve(pod, held[1])
        if identity is not None:
            if identity.node != node:
                self.counters.rejections += 1
                return False
        elif workload is not None:
            if self.remaining(workload, node) <= 0:
                self.counters.rejections += 1
                return False
            used = self._used.setdefault(workload, {})
            used[node] = used.get(node, 0) + 1
        self._ledger[pod.key] = (workload, node)
        self.counters.reservations += 1
        return True

    def unreserve(self, pod: Pod, node: str) -> None:
        """Give back what ``reserve(pod, node)`` took; a no-op if nothing (or already given)."""
        held = self._ledger.get(pod.key)
        if held is None or held[1] != node:
            return
        del self._ledger[pod.key]
        workload = held[0]
        if workload is not None:
            used = self._used[workload]
            used[node] -= 1
        self.counters.refunds += 1

    def reserved(self, pod_key: str) -> str | None:
        """The node ``pod_key`` holds a reservation on, if any."""
        held = self._ledger.get(pod_key)
        return held[1] if held is not None else None

    # ------------------------------------------------------------------ held-back pods
    def record_held(self, pod: Pod) -> bool:
        """Count a pod the gate held back; True the first time for this pod."""
        if pod.key in self._held:
            return False
        self._held.add(pod.key)
        self.counters.held_back += 1
        return True

    # ------------------------------------------------------------------ convergence
    def placements_ok(self, bound: Mapping[str, str]) -> bool:
        """Algorithm 7 StablePodsPlacedOk: every placed pod still around is on its node."""
        for key, identity in self.placements.items():
            node = bound.get(key)
            if node is None:
                continue  # gone: deleted or terminated, nothing left to enforce
            if node != identity.node:
                return False  # still pending, or bound elsewhere
        return True

    def quotas_ok(
        self, pending_by_workload: Mapping[Workload, int], *, strict: bool = False
    ) -> bool:
        """Algorithm 7 UnstablePodsQuotasOk: no workload has quota left *and* pending pods.

        ``strict`` also refuses a workload with quota left but no pending pod: right after the
        evictions its controller may not have created (or the watch not yet delivered) the
        replacement, which the paper's rule would take for "scaled down".
        """
        for workload in self.quotas:
            if self.remaining(workload) <= 0:
                continue
            if strict or pending_by_workload.get(workload, 0) > 0:
                return False
        return True

    def converged(
        self,
        bound_pods: Mapping[str, str],
        pending_by_workload: Mapping[Workload, int],
        *,
        strict: bool = False,
    ) -> bool:
        """Both halves of Algorithm 7's convergence test (see ``Observation`` for the inputs)."""
        return self.placements_ok(bound_pods) and self.quotas_ok(pending_by_workload, strict=strict)

    def count_pending(self, pods: Iterable[Pod]) -> dict[Workload, int]:
        """Pending pods per quota'd workload, among ``pods``."""
        counts: dict[Workload, int] = {}
        for pod in pods:
            if pod.node_name or pod.deleting or pod.terminal:
                continue
            workload = self.workload_of(pod)
            if workload is not None and self._identity(pod) is None:
                counts[workload] = counts.get(workload, 0) + 1
        return counts

    def observe(self, snapshot: Snapshot) -> Observation:
        """Build convergence's inputs from a snapshot (its ``pending`` must list pending pods).

        Terminating or terminated pods count as gone; so does a pod that reuses a placed pod's
        name with another UID.
        """
        bound: dict[str, str] = {}
        for info, pod in snapshot.pods():
            if self._live_placed(pod):
                bound[pod.key] = info.name
        for pod in snapshot.pending:
            if self._live_placed(pod) and pod.key not in bound:
                bound[pod.key] = pod.node_name
        return Observation(bound, self.count_pending(snapshot.pending))

    def _live_placed(self, pod: Pod) -> bool:
        return not (pod.deleting or pod.terminal) and self._identity(pod) is not None
