"""DefaultPreemption: when no node fits, find a node where evicting lower-priority pods makes room.

Modelled on kube-scheduler's ``plugins/defaultpreemption`` and ``framework/preemption`` (the
Evaluator). The plugin is pure: it returns the node to nominate and the victims, and the scheduler's
``Binder`` (``kube.binder.KubeBinder``) evicts them. In order:

1. *Eligibility.* A pod with ``preemptionPolicy: Never`` never preempts. A pod already nominated to
   a node where a lower-priority pod is still terminating waits for it instead of preempting again
   (unless its nominated node has become unresolvable). ``Pod.deleting`` stands in for upstream's
   "terminating because of scheduler preemption" (the DisruptionTarget condition is not modelled).
2. *Potential nodes.* Only nodes whose Filter status is ``Unschedulable``; a node that is
   ``UnschedulableAndUnresolvable``, or that has no status at all, cannot be helped by evictions.
3. *Dry run.* Starting at a random offset, nodes are examined in turn until enough candidates are
   found: ``max(minCandidateNodesPercentage% of the potential nodes, minCandidateNodesAbsolute)``,
   capped at their number, and at least one candidate that violates no PodDisruptionBudget.
   Upstream runs this in parallel and cancels when the quota is reached; running it sequentially
   gives the same result for a given offset.
4. *Victims on one node.* Every pod with lower priority than the preemptor (and not ``protected``)
   is removed; if the preemptor then passes PreFilter and Filter on that node, the removed pods are
   reprieved one by one, most important first (higher priority, then earlier creation), PDB-
   violating pods before the others, each staying only if the preemptor still fits. The pods not
   reprieved are the victims; a reprieve that fails for a PDB-violating pod counts one violation.
   Upstream updates PreFilter state incrementally with ``AddPod``/``RemovePod`` extensions; opsche
   plugins have no such extensions, so each fit check re-runs PreFilter on a snapshot where the node
   carries exactly the remaining pods. That is the same answer, computed from scratch.
5. *Choice of node* (upstream ``pickOneNodeForPreemption``): fewest PDB violations, then the lowest
   highest-victim priority, the lowest sum of victim priorities, the fewest victims, the latest
   creation time among the highest-priority victims, then the first candidate.

When no node can be helped, the Status message has upstream's form, a FitError built from the
dry-run statuses with every other node counted as "Preemption is not helpful for scheduling":
``preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 Preemption is not helpful for
scheduling.``

Differences from upstream, by design:

* ``avoid_bare_victims`` (opsche's option, on in the daemon by default): a candidate with a bare
  victim (a pod without a controller, which an eviction deletes for good) is chosen only when
  every candidate has one.
* ``respect_pdbs`` (opsche's option): a node whose victims would violate any PodDisruptionBudget is
  not a candidate at all; its dry-run status says so.
* ``protected`` plays the role of upstream's ``IsEligiblePod`` hook (kube-system, DaemonSet and
  mirror pods and opted-out pods with ``safety.is_protected``, which the daemon passes; the
  default protects nothing, as upstream); such pods are never victims.
* Pod start time is ``Pod.created`` (upstream uses ``status.startTime``).
* Clearing ``nominatedNodeName`` of lower-priority pods nominated to the chosen node, and of the
  preemptor when nothing helps, is not this plugin's; PDB ``disruptedPods`` are not modelled;
  extenders and pod-group (workload) preemption do not exist in opsche.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from opsche_daemon.framework.interface import (
    Code,
    CycleState,
    PluginArgsError,
    PostFilterResult,
    Status,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot
from opsche_daemon.safety import Protected, is_bare, never_protected

if TYPE_CHECKING:
    from opsche_daemon.framework.runtime import Framework

__all__ = [
    "DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE",
    "DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "PDB_VIOLATION",
    "Candidate",
    "DefaultPreemption",
    "parse_preemption_args",
    "pick_one_node_for_preemption",
    "split_by_pdb_violation",
]

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
PDB_VIOLATION = "Preemption would violate a PodDisruptionBudget"
_NEVER = "not eligible due to preemptionPolicy=Never."
_TERMINATING = "not eligible due to a terminating pod on the nominated node."
_PREFIX = "preemption: "
_PREEMPT_NEVER = "Never"
_ENVELOPE_KEYS = ("apiVersion", "kind")
_PERCENTAGE = "minCandidateNodesPercentage"
_ABSOLUTE = "minCandidateNodesAbsolute"
# Added to every priority before summing, so that a sum over fewer negative priorities is not
# preferred merely for having fewer terms (upstream adds MaxInt32 + 1).
_PRIORITY_OFFSET = 2**31


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where preemption would work, its victims (most important first) and PDB cost."""

    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int = 0


