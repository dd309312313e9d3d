"""All of opsche's Prometheus metrics, in one place.

Names follow kube-scheduler's (``pkg/scheduler/metrics``) with the ``opsche_`` prefix instead of
``scheduler_`` wherever the meaning is the same, so existing dashboards port by a rename. Labels are
bounded (result, queue, profile, plugin); buckets are upstream's exponential ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]


def _exponential(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class Metrics:
    """The metric objects, registered on one registry (a fresh one per daemon, or per test)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cache_size = Gauge(
            "opsche_scheduler_cache_size",
            "Nodes, bound pods and assumed pods in the scheduler's cache (read when scraped).",
            ["type"],
            registry=r,
        )
        self.pending_pods = Gauge(
            "opsche_pending_pods",
            "Pending pods by queue: active, backoff, unschedulable, gated.",
            ["queue"],
            registry=r,
        )
        self.schedule_attempts = Counter(
            "opsche_schedule_attempts_total",
            "Scheduling attempts by result: scheduled, unschedulable, error.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "opsche_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency (algorithm and binding handoff).",
            ["result", "profile"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.algorithm_duration = Histogram(
            "opsche_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm (filter and score) latency.",
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.sli_duration = Histogram(
            "opsche_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from first entering the queue.",
            ["attempts"],
            buckets=_exponential(0.01, 2, 20),
            registry=r,
        )
        self.binding_duration = Histogram(
            "opsche_binding_duration_seconds",
            "Latency of the Binding API call.",
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.preemption_attempts = Counter(
            "opsche_preemption_attempts_total", "Preemption attempts.", registry=r
        )
        self.preemption_deferrals = Counter(
            "opsche_preemption_deferrals_total",
            "Preemptions deferred to a cluster-wide plan (deferred), and what followed when the "
            "plan did not place the pod (fallback: preempted after the run; timeout: after the "
            "longest wait).",
            ["result"],
            registry=r,
        )
        self.preemption_victims = Histogram(
            "opsche_preemption_victims",
            "Number of victims selected per preemption.",
            buckets=_exponential(1, 2, 7),
            registry=r,
        )
        self.solver_runs = Counter(
            "opsche_solver_runs_total",
            "Optimisation runs by trigger and how they ended before enforcement.",
            ["trigger", "result"],
            registry=r,
        )
        self.solve_duration = Histogram(
            "opsche_solve_duration_seconds",
            "Wall time of one solve (model building included).",
            ["solver"],
            buckets=_exponential(0.05, 2, 12),
            registry=r,
        )
        self.plan_activations = Counter(
            "opsche_plan_activations_total", "Plans installed and enforced.", registry=r
        )
        self.plan_outcomes = Counter(
            "opsche_plan_outcomes_total",
            "How enforced plans ended: converged, timed_out, eviction_refused, cancelled, error.",
            ["outcome"],
            registry=r,
        )
        self.plan_pods_moved = Counter(
            "opsche_plan_pods_moved_total", "Running pods moved by plans.", registry=r
        )
        self.plan_pods_evicted = Counter(
            "opsche_plan_pods_evicted_total", "Running pods evicted by plans.", registry=r
        )
        self.plan_pods_placed = Counter(
            "opsche_plan_pods_placed_total",
            "Pending pods that plans placed (planned pods bound when the plan's run ended).",
            registry=r,
        )
        self.plan_pods_held = Gauge(
            "opsche_plan_pods_held", "Pods held back by the plan being enforced.", registry=r
        )
        self.queue_incoming_pods = Counter(
            "opsche_queue_incoming_pods_total",
            "Pods added to scheduling queues by event and queue.",
            ["queue", "event"],
            registry=r,
        )
        self.leader_status = Gauge(
            "opsche_leader_election_master_status",
            "1 while this replica holds the Lease and acts, 0 while it follows (as client-go's "
            "leader_election_master_status).",
            ["name"],
            registry=r,
        )
        self.leader_transitions = Counter(
            "opsche_leader_election_transitions_total",
            "Changes of the Lease's holder this replica has seen (itself included).",
            ["name"],
            registry=r,
        )

        self.extender_duration = Histogram(
            "opsche_extender_request_duration_seconds",
            "Latency of calls to scheduler extenders, by extender (its urlPrefix), verb "
            "(filter, prioritize) and result (ok, or the kind of failure).",
            ["extender", "verb", "result"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.extender_errors = Counter(
            "opsche_extender_errors_total",
            "Failed extender calls by extender, verb and kind (timeout, connection, status, "
            "decode, error: the extender's own Error field), and whether the cycle went on "
            "without the extender (ignored: true for an ignorable extender or any prioritize).",
            ["extender", "verb", "kind", "ignored"],
            registry=r,
        )

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        """Set ``opsche_pending_pods`` from the queue's pool sizes (after every queue change)."""
        for queue, count in counts.items():
            self.pending_pods.labels(queue).set(count)
