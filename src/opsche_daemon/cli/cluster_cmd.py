"""``opsche cluster build|up|status|down``: the local control plane for demos, tests, benchmarks.

Only the component names (for ``--port``) are imported at the top; the builder and the cluster
are imported by the handlers, so that other ``opsche`` commands do not load them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsche_daemon.cli.errors import UserError
from opsche_daemon.localcluster.components import PORT_NAMES

if TYPE_CHECKING:
    from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
    from opsche_daemon.localcluster.components import Layout

__all__ = ["register", "run_up"]


def _say(message: str) -> None:
    # Progress goes to stderr so stdout stays clean for `eval "$(opsche cluster up ...)"`.
    print(message, file=sys.stderr, flush=True)


def _port(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not value.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not COMPONENT=PORT (components: {', '.join(PORT_NAMES)})"
        )
    return name, int(value)


def register(commands: Any) -> None:
    """Add the ``cluster`` command group to the top-level parser."""
    cluster = commands.add_parser("cluster", help="run a local control plane with KWOK nodes")
    sub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)

    def with_state(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="where the cluster keeps its files (default: $OPSCHE_STATE_DIR or "
            "~/.local/state/opsche/cluster)",
        )

    build = sub.add_parser("build", help="build the control-plane binaries (cached)")
    build.add_argument(
        "--tools",
        action="store_true",
        help="build the shipping tools instead (helm, helm-unittest, crane; cached)",
    )
    build.set_defaults(handler=_build)

    up = sub.add_parser("up", help="start the cluster (idempotent)")
    with_state(up)
    up.add_argument("--nodes", type=int, default=4, help="KWOK nodes to create (default 4)")
    up.add_argument("--node-cpu", default="4", help="cpu of each node (default 4)")
    up.add_argument("--node-memory", default="16Gi", help="memory of each node (default 16Gi)")
    up.add_argument("--node-pods", type=int, default=110, help="pods per node (default 110)")
    up.add_argument(
        "--no-default-scheduler",
        dest="default_scheduler",
        action="store_false",
        help="do not run kube-scheduler (opsche then schedules alone)",
    )
    up.add_argument(
        "--port",
        dest="ports",
        type=_port,
        action="append",
        default=[],
        metavar="COMPONENT=PORT",
        help=f"fix a port instead of a free one; COMPONENT is one of {', '.join(PORT_NAMES)}",
    )
    up.set_defaults(handler=_up)

    status = sub.add_parser("status", help="show the cluster's components and nodes")
    with_state(status)
    status.set_defaults(handler=_status)

    down = sub.add_parser("down", help="stop the cluster and remove its state")
    with_state(down)
    down.set_defaults(handler=_down)


def _cluster(state_dir: Path | None) -> LocalCluster:
    from opsche_daemon.localcluster.cluster import LocalCluster, default_state_dir  # noqa: PLC0415
    from opsche_daemon.localcluster.versions import load_versions  # noqa: PLC0415

    try:
        versions = load_versions()
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the pinned control-plane versions: {exc}") from None
    return LocalCluster(state_dir or default_state_dir(), versions, out=_say)


def _build(args: argparse.Namespace) -> int:
    from opsche_daemon.localcluster.build import Builder, BuildError  # noqa: PLC0415
    from opsche_daemon.localcluster.versions import cache_root, load_versions  # noqa: PLC0415

    if args.tools:
        return _build_tools()
    builder = Builder(load_versions(), cache_root(), out=_say)
    try:
        report = builder.build()
    except BuildError as exc:
        raise UserError(str(exc)) from None
    if not report.built:
        _say(f"control-plane binaries already cached in {report.bin_dir}; nothing to build")
    return 0


def _build_tools() -> int:
    from opsche_daemon.localcluster.build import BuildError, fmt_seconds  # noqa: PLC0415
    from opsche_daemon.localcluster.tools import ToolBuilder, load_tool_versions  # noqa: PLC0415
    from opsche_daemon.localcluster.versions import cache_root  # noqa: PLC0415

    builder = ToolBuilder(load_tool_versions(), cache_root(), out=_say)
    try:
        report = builder.build()
    except BuildError as exc:
        raise UserError(str(exc)) from None
    if report.built:
        steps = ", ".join(f"{name} {fmt_seconds(s)}" for name, s in report.steps.items())
        _say(f"tools built in {fmt_seconds(report.total_seconds)} ({steps})")
    else:
        _say(f"tools already cached in {report.bin_dir}; nothing to build")
    return 0


def run_up(state_dir: Path | None, spec: ClusterSpec) -> tuple[LocalCluster, Layout]:
    """Bring a cluster up, turning every expected failure into a ``UserError``."""
    from opsche_daemon.localcluster.build import BuildError  # noqa: PLC0415
    from opsche_daemon.localcluster.cluster import ClusterError  # noqa: PLC0415
    from opsche_daemon.localcluster.pki import PKIError  # noqa: PLC0415

    cluster = _cluster(state_dir)
    try:
        layout = cluster.up(spec)
    except (ClusterError, BuildError, PKIError) as exc:
        raise UserError(str(exc)) from None
    return cluster, layout


def _up(args: argparse.Namespace) -> int:
    from opsche_daemon.localcluster.cluster import ClusterSpec  # noqa: PLC0415

    spec = ClusterSpec(
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        node_pods=args.node_pods,
        default_scheduler=args.default_scheduler,
        ports=dict(args.ports),
    )
    _, layout = run_up(args.state_dir, spec)
    print(f"export KUBECONFIG={layout.kubeconfig}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from opsche_daemon.localcluster.cluster import ClusterError  # noqa: PLC0415

    cluster = _cluster(args.state_dir)
    try:
        rows, data = cluster.status()
    except ClusterError as exc:
        raise UserError(str(exc)) from None
    if data is None:
        print(f"no local cluster in {cluster.state_dir}")
        return 1
    ports = data.get("ports", {})
    print(f"local cluster in {cluster.state_dir} ({data.get('versions')})")
    for row in rows:
        state = "running" if row.running else "STOPPED"
        port = ports.get(row.name, "")
        print(f"  {row.name:<24} {state:<8} pid {row.pid:<8} port {port}")
    healthy = bool(rows) and all(r.running for r in rows)
    if healthy:
        try:
            ready, total = cluster.node_summary(data)
        except Exception as exc:
            print(f"  nodes: unknown ({exc})")
            healthy = False
        else:
            print(f"  nodes: {ready}/{total} Ready")
    print(f"export KUBECONFIG={cluster.kubeconfig}")
    return 0 if healthy else 1


def _down(args: argparse.Namespace) -> int:
    cluster = _cluster(args.state_dir)
    existed = cluster.state_dir.exists()
    stopped = cluster.down()
    if not existed:
        print(f"no local cluster in {cluster.state_dir}; nothing to do")
    else:
        print(
            f"stopped {', '.join(stopped) or 'nothing (no process was running)'}; "
            f"removed {cluster.state_dir}"
        )
    return 0
