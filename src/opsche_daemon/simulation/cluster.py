"""The replay's cluster in virtual time: ``replay.driver.ReplayCluster`` over the in-process API.

The driver does here exactly what it does on a real cluster (same initial-state wait, same
trace clock, same 1 s monitor, same summary); this class gives it the trace's nodes, its
namespace and PriorityClasses, ReplicaSets created and deleted through the virtual API, and a pod
watch. The watch also carries opsche's health: if one of its tasks dies, the watch raises, and
the driver stops the replay as it does when a real watch breaks.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opsche_daemon.localcluster.cluster import node_object as local_node_object
from opsche_daemon.replay.driver import Observe
from opsche_daemon.replay.replayer import namespace_name, priority_class_name, priority_value
from opsche_daemon.simulation.apiserver import ApiError, Obj, VirtualApiServer
from opsche_daemon.trace.model import Trace

__all__ = ["VirtualReplayCluster", "node_object"]


def node_object(name: str, cpu_millis: int, memory_mib: int) -> Obj:
    """The node ``opsche cluster up`` registers, Ready as KWOK reports it."""
    resources = {"cpu": f"{cpu_millis}m", "memory": f"{memory_mib}Mi", "pods": "110"}
    node = local_node_object(name, resources)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return node


class VirtualReplayCluster:
    """A trace's nodes, namespace and workloads on a ``VirtualApiServer``."""

    def __init__(
        self,
        api: VirtualApiServer,
        trace: Trace,
        label: str,
        scheduler_failed: asyncio.Future[None] | None = None,
    ) -> None:
        self.api = api
        self.trace = trace
        self.namespace = namespace_name(label)
        self.write_errors: list[str] = []
        self.scheduler_failed = scheduler_failed
        for i in range(trace.nodes):
            api.add_node(
                node_object(f"kwok-node-{i}", trace.node.cpu_millis, trace.node.memory_mib)
            )

    async def prepare(self) -> None:
        """The PriorityClasses and the namespace (the nodes are the trace's by construction)."""
        for level in range(1, self.trace.priorities + 1):
            self.api.add_priority_class(priority_class_name(level), priority_value(level))
        self.api.add_namespace(self.namespace)

    async def watch(self, observe: Observe) -> None:
        """Pod events of the namespace until cancelled; raises if the scheduler died."""
        namespace = self.namespace

        def listener(kind: str, type_: str, obj: Obj) -> None:
            if kind == "Pod" and obj["metadata"].get("namespace") == namespace:
                observe(type_, obj)

        self.api.watch(listener)
        if self.scheduler_failed is None:
            await asyncio.Event().wait()
        else:
            await asyncio.shield(self.scheduler_failed)

    async def create_workload(self, body: dict[str, Any]) -> None:
        """Create the ReplicaSet (a write, queued behind the others as a real POST is)."""
        try:
            await self.api.create_replicaset(self.namespace, body)
        except ApiError as exc:
            self.write_errors.append(f"create {body['metadata']['name']}: {exc}")

    async def delete_workload(self, name: str) -> None:
        """Delete the ReplicaSet; the collector deletes its pods."""
        try:
            await self.api.delete_replicaset(self.namespace, name)
        except ApiError as exc:
            if exc.status != 404:
                self.write_errors.append(f"delete {name}: {exc}")

    async def cleanup(self) -> None:
        """Delete the namespace with everything in it."""
        self.api.delete_namespace(self.namespace)
