"""Replay a trace against a real cluster: each workload a ReplicaSet on the trace's clock.

What it does, in order (seed 000, Section 4.1 "Trace Replay"):

1. checks that the cluster's schedulable nodes match the trace (count and allocatable);
2. creates its own namespace and one PriorityClass per level (reusing an identical one that
   already exists, never changing or deleting one it did not create);
3. watches the namespace's pods from before the first write, so no pod is missed;
4. creates the initial workloads and waits until they are placed, or stop making progress, or a
   bounded time passes (a scheduler may leave some pending at 90 % load: that is measured too);
5. from then on (t = 0) creates each arriving workload at ``start_s / time_scale`` and deletes
   each workload at ``end_s / time_scale``, samples the monitor every second and prints progress;
6. at the end scrapes the scheduler's counters (if given a metrics URL), writes nothing itself
   (the caller writes the result) and deletes what it created, also on Ctrl-C.

Why pods are watched rather than listed once a second: latency is creation to first Running, and
the watch sees both on one clock with millisecond precision; the 1 s samples are read from the
same state, so samples and per-pod records can never disagree.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import math
import re
import secrets
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes_asyncio import client, watch
from prometheus_client.parser import text_string_to_metric_families

from opsche_daemon.model.quantity import QuantityError, parse_quantity
from opsche_daemon.trace.model import Trace, Workload
from opsche_daemon.trace.monitor import LABEL_INITIAL, LABEL_PRIORITY, LABEL_WORKLOAD, PodTracker
from opsche_daemon.trace.result import ReplayResult, Sample, SchedulerRun
from opsche_daemon.trace.summary import summarise

__all__ = [
    "COUNTERS",
    "PRIORITY_CLASS_PREFIX",
    "ReplayError",
    "ReplayOptions",
    "priority_class_name",
    "replay",
    "replicaset_manifest",
]

Printer = Callable[[str], None]
PRIORITY_CLASS_PREFIX = "opsche-replay-p"
REPLAY_LABEL = "opsche.dev/replay"
COUNTERS = {
    "solver_runs": "opsche_solver_runs",
    "plan_activations": "opsche_plan_activations",
    "plan_pods_moved": "opsche_plan_pods_moved",
    "plan_pods_evicted": "opsche_plan_pods_evicted",
    "preemption_attempts": "opsche_preemption_attempts",
}
_WRITE_SLOTS = 16
_POLL_S = 0.25


class ReplayError(RuntimeError):
    """A replay that cannot start or go on; the message says why and what to do."""


@dataclass(frozen=True)
class ReplayOptions:
    """How to replay: who schedules, how fast, how patient, where the scheduler's metrics are."""

    scheduler: SchedulerRun
    time_scale: float = 1.0
    initial_timeout_s: float = 180.0  # the longest the initial state may take to be placed
    initial_settle_s: float = 15.0  # stop waiting when nothing was placed for this long
    metrics_url: str | None = None
    progress_every_s: float = 30.0
    cleanup_timeout_s: float = 120.0
    duration_s: float | None = None  # real seconds of arrivals; default horizon / time_scale

    def real_duration(self, trace: Trace) -> float:
        """How long the replay runs after the initial state, in real seconds."""
        return self.duration_s if self.duration_s is not None else trace.horizon_s / self.time_scale


def priority_class_name(level: int) -> str:
    """The PriorityClass of trace priority ``level`` (1 = lowest)."""
    return f"{PRIORITY_CLASS_PREFIX}{level}"


def _priority_value(level: int) -> int:
    return level * 1000


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


def parse_counters(text: str) -> dict[str, float]:
    """The counters in ``COUNTERS`` from a Prometheus text scrape, each summed over its labels.

    Solver runs with ``result="nothing_pending"`` are left out: the paper counts invocations of
    the optimiser, and such a run returns before solving anything.
    """
    wanted = {family: key for key, family in COUNTERS.items()}
    totals = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(text):
        key = wanted.get(family.name)
        if key is None:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("result") != "nothing_pending":
                totals[key] += float(sample.value)
    return totals


def scrape_counters(url: str) -> dict[str, float]:
    """``parse_counters`` of the scheduler's ``/metrics``."""
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL we built
        return parse_counters(response.read().decode())


