"""Every write opsche makes to the API server: bindings, events, pod conditions, evictions.

All calls share one token bucket (kube-scheduler's client QPS/burst); events have their own, as
kube-scheduler's event broadcaster uses a separate client, so a flood of FailedScheduling events
never delays a binding.

The Binding subresource answers with a ``Status`` where the generated client expects a
``V1Binding``; deserialising it raises *after* the bind succeeded (kubernetes-client/python#825),
so binds are sent with ``_preload_content=False`` and the raw response is released unread.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import structlog
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from opsche_daemon.kube.ratelimit import TokenBucket
from opsche_daemon.model.eviction import EvictionOutcome, EvictionResult
from opsche_daemon.model.pod import Pod

__all__ = ["EvictionResult", "Writer"]

log = structlog.get_logger("opsche.kube")


class Writer:
    """Rate-limited writes on behalf of one scheduler."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        scheduler_name: str,
        qps: float,
        burst: int,
        instance: str | None = None,
    ) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.events = client.EventsV1Api(api)
        self.scheduler_name = scheduler_name
        self.instance = instance or f"{scheduler_name}-{uuid.uuid4().hex[:8]}"
        self.limiter = TokenBucket(qps, burst)
        self.event_limiter = TokenBucket(qps, burst)
        self._event_tasks: set[asyncio.Task[None]] = set()

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST a Binding; raises ``ApiException`` on failure (409: already bound or gone)."""
        await self.limiter.acquire()
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=pod.name, namespace=pod.namespace, uid=pod.uid or None
            ),
            target=client.V1ObjectReference(kind="Node", name=node_name, api_version="v1"),
        )
        response: Any = await self.core.create_namespaced_pod_binding(
            pod.name, pod.namespace, body, _preload_content=False
        )
        response.release()

    async def set_unschedulable(
        self,
        pod: Pod,
        message: str,
        nominated_node: str | None = None,
        *,
        reason: str = "Unschedulable",
    ) -> None:
        """Set ``PodScheduled=False/<reason>`` (and ``nominatedNodeName``) on the pod.

        ``reason`` is upstream's: Unschedulable when no node fits, SchedulerError when the
        cycle failed (a non-ignorable extender did not answer, say).
        """
        await self.limiter.acquire()
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": now,
                }
            ]
        }
        if nominated_node is not None:
            status["nominatedNodeName"] = nominated_node or None
        try:
            await self.core.patch_namespaced_pod_status(pod.name, pod.namespace, {"status": status})
        except ApiException as exc:
            if exc.status != 404:  # a deleted pod needs no condition
                raise

    async def mark_disruption_target(self, pod: Pod, preemptor: Pod) -> None:
        """The ``DisruptionTarget`` condition kube-scheduler sets on preemption victims."""
        await self.limiter.acquire()
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{self.scheduler_name}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": now,
        }
        del preemptor
        try:
            await self.core.patch_namespaced_pod_status(
                pod.name, pod.namespace, {"status": {"conditions": [condition]}}
            )
        except ApiException as exc:
            if exc.status != 404:
                raise

    async def evict(self, pod: Pod) -> EvictionResult:
        """Evict through the Eviction API, so PodDisruptionBudgets are honoured."""
        await self.limiter.acquire()
        body = client.V1Eviction(
            metadata=client.V1ObjectMeta(name=pod.name, namespace=pod.namespace),
            delete_options=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid=pod.uid) if pod.uid else None
            ),
        )
        try:
            await self.core.create_namespaced_pod_eviction(pod.name, pod.namespace, body)
        except ApiException as exc:
            if exc.status == 429:
                return EvictionResult(pod.key, EvictionOutcome.BLOCKED, _message(exc))
            if exc.status == 404:
                return EvictionResult(pod.key, EvictionOutcome.NOT_FOUND, _message(exc))
            return EvictionResult(
                pod.key, EvictionOutcome.ERROR, f"HTTP {exc.status}: {_message(exc)}"
            )
        return EvictionResult(pod.key, EvictionOutcome.EVICTED)

    def event(
        self, pod: Pod, reason: str, note: str, *, action: str = "Scheduling", type_: str = "Normal"
    ) -> None:
        """Post an events.k8s.io/v1 Event in the background (never blocks scheduling)."""
        task = asyncio.get_running_loop().create_task(
            self._post_event(pod, reason, note, action, type_), name=f"event:{reason}:{pod.key}"
        )
        self._event_tasks.add(task)
        task.add_done_callback(self._event_tasks.discard)

    async def _post_event(self, pod: Pod, reason: str, note: str, action: str, type_: str) -> None:
        await self.event_limiter.acquire()
        now = datetime.now(UTC)
        body = client.EventsV1Event(
            # Named like client-go's recorder (name.<hex nanoseconds>): generateName would need
            # a trailing character that is not a valid subdomain end.
            metadata=client.V1ObjectMeta(
                name=f"{pod.name}.{time.time_ns():x}", namespace=pod.namespace
            ),
            event_time=now,
            reporting_controller=self.scheduler_name,
            reporting_instance=self.instance,
            action=action,
            reason=reason,
            note=note[:1024],
            type=type_,
            regarding=client.V1ObjectReference(
                kind="Pod",
                api_version="v1",
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.uid or None,
            ),
        )
        # Events are best effort, as upstream's broadcaster drops them on failure.
        try:
            response: Any = await self.events.create_namespaced_event(
                pod.namespace, body, _preload_content=False
            )
            response.release()  # the created Event is not needed: skip building its model
        except ApiException as exc:
            log.debug("event not recorded", pod=pod.key, reason=reason, status=exc.status)

    async def drain_events(self, within: float = 5.0) -> None:
        """Wait (bounded) for in-flight events, at shutdown."""
        if self._event_tasks:
            await asyncio.wait(set(self._event_tasks), timeout=within)


def _message(exc: ApiException) -> str:
    import json  # noqa: PLC0415 - only on the error path

    try:
        return str(json.loads(exc.body or "{}").get("message", exc.reason))
    except (ValueError, AttributeError):
        return str(exc.reason)
