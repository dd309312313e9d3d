"""The side-by-side demo: the same fragmented workload under kube-scheduler, then under opsche.

Every node has 4 cpu. One 2-cpu replica per node leaves 2 cpu free on each; then half as many
4-cpu pods arrive. The free cpu adds up to twice what they need, but no single node has 4 cpu
free, and preemption cannot help (all pods have the same priority). kube-scheduler reports them
unschedulable and leaves them pending; opsche's optimiser moves replicas together and places
them all. Both schedulers are real and see the same workload on the same cluster, one after the
other, and the demo reports what each achieved: pods running, pods pending, pods moved.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opsche_daemon.localcluster.api import ApiError, LocalApi
from opsche_daemon.localcluster.daemon_process import running_opsche

__all__ = [
    "NAMESPACES",
    "DemoOptions",
    "Outcome",
    "clear_demo_namespaces",
    "format_side_by_side",
    "plans_settled",
    "run_demo_workload",
    "run_opsche_workload",
    "summarise_plans",
    "workload_summary",
]

Printer = Callable[[str], None]  # as bench.throughput's; not imported, that pulls in the client
NAMESPACES = {"kube-scheduler": "demo-kube-scheduler", "opsche": "demo-opsche"}
SCHEDULER_NAMES = {"kube-scheduler": "default-scheduler", "opsche": "opsche"}
_POLL_S = 0.5


@dataclass(frozen=True)
class DemoOptions:
    """The demo's size and patience."""

    nodes: int
    observe_s: float = 15.0  # how long kube-scheduler is watched after it gives up
    within_s: float = 180.0  # the longest either scheduler is given


@dataclass
class Outcome:
    """What one scheduler achieved on the workload."""

    scheduler: str
    running: int
    pending: int
    moved: int  # running replicas evicted and recreated elsewhere
    watched_s: float  # from the 4-cpu pods' creation to the end of the watch
    all_placed: bool  # every pod running when the watch ended
    note: str  # kube-scheduler's FailedScheduling message, or opsche's plans


def workload_summary(nodes: int) -> str:
    """One line saying what the workload is."""
    return (
        f"{nodes} nodes of 4 cpu; {nodes} replicas of 2 cpu (one per node), "
        f"then {nodes // 2} pods of 4 cpu"
    )


def _replicaset(name: str, replicas: int, cpu: str, scheduler_name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler_name,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        }
                    ],
                },
            },
        },
    }


class _Namespace:
    """The demo's reads and writes in one namespace."""

    def __init__(self, api: LocalApi, name: str) -> None:
        self.api = api
        self.name = name

    def pods(self) -> list[dict[str, Any]]:
        return list(self.api.get(f"/api/v1/namespaces/{self.name}/pods")["items"])

    def events(self, reason: str) -> list[dict[str, Any]]:
        items = self.api.get(f"/api/v1/namespaces/{self.name}/events")["items"]
        return [e for e in items if e.get("reason") == reason]

    def create(self, body: dict[str, Any]) -> None:
        self.api.request("POST", f"/apis/apps/v1/namespaces/{self.name}/replicasets", body)

    def create_namespace(self) -> None:
        self.api.request("POST", "/api/v1/namespaces", {"metadata": {"name": self.name}})

    def delete(self, within_s: float) -> None:
        path = f"/api/v1/namespaces/{self.name}"
        try:
            self.api.request("DELETE", path)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise
        deadline = time.monotonic() + within_s
        while self.api.exists(path):
            if time.monotonic() > deadline:
                raise ApiError(f"namespace {self.name} still terminating after {within_s:.0f}s")
            time.sleep(_POLL_S)


def _running(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("nodeName")) and pod["status"].get("phase") == "Running"


def _unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in pod["status"].get("conditions") or []
    )


def _count(pods: list[dict[str, Any]], replicas: dict[str, str]) -> tuple[int, int, int]:
    """Pods running, pods pending, replicas moved (their original pod is gone)."""
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    running = sum(1 for p in live if _running(p))
    pending = sum(1 for p in live if not p["spec"].get("nodeName"))
    names = {p["metadata"]["name"] for p in pods}
    return running, pending, sum(1 for name in replicas if name not in names)


def _wait(
    what: str, check: Callable[[], bool], within_s: float, progress: Callable[[], str], out: Printer
) -> bool:
    """Poll ``check`` until it holds or ``within_s`` passes, printing progress every 5 s."""
    started = last = time.monotonic()
    while not check():
        now = time.monotonic()
        if now - started > within_s:
            out(f"  gave up waiting for {what} after {within_s:.0f}s: {progress()}")
            return False
        if now - last >= 5:
            out(f"  {now - started:4.0f}s  {progress()}")
            last = now
        time.sleep(_POLL_S)
    return True


def _place_replicas(
    ns: _Namespace, scheduler: str, options: DemoOptions, out: Printer
) -> dict[str, str]:
    ns.create(_replicaset("small", options.nodes, "2", SCHEDULER_NAMES[scheduler]))

    def placed() -> bool:
        return sum(map(_running, ns.pods())) == options.nodes

    _wait(
        "the replicas",
        placed,
        options.within_s,
        lambda: f"{sum(map(_running, ns.pods()))}/{options.nodes} replicas running",
        out,
    )
    pods = ns.pods()
    nodes = {p["spec"].get("nodeName") for p in pods if _running(p)}
    out(f"  {scheduler}: {sum(map(_running, pods))} replicas running on {len(nodes)} node(s)")
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}