def _importance_key(pod: Pod) -> tuple[int, float]:
    """Most important first: higher priority, then earlier start (upstream MoreImportantPod)."""
    return (-pod.priority, pod.created)


def _budget_matches(budget: DisruptionBudget, pod: Pod) -> bool:
    """Upstream's preemption matching: same namespace; a nil or empty selector matches nothing."""
    selector = budget.selector
    return (
        budget.namespace == pod.namespace
        and selector is not None
        and not selector.empty
        and selector.matches(pod.labels)
    )


def split_by_pdb_violation(
    pods: Sequence[Pod], budgets: Sequence[DisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each keeping the order of ``pods``.

    Each pod a budget covers uses one of its allowed disruptions, in order; a pod that takes some
    budget below zero violates it. Pods without labels match no budget.
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for index, budget in enumerate(budgets):
                if not _budget_matches(budget, pod):
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _earliest_start_of_most_important(victims: Sequence[Pod]) -> float:
    """The earliest creation time among the victims of the highest priority."""
    top = max(p.priority for p in victims)
    return min(p.created for p in victims if p.priority == top)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream's tie-breaking cascade; each rule keeps only the best-scoring candidates."""
    if not candidates:
        return None
    rules: tuple[Callable[[Candidate], float], ...] = (
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + _PRIORITY_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_most_important(c.victims),
    )
    remaining = list(candidates)
    for rule in rules:
        scores = [rule(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def _parse_args(args: Mapping[str, Any] | None) -> tuple[int, int]:
    """Upstream defaulting and ``ValidateDefaultPreemptionArgs``; unknown fields are rejected."""
    raw = dict(args or {})
    errors = [
        f'{key}: unknown field "{key}"'
        for key in raw
        if key not in (_PERCENTAGE, _ABSOLUTE, *_ENVELOPE_KEYS)
    ]
    values: dict[str, int] = {}
    for key, default in (
        (_PERCENTAGE, DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE),
        (_ABSOLUTE, DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE),
    ):
        value = raw.get(key)
        if value is None:
            values[key] = default
        elif isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{key}: Invalid value: {value!r}: must be an integer")
            values[key] = default
        else:
            values[key] = value
    percentage, absolute = values[_PERCENTAGE], values[_ABSOLUTE]
    if not 0 <= percentage <= 100:
        errors.append(f"{_PERCENTAGE}: Invalid value: {percentage}: not in valid range [0, 100]")
    if absolute < 0:
        errors.append(f"{_ABSOLUTE}: Invalid value: {absolute}: not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        errors.append(
            f"{_PERCENTAGE}: Invalid value: 0: cannot be zero at the same time as {_ABSOLUTE}"
        )
        errors.append(
            f"{_ABSOLUTE}: Invalid value: 0: cannot be zero at the same time as {_PERCENTAGE}"
        )
    if errors:
        raise PluginArgsError(f"{DefaultPreemption.NAME} args: " + "; ".join(errors))
    return percentage, absolute


def parse_preemption_args(args: Mapping[str, Any] | None) -> tuple[int, int]:
    """(minCandidateNodesPercentage, minCandidateNodesAbsolute) of ``args``, defaulted.

    Raises ``PluginArgsError`` listing every problem; lets the config be checked without a
    Framework to build the plugin on.
    """
    return _parse_args(args)


def _fit_error_message(num_all_nodes: int, statuses: Mapping[str, Status], absent: str) -> str:
    """Upstream ``FitError.Error()``: a sorted histogram of reasons; absent nodes get ``absent``."""
    histogram: dict[str, int] = {}
    for status in statuses.values():
        for reason in status.reasons:
            histogram[reason] = histogram.get(reason, 0) + 1
    if len(statuses) < num_all_nodes:
        histogram[absent] = histogram.get(absent, 0) + num_all_nodes - len(statuses)
    message = f"0/{num_all_nodes} nodes are available:"
    reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
    if reasons:
        message += f" {', '.join(reasons)}."
    return message


def _aggregate(errors: Sequence[str]) -> str:
    """Like apimachinery's error aggregate: one message alone, several in brackets."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


class DefaultPreemption:
    """PostFilter: nominate a node and name the lower-priority pods to evict there."""

    NAME = "DefaultPreemption"

    def __init__(
        self,
        framework_ref: Callable[[], Framework],
        args: Mapping[str, Any] | None = None,
        *,
        respect_pdbs: bool = False,
        avoid_bare_victims: bool = False,
        protected: Protected = never_protected,
        rng: random.Random | None = None,
        nominated: Callable[[], Mapping[str, Sequence[Pod]]] | None = None,
    ) -> None:
        """``nominated`` gives the pods nominated per node, honoured in dry runs like upstream."""
        self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute = _parse_args(args)
        self._framework_ref = framework_ref
        self.respect_pdbs = respect_pdbs
        self.avoid_bare_victims = avoid_bare_victims
        self._protected = protected
        self._rng = rng or random.Random()  # noqa: S311 - load spreading, not cryptography
        self._nominated = nominated

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    # ------------------------------------------------------------------ PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """A nominated node and victims, or an Unschedulable/Error Status saying why not."""
        snapshot = state.snapshot
        nominated_status = (
            statuses.get(pod.nominated_node_name) if pod.nominated_node_name else None
        )
        eligible, reason = self.pod_eligible_to_preempt_others(snapshot, pod, nominated_status)
        if not eligible:
            return None, Status.unschedulable(self.NAME, _PREFIX + reason)
        all_nodes = snapshot.node_infos()
        if not all_nodes:
            return None, Status.error(self.NAME, _PREFIX + "no nodes available")
        candidates, node_statuses, errors = self.find_candidates(snapshot, pod, statuses)
        if errors and not candidates:
            return None, Status.error(self.NAME, _PREFIX + _aggregate(errors))
        best = self.select_candidate(candidates)
        if best is None:
            message = _fit_error_message(len(all_nodes), node_statuses, NOT_HELPFUL)
            return None, Status.unschedulable(self.NAME, _PREFIX + message)
        return PostFilterResult(nominated_node=best.node, victims=best.victims), Status.success()

    def pod_eligible_to_preempt_others(
        self, snapshot: Snapshot, pod: Pod, nominated_status: Status | None
    ) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``: (eligible, reason when not)."""
        if pod.preemption_policy == _PREEMPT_NEVER:
            return False, _NEVER
        node_name = pod.nominated_node_name
        if not node_name:
            return True, ""
        # A node without a status counts as unresolvable (upstream's absent-node default).
        if nominated_status is None or nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        info = snapshot.get(node_name)
        if info is not None:
            for other in info.pods:
                if other.deleting and self._may_preempt(other, pod):
                    return False, _TERMINATING
        return True, ""

    def _may_preempt(self, victim: Pod, preemptor: Pod) -> bool:
        """Upstream ``isPreemptionAllowed``: lower priority, and not protected."""
        return victim.priority < preemptor.priority and not self._protected(victim)

    # ------------------------------------------------------------------ candidates
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for among ``num_nodes`` potential nodes."""
        wanted = num_nodes * self.min_candidate_nodes_percentage // 100
        wanted = max(wanted, self.min_candidate_nodes_absolute)
        return min(wanted, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random starting index into the potential nodes, and the number of candidates."""
        return self._rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def find_candidates(
        self, snapshot: Snapshot, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Candidates (non-violating first), dry-run statuses of the rest, and internal errors."""
        potential = [
            info
            for info in snapshot.node_infos()
            if (status := statuses.get(info.name)) is not None and status.code == Code.UNSCHEDULABLE
        ]
        if not potential:
            return [], {}, []
        offset, wanted = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(snapshot, pod, potential, offset, wanted)

    def dry_run_preemption(
        self,
        snapshot: Snapshot,
        pod: Pod,
        potential: Sequence[NodeInfo],
        offset: int,
        wanted: int,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Try the nodes from ``offset`` on until ``wanted`` candidates, one PDB-clean, exist."""
        framework = self._framework_ref()
        budgets = snapshot.disruption_budgets
        nominated = self._nominated() if self._nominated is not None else {}
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[str] = []
        for index in range(len(potential)):
            info = potential[(offset + index) % len(potential)]
            victims, violations, status = self.select_victims_on_node(
                framework, snapshot, pod, info, budgets, tuple(nominated.get(info.name, ()))
            )
            if status.ok and victims:
                if self.respect_pdbs and violations:
                    node_statuses[info.name] = Status.unschedulable(self.NAME, PDB_VIOLATION)
                    continue
                bucket = violating if violations else non_violating
                if len(bucket) < wanted:
                    bucket.append(Candidate(info.name, tuple(victims), violations))
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            if status.ok:
                status = Status.error(
                    self.NAME, f'expected at least one victim pod on node "{info.name}"'
                )
            if status.code == Code.ERROR:
                errors.append(status.message)
            node_statuses[info.name] = status
        return non_violating + violating, node_statuses, errors

    def select_victims_on_node(
        self,
        framework: Framework,
        snapshot: Snapshot,
        pod: Pod,
        info: NodeInfo,
        budgets: Sequence[DisruptionBudget],
        nominated: Sequence[Pod] = (),
    ) -> tuple[list[Pod], int, Status]:
        """The fewest pods to evict from ``info`` for ``pod`` to fit, and how many break a PDB.

        ``nominated`` are the pods nominated to this node; those of at least the preemptor's
        priority must still fit alongside it (upstream ``RunFilterPluginsWithNominatedPods``).
        """
        potential = [p for p in info.pods if self._may_preempt(p, pod)]
        if not potential:
            return [], 0, Status.unresolvable(self.NAME, NO_VICTIMS)
        remaining = info
        for victim in potential:
            remaining = remaining.without_pod(victim.key)
        status = self._fits(framework, snapshot, pod, remaining, nominated)
        if not status.ok:
            return [], 0, status
        potential.sort(key=_importance_key)
        violating, non_violating = split_by_pdb_violation(potential, budgets)
        victims: list[Pod] = []
        violations = 0
        for group, cost in ((violating, 1), (non_violating, 0)):
            for candidate in group:
                with_it = remaining.with_pod(candidate)
                if self._fits(framework, snapshot, pod, with_it, nominated).ok:
                    remaining = with_it
                else:
                    victims.append(candidate)
                    violations += cost
        if violating and non_violating:
            victims.sort(key=_importance_key)
        return victims, violations, Status.success()

    @staticmethod
    def _fits(
        framework: Framework,
        snapshot: Snapshot,
        pod: Pod,
        info: NodeInfo,
        nominated: Sequence[Pod],
    ) -> Status:
        """PreFilter on a snapshot where ``info`` replaces its node, then Filter on that node."""
        nodes = dict(snapshot.nodes)
        nodes[info.name] = info
        trial = replace(snapshot, nodes=MappingProxyType(nodes))
        state = CycleState(trial)
        _, status = framework.run_pre_filter(state, pod, trial.node_infos())
        if not status.ok:
            return status
        return framework.run_filters_with_nominated(state, pod, info, nominated)

    # ------------------------------------------------------------------ choice
    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """The best candidate by upstream's ordering (the only one, if just one).

        With ``avoid_bare_victims``, candidates whose victims all have a controller (and so come
        back) go first: evicting a bare pod deletes it for good, and upstream's tie-breakers
        (priorities, counts, start times) cannot tell the two apart.
        """
        if self.avoid_bare_victims:
            recoverable = [c for c in candidates if not any(is_bare(v) for v in c.victims)]
            candidates = recoverable or candidates
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        return pick_one_node_for_preemption(candidates)
