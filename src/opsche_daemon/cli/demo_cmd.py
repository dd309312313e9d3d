"""``opsche demo``: the README's first command; brings up the local cluster and shows it.

It grows with the project: today it starts the real control plane with KWOK nodes and prints the
nodes as the API server reports them; later it runs opsche beside kube-scheduler on one workload.
"""

from __future__ import annotations

import argparse
from typing import Any

from opsche_daemon.cli.cluster_cmd import run_up
from opsche_daemon.localcluster.api import LocalApi
from opsche_daemon.localcluster.cluster import MANAGED_LABEL, ClusterSpec

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``demo`` to the top-level parser."""
    demo = commands.add_parser("demo", help="bring up the local cluster and show it")
    demo.add_argument("--nodes", type=int, default=8, help="KWOK nodes (default 8)")
    demo.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    cluster, layout = run_up(None, ClusterSpec(nodes=args.nodes))
    api = LocalApi(layout.server, layout.pki)
    version = api.get("/version")
    nodes = api.get(f"/api/v1/nodes?labelSelector={MANAGED_LABEL}=true")["items"]
    print(f"\nKubernetes {version.get('gitVersion')} on {layout.server}: {len(nodes)} KWOK node(s)")
    print(f"{'NODE':<16} {'READY':<6} {'CPU':>5} {'MEMORY':>8} {'PODS':>5}")
    for node in sorted(nodes, key=lambda n: int(n["metadata"]["name"].rsplit("-", 1)[-1])):
        allocatable = node["status"].get("allocatable", {})
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in node["status"].get("conditions") or []
        )
        print(
            f"{node['metadata']['name']:<16} {'yes' if ready else 'no':<6} "
            f"{allocatable.get('cpu', '?'):>5} {allocatable.get('memory', '?'):>8} "
            f"{allocatable.get('pods', '?'):>5}"
        )
    print(
        "\nThe cluster keeps running. Use it with:\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  {layout.binary('kubectl')} get nodes,pods -A\n"
        "Stop it with: .venv/bin/opsche cluster down"
    )
    return 0
