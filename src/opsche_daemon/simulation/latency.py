"""How long the parts of a real cluster take, as the virtual-time replay charges them.

Everything opsche computes costs what it costs (its code runs for real); what the in-process API
cannot run is the rest of the cluster, so each of its steps is charged a fixed virtual delay.
The defaults were measured on this repository's local cluster (kube-apiserver, etcd,
kube-controller-manager and KWOK on 127.0.0.1, 2 cores) while a 16-node replay ran on it, by
probes that timed one ReplicaSet at a time through a pod watch (medians, 2026-12-01):
ReplicaSet created to pod seen 15-26 ms; the Binding call 35 ms (opsche, 60 s keep-alive),
against about 56 ms for kube-scheduler's whole Bind extension point; bound to Running 11-26 ms.
``docs/evaluation.md`` ("Virtual time") says how far the virtual replay then agrees with the
real one.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Latencies"]


@dataclass(frozen=True)
class Latencies:
    """Virtual seconds charged for each step the real cluster would take."""

    # The API server (and etcd behind it) commits one write at a time, each taking this long, so a
    # burst queues: the real initial state (about 60 ReplicaSets, 113 pods, their bindings and
    # status updates, some 400 writes) took 2.2-3.4 s to create on the local cluster.
    write_service_s: float = 0.006
    watch_s: float = 0.003  # a committed write reaching a watcher
    create_pods_s: float = 0.020  # a ReplicaSet change to its new pods (kube-controller-manager)
    bind_s: float = 0.029  # a Binding's round trip beyond its commit (35 ms in all, unqueued)
    write_s: float = 0.004  # any other write's round trip beyond its commit
    running_s: float = 0.015  # bound to Running (the kubelet; KWOK's pod-ready stage here)
    delete_s: float = 0.010  # a bound pod's deletion to its removal (KWOK's pod-delete stage)
    collect_s: float = 0.050  # a deleted ReplicaSet to its pods' deletion (garbage collector)

    def problems(self) -> list[str]:
        """Why these latencies are unusable (empty when they are fine)."""
        return [
            f"latency {name} must be >= 0, got {value:g}"
            for name, value in vars(self).items()
            if not value >= 0
        ]
