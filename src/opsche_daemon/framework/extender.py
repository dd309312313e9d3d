"""Scheduler extenders in the scheduling algorithm: upstream's order, scaling and failure rules.

kube-scheduler's ``schedulePod`` with extenders does, and so does :func:`schedule_with_extenders`:

1. PreFilter and Filter plugins find the feasible nodes;
2. each *interested* extender with a filter verb, in configuration order, narrows them (its
   ``FailedNodes`` become Unschedulable statuses, ``FailedAndUnresolvableNodes`` unresolvable
   ones, so preemption skips them); an extender that fails is skipped when ``ignorable`` and
   otherwise fails the cycle (:class:`ExtenderError`, the pod is retried with backoff);
3. one feasible node is the answer, as upstream: nobody scores it;
4. Score plugins score, and every interested prioritizing extender is called *concurrently*;
   each of its scores (0-10) is added as ``score * weight * (100 / 10)``, upstream's scaling to
   the plugins' 0-100 range. A prioritize call that fails gives no score and never fails the
   cycle, whatever ``ignorable`` says (upstream: "let k8s/other extenders determine the
   priorities").

The HTTP side lives in ``opsche_daemon.extender``; this module only knows the :class:`Extender`
protocol, so it stays pure and its rules are unit-tested with in-memory extenders.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opsche_daemon.framework.interface import MAX_NODE_SCORE, CycleState, Status
from opsche_daemon.framework.runtime import Diagnosis, FitError, Framework, ScheduleResult
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "Extender",
    "ExtenderError",
    "FilterResult",
    "extender_scores",
    "find_nodes_that_pass_extenders",
    "interested",
    "schedule_with_extenders",
]

# extenderv1.MaxExtenderPriority: extenders score 0..10.
MAX_EXTENDER_PRIORITY = 10


class ExtenderError(Exception):
    """An extender call failed: timeout, refused connection, bad status, bad JSON, or its Error.

    ``str()`` is the message kube-scheduler would put in the FailedScheduling event; ``kind``
    labels the failure in metrics.
    """

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class FilterResult:
    """An extender's answer to filter: the nodes that pass, and why the others do not."""

    nodes: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    failed_unresolvable: Mapping[str, str] = field(default_factory=dict)


class Extender(Protocol):
    """One configured extender, as the scheduling algorithm sees it."""

    @property
    def name(self) -> str:
        """Its URL prefix (upstream's ``Name()``), for logs and metrics."""
        ...

    @property
    def ignorable(self) -> bool:
        """Scheduling goes on without it when it fails."""
        ...

    @property
    def is_filter(self) -> bool:
        """It has a filter verb."""
        ...

    @property
    def is_prioritizer(self) -> bool:
        """It has a prioritize verb (and so a positive weight)."""
        ...

    @property
    def weight(self) -> int:
        """Multiplier of its 0-10 scores."""
        ...

    @property
    def timeout_s(self) -> float:
        """The longest one call may take (its httpTimeout)."""
        ...

    def is_interested(self, pod: Pod) -> bool:
        """True unless it manages resources and ``pod`` requests none of them."""
        ...

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult:
        """The subset of ``nodes`` it accepts; raises :class:`ExtenderError`."""
        ...

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Mapping[str, int]:
        """A 0-10 score per node name; raises :class:`ExtenderError`."""
        ...


class SkipReporter(Protocol):
    """Told when an extender failed and the cycle went on without it (a log line, a metric)."""

    def __call__(self, extender: Extender, verb: str, pod: Pod, error: ExtenderError) -> None:
        """Report one skipped call."""
        ...


def _no_report(extender: Extender, verb: str, pod: Pod, error: ExtenderError) -> None:
    del extender, verb, pod, error


