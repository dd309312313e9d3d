"""Replay a trace against a real cluster: each workload a ReplicaSet through the API server.

``replay.driver`` decides what happens when (the initial state, the trace's clock, the 1 s
monitor); this module is the real cluster under it (``KubeReplayCluster``):

1. checks that the cluster's schedulable nodes match the trace (count and allocatable);
2. creates its own namespace and one PriorityClass per level (reusing an identical one that
   already exists, never changing or deleting one it did not create);
3. watches the namespace's pods from before the first write, so no pod is missed;
4. creates and deletes ReplicaSets as the driver says;
5. at the end the scheduler's counters are scraped (given a metrics URL) and everything it
   created is deleted, also on Ctrl-C.

Why pods are watched rather than listed once a second: latency is creation to first Running, and
the watch sees both on one clock with millisecond precision; the 1 s samples are read from the
same state, so samples and per-pod records can never disagree.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import secrets
import time
import urllib.request
from typing import Any

import aiohttp
from kubernetes_asyncio import client, watch

from opsche_daemon.model.quantity import QuantityError, parse_quantity
from opsche_daemon.replay.driver import (
    COUNTERS,
    Observe,
    Printer,
    ReplayError,
    ReplayOptions,
    drive,
    parse_counters,
)
from opsche_daemon.trace.model import Trace, Workload
from opsche_daemon.trace.monitor import LABEL_INITIAL, LABEL_PRIORITY, LABEL_WORKLOAD
from opsche_daemon.trace.result import ReplayResult

__all__ = [
    "COUNTERS",
    "PRIORITY_CLASS_PREFIX",
    "KubeReplayCluster",
    "Printer",
    "ReplayError",
    "ReplayOptions",
    "namespace_name",
    "parse_counters",
    "priority_class_name",
    "priority_value",
    "replay",
    "replicaset_manifest",
]

PRIORITY_CLASS_PREFIX = "opsche-replay-p"
REPLAY_LABEL = "opsche.dev/replay"
_WRITE_SLOTS = 16


def priority_class_name(level: int) -> str:
    """The PriorityClass of trace priority ``level`` (1 = lowest)."""
    return f"{PRIORITY_CLASS_PREFIX}{level}"


def priority_value(level: int) -> int:
    """The PriorityClass value of trace priority ``level``."""
    return level * 1000


def namespace_name(label: str) -> str:
    """A fresh namespace for one replay, named after its run."""
    cleaned = re.sub(r"[^a-z0-9-]", "-", label.lower()).strip("-")[:40]
    return f"replay-{cleaned}-{secrets.token_hex(3)}"


def replicaset_manifest(workload: Workload, trace: Trace, scheduler_name: str) -> dict[str, Any]:
    """The ReplicaSet that stands for ``workload``: pause containers with the rounded requests."""
    labels = {
        LABEL_WORKLOAD: workload.name,
        LABEL_PRIORITY: str(workload.priority),
        LABEL_INITIAL: "true" if workload.initial else "false",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": workload.name, "labels": labels},
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": {LABEL_WORKLOAD: workload.name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler_name,
                    "priorityClassName": priority_class_name(workload.priority),
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {
                                    "cpu": f"{workload.pod_cpu_millis(trace.node)}m",
                                    "memory": f"{workload.pod_memory_mib(trace.node)}Mi",
                                }
                            },
                        }
                    ],
                },
            },
        },
    }


def _schedulable(node: dict[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute"):
            return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_problems(nodes: list[dict[str, Any]], trace: Trace) -> list[str]:
    """Why the cluster's nodes do not match the trace (empty when they do)."""
    usable = [n for n in nodes if _schedulable(n)]
    problems = []
    if len(usable) != trace.nodes:
        problems.append(
            f"the trace needs {trace.nodes} schedulable nodes, the cluster has {len(usable)}"
        )
    want_cpu = trace.node.cpu_millis
    want_mem = trace.node.memory_mib
    for node in usable:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        try:
            cpu = math.floor(parse_quantity(alloc.get("cpu", "0")) * 1000)
            mem = math.floor(parse_quantity(alloc.get("memory", "0")) / (1024 * 1024))
        except QuantityError as exc:
            problems.append(f"node {node['metadata']['name']}: {exc}")
            continue
        if cpu != want_cpu or mem != want_mem:
            problems.append(
                f"node {node['metadata']['name']} has {cpu}m cpu and {mem}Mi memory allocatable; "
                f"the trace's nodes have {want_cpu}m and {want_mem}Mi"
            )
            break
    return problems


