"""The scheduler's API side: ``scheduler.Binder`` implemented over the rate-limited ``Writer``.

Binding, the FailedScheduling condition and events are single writes; preemption is the one
composite: each victim is first marked with the ``DisruptionTarget`` condition (as upstream does,
so the pod's owner can tell why it went), then evicted through the Eviction API so
PodDisruptionBudgets are honoured.
"""

from __future__ import annotations

from typing import Protocol

import structlog

from opsche_daemon.framework.interface import PostFilterResult
from opsche_daemon.model.eviction import EvictionResult
from opsche_daemon.model.pod import Pod

__all__ = ["KubeBinder", "WriteApi"]

log = structlog.get_logger("opsche.kube")


class WriteApi(Protocol):
    """The writes opsche makes.

    ``kube.writer.Writer`` on a cluster; the in-process API of a virtual-time replay
    (``opsche_daemon.simulation``).
    """

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST a Binding; raise on failure (409: already bound or gone)."""
        ...

    async def set_unschedulable(
        self,
        pod: Pod,
        message: str,
        nominated_node: str | None = None,
        *,
        reason: str = "Unschedulable",
    ) -> None:
        """``PodScheduled=False/<reason>`` (and ``nominatedNodeName``)."""
        ...

    async def mark_disruption_target(self, pod: Pod, preemptor: Pod) -> None:
        """The ``DisruptionTarget`` condition on a preemption victim."""
        ...

    async def evict(self, pod: Pod) -> EvictionResult:
        """Evict through the Eviction API (PodDisruptionBudgets hold)."""
        ...

    def event(
        self, pod: Pod, reason: str, note: str, *, action: str = "Scheduling", type_: str = "Normal"
    ) -> None:
        """Record an Event in the background; never blocks, never raises."""
        ...

    async def drain_events(self, within: float = 5.0) -> None:
        """Wait (bounded) for events in flight."""
        ...


class KubeBinder:
    """Binds, posts events, sets conditions and preempts on behalf of one scheduler."""

    def __init__(self, writer: WriteApi, respect_pdbs: bool) -> None:
        self.writer = writer
        self.respect_pdbs = respect_pdbs

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST the Binding."""
        await self.writer.bind(pod, node_name)

    def event(self, pod: Pod, reason: str, note: str, *, type_: str = "Normal") -> None:
        """Post an event in the background."""
        self.writer.event(pod, reason, note, type_=type_)

    async def set_unschedulable(
        self, pod: Pod, message: str, nominated_node: str | None, *, reason: str = "Unschedulable"
    ) -> None:
        """PodScheduled=False with the FailedScheduling message (and nominatedNodeName)."""
        await self.writer.set_unschedulable(pod, message, nominated_node, reason=reason)

    async def preempt(self, preemptor: Pod, result: PostFilterResult) -> bool:
        """Mark each victim a DisruptionTarget, then evict it through the Eviction API.

        False if any eviction was refused; with ``respect_pdbs`` the remaining victims are then
        left alone (a PDB said no, so the preemption cannot complete anyway).
        """
        ok = True
        for victim in result.victims:
            await self.writer.mark_disruption_target(victim, preemptor)
            outcome = await self.writer.evict(victim)
            log.info(
                "preemption eviction",
                victim=victim.key,
                preemptor=preemptor.key,
                outcome=outcome.outcome,
                message=outcome.message,
            )
            if outcome.outcome.gone:
                self.writer.event(
                    victim,
                    "Preempted",
                    f"Preempted by pod {preemptor.uid} on node {result.nominated_node}",
                    action="Preempting",
                )
            else:
                ok = False
                if self.respect_pdbs:
                    break
        return ok
