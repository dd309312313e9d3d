"""opsche's writes (``kube.binder.WriteApi``) against the in-process API server.

The same calls ``kube.writer.Writer`` makes on a cluster, with the same client-side token bucket
(``clientConnection.qps``/``burst``) on the loop's clock, so a burst of bindings is paced in
virtual time as it is in real time; what the API server answers maps to the same outcomes
(``EvictionOutcome``), and a refused Binding raises as the real client does.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from opsche_daemon.kube.ratelimit import TokenBucket
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Pod
from opsche_daemon.simulation.apiserver import ApiError, VirtualApiServer

__all__ = ["VirtualWriter"]


class VirtualWriter:
    """Rate-limited writes of one scheduler into a ``VirtualApiServer``."""

    def __init__(self, api: VirtualApiServer, scheduler_name: str, qps: float, burst: int) -> None:
        self.api = api
        self.scheduler_name = scheduler_name
        self.limiter = TokenBucket(qps, burst, clock=asyncio.get_running_loop().time)

    async def bind(self, pod: Pod, node_name: str) -> None:
        """The Binding; raises ``ApiError`` (404/409) as the API server refuses it."""
        await self.limiter.acquire()
        await self.api.bind(pod.namespace, pod.name, pod.uid, node_name)

    async def set_unschedulable(
        self,
        pod: Pod,
        message: str,
        nominated_node: str | None = None,
        *,
        reason: str = "Unschedulable",
    ) -> None:
        """``PodScheduled=False/Unschedulable`` (and ``nominatedNodeName``)."""
        await self.limiter.acquire()
        status: dict[str, object] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": _now(),
                }
            ]
        }
        if nominated_node is not None:
            status["nominatedNodeName"] = nominated_node or None
        try:
            await self.api.patch_status(pod.namespace, pod.name, status)
        except ApiError as exc:
            if exc.status != 404:  # a deleted pod needs no condition
                raise

    async def mark_disruption_target(self, pod: Pod, preemptor: Pod) -> None:
        """The ``DisruptionTarget`` condition kube-scheduler sets on preemption victims."""
        del preemptor
        await self.limiter.acquire()
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{self.scheduler_name}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": _now(),
        }
        try:
            await self.api.patch_status(pod.namespace, pod.name, {"conditions": [condition]})
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def evict(self, pod: Pod) -> EvictionResult:
        """The Eviction API: 429 is ``BLOCKED``, 404 ``NOT_FOUND``."""
        await self.limiter.acquire()
        try:
            await self.api.evict(pod.namespace, pod.name, pod.uid or None)
        except ApiError as exc:
            if exc.status == 429:
                return EvictionResult(pod.key, EvictionOutcome.BLOCKED, exc.message)
            if exc.status == 404:
                return EvictionResult(pod.key, EvictionOutcome.NOT_FOUND, exc.message)
            return EvictionResult(pod.key, EvictionOutcome.ERROR, str(exc))
        return EvictionResult(pod.key, EvictionOutcome.EVICTED)

    def event(
        self, pod: Pod, reason: str, note: str, *, action: str = "Scheduling", type_: str = "Normal"
    ) -> None:
        """Record an Event (counted by the API server; never blocks)."""
        del action, type_
        self.api.record_event(pod.key, reason, note[:1024])

    async def drain_events(self, within: float = 5.0) -> None:
        """Events are recorded at once; nothing is in flight."""
        del within


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
