"""The framework runner: calls a profile's plugins at each extension point, in order.

This is the "algorithm" half of kube-scheduler's ``schedule_one.go`` (``schedulePod``): PreFilter,
then Filter over (a rotating window of) the nodes, then PreScore/Score/NormalizeScore with weights,
then a random choice among the best-scoring nodes. Failures come back as a ``FitError`` whose
message has kube-scheduler's exact form, because users and tools parse those events.

Nominated pods (preemptors waiting for their victims to leave) are honoured like upstream: a pod
of lower priority must also fit with the nominated pods of equal or higher priority added to the
node, so a preemptor's room is not taken by someone else.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from opsche_daemon.framework.interface import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    FilterPlugin,
    NodeScore,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = ["Diagnosis", "FitError", "Framework", "ScheduleResult", "num_feasible_nodes_to_find"]

# kube-scheduler: below 100 nodes every node is evaluated; above, an adaptive percentage.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODE_AVAILABLE = "0/{} nodes are available"


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None = None) -> int:
    """How many feasible nodes to look for before scoring (upstream adaptive rule).

    With ``percentageOfNodesToScore`` unset: 50 % minus 1 % per 125 nodes, at least 5 %, and never
    fewer than 100 nodes.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if pct >= 100:
        return num_all_nodes
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass
class Diagnosis:
    """Why a pod did not fit: each rejected node's Status and the plugins that rejected it."""

    node_statuses: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_message: str = ""
    post_filter_message: str = ""


