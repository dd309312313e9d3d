"""``opsche snapshot``: the live cluster's state written to a snapshot file (read-only)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kubernetes_asyncio import client

from opsche_daemon.kube.intake import WORKLOAD_KINDS, list_raw, workload_selector
from opsche_daemon.model.snapshot_file import dump_snapshot

__all__ = ["take_snapshot"]


async def take_snapshot(api: client.ApiClient, path: Path) -> tuple[int, int]:
    """LIST everything the optimiser needs and write it to ``path``; returns (nodes, pods)."""
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    policy = client.PolicyV1Api(api)
    nodes = await list_raw(core.list_node)
    pods = await list_raw(core.list_pod_for_all_namespaces)
    namespaces = [
        {
            "name": (n.get("metadata") or {}).get("name"),
            "labels": (n.get("metadata") or {}).get("labels") or {},
        }
        for n in await list_raw(core.list_namespace)
    ]
    calls = {
        "Service": core.list_service_for_all_namespaces,
        "ReplicationController": core.list_replication_controller_for_all_namespaces,
        "ReplicaSet": apps.list_replica_set_for_all_namespaces,
        "StatefulSet": apps.list_stateful_set_for_all_namespaces,
    }
    workloads = []
    for kind in WORKLOAD_KINDS:
        for raw in await list_raw(calls[kind]):
            selector = workload_selector(kind, raw)
            meta = raw.get("metadata") or {}
            workloads.append(
                {
                    "kind": kind,
                    "namespace": meta.get("namespace"),
                    "name": meta.get("name"),
                    "selector": None
                    if selector is None
                    else {
                        "matchLabels": dict(selector.match_labels),
                        "matchExpressions": [
                            {"key": e.key, "operator": e.operator, "values": list(e.values)}
                            for e in selector.expressions
                        ],
                    },
                }
            )
    budgets = await list_raw(policy.list_pod_disruption_budget_for_all_namespaces)
    dump_snapshot(
        path,
        nodes=nodes,
        pods=pods,
        namespaces=namespaces,
        workloads=workloads,
        budgets=budgets,
        taken_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    return len(nodes), len(pods)
