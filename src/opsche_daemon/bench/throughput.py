"""``opsche bench throughput``: a burst of pods, scheduled by kube-scheduler and by opsche.

Both runs happen on the same local cluster, one after the other (two cores cannot run two control
planes and two schedulers without each disturbing the other), with the same pods created the same
way. kube-scheduler runs at its default client settings (QPS 50, burst 100); opsche at its own
defaults, which are the same unless a config file says otherwise.

What is measured, from one watch on the benchmark namespace:

* per pod, the time from the watch first seeing it (created) to the watch seeing it bound;
* throughput: pods bound divided by the time from the first creation to the last binding;
* the peak resident memory (VmHWM) of each scheduler process at the end of its run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config, watch

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import start_opsche
from opsche_daemon.localcluster.versions import load_versions

__all__ = ["BenchOptions", "RunResult", "run_throughput"]

Printer = Callable[[str], None]


@dataclass(frozen=True)
class BenchOptions:
    """What to run."""

    nodes: int = 100
    pods: int = 2000
    pod_cpu: str = "100m"
    pod_memory: str = "128Mi"
    timeout_s: float = 600.0
    config: Path | None = None


@dataclass
class RunResult:
    """One scheduler's figures."""

    scheduler: str
    pods: int
    bound: int
    seconds: float
    pods_per_second: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    peak_rss_mib: float | None


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _pod(name: str, scheduler: str, options: BenchOptions) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"cpu": options.pod_cpu, "memory": options.pod_memory}
                    },
                }
            ],
        },
    }


class BindRecorder:
    """Watches one namespace and records when each pod is first seen and first seen bound."""

    def __init__(self, core: client.CoreV1Api, namespace: str, expected: int) -> None:
        self.core = core
        self.namespace = namespace
        self.expected = expected
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.done = asyncio.Event()

    async def run(self, resource_version: str) -> None:
        """Watch until every expected pod is bound (or until cancelled)."""
        version = resource_version
        while not self.done.is_set():
            # return_type "object" skips building V1Pod models: the watch must keep up with
            # thousands of events without becoming the bottleneck it measures.
            w = watch.Watch(return_type="object")
            async with w.stream(
                self.core.list_namespaced_pod,
                self.namespace,
                resource_version=version,
                timeout_seconds=60,
            ) as stream:
                async for event in stream:
                    version = self._record(event["raw_object"], version)
                    if self.done.is_set():
                        return

    def _record(self, obj: Any, version: str) -> str:
        now = time.monotonic()
        meta = obj.get("metadata", {}) if isinstance(obj, dict) else {}
        name = meta.get("name")
        if name is not None:
            self.seen.setdefault(name, now)
            if (obj.get("spec") or {}).get("nodeName") and name not in self.bound:
                self.bound[name] = now
                if len(self.bound) >= self.expected:
                    self.done.set()
        return str(meta.get("resourceVersion", version))

    def result(self, scheduler: str, pid: int | None) -> RunResult:
        """Throughput and latency percentiles from what was recorded."""
        latencies = [(self.bound[n] - self.seen[n]) * 1000 for n in self.bound if n in self.seen]
        first = min(self.seen.values(), default=0.0)
        last = max(self.bound.values(), default=first)
        seconds = max(last - first, 1e-9)
        return RunResult(
            scheduler=scheduler,
            pods=self.expected,
            bound=len(self.bound),
            seconds=seconds,
            pods_per_second=len(self.bound) / seconds,
            p50_ms=_percentile(latencies, 0.50),
            p90_ms=_percentile(latencies, 0.90),
            p99_ms=_percentile(latencies, 0.99),
            max_ms=max(latencies, default=float("nan")),
            peak_rss_mib=_peak_rss_mib(pid) if pid else None,
        )


async def _measure(
    api: client.ApiClient,
    namespace: str,
    scheduler: str,
    options: BenchOptions,
    pid: int | None,
    out: Printer,
) -> RunResult:
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    listing = await core.list_namespaced_pod(namespace)
    recorder = BindRecorder(core, namespace, options.pods)
    watch_task = asyncio.create_task(
        recorder.run(listing.metadata.resource_version), name="bench-watch"
    )
    slots = asyncio.Semaphore(32)

    async def create(index: int) -> None:
        async with slots:
            await core.create_namespaced_pod(namespace, _pod(f"p-{index:05d}", scheduler, options))

    started = time.monotonic()

    async def progress() -> None:
        while not recorder.done.is_set():
            await asyncio.sleep(5)
            elapsed = time.monotonic() - started
            out(f"  {scheduler}: {len(recorder.bound)}/{options.pods} bound after {elapsed:.0f}s")

    reporter = asyncio.create_task(progress(), name="bench-progress")
    try:
        await asyncio.gather(*(create(i) for i in range(options.pods)))
        await asyncio.wait_for(recorder.done.wait(), options.timeout_s)
    except TimeoutError:
        out(f"  {scheduler}: timed out with {len(recorder.bound)}/{options.pods} bound")
    finally:
        recorder.done.set()
        reporter.cancel()
        watch_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watch_task
    result = recorder.result(scheduler, pid)
    await _delete_namespace(core, namespace, out)
    return result