class _Replay:
    """One replay's state: the API handles, what it created, the tracker, the clock."""

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
        self.tracker = PodTracker(trace)
        suffix = secrets.token_hex(3)
        label = re.sub(r"[^a-z0-9-]", "-", options.scheduler.label.lower()).strip("-")[:40]
        self.namespace = f"replay-{label}-{suffix}"
        self.created_classes: list[str] = []
        self.namespace_created = False
        self.slots = asyncio.Semaphore(_WRITE_SLOTS)
        self.write_errors: list[str] = []
        self.max_lag_s = 0.0
        self.watcher: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------- setup
    async def check_nodes(self) -> None:
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

    async def create_priority_classes(self) -> None:
        for level in range(1, self.trace.priorities + 1):
            name = priority_class_name(level)
            try:
                existing = await self.scheduling.read_priority_class(name)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    raise
            else:
                if existing.value != _priority_value(level):
                    raise ReplayError(
                        f"PriorityClass {name} exists with value {existing.value}, not "
                        f"{_priority_value(level)}; it is not the replayer's, so it is left alone"
                    )
                continue
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "labels": {REPLAY_LABEL: "true"}},
                "value": _priority_value(level),
                "description": f"opsche trace replay, priority level {level}",
            }
            await self.scheduling.create_priority_class(body)
            self.created_classes.append(name)

    async def create_namespace(self) -> None:
        body = {"metadata": {"name": self.namespace, "labels": {REPLAY_LABEL: "true"}}}
        await self.core.create_namespace(body)
        self.namespace_created = True

    # ---------------------------------------------------------------- watch
    async def watch_pods(self) -> None:
        """Feed the tracker every pod event of the namespace until cancelled."""
        version = ""
        known: dict[str, dict[str, Any]] = {}
        while True:
            if not version:
                listing = await self.core.list_namespaced_pod(
                    self.namespace, _preload_content=False
                )
                data = json.loads(await listing.read())
                now = time.monotonic()
                seen = set()
                for item in data["items"]:
                    seen.add(item["metadata"]["name"])
                    known[item["metadata"]["name"]] = item
                    self.tracker.observe("MODIFIED", item, now)
                for name in set(known) - seen:  # deleted while the watch was away
                    self.tracker.observe("DELETED", known.pop(name), now)
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
                        self.tracker.observe(kind, obj, time.monotonic())
            except client.exceptions.ApiException as exc:
                version = ""  # 410 Gone, or the API server refused: list again
                if exc.status != 410:
                    await asyncio.sleep(1)
            except (TimeoutError, OSError, aiohttp.ClientError):
                version = ""  # the API server is away; list again, which catches up
                await asyncio.sleep(1)

    # ---------------------------------------------------------------- writes
    async def create_workload(self, workload: Workload) -> None:
        body = replicaset_manifest(workload, self.trace, self.options.scheduler.scheduler_name)
        async with self.slots:
            try:
                await self.apps.create_namespaced_replica_set(self.namespace, body)
            except client.exceptions.ApiException as exc:
                self.write_errors.append(f"create {workload.name}: {exc.status} {exc.reason}")

    async def delete_workload(self, workload: Workload) -> None:
        self.tracker.workload_ended(workload.name, time.monotonic())
        async with self.slots:
            try:
                await self.apps.delete_namespaced_replica_set(
                    workload.name, self.namespace, propagation_policy="Background"
                )
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    self.write_errors.append(f"delete {workload.name}: {exc.status} {exc.reason}")

    # ---------------------------------------------------------------- phases
    async def place_initial(self) -> dict[str, float]:
        initial = [w for w in self.trace.workloads if w.initial]
        wanted = sum(w.replicas for w in initial)
        started = time.monotonic()
        await asyncio.gather(*(self.create_workload(w) for w in initial))
        last_change = time.monotonic()
        last_unplaced = -1
        while True:
            now = time.monotonic()
            seen = sum(1 for p in self.tracker.pods.values() if p.workload.initial)
            unplaced = self.tracker.unplaced(initial=True)
            if seen >= wanted and unplaced == 0:
                break
            if unplaced != last_unplaced:
                last_unplaced, last_change = unplaced, now
            if seen >= wanted and now - last_change >= self.options.initial_settle_s:
                break
            if now - started >= self.options.initial_timeout_s:
                break
            await asyncio.sleep(_POLL_S)
        unplaced = self.tracker.unplaced(initial=True)
        took = time.monotonic() - started
        self.out(
            f"  initial state: {wanted - unplaced}/{wanted} pods running after {took:.1f}s"
            + (
                f" ({unplaced} still pending: the scheduler could not place them)"
                if unplaced
                else ""
            )
        )
        return {"initial_pods": wanted, "initial_unplaced": unplaced, "initial_s": took}

    async def timeline(self, t0: float, duration: float) -> None:
        scale = self.options.time_scale
        events: list[tuple[float, int, Workload]] = []
        for w in self.trace.workloads:
            if not w.initial and w.start_s / scale < duration:
                events.append((w.start_s / scale, 1, w))
            if w.end_s / scale < duration:
                events.append((w.end_s / scale, 0, w))
        events.sort(key=lambda e: (e[0], e[1], e[2].name))
        pending: set[asyncio.Task[None]] = set()
        for at, kind, workload in events:
            delay = t0 + at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                self.max_lag_s = max(self.max_lag_s, -delay)
            job = self.create_workload(workload) if kind == 1 else self.delete_workload(workload)
            task = asyncio.create_task(job)
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)

    async def sample_loop(self, t0: float, duration: float, samples: list[Sample]) -> None:
        tick = 1
        next_progress = self.options.progress_every_s
        while tick <= duration:
            delay = t0 + tick - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.watcher is not None and self.watcher.done():
                self.watcher.result()  # a dead watch must stop the replay, not freeze its samples
                raise ReplayError("the pod watch ended")
            sample = self.tracker.sample(float(tick))  # the nominal tick: 1, 2, ... duration
            samples.append(sample)
            if sample.t >= next_progress:
                next_progress += self.options.progress_every_s
                mean = sum(s.effective for s in samples) / len(samples)
                self.out(
                    f"  {self.options.scheduler.label}: {sample.t:5.0f}/{duration:.0f}s  "
                    f"usage {sample.effective:6.1%} (mean {mean:6.1%})  "
                    f"running {sample.running}  pending {sample.pending}  "
                    f"disruptions {self.tracker.disruptions()}"
                )
            tick += 1

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