def interested(pod: Pod, managed: frozenset[str]) -> bool:
    """Upstream's ``IsInterested``: no managed resources, or the pod requests or limits one.

    Limits are read from the pod's API object (opsche's view keeps requests only); a pod built
    in memory without one is judged by its requests.
    """
    if not managed:
        return True
    if managed & pod.requests.scalars.keys():
        return True
    raw = pod.raw or {}
    spec = raw.get("spec") or {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        resources = container.get("resources") or {}
        for kind in ("requests", "limits"):
            if managed & (resources.get(kind) or {}).keys():
                return True
    return False


async def find_nodes_that_pass_extenders(
    extenders: Sequence[Extender],
    pod: Pod,
    feasible: Sequence[NodeInfo],
    diagnosis: Diagnosis,
    on_skip: SkipReporter = _no_report,
) -> list[NodeInfo]:
    """Narrow ``feasible`` by each interested filter extender in turn (upstream's order).

    Rejected nodes get a status in ``diagnosis`` with the extender's own message (no plugin
    name, as upstream), so the FailedScheduling event counts them like any filter's reasons.
    """
    nodes = list(feasible)
    for extender in extenders:
        if not nodes:
            break
        if not extender.is_filter or not extender.is_interested(pod):
            continue
        try:
            result = await extender.filter(pod, nodes)
        except ExtenderError as error:
            if extender.ignorable:
                on_skip(extender, "filter", pod, error)
                continue
            raise
        for name, message in result.failed_unresolvable.items():
            diagnosis.node_statuses[name] = Status.unresolvable("", message)
        for name, message in result.failed.items():
            if name not in result.failed_unresolvable:
                diagnosis.node_statuses[name] = Status.unschedulable("", message)
        by_name = {info.name: info for info in nodes}
        before = len(nodes)
        nodes = [by_name[name] for name in result.nodes if name in by_name]
        if len(nodes) != before:
            # Upstream names "Extender" as the rejecting plugin, so the pod is parked as
            # unschedulable (and moved by cluster events) rather than backed off as an error.
            diagnosis.unschedulable_plugins.add("Extender")
    return nodes


async def extender_scores(
    extenders: Sequence[Extender],
    pod: Pod,
    nodes: Sequence[NodeInfo],
    on_skip: SkipReporter = _no_report,
) -> dict[str, int]:
    """Every interested prioritizer's scores, called at once, scaled and weighted as upstream."""
    callers = [e for e in extenders if e.is_prioritizer and e.is_interested(pod)]
    if not callers:
        return {}
    answers = await asyncio.gather(
        *(e.prioritize(pod, nodes) for e in callers), return_exceptions=True
    )
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    totals: dict[str, int] = {}
    for extender, answer in zip(callers, answers, strict=True):
        if isinstance(answer, ExtenderError):
            on_skip(extender, "prioritize", pod, answer)
            continue
        if isinstance(answer, BaseException):
            raise answer
        for name, score in answer.items():
            totals[name] = totals.get(name, 0) + score * extender.weight * scale
    return totals


async def schedule_with_extenders(
    framework: Framework,
    extenders: Sequence[Extender],
    state: CycleState,
    pod: Pod,
    nominated: Mapping[str, Sequence[Pod]] | None = None,
    on_skip: SkipReporter = _no_report,
) -> ScheduleResult:
    """``Framework.schedule`` with the extenders' filter and prioritize steps in their places.

    Raises ``FitError`` when no node passes plugins and extenders, and :class:`ExtenderError`
    when a non-ignorable filter extender fails.
    """
    num_nodes = len(state.snapshot)
    if num_nodes == 0:
        raise FitError(pod, 0, Diagnosis())
    feasible, diagnosis = framework.find_feasible(state, pod, nominated)
    feasible = await find_nodes_that_pass_extenders(extenders, pod, feasible, diagnosis, on_skip)
    evaluated = len(feasible) + len(diagnosis.node_statuses)
    if not feasible:
        raise FitError(pod, num_nodes, diagnosis)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    scores = framework.run_scores(state, pod, feasible)
    extra = await extender_scores(extenders, pod, feasible, on_skip)
    for score in scores:
        score.score += extra.get(score.name, 0)
    return ScheduleResult(framework.select_host(scores), evaluated, len(feasible))