def run_demo_workload(
    api: LocalApi, scheduler: str, options: DemoOptions, out: Printer, metrics_port: int = 0
) -> Outcome:
    """Create the workload for ``scheduler`` and wait for its final state."""
    ns = _Namespace(api, NAMESPACES[scheduler])
    ns.create_namespace()
    replicas = _place_replicas(ns, scheduler, options, out)
    big = options.nodes // 2
    ns.create(_replicaset("big", big, "4", SCHEDULER_NAMES[scheduler]))
    started = time.monotonic()
    total = options.nodes + big

    def progress() -> str:
        running, pending, moved = _count(ns.pods(), replicas)
        return f"{running}/{total} running, {pending} pending, {moved} moved"

    if scheduler == "kube-scheduler":

        def gave_up() -> bool:
            pods = [p for p in ns.pods() if p["metadata"]["labels"].get("app") == "big"]
            return len(pods) == big and all(_unschedulable(p) or _running(p) for p in pods)

        _wait("kube-scheduler's verdict", gave_up, options.within_s, progress, out)
        out(f"  kube-scheduler has tried every 4-cpu pod; watching {options.observe_s:.0f}s more")
        deadline = time.monotonic() + options.observe_s
        _wait("", lambda: time.monotonic() > deadline, options.observe_s + 5, progress, out)
        failed = ns.events("FailedScheduling")
        note = failed[-1].get("message", "") if failed else ""
    else:

        def done() -> bool:
            running, _, _ = _count(ns.pods(), replicas)
            return running == total

        _wait("opsche to place every pod", done, options.within_s, progress, out)
        note = _plans_note(metrics_port, len(ns.events("OpscheMoved")))
    seconds = time.monotonic() - started
    running, pending, moved = _count(ns.pods(), replicas)
    return Outcome(scheduler, running, pending, moved, seconds, running == total, note)


_SETTLE_S = 10.0  # longest wait for the plan in flight to record its outcome (> planTimeout)


def _plans_note(port: int, moved_events: int) -> str:
    """What opsche's metrics say about its plans, once every plan installed has an outcome.

    The last pod is often placed by a plan that is still converging: scraped at once, the
    summary counted one converged plan fewer than the log had.
    """
    deadline = time.monotonic() + _SETTLE_S
    while True:
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as response:
                text = response.read().decode()
        except OSError as exc:
            return f"(metrics unavailable: {exc})"
        if plans_settled(text) or time.monotonic() > deadline:
            return summarise_plans(text, moved_events)
        time.sleep(0.25)


def plans_settled(metrics_text: str) -> bool:
    """Whether every plan installed (``opsche_plan_activations_total``) has an outcome."""
    activations = finished = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("opsche_plan_activations_total "):
            activations = float(line.split()[-1])
        elif line.startswith("opsche_plan_outcomes_total{"):
            finished += float(line.split()[-1])
    return finished >= activations


def summarise_plans(metrics_text: str, moved_events: int) -> str:
    """Solver runs by result and plan outcomes, from a /metrics scrape."""
    runs: dict[str, float] = {}
    outcomes: dict[str, float] = {}
    for line in metrics_text.splitlines():
        for prefix, label, into in (
            ("opsche_solver_runs_total{", "result", runs),
            ("opsche_plan_outcomes_total{", "outcome", outcomes),
        ):
            if line.startswith(prefix):
                value = line.partition(f'{label}="')[2].partition('"')[0]
                into[value] = into.get(value, 0.0) + float(line.split()[-1])

    def listing(counts: dict[str, float]) -> str:
        return ", ".join(f"{n:.0f} {name}" for name, n in sorted(counts.items()) if n) or "none"

    return (
        f"solver runs: {listing(runs)}; plans: {listing(outcomes)}; {moved_events} OpscheMoved "
        "event(s) name the plan that moved each replica"
    )


def clear_demo_namespaces(api: LocalApi, options: DemoOptions, schedulers: tuple[str, ...]) -> None:
    """Delete the demo namespaces of ``schedulers`` and wait until they are gone.

    The nodes are small: a previous run's pods (or the first scheduler's) would leave no room.
    """
    for scheduler in schedulers:
        _Namespace(api, NAMESPACES[scheduler]).delete(options.within_s)


def run_opsche_workload(
    api: LocalApi, kubeconfig: Path, log: Path, options: DemoOptions, out: Printer
) -> Outcome:
    """Start opsche with its defaults, run the workload for it, stop it."""
    out(f"starting opsche (log: {log})")
    with running_opsche(kubeconfig, log) as daemon:
        return run_demo_workload(api, "opsche", options, out, metrics_port=daemon.port)


def format_side_by_side(outcomes: list[Outcome]) -> str:
    """The comparison table."""
    rows = [
        ("pods running", [str(o.running) for o in outcomes]),
        ("pods pending", [str(o.pending) for o in outcomes]),
        ("running pods moved", [str(o.moved) for o in outcomes]),
        (
            "all placed after",
            [f"{o.watched_s:.1f} s" if o.all_placed else "never" for o in outcomes],
        ),
        ("watched for", [f"{o.watched_s:.1f} s" for o in outcomes]),
    ]
    header = f"{'':<24}" + "".join(f"{o.scheduler:>16}" for o in outcomes)
    lines = [header] + [f"{label:<24}" + "".join(f"{v:>16}" for v in vs) for label, vs in rows]
    for outcome in outcomes:
        if outcome.note:
            lines.append(f"{outcome.scheduler}: {outcome.note}")
    return "\n".join(lines)