def _counter_deltas(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> dict[str, int] | None:
    if before is None or after is None:
        return None
    return {key: round(after[key] - before[key]) for key in COUNTERS}


def _scrape(url: str | None, out: Printer) -> dict[str, float] | None:
    if url is None:
        return None
    try:
        return scrape_counters(url)
    except OSError as exc:
        out(f"  could not read the scheduler's metrics at {url}: {exc}")
        return None


async def _finish_cleanup(task: asyncio.Future[None]) -> None:
    """Await the cleanup to its end, even if the replay is cancelled again meanwhile.

    A second Ctrl-C (or SIGTERM) while the namespace is being deleted cancels the main task;
    the cleanup keeps going, and the cancellation is raised again once it is done.
    """
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


async def replay(
    api: client.ApiClient,
    trace: Trace,
    trace_info: dict[str, Any],
    options: ReplayOptions,
    out: Printer = print,
) -> ReplayResult:
    """Replay ``trace`` once; return the result. Everything it created is deleted on the way out."""
    if options.time_scale <= 0:
        raise ReplayError(f"time scale must be positive, got {options.time_scale:g}")
    run = _Replay(api, trace, options, out)
    await run.check_nodes()
    duration = options.real_duration(trace)
    wall_start = time.monotonic()
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    watcher: asyncio.Task[None] | None = None
    try:
        await run.create_priority_classes()
        await run.create_namespace()
        watcher = asyncio.create_task(run.watch_pods(), name="replay-watch")
        run.watcher = watcher
        initial = await run.place_initial()
        before = await asyncio.to_thread(_scrape, options.metrics_url, out)
        t0 = time.monotonic()
        samples: list[Sample] = []
        out(
            f"  replaying {sum(1 for w in trace.workloads if not w.initial)} arriving workloads "
            f"for {duration:.0f}s (time scale {options.time_scale:g})"
        )
        await asyncio.gather(run.timeline(t0, duration), run.sample_loop(t0, duration, samples))
        if watcher.done():
            watcher.result()  # a watch that died is a broken replay, not a quiet one
        after = await asyncio.to_thread(_scrape, options.metrics_url, out)
        counters = _counter_deltas(before, after)
        pods = run.tracker.records(t0)
        summary = summarise(
            trace,
            samples,
            pods,
            duration,
            solver_runs=None if counters is None else counters["solver_runs"],
            plan_activations=None if counters is None else counters["plan_activations"],
            time_scale=options.time_scale,
        )
        environment: dict[str, Any] = {
            **initial,
            "namespace": run.namespace,
            "max_lag_s": round(run.max_lag_s, 3),
            "write_errors": run.write_errors,
            "foreign_pods": run.tracker.foreign,
        }
        if counters is not None:
            environment["scheduler_counters"] = counters
        return ReplayResult(
            trace=trace_info,
            scheduler=options.scheduler,
            time_scale=options.time_scale,
            duration_s=duration,
            wall_s=time.monotonic() - wall_start,
            samples=tuple(samples),
            pods=tuple(pods),
            summary=summary,
            started_at=started_at,
            environment=environment,
        )
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        await _finish_cleanup(asyncio.ensure_future(run.cleanup()))
