"""``opsche cluster up|status|down``: one local control plane, started and stopped by PID.

``up`` is idempotent: on a running cluster it only reconciles what was asked (the KWOK nodes,
whether kube-scheduler runs); a cluster left half-dead by a crash is stopped and started afresh.
Every failure names the component and shows the tail of its log, because "the API server did not
come up" is useless without the reason.

State (certificates, etcd data, logs, kubeconfig, the PIDs we started) lives in one directory,
``$OPSCHE_STATE_DIR`` or ``~/.local/state/opsche/cluster`` by default, so ``down`` can remove
exactly what ``up`` made.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from opsche_daemon.localcluster import process
from opsche_daemon.localcluster.api import ApiError, LocalApi, http_ok, write_kubeconfig
from opsche_daemon.localcluster.build import Builder
from opsche_daemon.localcluster.components import (
    AUDIT_POLICY,
    COMPONENTS,
    KWOK_NODE_ANNOTATION,
    PORT_NAMES,
    Layout,
    argv_for,
    health_url,
    scheduler_config,
)
from opsche_daemon.localcluster.pki import ensure_pki
from opsche_daemon.localcluster.versions import Versions, cache_root
from opsche_daemon.model.quantity import QuantityError, parse_quantity

__all__ = [
    "ClusterError",
    "ClusterSpec",
    "ComponentStatus",
    "LocalCluster",
    "default_state_dir",
    "down_command",
]

Printer = Callable[[str], None]

NODE_PREFIX = "kwok-node-"
MANAGED_LABEL = "opsche.dev/local-cluster"
_STATE_FILE = "state.json"
_COMPONENT_TIMEOUT_S = 90.0
_NODES_TIMEOUT_S = 60.0
_POLL_S = 0.1


class ClusterError(RuntimeError):
    """A user-facing failure of ``opsche cluster``; the message says what and why."""


@dataclass(frozen=True)
class ClusterSpec:
    """What ``up`` was asked for."""

    nodes: int = 4
    node_cpu: str = "4"
    node_memory: str = "16Gi"
    node_pods: int = 110
    default_scheduler: bool = True
    ports: dict[str, int] = field(default_factory=dict)
    # Top-level KubeSchedulerConfiguration YAML appended to kube-scheduler's config (the tests'
    # ``extenders:`` list, so the real kube-scheduler runs with the same fragment as opsche).
    scheduler_extra_config: str = ""

    def validate(self) -> None:
        """Raise ``ClusterError`` with a plain message for any bad input."""
        if self.nodes < 0:
            raise ClusterError(f"--nodes must be 0 or more, not {self.nodes}")
        if self.node_pods < 1:
            raise ClusterError(f"--node-pods must be at least 1, not {self.node_pods}")
        for flag, text in (("--node-cpu", self.node_cpu), ("--node-memory", self.node_memory)):
            try:
                value = parse_quantity(text)
            except QuantityError as exc:
                raise ClusterError(f"{flag}: {exc}") from None
            if value <= 0:
                raise ClusterError(f"{flag} must be positive, not {text!r}")
        for name, port in self.ports.items():
            if name not in PORT_NAMES:
                raise ClusterError(
                    f"--port {name}=...: unknown component; choose from {', '.join(PORT_NAMES)}"
                )
            if not 1 <= port <= 65535:
                raise ClusterError(f"--port {name}={port}: a port is between 1 and 65535")


@dataclass(frozen=True)
class ComponentStatus:
    """One line of ``opsche cluster status``."""

    name: str
    pid: int
    running: bool
    log: Path


def default_state_dir() -> Path:
    """``$OPSCHE_STATE_DIR``, else ``$XDG_STATE_HOME/opsche/cluster``, else ``~/.local/state``."""
    explicit = os.environ.get("OPSCHE_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return _standard_state_dir()


def _standard_state_dir() -> Path:
    """The default without ``$OPSCHE_STATE_DIR``: ``$XDG_STATE_HOME`` or ``~/.local/state``."""
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "opsche" / "cluster"


def down_command(state_dir: Path) -> str:
    """The command that stops the cluster in ``state_dir``, for hints a user copies.

    ``--state-dir`` is spelt out unless it is the default without ``$OPSCHE_STATE_DIR``: a hint
    read in another shell (where that variable is not set) must still name the right cluster.
    """
    command = ".venv/bin/opsche cluster down"
    if state_dir.resolve() == _standard_state_dir().resolve():
        return command
    return f"{command} --state-dir {state_dir}"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_ports(requested: dict[str, int]) -> dict[str, int]:
    """Configured ports (checked free) plus free ones below Linux's ephemeral range.

    Choosing outside 32768-60999 keeps our listeners from colliding with the source ports of
    outgoing connections the components open among themselves.
    """
    ports: dict[str, int] = {}
    for name, port in requested.items():
        if not _port_free(port):
            raise ClusterError(f"port {port} for {name} is already in use on 127.0.0.1")
        ports[name] = port
    rng = random.Random()  # noqa: S311 - port choice, not cryptography
    used = set(ports.values())
    for name in PORT_NAMES:
        if name in ports:
            continue
        for _ in range(200):
            candidate = rng.randrange(20000, 32000)
            if candidate not in used and _port_free(candidate):
                ports[name] = candidate
                used.add(candidate)
                break
        else:
            raise ClusterError(f"found no free port on 127.0.0.1 for {name}")
    return ports


class LocalCluster:
    """One local control plane rooted at ``state_dir``."""

    def __init__(
        self,
        state_dir: Path,
        versions: Versions,
        *,
        cache: Path | None = None,
        out: Printer = print,
    ) -> None:
        self.state_dir = state_dir
        self.versions = versions
        self.builder = Builder(versions, cache or cache_root(), out=out)
        self.out = out

    # ------------------------------------------------------------------ state
    @property
    def kubeconfig(self) -> Path:
        """Stable path of the admin kubeconfig."""
        return self.state_dir / "kubeconfig"

    def _state_path(self) -> Path:
        return self.state_dir / _STATE_FILE

    def _load(self) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(self._state_path().read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as exc:
            raise ClusterError(
                f"the cluster state file {self._state_path()} is unreadable ({exc}); "
                f"run `{down_command(self.state_dir)}` to clear it"
            ) from None
        return data

    def _save(self, data: dict[str, Any]) -> None:
        tmp = self._state_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(self._state_path())

    def _layout(self, ports: dict[str, int]) -> Layout:
        return Layout(
            state_dir=self.state_dir,
            bin_dir=self.builder.bin_dir,
            stage_files=tuple(self.builder.stage_files()),
            ports=ports,
        )

    @staticmethod
    def _processes(data: dict[str, Any]) -> list[process.Managed]:
        return [process.Managed.from_json(p) for p in data.get("processes", [])]

    # ------------------------------------------------------------------ up
    def up(self, spec: ClusterSpec) -> Layout:
        """Bring the cluster to ``spec``; return its layout. Raises ``ClusterError``."""
        spec.validate()
        started_at = time.monotonic()
        if not self.builder.complete():
            self.out("control-plane binaries are not cached yet; building them first")
            self.builder.build()
        data = self._load()
        if data is not None and data.get("versions") != self.versions.key:
            self.out(
                f"the cluster in {self.state_dir} runs other versions ({data.get('versions')}); "
                "replacing it"
            )
            self.down()
            data = None
        if data is not None:
            dead = [p.name for p in self._processes(data) if not p.alive()]
            layout = self._layout({k: int(v) for k, v in data["ports"].items()})
            wanted = self._wanted(spec)
            missing_core = [c for c in wanted if c != "kube-scheduler" and c not in data["started"]]
            if (
                not dead
                and not missing_core
                and http_ok(health_url("kube-apiserver", layout), pki=layout.pki)
            ):
                self.out(f"the local cluster in {self.state_dir} is already running; reconciling")
                self._reconcile_scheduler(data, layout, spec)
                self._reconcile_nodes(layout, spec)
                data["spec"] = asdict(spec)
                self._save(data)
                return layout
            self.out(
                f"the cluster in {self.state_dir} is not healthy "
                f"({', '.join(dead) or 'incomplete'} not running); starting it afresh"
            )
            self.down()
        return self._fresh_up(spec, started_at)

    @staticmethod
    def _wanted(spec: ClusterSpec) -> list[str]:
        return [c for c in COMPONENTS if c != "kube-scheduler" or spec.default_scheduler]

    def _fresh_up(self, spec: ClusterSpec, started_at: float) -> Layout:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        ports = _pick_ports(spec.ports)
        layout = self._layout(ports)
        ensure_pki(layout.pki.directory)
        write_kubeconfig(layout.kubeconfig, layout.server, layout.pki)
        layout.scheduler_config_file.write_text(
            scheduler_config(layout) + spec.scheduler_extra_config
        )
        layout.audit_policy_file.write_text(AUDIT_POLICY)
        data: dict[str, Any] = {
            "versions": self.versions.key,
            "ports": ports,
            "spec": asdict(spec),
            "processes": [],
            "started": [],
        }
        self._save(data)
        try:
            for name in self._wanted(spec):
                self._start_component(name, layout, data)
            api = LocalApi(layout.server, layout.pki)
            self._await(
                "the default ServiceAccount (created by kube-controller-manager)",
                lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"),
                _COMPONENT_TIMEOUT_S,
                "kube-controller-manager",
                data,
            )
            self._reconcile_nodes(layout, spec)
        except BaseException:
            # Leave no orphan processes behind; keep the logs for the user to read.
            for managed in reversed(self._processes(data)):
                process.stop(managed)
            data["processes"], data["started"] = [], []
            self._save(data)
            raise
        self.out(
            f"local cluster up in {time.monotonic() - started_at:.1f}s: {spec.nodes} KWOK node(s), "
            f"API server {layout.server}"
        )
        return layout

    def _start_component(self, name: str, layout: Layout, data: dict[str, Any]) -> None:
        managed = process.start(
            name, argv_for(name, layout), layout.log_dir / f"{name}.log", self.state_dir
        )
        data["processes"].append(managed.to_json())
        data["started"].append(name)
        self._save(data)
        url = health_url(name, layout)
        pki = layout.pki if name == "kube-apiserver" else None
        self._await(f"{name} to become healthy ({url})", lambda: http_ok(url, pki=pki),
                    _COMPONENT_TIMEOUT_S, name, data)  # fmt: skip
        self.out(f"  {name} is up (pid {managed.pid})")

    def _await(
        self,
        what: str,
        condition: Callable[[], bool],
        timeout: float,
        culprit: str,
        data: dict[str, Any],
    ) -> None:
        """Poll ``condition`` until true; fail fast, with a log tail, if a component exits."""
        deadline = time.monotonic() + timeout
        while True:
            for managed in self._processes(data):
                if not managed.alive():
                    raise ClusterError(
                        f"{managed.name} exited while waiting for {what}. "
                        f"Last lines of {managed.log}:\n{process.log_tail(managed.log)}"
                    )
            try:
                if condition():
                    return
            except ApiError:
                pass
            if time.monotonic() > deadline:
                log = self.state_dir / "logs" / f"{culprit}.log"
                raise ClusterError(
                    f"timed out after {timeout:.0f}s waiting for {what}. "
                    f"Last lines of {log}:\n{process.log_tail(log)}"
                )
            time.sleep(_POLL_S)

    def _reconcile_scheduler(self, data: dict[str, Any], layout: Layout, spec: ClusterSpec) -> None:
        running = "kube-scheduler" in data["started"]
        if spec.default_scheduler and not running:
            self._start_component("kube-scheduler", layout, data)
        elif not spec.default_scheduler and running:
            for managed in self._processes(data):
                if managed.name == "kube-scheduler":
                    process.stop(managed)
            data["processes"] = [p for p in data["processes"] if p["name"] != "kube-scheduler"]
            data["started"] = [n for n in data["started"] if n != "kube-scheduler"]
            self._save(data)
            self.out("  kube-scheduler stopped (--no-default-scheduler)")

    # ------------------------------------------------------------------ nodes
    def _reconcile_nodes(self, layout: Layout, spec: ClusterSpec) -> None:
        """Make exactly ``spec.nodes`` KWOK nodes exist with the asked capacity, all Ready."""
        api = LocalApi(layout.server, layout.pki)
        selector = f"{MANAGED_LABEL}=true"
        existing = {
            item["metadata"]["name"]: item
            for item in api.get(f"/api/v1/nodes?labelSelector={selector}")["items"]
        }
        wanted = {f"{NODE_PREFIX}{i}" for i in range(spec.nodes)}
        resources = {"cpu": spec.node_cpu, "memory": spec.node_memory, "pods": str(spec.node_pods)}
        for name in sorted(set(existing) - wanted):
            api.request("DELETE", f"/api/v1/nodes/{name}")
        for name in sorted(wanted):
            node = existing.get(name)
            if node is None:
                api.request("POST", "/api/v1/nodes", node_object(name, resources))
            elif not _same_resources(node.get("status", {}).get("allocatable", {}), resources):
                api.request_merge_patch(
                    f"/api/v1/nodes/{name}/status",
                    {"status": {"capacity": resources, "allocatable": resources}},
                )

        def all_ready() -> bool:
            items = api.get(f"/api/v1/nodes?labelSelector={selector}")["items"]
            ready = {
                item["metadata"]["name"]
                for item in items
                if _is_ready(item)
                and not _condition_taints(item)
                and _same_resources(item["status"].get("allocatable", {}), resources)
            }
            return ready == wanted and len(items) == len(wanted)

        data = self._load() or {}
        self._await(
            f"{spec.nodes} KWOK node(s) to be Ready and untainted",
            all_ready,
            _NODES_TIMEOUT_S,
            "kwok",
            data,
        )

    def restart(self, name: str) -> None:
        """Stop one component and start it again with the same flags and ports.

        For resilience tests: clients must survive an API server restart without losing work.
        """
        data = self._load()
        if data is None:
            raise ClusterError(f"no local cluster in {self.state_dir}")
        layout = self._layout({k: int(v) for k, v in data["ports"].items()})
        kept = []
        for managed in self._processes(data):
            if managed.name == name:
                process.stop(managed)
            else:
                kept.append(managed.to_json())
        if len(kept) == len(data["processes"]):
            raise ClusterError(f"{name} is not a running component of this cluster")
        data["processes"] = kept
        data["started"] = [n for n in data["started"] if n != name]
        self._start_component(name, layout, data)

    # ------------------------------------------------------------------ status / down
    def status(self) -> tuple[list[ComponentStatus], dict[str, Any] | None]:
        """Each recorded component and whether it runs, plus the saved state (None: no cluster)."""
        data = self._load()
        if data is None:
            return [], None
        rows = [ComponentStatus(p.name, p.pid, p.alive(), p.log) for p in self._processes(data)]
        return rows, data

    def node_summary(self, data: dict[str, Any]) -> tuple[int, int]:
        """(Ready KWOK nodes, all KWOK nodes) as the API server reports them."""
        layout = self._layout({k: int(v) for k, v in data["ports"].items()})
        api = LocalApi(layout.server, layout.pki, timeout=5.0)
        items = api.get(f"/api/v1/nodes?labelSelector={MANAGED_LABEL}=true")["items"]
        return sum(1 for item in items if _is_ready(item)), len(items)

    def down(self) -> list[str]:
        """Stop every process ``up`` started (by PID) and remove the state directory."""
        stopped: list[str] = []
        try:
            data = self._load()
        except ClusterError:
            data = None
        if data is not None:
            for managed in reversed(self._processes(data)):
                if process.stop(managed):
                    stopped.append(managed.name)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        return stopped


def node_object(name: str, resources: dict[str, str]) -> dict[str, Any]:
    """A KWOK node as ``up`` registers it (the virtual-time replay registers the same)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                MANAGED_LABEL: "true",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "spec": {"providerID": f"kwok://{name}"},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def _quantities(values: dict[str, str]) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for key, value in values.items():
        try:
            out[key] = parse_quantity(value)
        except QuantityError:
            continue
    return out


def _same_resources(actual: dict[str, str], wanted: dict[str, str]) -> bool:
    have = _quantities(actual)
    return all(have.get(k) == v for k, v in _quantities(wanted).items())


def _condition_taints(node: dict[str, Any]) -> list[str]:
    """Taints the system puts on a node that is not ready yet (``node.kubernetes.io/not-ready``).

    The TaintNodesByCondition admission plugin adds ``not-ready:NoSchedule`` to every new node and
    kube-controller-manager removes it only after it sees the node Ready. A node whose status is
    Ready may still carry it for a moment, during which schedulers skip the node; ``up`` must not
    return before it is gone, or the first pods all land on whichever node was untainted first.
    """
    taints = node.get("spec", {}).get("taints") or []
    return [t["key"] for t in taints if str(t.get("key", "")).startswith("node.kubernetes.io/")]


def _is_ready(node: dict[str, Any]) -> bool:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False
