"""``opsche bench extender``: what a scoring service in the loop costs opsche, measured.

Seed 002's operational experiment, on a local cluster: ``opsche score serve`` (the free-cpu
scorer, with ``--filter`` and a cluster view) is configured as an ignorable extender of opsche,
with latency injected into the service (``--delay``), and the seed's workload (5 pod profiles x
8 pods) is created at once. For every scenario the figures are read from opsche's own debug log
(one line per extender call with its duration, one per scheduling cycle with its duration), so
they are exact, not histogram estimates:

* pods scheduled, and the extender call latency p50/p99 (filter and prioritize) and the whole
  scheduling cycle's p50/p99, at each injected delay;
* opsche without the extender, as the baseline of the cycle's cost;
* the timeout behaviour: the service slower than ``httpTimeout``, and the service down, with
  ``ignorable: true``: every pod must still be scheduled;
* the service's resident memory after the run (its ``process_resident_memory_bytes``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config

from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import free_port, start_opsche
from opsche_daemon.localcluster.versions import load_versions

__all__ = ["Scenario", "ScenarioResult", "format_results", "run_extender_bench"]

Printer = Callable[[str], None]
# The seed's heterogeneous workload: five profiles (cpu, memory), eight pods each.
PROFILES = (("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi"), ("750m", "1Gi"), ("1", "2Gi"))


@dataclass(frozen=True)
class Scenario:
    """One run: the injected delay, the extender's timeout, and whether the service is up."""

    label: str
    delay_ms: float | None  # None: no extender configured at all (the baseline)
    timeout_ms: float = 2000.0  # the seed's plugin timeout
    service_up: bool = True


@dataclass
class ScenarioResult:
    """What one scenario measured (milliseconds; None where nothing was measured)."""

    label: str
    pods: int
    scheduled: int
    filter_p50: float | None
    filter_p99: float | None
    prioritize_p50: float | None
    prioritize_p99: float | None
    cycle_p50: float | None
    cycle_p99: float | None
    extender_failures: int
    service_rss_mib: float | None