class FitError(Exception):
    """No node fits; ``str()`` is kube-scheduler's FailedScheduling message."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__(pod.key)
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        message = NO_NODE_AVAILABLE.format(self.num_all_nodes) + ":"
        diagnosis = self.diagnosis
        if diagnosis.pre_filter_message:
            message += f" {diagnosis.pre_filter_message}."
        else:
            histogram: dict[str, int] = {}
            for status in diagnosis.node_statuses.values():
                for reason in status.reasons:
                    histogram[reason] = histogram.get(reason, 0) + 1
            reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if reasons:
                message += f" {', '.join(reasons)}."
        if diagnosis.post_filter_message:
            message += f" {diagnosis.post_filter_message}"
        return message

    @property
    def code(self) -> Code:
        """UNSCHEDULABLE when preemption could help on some node, else UNRESOLVABLE."""
        codes = {s.code for s in self.diagnosis.node_statuses.values()}
        if Code.UNSCHEDULABLE in codes or not codes:
            return Code.UNSCHEDULABLE
        return Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@dataclass(frozen=True)
class ScheduleResult:
    """The chosen node, and how many nodes were evaluated / found feasible."""

    node: str
    evaluated: int
    feasible: int


class Framework:
    """One profile: its plugins at each extension point and the Score weights."""

    def __init__(
        self,
        plugins: Sequence[Plugin],
        score_weights: Mapping[str, int],
        *,
        percentage_of_nodes_to_score: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.plugins = tuple(plugins)
        self.pre_enqueue_plugins = [p for p in plugins if isinstance(p, PreEnqueuePlugin)]
        self.pre_filter_plugins = [p for p in plugins if isinstance(p, PreFilterPlugin)]
        self.filter_plugins = [p for p in plugins if isinstance(p, FilterPlugin)]
        self.post_filter_plugins = [p for p in plugins if isinstance(p, PostFilterPlugin)]
        self.pre_score_plugins = [p for p in plugins if isinstance(p, PreScorePlugin)]
        self.score_plugins = [
            p for p in plugins if isinstance(p, ScorePlugin) and score_weights.get(p.name, 0) > 0
        ]
        self.reserve_plugins = [p for p in plugins if isinstance(p, ReservePlugin)]
        self.weights = dict(score_weights)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.rng = rng or random.Random()  # noqa: S311 - tie-breaking, not cryptography
        self._next_start_index = 0

    def plugin(self, name: str) -> Plugin | None:
        """A plugin of this profile by name."""
        return next((p for p in self.plugins if p.name == name), None)

    # ------------------------------------------------------------------ PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status:
        """The first non-success PreEnqueue status, or success."""
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if not status.ok:
                return Status(status.code, status.reasons, status.plugin or plugin.name)
        return Status.success()

    # ------------------------------------------------------------------ PreFilter / Filter
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[frozenset[str] | None, Status]:
        """Run every PreFilter; intersect their node narrowing; stop at the first rejection."""
        allowed: frozenset[str] | None = None
        for plugin in self.pre_filter_plugins:
            result, status = plugin.pre_filter(state, pod, nodes)
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if not status.ok:
                return allowed, Status(status.code, status.reasons, status.plugin or plugin.name)
            if result is not None and result.node_names is not None:
                allowed = result.node_names if allowed is None else allowed & result.node_names
        return allowed, Status.success()

    def run_filters(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """The first rejecting Filter's Status (upstream stops at the first failure)."""
        for plugin in self.filter_plugins:
            if plugin.name in state.skip_filter:
                continue
            status = plugin.filter(state, pod, node)
            if not status.ok:
                return Status(status.code, status.reasons, status.plugin or plugin.name)
        return Status.success()

    def run_filters_with_nominated(
        self,
        state: CycleState,
        pod: Pod,
        node: NodeInfo,
        nominated: Sequence[Pod],
    ) -> Status:
        """Filter with nominated pods of >= priority added (if any), and also without them.

        Upstream runs the filters twice when such pods exist: with them (so a preemptor's room
        stays free) and without them (so anti-affinity with a pod that may never arrive does not
        block the node).
        """
        relevant = [p for p in nominated if p.key != pod.key and p.priority >= pod.priority]
        if not relevant:
            return self.run_filters(state, pod, node)
        with_nominated = node
        for other in relevant:
            with_nominated = with_nominated.with_pod(other)
        status = self.run_filters(state, pod, with_nominated)
        if not status.ok:
            return status
        return self.run_filters(state, pod, node)

    def find_feasible(
        self,
        state: CycleState,
        pod: Pod,
        nominated: Mapping[str, Sequence[Pod]] | None = None,
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """PreFilter, then Filter over nodes from a rotating start until enough are feasible."""
        all_nodes = state.snapshot.node_infos()
        diagnosis = Diagnosis()
        allowed, status = self.run_pre_filter(state, pod, all_nodes)
        if not status.ok:
            diagnosis.pre_filter_message = status.message
            diagnosis.unschedulable_plugins.add(status.plugin)
            for info in all_nodes:
                diagnosis.node_statuses[info.name] = status
            return [], diagnosis
        nodes = all_nodes if allowed is None else tuple(n for n in all_nodes if n.name in allowed)
        if allowed is not None:
            # Nodes excluded by PreFilter count as rejected, with the narrowing plugin's reason.
            for info in all_nodes:
                if info.name not in allowed:
                    diagnosis.node_statuses[info.name] = Status.unresolvable(
                        "", "node(s) didn't satisfy plugin(s) PreFilter result"
                    )
        if not self.filter_plugins or not nodes:
            return list(nodes), diagnosis
        wanted = num_feasible_nodes_to_find(len(nodes), self.percentage_of_nodes_to_score)
        feasible: list[NodeInfo] = []
        start = self._next_start_index % len(nodes)
        evaluated = 0
        for offset in range(len(nodes)):
            info = nodes[(start + offset) % len(nodes)]
            evaluated += 1
            node_status = self.run_filters_with_nominated(
                state, pod, info, (nominated or {}).get(info.name, ())
            )
            if node_status.ok:
                feasible.append(info)
                if len(feasible) >= wanted:
                    break
            else:
                diagnosis.node_statuses[info.name] = node_status
                diagnosis.unschedulable_plugins.add(node_status.plugin)
        self._next_start_index = (start + evaluated) % len(nodes)
        return feasible, diagnosis

    # ------------------------------------------------------------------ Score
    def run_scores(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[NodeScore]:
        """PreScore, Score, NormalizeScore, weights; returns the weighted total per node."""
        for pre_score in self.pre_score_plugins:
            status = pre_score.pre_score(state, pod, nodes)
            if status.code == Code.SKIP:
                state.skip_score.add(pre_score.name)
        totals = [NodeScore(n.name, 0) for n in nodes]
        for plugin in self.score_plugins:
            if plugin.name in state.skip_score:
                continue
            scores = [NodeScore(n.name, plugin.score(state, pod, n)[0]) for n in nodes]
            plugin.normalize_score(state, pod, scores)
            weight = self.weights.get(plugin.name, 1)
            for total, score in zip(totals, scores, strict=True):
                if not 0 <= score.score <= MAX_NODE_SCORE:
                    raise ValueError(
                        f"plugin {plugin.name} scored node {score.name} {score.score}, "
                        f"outside 0..{MAX_NODE_SCORE}"
                    )
                total.score += score.score * weight
        return totals

    def select_host(self, scores: Sequence[NodeScore]) -> str:
        """The best-scoring node; ties are broken uniformly at random (reservoir sampling)."""
        if not scores:
            raise ValueError("no nodes to select from")
        best = scores[0]
        ties = 1
        for candidate in scores[1:]:
            if candidate.score > best.score:
                best, ties = candidate, 1
            elif candidate.score == best.score:
                ties += 1
                if self.rng.randrange(ties) == 0:
                    best = candidate
        return best.name

    def schedule(
        self,
        state: CycleState,
        pod: Pod,
        nominated: Mapping[str, Sequence[Pod]] | None = None,
    ) -> ScheduleResult:
        """Find a node for ``pod`` in ``state.snapshot`` or raise ``FitError``."""
        num_nodes = len(state.snapshot)
        if num_nodes == 0:
            raise FitError(pod, 0, Diagnosis())
        feasible, diagnosis = self.find_feasible(state, pod, nominated)
        if not feasible:
            raise FitError(pod, num_nodes, diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_statuses)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1)
        scores = self.run_scores(state, pod, feasible)
        return ScheduleResult(self.select_host(scores), evaluated, len(feasible))

    # ------------------------------------------------------------------ PostFilter / Reserve
    def run_post_filter(
        self, state: CycleState, pod: Pod, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """The first PostFilter that finds a way wins; otherwise the last rejection."""
        last = Status.unschedulable("", "no PostFilter plugin")
        for plugin in self.post_filter_plugins:
            result, status = plugin.post_filter(state, pod, statuses)
            if status.ok and result is not None:
                return result, status
            last = status
        return None, last

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Reserve in order; on a failure unreserve everything (in reverse) and report it."""
        for index, plugin in enumerate(self.reserve_plugins):
            status = plugin.reserve(state, pod, node_name)
            if not status.ok:
                for done in reversed(self.reserve_plugins[: index + 1]):
                    done.unreserve(state, pod, node_name)
                return Status(status.code, status.reasons, status.plugin or plugin.name)
        return Status.success()

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve every Reserve plugin in reverse order."""
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node_name)
