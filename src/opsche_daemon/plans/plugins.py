"""Plan enforcement as three framework plugins sharing one ``PlanState`` (paper, Algorithms 2-4).

* ``PlanGate`` (PreEnqueue, Algorithm 2): while a plan is installed, pods it does not cover stay
  in the gated pool with Code.PENDING and are recorded in ``PlanState.held``, so that tearing the
  plan down can re-check exactly those pods (``SchedulingQueue.reevaluate_gated(held)``).
* ``PlanPin`` (PreFilter, Algorithm 3): a planned pod only sees the nodes the plan allows it: its
  placement's node, or the nodes where its workload still has quota. With no quota left anywhere
  it is rejected as unresolvable (preemption cannot create quota).
* ``PlanReserve`` (Reserve/Unreserve, Algorithm 4): takes one quota unit for a replacement pod,
  checks a placed pod's node, and refuses pods the plan does not cover. Concurrent cycles can all
  pass PreFilter for the last unit; Reserve is where only one of them gets it.

Protected pods (``safety.is_protected``: kube-system, DaemonSet and mirror pods, opted-out
pods) are never held, pinned or refused: a node's DaemonSet pod or a system component must not
wait minutes for a plan to converge. The plan was validated against the pods present then, so a
protected pod arriving meanwhile can take room the plan counted on; Reserve then refuses the
planned pod and convergence times out, which is the safe failure.

Unplanned pods reaching Reserve while a plan is installed (popped before the gate closed) are
refused, so nothing scheduled "around" the plan takes its room; they land in the unschedulable
pool with ``PlanReserve`` as the rejecting plugin, like pods ``PlanPin`` refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from opsche_daemon.framework.interface import (
    Code,
    CycleState,
    PreFilterResult,
    Status,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.plan import Plan
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.plans.active import ActivePlan
from opsche_daemon.safety import Protected, never_protected

__all__ = ["PLAN_PLUGINS", "PlanGate", "PlanPin", "PlanReserve", "PlanState", "plan_plugins"]


class PlanState:
    """The installed plan (or None), the pods held back because of it, and who is protected.

    One instance is shared by the three plugins and by the ``PlanEnforcer``, which installs the
    plan after validation and uninstalls it on convergence, timeout or failure (TeardownRun).
    """

    def __init__(self, protected: Protected = never_protected) -> None:
        self.protected = protected
        self.active: ActivePlan | None = None
        self.held: set[str] = set()

    @property
    def is_active(self) -> bool:
        """A plan is installed."""
        return self.active is not None

    def install(
        self,
        plan: Plan | ActivePlan,
        snapshot: Snapshot | None = None,
        *,
        plan_id: str | None = None,
    ) -> ActivePlan:
        """Make ``plan`` visible to the plugins. One plan at a time: uninstall the previous first.

        After this the caller re-runs PreEnqueue on queued pods (``SchedulingQueue.gate_active``)
        so that unplanned pods already queued are held too.
        """
        if self.active is not None:
            raise RuntimeError(
                f"plan {self.active.plan_id} is still installed; uninstall it before installing "
                "another"
            )
        active = (
            plan
            if isinstance(plan, ActivePlan)
            else ActivePlan.build(plan, snapshot, plan_id=plan_id)
        )
        self.active = active
        self.held = set()
        return active

    def uninstall(self) -> frozenset[str]:
        """Forget the plan; return the keys of the pods it held back, for re-enqueuing.

        Reservations made under the plan stay with it (``PlanReserve`` remembers the plan it
        reserved on), so an Unreserve arriving later refunds into a plan nobody reads any more.
        """
        held = frozenset(self.held)
        self.active = None
        self.held = set()
        return held


class PlanGate:
    """PreEnqueue: while a plan is installed, admit only planned and protected pods.

    The others are held back and remembered in ``PlanState.held``.
    """

    NAME = "PlanGate"

    def __init__(self, state: PlanState) -> None:
        self.state = state

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        """Success, or Pending with the plan's id."""
        active = self.state.active
        if active is None or self.state.protected(pod) or active.is_planned(pod):
            return Status.success()
        self.state.held.add(pod.key)
        active.record_held(pod)
        return Status(
            Code.PENDING, (f"held back while plan {active.plan_id} is enforced",), self.NAME
        )


class PlanPin:
    """PreFilter: narrow a planned pod to the nodes the plan allows it."""

    NAME = "PlanPin"

    def __init__(self, state: PlanState) -> None:
        self.state = state

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """The allowed nodes, an unresolvable Status when the quota is used up, or no opinion."""
        del state, nodes
        active = self.state.active
        if active is None or self.state.protected(pod):
            return None, Status.success()
        allowed = active.allowed_nodes(pod)
        if allowed is None:
            return None, Status.success()
        if not allowed:
            return None, Status.unresolvable(
                self.NAME, f"plan {active.plan_id} has no quota left for {_workload(pod)}"
            )
        return PreFilterResult(allowed), Status.success()


class PlanReserve:
    """Reserve: claim the plan's place for the pod; Unreserve gives it back once."""

    NAME = "PlanReserve"

    def __init__(self, state: PlanState) -> None:
        self.state = state

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Success, or Unschedulable saying which rule of the plan the choice breaks."""
        active = self.state.active
        if active is None or self.state.protected(pod):
            return Status.success()
        if not active.is_planned(pod):
            return Status.unschedulable(
                self.NAME, f"held back while plan {active.plan_id} is enforced"
            )
        if not active.reserve(pod, node_name):
            return Status.unschedulable(self.NAME, _refusal(active, pod, node_name))
        state.write(self.NAME, active)
        return Status.success()

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Refund into the plan the pod reserved on (even if it was uninstalled meanwhile)."""
        active = state.data.get(self.NAME)
        if isinstance(active, ActivePlan):
            active.unreserve(pod, node_name)


def _workload(pod: Pod) -> str:
    owner = pod.owner
    return f"workload {owner.kind}/{owner.name}" if owner is not None else pod.key


def _refusal(active: ActivePlan, pod: Pod, node_name: str) -> str:
    planned = active.planned_node(pod)
    if planned is not None:
        return f"plan {active.plan_id} places {pod.key} on node {planned}, not {node_name}"
    return f"plan {active.plan_id} has no quota left on node {node_name} for {_workload(pod)}"


PLAN_PLUGINS: tuple[str, ...] = (PlanGate.NAME, PlanPin.NAME, PlanReserve.NAME)


def plan_plugins(state: PlanState) -> tuple[PlanGate, PlanPin, PlanReserve]:
    """The three plugins over one state, for ``build_framework(extra=...)``."""
    return PlanGate(state), PlanPin(state), PlanReserve(state)
