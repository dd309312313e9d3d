"""The API writer of a replica that may lose the Lease: no write unless it may act right now.

Leader election alone does not stop a leader that has lost its Lease from finishing what it was
doing: a scheduling cycle or a plan's evictions already under way would still reach the API
server after a follower has taken over, and two schedulers would bind and evict at once. So every
write goes through here and is refused once ``may_act()`` is false (``kube.leader.Leadership``:
past the renew deadline of the last renewal, which comes before any follower may lead): a bind
raises (the scheduling cycle's bind-failure path undoes the assumption), an eviction reports an
error (a plan aborts, a preemption stops), and status writes and events are dropped.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from opsche_daemon.kube.binder import WriteApi
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Pod

__all__ = ["FencedWriter", "NotLeaderError"]

log = structlog.get_logger("opsche.leader")


class NotLeaderError(RuntimeError):
    """A write refused because this replica does not (or no longer) lead."""


class FencedWriter:
    """``WriteApi`` over another, refusing every write while ``may_act()`` is false."""

    def __init__(self, writer: WriteApi, may_act: Callable[[], bool]) -> None:
        self.writer = writer
        self.may_act = may_act
        self.refused = 0  # writes refused, for logs and tests

    def _refuse(self, what: str, pod: Pod) -> None:
        self.refused += 1
        log.warning("write refused: not the leader", write=what, pod=pod.key)

    async def bind(self, pod: Pod, node_name: str) -> None:
        """Bind, or raise ``NotLeaderError``."""
        if not self.may_act():
            self._refuse("bind", pod)
            raise NotLeaderError(f"not the leader: {pod.key} not bound to {node_name}")
        await self.writer.bind(pod, node_name)

    async def set_unschedulable(
        self,
        pod: Pod,
        message: str,
        nominated_node: str | None = None,
        *,
        reason: str = "Unschedulable",
    ) -> None:
        """The pod's condition, unless fenced (the next leader sets its own)."""
        if not self.may_act():
            self._refuse("status", pod)
            return
        await self.writer.set_unschedulable(pod, message, nominated_node, reason=reason)

    async def mark_disruption_target(self, pod: Pod, preemptor: Pod) -> None:
        """The victim's condition, unless fenced (its eviction is refused too)."""
        if not self.may_act():
            self._refuse("status", pod)
            return
        await self.writer.mark_disruption_target(pod, preemptor)

    async def evict(self, pod: Pod) -> EvictionResult:
        """Evict, or an ``ERROR`` result that aborts the plan or the preemption."""
        if not self.may_act():
            self._refuse("eviction", pod)
            return EvictionResult(pod.key, EvictionOutcome.ERROR, "not the leader")
        return await self.writer.evict(pod)

    def event(
        self, pod: Pod, reason: str, note: str, *, action: str = "Scheduling", type_: str = "Normal"
    ) -> None:
        """Post an event, unless fenced."""
        if self.may_act():
            self.writer.event(pod, reason, note, action=action, type_=type_)

    async def drain_events(self, within: float = 5.0) -> None:
        """Wait (bounded) for the events in flight."""
        await self.writer.drain_events(within)
