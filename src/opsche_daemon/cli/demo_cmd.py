"""``opsche demo``: the README's first command. kube-scheduler and opsche, side by side.

It brings up the local cluster (real kube-apiserver, etcd, kube-controller-manager and
kube-scheduler, KWOK nodes), runs a fragmented workload under kube-scheduler, then the same
workload under opsche started with its defaults, and prints what each achieved. The demo and the
local cluster are imported when the command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
from typing import Any

from opsche_daemon.cli.errors import UserError

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``demo`` to the top-level parser."""
    demo = commands.add_parser(
        "demo",
        help="run one fragmented workload under kube-scheduler, then under opsche, and compare",
    )
    demo.add_argument("--nodes", type=int, default=8, help="KWOK nodes of 4 cpu (default 8)")
    demo.add_argument(
        "--observe",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long to keep watching kube-scheduler once it has given up (default 15)",
    )
    demo.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.demo import (  # noqa: PLC0415
        NAMESPACES,
        DemoOptions,
        clear_demo_namespaces,
        format_side_by_side,
        run_demo_workload,
        run_opsche_workload,
        workload_summary,
    )
    from opsche_daemon.cli.cluster_cmd import run_up  # noqa: PLC0415
    from opsche_daemon.localcluster.api import ApiError, LocalApi  # noqa: PLC0415
    from opsche_daemon.localcluster.cluster import ClusterSpec, down_command  # noqa: PLC0415
    from opsche_daemon.localcluster.daemon_process import DaemonStartError  # noqa: PLC0415

    if not 2 <= args.nodes <= 500:
        raise UserError(f"--nodes {args.nodes}: the demo needs between 2 and 500 nodes")
    if args.observe < 0:
        raise UserError(f"--observe {args.observe}: must not be negative")
    spec = ClusterSpec(nodes=args.nodes, node_cpu="4", node_memory="16Gi", default_scheduler=True)
    cluster, layout = run_up(None, spec)
    api = LocalApi(layout.server, layout.pki)
    options = DemoOptions(nodes=args.nodes, observe_s=args.observe)
    try:
        version = api.get("/version").get("gitVersion")
        print(f"\nKubernetes {version} on {layout.server}; {workload_summary(args.nodes)}.")
        clear_demo_namespaces(api, options, ("kube-scheduler", "opsche"))  # an earlier run's
        print("\n[1/2] kube-scheduler (the cluster's own, default profile and preemption)")
        baseline = run_demo_workload(api, "kube-scheduler", options, print)
        print("  freeing the nodes for the second run")
        clear_demo_namespaces(api, options, ("kube-scheduler",))
        print("\n[2/2] opsche (opsche run, default configuration)")
        log = cluster.state_dir / "demo-opsche.log"
        ours = run_opsche_workload(api, cluster.kubeconfig, log, options, print)
    except (ApiError, DaemonStartError) as exc:
        raise UserError(f"demo failed: {exc}") from None
    print("\n" + format_side_by_side([baseline, ours]))
    print(
        f"\nThe cluster keeps running, with opsche's result in namespace {NAMESPACES['opsche']}:\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  {layout.binary('kubectl')} get pods -n {NAMESPACES['opsche']} -o wide\n"
        f"Stop it with: {down_command(cluster.state_dir)}"
    )
    return 0 if ours.all_placed else 1