def scrape_counters(url: str) -> dict[str, float]:
    """``parse_counters`` of the scheduler's ``/metrics``."""
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL we built
        return parse_counters(response.read().decode())


class KubeReplayCluster:
    """``replay.driver.ReplayCluster`` over a real API server."""

    def __init__(
        self, api: client.ApiClient, trace: Trace, options: ReplayOptions, out: Printer
    ) -> None:
        # Typed as Any: bodies are plain dicts and listings raw JSON (``_preload_content=False``),
        # which the client's generated signatures do not describe.
        self.core: Any = client.CoreV1Api(api)
        self.apps: Any = client.AppsV1Api(api)
        self.scheduling: Any = client.SchedulingV1Api(api)
        self.trace = trace
        self.options = options
        self.out = out
        self.namespace = namespace_name(options.scheduler.label)
        self.created_classes: list[str] = []
        self.namespace_created = False
        self.slots = asyncio.Semaphore(_WRITE_SLOTS)
        self.write_errors: list[str] = []

    # ---------------------------------------------------------------- setup
    async def prepare(self) -> None:
        """Check the nodes, then create the PriorityClasses and the namespace."""
        await self._check_nodes()
        await self._create_priority_classes()
        await self._create_namespace()

    async def _check_nodes(self) -> None:
        listing = await self.core.list_node(_preload_content=False)
        nodes = json.loads(await listing.read())["items"]
        problems = node_problems(nodes, self.trace)
        if problems:
            node = self.trace.node
            raise ReplayError(
                "; ".join(problems)
                + f" (for the local cluster: opsche cluster up --nodes {self.trace.nodes} "
                f"--node-cpu {node.cpu_quantity()} --node-memory {node.memory_quantity()})"
            )

    async def _create_priority_classes(self) -> None:
        for level in range(1, self.trace.priorities + 1):
            name = priority_class_name(level)
            try:
                existing = await self.scheduling.read_priority_class(name)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
            else:
                if existing.value != priority_value(level):
                    raise ReplayError(
                        f"PriorityClass {name} exists with value {existing.value}, not "
                        f"{priority_value(level)}; it is not the replayer's, so it is left alone"
                    )
                continue
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "labels": {REPLAY_LABEL: "true"}},
                "value": priority_value(level),
                "description": f"opsche trace replay, priority level {level}",
            }
            await self.scheduling.create_priority_class(body)
            self.created_classes.append(name)

    async def _create_namespace(self) -> None:
        body = {"metadata": {"name": self.namespace, "labels": {REPLAY_LABEL: "true"}}}
        await self.core.create_namespace(body)
        self.namespace_created = True

    # ---------------------------------------------------------------- watch
    async def watch(self, observe: Observe) -> None:
        """Feed ``observe`` every pod event of the namespace until cancelled."""
        version = ""
        known: dict[str, dict[str, Any]] = {}
        while True:
            if not version:
                listing = await self.core.list_namespaced_pod(
                    self.namespace, _preload_content=False
                )
                data = json.loads(await listing.read())
                seen = set()
                for item in data["items"]:
                    seen.add(item["metadata"]["name"])
                    known[item["metadata"]["name"]] = item
                    observe("MODIFIED", item)
                for name in set(known) - seen:  # deleted while the watch was away
                    observe("DELETED", known.pop(name))
                version = data["metadata"]["resourceVersion"]
            stream_watch = watch.Watch(return_type="object")
            try:
                async with stream_watch.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    resource_version=version,
                    timeout_seconds=60,
                    allow_watch_bookmarks=True,
                ) as stream:
                    async for event in stream:
                        obj = event["raw_object"]
                        kind = event["type"]
                        if kind == "ERROR":
                            version = ""  # 410 Gone: list again
                            break
                        version = obj["metadata"].get("resourceVersion", version)
                        if kind == "BOOKMARK":
                            continue
                        name = obj["metadata"]["name"]
                        if kind == "DELETED":
                            known.pop(name, None)
                        else:
                            known[name] = obj
                        observe(kind, obj)
            except client.exceptions.ApiException as exc:
                version = ""  # 410 Gone, or the API server refused: list again
                if exc.status != 410:
                    await asyncio.sleep(1)
            except (TimeoutError, OSError, aiohttp.ClientError):
                version = ""  # the API server is away; list again, which catches up
                await asyncio.sleep(1)

    # ---------------------------------------------------------------- writes
    async def create_workload(self, body: dict[str, Any]) -> None:
        """POST the ReplicaSet; a refusal is recorded, not raised (the replay goes on)."""
        name = body["metadata"]["name"]
        async with self.slots:
            try:
                await self.apps.create_namespaced_replica_set(self.namespace, body)
            except client.exceptions.ApiException as exc:
                self.write_errors.append(f"create {name}: {exc.status} {exc.reason}")

    async def delete_workload(self, name: str) -> None:
        """DELETE the ReplicaSet; the garbage collector deletes its pods in the background."""
        async with self.slots:
            try:
                await self.apps.delete_namespaced_replica_set(
                    name, self.namespace, propagation_policy="Background"
                )
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    self.write_errors.append(f"delete {name}: {exc.status} {exc.reason}")

    # ---------------------------------------------------------------- cleanup
    async def cleanup(self) -> None:
        """Delete the PriorityClasses made here, then the namespace (its ReplicaSets and pods).

        The classes go first: they are quick, and waiting for the namespace may be cut short.
        """
        for name in list(self.created_classes):
            with contextlib.suppress(client.exceptions.ApiException):
                await self.scheduling.delete_priority_class(name)
            self.created_classes.remove(name)
        if self.namespace_created:
            with contextlib.suppress(client.exceptions.ApiException):
                await self.core.delete_namespace(self.namespace, propagation_policy="Foreground")
            deadline = time.monotonic() + self.options.cleanup_timeout_s
            while time.monotonic() < deadline:
                try:
                    await self.core.read_namespace(self.namespace)
                except client.exceptions.ApiException as exc:
                    if exc.status == 404:
                        break
                    raise
                await asyncio.sleep(0.5)
            else:
                self.out(f"  namespace {self.namespace} still terminating; left to the cluster")


def _scrape(url: str | None, out: Printer) -> dict[str, float] | None:
    if url is None:
        return None
    try:
        return scrape_counters(url)
    except OSError as exc:
        out(f"  could not read the scheduler's metrics at {url}: {exc}")
        return None


async def replay(
    api: client.ApiClient,
    trace: Trace,
    trace_info: dict[str, Any],
    options: ReplayOptions,
    out: Printer = print,
) -> ReplayResult:
    """Replay ``trace`` once; return the result. Everything it created is deleted on the way out."""
    cluster = KubeReplayCluster(api, trace, options, out)

    async def counters() -> dict[str, float] | None:
        return await asyncio.to_thread(_scrape, options.metrics_url, out)

    def manifest(workload: Workload) -> dict[str, Any]:
        return replicaset_manifest(workload, trace, options.scheduler.scheduler_name)

    return await drive(cluster, trace, trace_info, options, manifest, counters=counters, out=out)