def _percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@contextmanager
def _service(port: int, delay_ms: float, kubeconfig: Path, log: Path) -> Iterator[int]:
    argv = [sys.executable, "-m", "opsche_daemon.cli.main", "score", "serve",
            "--model", "free-cpu", "--filter", "--port", str(port),
            "--delay", str(delay_ms), "--kubeconfig", str(kubeconfig)]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:  # its /healthz says when its view has synced; nothing else to await
            if process.poll() is not None:
                raise RuntimeError(f"opsche score serve exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if b"(synced)" in r.read():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"opsche score serve not ready: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield process.pid
    finally:
        process.terminate()
        process.wait(timeout=15)


def _service_rss_mib(port: int) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    found = re.search(r"^process_resident_memory_bytes ([0-9.e+]+)$", text, re.MULTILINE)
    return float(found.group(1)) / 2**20 if found else None


def _pod(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "opsche",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }


async def _burst(kubeconfig: Path, namespace: str, pods: int, within: float) -> int:
    """Create the workload at once; return how many pods were bound within ``within`` s."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        core = client.CoreV1Api(api)
        await core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace))
        )
        names = [f"p-{i:03d}" for i in range(pods)]
        await asyncio.gather(
            *(
                core.create_namespaced_pod(namespace, _pod(n, *PROFILES[i % len(PROFILES)]))  # type: ignore[arg-type]
                for i, n in enumerate(names)
            )
        )
        deadline = time.monotonic() + within
        bound = 0
        while time.monotonic() < deadline:  # a LIST per second: 40 pods, bounded wait
            listing = await core.list_namespaced_pod(namespace)
            bound = sum(1 for p in listing.items if p.spec.node_name)
            if bound == pods:
                break
            await asyncio.sleep(1.0)
        await core.delete_namespace(namespace)
        return bound


def _parse_log(log: Path) -> tuple[dict[str, list[float]], list[float], int]:
    """Extender call seconds by verb (successful calls), cycle seconds, failed calls."""
    calls: dict[str, list[float]] = {"filter": [], "prioritize": []}
    cycles: list[float] = []
    failures = 0
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == "extender call":
            if record.get("result") == "ok":
                calls[str(record["verb"])].append(float(record["seconds"]))
            else:
                failures += 1
        elif record.get("event") == "pod assumed" and "cycle_s" in record:
            cycles.append(float(record["cycle_s"]))
    return calls, cycles, failures


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


def _run_scenario(
    layout: Layout, scenario: Scenario, pods: int, work: Path, index: int, out: Printer
) -> ScenarioResult:
    port = free_port()
    settings: dict[str, Any] = {}
    if scenario.delay_ms is not None:
        settings["extenders"] = [
            {
                "urlPrefix": f"http://127.0.0.1:{port}",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "httpTimeout": f"{scenario.timeout_ms:g}ms",
                "ignorable": True,
            }
        ]
    config_file = work / f"opsche-{index}.yaml"
    config_file.write_text(json.dumps(settings))
    log = work / f"opsche-{index}.log"
    rss = None
    out(f"[{index + 1}] {scenario.label}: {pods} pods")
    with _scenario_service(scenario, port, layout, work, index) as service_up:
        daemon = start_opsche(
            layout.kubeconfig, log, ["--config", str(config_file), "--log-level", "debug"]
        )
        try:
            within = 60 + pods * 2 * scenario.timeout_ms / 1000
            scheduled = asyncio.run(_burst(layout.kubeconfig, f"bench-{index}", pods, within))
        finally:
            daemon.stop()
        if service_up:
            rss = _service_rss_mib(port)
    calls, cycles, failures = _parse_log(log)
    result = ScenarioResult(
        label=scenario.label,
        pods=pods,
        scheduled=scheduled,
        filter_p50=_ms(_percentile(calls["filter"], 50)),
        filter_p99=_ms(_percentile(calls["filter"], 99)),
        prioritize_p50=_ms(_percentile(calls["prioritize"], 50)),
        prioritize_p99=_ms(_percentile(calls["prioritize"], 99)),
        cycle_p50=_ms(_percentile(cycles, 50)),
        cycle_p99=_ms(_percentile(cycles, 99)),
        extender_failures=failures,
        service_rss_mib=None if rss is None else round(rss, 1),
    )
    out(f"    scheduled {scheduled}/{pods}, cycle p50 {result.cycle_p50} ms")
    return result


@contextmanager
def _scenario_service(
    scenario: Scenario, port: int, layout: Layout, work: Path, index: int
) -> Iterator[bool]:
    """The service for a scenario that has one up; yields whether it is up."""
    if scenario.delay_ms is None or not scenario.service_up:
        yield False
        return
    with _service(port, scenario.delay_ms, layout.kubeconfig, work / f"serve-{index}.log"):
        yield True


def default_scenarios(delays: Sequence[float]) -> list[Scenario]:
    """The baseline, each delay with the seed's 2 s timeout, then the two failure modes."""
    scenarios = [Scenario("no extender", None)]
    scenarios += [Scenario(f"delay {d:g} ms", d) for d in delays]
    scenarios.append(Scenario("delay 300 ms > httpTimeout 100ms", 300.0, timeout_ms=100.0))
    scenarios.append(Scenario("service down", 0.0, service_up=False))
    return scenarios


def run_extender_bench(
    delays: Sequence[float], pods: int, nodes: int, out: Printer = print
) -> list[ScenarioResult]:
    """Every scenario on one local cluster of 8-core, 32Gi nodes (kube-scheduler off), in turn."""
    with tempfile.TemporaryDirectory(prefix="opsche-bench-extender-") as tmp:
        work = Path(tmp)
        cluster = LocalCluster(work / "cluster", load_versions(), out=out)
        spec = ClusterSpec(nodes=nodes, node_cpu="8", node_memory="32Gi", default_scheduler=False)
        layout = cluster.up(spec)
        try:
            return [
                _run_scenario(layout, scenario, pods, work, index, out)
                for index, scenario in enumerate(default_scenarios(delays))
            ]
        finally:
            cluster.down()


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def format_results(results: Sequence[ScenarioResult]) -> str:
    """A Markdown table, one row per scenario."""
    lines = [
        "| scenario | scheduled | filter p50 / p99 ms | prioritize p50 / p99 ms | "
        "cycle p50 / p99 ms | failed calls | service RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.label} | {r.scheduled}/{r.pods} | {_cell(r.filter_p50)} / "
            f"{_cell(r.filter_p99)} | {_cell(r.prioritize_p50)} / {_cell(r.prioritize_p99)} | "
            f"{_cell(r.cycle_p50)} / {_cell(r.cycle_p99)} | {r.extender_failures} | "
            f"{_cell(r.service_rss_mib)} |"
        )
    return "\n".join(lines)


def results_json(results: Sequence[ScenarioResult]) -> str:
    """The results with the machine they ran on."""
    return json.dumps({"results": [asdict(r) for r in results], "cpus": os.cpu_count()}, indent=2)
