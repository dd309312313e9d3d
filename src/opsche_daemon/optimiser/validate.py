"""Plan validation: whether a plan is still safe and correct against a (fresh) snapshot.

Used on every plan before it is enforced (the cluster may have changed while the solver ran) and
by the property tests on every plan either solver returns. It re-checks from scratch rather than
trusting the solver: the scheduler's static filters for every target node, the safety rules for
every pod the plan disturbs, and every node's capacity in every dimension after the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.optimiser.problem import StaticFeasibility
from opsche_daemon.safety import Protected, disturb_refusals

__all__ = ["Findings", "PlanChecker", "validate_plan"]


def _capacity_errors(
    infos: dict[str, NodeInfo], delta: dict[str, tuple[Resources, int]]
) -> dict[str, list[str]]:
    """Nodes whose requests after the plan exceed allocatable (or grow while already over)."""
    errors: dict[str, list[str]] = {}
    for name, (change, pods) in delta.items():
        info = infos[name]
        before = info.requested
        after = before + change
        allocatable = info.node.allocatable
        for dim in {"cpu", "memory", "ephemeral-storage", *after.scalars}:
            have, cap = after.get(dim), allocatable.get(dim)
            if have > cap and have > before.get(dim):
                errors.setdefault(name, []).append(
                    f"node {name} over capacity in {dim}: {have} > {cap}"
                )
        count = len(info.pods) + pods
        if allocatable.pods and count > allocatable.pods and pods > 0:
            errors.setdefault(name, []).append(
                f"node {name} over its pod limit: {count} > {allocatable.pods}"
            )
    return errors


@dataclass
class Findings:
    """Every error of one pass, and what it is about: a pod's action, or a node after the plan."""

    errors: list[str] = field(default_factory=list)
    by_pod: dict[str, list[str]] = field(default_factory=dict)  # action's pod key -> errors
    by_node: dict[str, list[str]] = field(default_factory=dict)  # node over capacity or cordoned

    def pod(self, key: str, message: str) -> None:
        """An error about the action on pod ``key``."""
        self.errors.append(message)
        self.by_pod.setdefault(key, []).append(message)

    def node(self, name: str, message: str) -> None:
        """An error about node ``name`` after the plan."""
        self.errors.append(message)
        self.by_node.setdefault(name, []).append(message)


class PlanChecker:
    """Checks plans against one snapshot; collects every error rather than stopping at the first.

    Built once per snapshot (the filters' feasibility is computed lazily and kept), so a plan
    repair can check many variants of a plan cheaply.
    """

    def __init__(self, snapshot: Snapshot, scheduler_name: str, protected: Protected):
        self.scheduler_name = scheduler_name
        self.protected = protected
        self.infos = dict(snapshot.nodes)
        self.bound = {p.key: (i.name, p) for i, p in snapshot.pods()}
        self.pending = {p.key: p for p in snapshot.pending}
        self.feasibility = StaticFeasibility(snapshot.node_infos(), snapshot)
        self.delta: dict[str, tuple[Resources, int]] = {}
        self.touched: set[str] = set()
        self.found = Findings()

    def _add(self, node: str, pod: Pod, sign: int) -> None:
        change, count = self.delta.get(node, (Resources(), 0))
        if sign > 0:
            self.delta[node] = (change + pod.requests, count + 1)
        else:
            self.delta[node] = (change - pod.requests, count - 1)

    def _once(self, pod: Pod, what: str) -> None:
        if pod.key in self.touched:
            self.found.pod(pod.key, f"{what}: the pod appears twice in the plan")
        self.touched.add(pod.key)

    def _fits(self, pod: Pod, node: str, what: str) -> bool:
        if node not in self.infos:
            self.found.pod(pod.key, f"{what}: node {node} does not exist")
            return False
        if self.feasibility.index[node] not in self.feasibility.of(pod):
            self.found.pod(pod.key, f"{what}: {pod.key} does not pass the filters on node {node}")
            return False
        return True

    def _running(self, key: str, node: str, what: str) -> Pod | None:
        found = self.bound.get(key)
        if found is None or found[0] != node:
            self.found.pod(key, f"{what}: the pod is no longer running on {node}")
            return None
        pod = found[1]
        for refusal in disturb_refusals(pod, what, self.scheduler_name, self.protected):
            self.found.pod(key, refusal)
        self._once(pod, what)
        return pod

    def check(self, plan: Plan) -> Findings:
        """Check the whole plan; every error, and what each is about."""
        self.delta, self.touched, self.found = {}, set(), Findings()
        self._placements(plan)
        self._disturbances(plan)
        for name, (_, added) in self.delta.items():
            if self.infos[name].node.unschedulable and added > 0:
                self.found.node(name, f"node {name} is unschedulable (cordoned)")
        for name, errors in _capacity_errors(self.infos, self.delta).items():
            for error in errors:
                self.found.node(name, error)
        return self.found

    def _placements(self, plan: Plan) -> None:
        for placement in plan.placements:
            what = f"placement of {placement.key}"
            pod = self.pending.get(placement.key)
            if pod is None:
                self.found.pod(placement.key, f"{what}: the pod is no longer pending")
                continue
            if placement.uid and pod.uid and placement.uid != pod.uid:
                self.found.pod(placement.key, f"{what}: the pod was replaced (uid changed)")
                continue
            if pod.scheduler_name != self.scheduler_name:
                self.found.pod(
                    pod.key, f"{what}: the pod belongs to scheduler {pod.scheduler_name}"
                )
            self._once(pod, what)
            if self._fits(pod, placement.node, what):
                self._add(placement.node, pod, +1)

    def _disturbances(self, plan: Plan) -> None:
        for move in plan.moves:
            what = f"move of {move.key}"
            pod = self._running(move.key, move.from_node, what)
            if pod is not None:
                self._add(move.from_node, pod, -1)
                if self._fits(pod, move.to_node, what):
                    self._add(move.to_node, pod, +1)
        highest_placed = max((p.priority for p in plan.placements), default=None)
        for eviction in plan.evictions:
            what = f"eviction of {eviction.key}"
            pod = self._running(eviction.key, eviction.node, what)
            if pod is None:
                continue
            if highest_placed is None or pod.priority >= highest_placed:
                self.found.pod(
                    pod.key,
                    f"{what}: priority {pod.priority} is not below every pod the plan places",
                )
            self._add(eviction.node, pod, -1)


def validate_plan(
    plan: Plan,
    snapshot: Snapshot,
    *,
    scheduler_name: str,
    protected: Protected,
) -> list[str]:
    """Every reason the plan must not be enforced on ``snapshot`` (empty: it is valid)."""
    return PlanChecker(snapshot, scheduler_name, protected).check(plan).errors