async def _delete_namespace(core: client.CoreV1Api, namespace: str, out: Printer) -> None:
    """Delete the run's namespace and wait until it is gone.

    Deleting 2000 pods is a flood of API writes and watch events; the next scheduler must not be
    measured while the previous run is still being cleaned up.
    """
    await core.delete_namespace(namespace)
    started = time.monotonic()
    while time.monotonic() - started < 300:
        try:
            await core.read_namespace(namespace)
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return
            raise
        await asyncio.sleep(0.5)
    out(f"  namespace {namespace} still terminating after 300 s; continuing")


def _scheduler_pid(cluster_state: Path) -> int | None:
    data = json.loads((cluster_state / "state.json").read_text())
    for entry in data.get("processes", []):
        if entry["name"] == "kube-scheduler":
            return int(entry["pid"])
    return None


async def _run(
    layout: Layout,
    state_dir: Path,
    options: BenchOptions,
    out: Printer,
    stop_kube_scheduler: Callable[[], None],
) -> list[RunResult]:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(layout.kubeconfig), client_configuration=configuration
    )
    configuration.connection_pool_maxsize = 64
    results: list[RunResult] = []
    async with client.ApiClient(configuration) as api:
        out(f"kube-scheduler: {options.pods} pods on {options.nodes} nodes")
        results.append(
            await _measure(
                api,
                "bench-kube-scheduler",
                "default-scheduler",
                options,
                _scheduler_pid(state_dir),
                out,
            )
        )
        # Each scheduler runs alone: an idle kube-scheduler still processes every pod event.
        await asyncio.to_thread(stop_kube_scheduler)
        out(f"opsche: {options.pods} pods on {options.nodes} nodes")
        args = ["--log-level", "warning"]
        if options.config is not None:
            args += ["--config", str(options.config)]
        daemon = await asyncio.to_thread(
            start_opsche, layout.kubeconfig, state_dir / "opsche.log", args
        )
        try:
            pid = daemon.process.pid
            results.append(await _measure(api, "bench-opsche", "opsche", options, pid, out))
        finally:
            await asyncio.to_thread(daemon.stop)
    return results


def run_throughput(options: BenchOptions, out: Printer = print) -> list[RunResult]:
    """Bring up a cluster, run both schedulers, tear it down; return both results."""
    with tempfile.TemporaryDirectory(prefix="opsche-bench-") as tmp:
        state = Path(tmp) / "cluster"
        cluster = LocalCluster(state, load_versions(), out=out)
        # Enough room for every pod: the benchmark measures scheduling, not fragmentation.
        spec = ClusterSpec(nodes=options.nodes, node_cpu="8", node_memory="32Gi")
        layout = cluster.up(spec)

        def stop_kube_scheduler() -> None:
            cluster.up(replace(spec, default_scheduler=False))

        try:
            return asyncio.run(_run(layout, state, options, out, stop_kube_scheduler))
        finally:
            cluster.down()


def format_results(results: list[RunResult]) -> str:
    """The side-by-side table the command prints."""
    header = (
        f"{'scheduler':<20}{'bound':>10}{'seconds':>9}{'pods/s':>9}{'p50 ms':>9}"
        f"{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}{'peak MiB':>10}"
    )
    lines = [header]
    for r in results:
        rss = f"{r.peak_rss_mib:.0f}" if r.peak_rss_mib is not None else "?"
        lines.append(
            f"{r.scheduler:<20}{r.bound:>5}/{r.pods:<4}{r.seconds:>9.1f}{r.pods_per_second:>9.1f}"
            f"{r.p50_ms:>9.0f}{r.p90_ms:>9.0f}{r.p99_ms:>9.0f}{r.max_ms:>9.0f}{rss:>10}"
        )
    return "\n".join(lines)


def results_json(results: list[RunResult]) -> str:
    """Machine-readable form (``--json``)."""
    return json.dumps([asdict(r) for r in results], indent=2)


def environment() -> dict[str, Any]:
    """Where the benchmark ran, printed with the results."""
    return {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
