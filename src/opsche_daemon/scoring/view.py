"""The scoring service's view of the cluster: what each node already runs, from a watch.

An extender is sent the pod and the candidate Nodes, not the pods on them, so a scorer that ranks
by free capacity must keep its own picture of occupancy, as real extenders do with an informer.
``ClusterView`` lists and then watches pods (and nodes, for ``nodeCacheCapable`` requests that
carry names only) through the API server and keeps, per node, the requests of its non-terminal
pods, and per controller, how many pods it has (the job width feature). Without a kubeconfig the
view is empty: every candidate looks idle, which is all the request itself can say.

The watch is restarted from a fresh LIST after any error (a 410 Gone included), with a short
backoff; ``synced`` says the view has listed at least once, for ``/healthz``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog
from kubernetes_asyncio import client, watch

from opsche_daemon.kube.client import api_client
from opsche_daemon.kube.intake import list_raw
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources

__all__ = ["ClusterView"]

log = structlog.get_logger("opsche.score")
_BACKOFF_S = 1.0


class ClusterView:
    """Pods per node and per controller, kept current by a watch (or empty without one)."""

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}  # key -> bound, non-terminal pod
        self.nodes: dict[str, Node] = {}
        self.synced = False
        self._task: asyncio.Task[None] | None = None
        # Kept as pods come and go, so a request costs O(candidates), not O(pods).
        self._used: dict[str, Resources] = {}
        self._owners: Counter[str] = Counter()

    def used(self, node: str) -> Resources:
        """The requests of the pods on ``node``."""
        return self._used.get(node, Resources())

    def width(self, pod: Mapping[str, Any]) -> int:
        """How many pods the pod's controller has (at least 1, the pod itself)."""
        owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
        uid = next((o.get("uid") for o in owners if o.get("controller")), None)
        if uid is None:
            return 1
        return max(1, self._owners.get(str(uid), 0))

    def _forget(self, key: str) -> None:
        old = self.pods.pop(key, None)
        if old is None:
            return
        self._used[old.node_name] = self._used.get(old.node_name, Resources()) - old.requests
        if old.owner is not None:
            self._owners[old.owner.uid] -= 1

    def _remember(self, pod: Pod) -> None:
        self.pods[pod.key] = pod
        self._used[pod.node_name] = self._used.get(pod.node_name, Resources()) + pod.requests
        if pod.owner is not None:
            self._owners[pod.owner.uid] += 1

    def apply(self, kind: str, event: str, obj: Mapping[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of a pod or a node."""
        if kind == "node":
            name = str((obj.get("metadata") or {}).get("name"))
            if event == "DELETED":
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = Node.from_api(obj)
            return
        pod = Pod.from_api(obj)
        self._forget(pod.key)
        if event != "DELETED" and not pod.terminal and pod.node_name:
            self._remember(replace(pod, raw=None))  # the view needs no API object

    def start(self, kubeconfig: Path) -> None:
        """Begin watching (in the background) through ``kubeconfig``."""
        self._task = asyncio.get_running_loop().create_task(self._run(kubeconfig), name="view")

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, kubeconfig: Path) -> None:
        api = await api_client(kubeconfig, pool_size=4)
        core = client.CoreV1Api(api)
        try:
            while True:
                try:
                    await self._list_and_watch(core)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # any failure: list again after a pause
                    log.warning("cluster view: watch failed; listing again", error=str(exc))
                    await asyncio.sleep(_BACKOFF_S)
        finally:
            await api.close()

    async def _list_and_watch(self, core: client.CoreV1Api) -> None:
        nodes = await list_raw(core.list_node)
        pods = await list_raw(core.list_pod_for_all_namespaces)
        self.nodes, self.pods, self._used, self._owners = {}, {}, {}, Counter()
        for raw in nodes:
            self.apply("node", "ADDED", raw)
        for raw in pods:
            self.apply("pod", "ADDED", raw)
        self.synced = True
        async with asyncio.TaskGroup() as group:  # one watch failing ends (and relists) both
            group.create_task(self._watch(core.list_node, "node"))
            group.create_task(self._watch(core.list_pod_for_all_namespaces, "pod"))

    async def _watch(self, call: Any, kind: str) -> None:
        stream = watch.Watch()
        async with stream.stream(call, timeout_seconds=300) as events:
            async for event in events:
                raw = event["raw_object"]
                self.apply(kind, str(event["type"]), raw)
        raise ConnectionError(f"{kind} watch ended")
