"""The replay itself, whatever runs it: the initial state, the trace's clock, the 1 s monitor.

Seed 000, Section 4.1 "Trace Replay": create the initial workloads and wait until they are placed
(or stop making progress, or a bounded time passes); from then on (t = 0) create each arriving
workload at ``start_s / time_scale`` and delete it at ``end_s / time_scale``; sample running and
pending pods every second; at the end turn the samples and the per-pod records into the summary.

Two clusters run it: a real one (``replay.replayer.KubeReplayCluster``: ReplicaSets through the
API server, one pod watch) and the in-process API of the virtual-time replay
(``opsche_daemon.simulation``). Both implement ``ReplayCluster``; the driver reads time only from
the event loop (``loop.time()``, which is ``time.monotonic()`` on a real loop and the virtual
clock under the simulation), so the two replays share every line that decides what happens when.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client.parser import text_string_to_metric_families

from opsche_daemon.trace.model import Trace, Workload
from opsche_daemon.trace.monitor import PodTracker
from opsche_daemon.trace.result import ReplayResult, Sample, SchedulerRun
from opsche_daemon.trace.summary import summarise

__all__ = [
    "COUNTERS",
    "Observe",
    "Printer",
    "ReplayCluster",
    "ReplayError",
    "ReplayOptions",
    "drive",
    "parse_counters",
]

Printer = Callable[[str], None]
Observe = Callable[[str, dict[str, Any]], None]
COUNTERS = {
    "solver_runs": "opsche_solver_runs",
    "plan_activations": "opsche_plan_activations",
    "plan_pods_moved": "opsche_plan_pods_moved",
    "plan_pods_evicted": "opsche_plan_pods_evicted",
    "plan_pods_placed": "opsche_plan_pods_placed",
    "preemption_attempts": "opsche_preemption_attempts",
}
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
    duration_s: float | None = None  # seconds of arrivals; default horizon / time_scale

    def real_duration(self, trace: Trace) -> float:
        """How long the replay runs after the initial state, in (loop) seconds."""
        return self.duration_s if self.duration_s is not None else trace.horizon_s / self.time_scale


class ReplayCluster(Protocol):
    """Where a replay's ReplicaSets go and where its pod events come from."""

    namespace: str
    write_errors: list[str]

    async def prepare(self) -> None:
        """Check the nodes against the trace; create the namespace and the PriorityClasses."""
        ...

    async def watch(self, observe: Observe) -> None:
        """Feed ``observe`` every pod event of the namespace until cancelled.

        It sees pods created from before the first write on; it returns or raises only when the
        watch cannot go on.
        """
        ...

    async def create_workload(self, body: dict[str, Any]) -> None:
        """Create one ReplicaSet (``replicaset_manifest``); failures go to ``write_errors``."""
        ...

    async def delete_workload(self, name: str) -> None:
        """Delete one ReplicaSet and, in the background, its pods."""
        ...

    async def cleanup(self) -> None:
        """Delete everything ``prepare`` and the workloads created."""
        ...


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


Counters = Callable[[], Awaitable[dict[str, float] | None]]
Manifest = Callable[[Workload], dict[str, Any]]


async def _no_counters() -> dict[str, float] | None:
    return None


@dataclass
class _Run:
    """One replay's state: the cluster, the tracker, the clock."""

    cluster: ReplayCluster
    trace: Trace
    options: ReplayOptions
    out: Printer
    manifest: Manifest
    tracker: PodTracker
    clock: Callable[[], float]
    max_lag_s: float = 0.0
    watcher: asyncio.Task[None] | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def observe(self, kind: str, obj: dict[str, Any]) -> None:
        self.tracker.observe(kind, obj, self.clock())

    async def create(self, workload: Workload) -> None:
        await self.cluster.create_workload(self.manifest(workload))

    async def delete(self, workload: Workload) -> None:
        self.tracker.workload_ended(workload.name, self.clock())
        await self.cluster.delete_workload(workload.name)

    async def place_initial(self) -> dict[str, float]:
        initial = [w for w in self.trace.workloads if w.initial]
        wanted = sum(w.replicas for w in initial)
        started = self.clock()
        await asyncio.gather(*(self.create(w) for w in initial))
        last_change = self.clock()
        last_unplaced = -1
        while True:
            now = self.clock()
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
            self._check_watch()
            await asyncio.sleep(_POLL_S)
        unplaced = self.tracker.unplaced(initial=True)
        took = self.clock() - started
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
        for at, kind, workload in events:
            delay = t0 + at - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                self.max_lag_s = max(self.max_lag_s, -delay)
            job = self.create(workload) if kind == 1 else self.delete(workload)
            task = asyncio.create_task(job)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        if self.tasks:
            await asyncio.gather(*self.tasks)

    def _check_watch(self) -> None:
        if self.watcher is not None and self.watcher.done():
            self.watcher.result()  # a dead watch must stop the replay, not freeze its samples
            raise ReplayError("the pod watch ended")

    async def sample_loop(self, t0: float, duration: float, samples: list[Sample]) -> None:
        tick = 1
        next_progress = self.options.progress_every_s
        while tick <= duration:
            delay = t0 + tick - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            self._check_watch()
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


def _counter_deltas(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> dict[str, int] | None:
    if before is None or after is None:
        return None
    return {key: round(after[key] - before[key]) for key in COUNTERS}


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


async def drive(
    cluster: ReplayCluster,
    trace: Trace,
    trace_info: dict[str, Any],
    options: ReplayOptions,
    manifest: Manifest,
    *,
    counters: Counters = _no_counters,
    out: Printer = print,
) -> ReplayResult:
    """Replay ``trace`` once on ``cluster``; everything it created is deleted on the way out."""
    if options.time_scale <= 0:
        raise ReplayError(f"time scale must be positive, got {options.time_scale:g}")
    loop = asyncio.get_running_loop()
    run = _Run(cluster, trace, options, out, manifest, PodTracker(trace), loop.time)
    duration = options.real_duration(trace)
    wall_start = time.monotonic()  # real seconds, also under the virtual clock
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    try:
        await cluster.prepare()
        run.watcher = asyncio.create_task(cluster.watch(run.observe), name="replay-watch")
        initial = await run.place_initial()
        before = await counters()
        t0 = run.clock()
        t0_unix = time.time()  # lines up the records with the scheduler's logs
        samples: list[Sample] = []
        out(
            f"  replaying {sum(1 for w in trace.workloads if not w.initial)} arriving workloads "
            f"for {duration:.0f}s (time scale {options.time_scale:g})"
        )
        await asyncio.gather(run.timeline(t0, duration), run.sample_loop(t0, duration, samples))
        run._check_watch()  # a watch that died is a broken replay, not a quiet one
        after = await counters()
        deltas = _counter_deltas(before, after)
        pods = run.tracker.records(t0)
        summary = summarise(
            trace,
            samples,
            pods,
            duration,
            solver_runs=None if deltas is None else deltas["solver_runs"],
            plan_activations=None if deltas is None else deltas["plan_activations"],
            time_scale=options.time_scale,
            plan_pods_placed=None if deltas is None else deltas["plan_pods_placed"],
        )
        environment: dict[str, Any] = {
            **initial,
            "namespace": cluster.namespace,
            "max_lag_s": round(run.max_lag_s, 3),
            "t0_unix": round(t0_unix, 6),
            "write_errors": cluster.write_errors,
            "foreign_pods": run.tracker.foreign,
        }
        if deltas is not None:
            environment["scheduler_counters"] = deltas
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
        for task in [run.watcher, *run.tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await _finish_cleanup(asyncio.ensure_future(cluster.cleanup()))
