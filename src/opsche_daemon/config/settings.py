"""The settings tree: every knob of one opsche daemon, with its default, unit and reason.

This is the only place a default is written. The YAML loader, the ``opsche run`` flags, ``opsche
config defaults`` and the daemon all read these classes; a setting the file cannot set (the
``yaml=None`` ones) is documented here all the same, so a reader sees every timing of the queue and
the optimiser. (A few internal pacing constants are not settings and stay beside the code that uses
them, each with its reason: the scheduling loop's 50 ms turn, the queue flush's 1 s and 30 s ticks,
the 10 s shutdown bounds and the plan convergence's 2 s settle window.) The defaults are kube-
scheduler's wherever it has the same setting.

Enums are ``StrEnum``: their values are the strings of the file format and of the Prometheus
labels (``opsche_solver_runs_total{trigger="periodic"}``), so they compare equal to those strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from opsche_daemon.config.extenders import ExtenderSettings
from opsche_daemon.config.schema import doc

__all__ = [
    "ClientConnection",
    "LeaderElect",
    "LeaderElectionSettings",
    "OptimiserSettings",
    "PreemptionSettings",
    "ProfileSettings",
    "QueueSettings",
    "SchedulerConfig",
    "SolverKind",
    "Trigger",
]


class Trigger(StrEnum):
    """When the optimiser computes a cluster-wide plan."""

    SCHEDULING_FAILURE = "scheduling-failure"
    PERIODIC = "periodic"
    STABLE_QUEUE = "stable-queue"
    NONE = "none"


class SolverKind(StrEnum):
    """Which solver computes plans."""

    CPSAT = "cpsat"
    HEURISTIC = "heuristic"


class LeaderElect(StrEnum):
    """Whether replicas elect a leader on a Lease (YAML ``true``/``false`` are accepted too)."""

    AUTO = "auto"  # on inside a pod (a service account is mounted), off elsewhere
    TRUE = "true"
    FALSE = "false"


@dataclass(frozen=True)
class ClientConnection:
    """The client-side rate limit of API writes (kube-scheduler's ``clientConnection``)."""

    qps: float = field(
        default=50.0,
        metadata=doc(
            yaml="clientConnection.qps",
            unit="requests/s",
            low=0,
            reason="sustained rate of writes to the API server (bindings, pod status patches, "
            "evictions; events have a bucket of their own at the same rate), as kube-scheduler's "
            "default. 0 turns the client-side rate limit off (writes are not limited at all); "
            "kube-scheduler would instead replace 0 by its default 50",
        ),
    )
    burst: int = field(
        default=100,
        metadata=doc(
            yaml="clientConnection.burst",
            unit="requests",
            low=1,
            reason="writes let through at once before qps applies, as client-go's token bucket "
            "(kube-scheduler's default); unused when qps is 0",
        ),
    )


@dataclass(frozen=True)
class QueueSettings:
    """Timings of the scheduling queue; kube-scheduler's defaults."""

    initial_backoff_s: float = field(
        default=1.0,
        metadata=doc(
            yaml="podInitialBackoffSeconds",
            unit="seconds",
            above=0,
            reason="wait before a pod that failed a scheduling attempt is tried again; "
            "doubles with each failure in a row",
        ),
    )
    max_backoff_s: float = field(
        default=10.0,
        metadata=doc(
            yaml="podMaxBackoffSeconds",
            unit="seconds",
            above=0,
            reason="cap of the doubling backoff; at least podInitialBackoffSeconds",
        ),
    )
    max_in_unschedulable_s: float = field(
        default=300.0,
        metadata=doc(
            yaml=None,
            unit="seconds",
            above=0,
            reason="an unschedulable pod is retried after this long even if no cluster event could "
            "have helped it (upstream podMaxInUnschedulablePodsDuration, a kube-scheduler flag and "
            "not a config-file field, so not one here either)",
        ),
    )


@dataclass(frozen=True)
class PreemptionSettings:
    """DefaultPreemption: evicting lower-priority pods when no node fits."""

    enabled: bool = field(
        default=True,
        metadata=doc(
            yaml="preemption.enabled",
            reason="run DefaultPreemption as kube-scheduler does by default; --no-preemption turns "
            "it off",
        ),
    )
    respect_pdbs: bool = field(
        default=False,
        metadata=doc(
            yaml="preemption.respectPodDisruptionBudgets",
            reason="never choose a node whose victims would violate a PodDisruptionBudget; off, as "
            "kube-scheduler only prefers nodes with fewer violations",
        ),
    )
    avoid_bare_victims: bool = field(
        default=True,
        metadata=doc(
            yaml="preemption.avoidBareVictims",
            reason="never pick a node whose victims include a pod without a controller (deleted "
            "for good) while another node's victims all come back; off: kube-scheduler's choice",
        ),
    )
    plans_first: bool = field(
        default=True,
        metadata=doc(
            yaml="preemption.plansFirst",
            reason="with plans on, a pod that preemption would make room for first gets a "
            "cluster-wide solve, and preemption runs only if that plan did not place it; off: "
            "preempt at once, as kube-scheduler",
        ),
    )


@dataclass(frozen=True)
class ProfileSettings:
    """Changes to kube-scheduler's default plugin profile."""

    disabled: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            yaml="profile.disabled",
            unit="plugin names",
            reason="default plugins to turn off at every extension point",
        ),
    )
    weights: Mapping[str, int] = field(
        default_factory=dict,
        metadata=doc(
            yaml="profile.weights",
            unit="plugin name -> Score weight",
            low=0,
            reason="Score weights to override (the others keep kube-scheduler's defaults); 0 stops "
            "a plugin scoring",
        ),
    )
    plugin_args: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict,
        metadata=doc(
            yaml="profile.pluginConfig",
            unit="list of {name, args}",
            reason="arguments per plugin, as kube-scheduler's pluginConfig (DefaultPreemption's "
            "included); each plugin validates its own",
        ),
    )


@dataclass(frozen=True)
class OptimiserSettings:
    """When cluster-wide plans are computed, and how they are enforced."""

    trigger: Trigger = field(
        default=Trigger.SCHEDULING_FAILURE,
        metadata=doc(
            yaml="optimiser.trigger",
            reason="when to compute a plan: when a pod is found unschedulable, every "
            "periodSeconds, once the pending pods have not changed for stableWindowSeconds, or "
            "never (none turns the optimiser off); --trigger overrides it",
        ),
    )
    blocking: bool = field(
        default=False,
        metadata=doc(
            yaml="optimiser.blocking",
            reason="pause scheduling from the snapshot on, not only while a plan is enforced; "
            "--blocking turns it on",
        ),
    )
    solver: SolverKind = field(
        default=SolverKind.CPSAT,
        metadata=doc(
            yaml="optimiser.solver",
            reason="cpsat searches for the best plan within the time limit; heuristic is a fast "
            "greedy placement",
        ),
    )
    solve_time_limit_s: float = field(
        default=2.0,
        metadata=doc(
            yaml="optimiser.solveTimeLimitSeconds",
            unit="seconds",
            above=0,
            reason="wall-clock budget of one solve; the best plan found by then is used",
        ),
    )
    solve_stall_s: float = field(
        default=0.1,
        metadata=doc(
            yaml="optimiser.solveStallSeconds",
            unit="seconds",
            low=0,
            reason="end a CP-SAT phase once it has found no better plan for this long, instead "
            "of searching to the time limit: equal usage and fresher plans on the grid, in a "
            "third of the solver time of 0.3 (cpsat only; 0: off, the paper's fixed time)",
        ),
    )
    max_disruptions_per_placement: float = field(
        default=0.0,
        metadata=doc(
            yaml="optimiser.maxDisruptionsPerPlacement",
            unit="pods moved or evicted per pending pod placed",
            low=0,
            high=100,
            reason="a plan moves or evicts at most this many running pods per pending pod it "
            "places (cpsat only; 0: no limit, the paper's lexicographic plans)",
        ),
    )
    placement_worth_moves: float = field(
        default=0.0,
        metadata=doc(
            yaml="optimiser.placementWorthMoves",
            unit="moves a pending pod placed is worth",
            low=0,
            high=100,
            reason="a plan places a pending pod only where that costs at most this many moves "
            "at the margin, an eviction that leaves its pod pending counting 2 (cpsat only, "
            "tenths; 0: no price, the paper's lexicographic plans, which rank one more "
            "higher-priority pod above any number of moves)",
        ),
    )
    budget_across_plans: bool = field(
        default=False,
        metadata=doc(
            yaml="optimiser.budgetAcrossPlans",
            reason="maxDisruptionsPerPlacement holds over all the plans so far rather than each "
            "plan: a plan may also spend what earlier plans left unused (a plan placing one "
            "pod may then move two after a plan that moved none)",
        ),
    )
    repair_stale_plans: bool = field(
        default=False,
        metadata=doc(
            yaml="optimiser.repairStalePlans",
            reason="a plan that is no longer valid on the fresh snapshot is cut down to its "
            "part that still is (and still places pods) instead of being discarded",
        ),
    )
    min_pending_s: float = field(
        default=0.0,
        metadata=doc(
            yaml="optimiser.minPendingSeconds",
            unit="seconds",
            low=0,
            reason="the periodic and stable-queue triggers start a run only once a pending pod "
            "has waited this long since regular scheduling first tried it, so plans are made "
            "for pods the scheduler could not place rather than raced by it (0: any pending "
            "pod, the paper's triggers)",
        ),
    )
    period_s: float = field(
        default=8.0,
        metadata=doc(
            yaml="optimiser.periodSeconds",
            unit="seconds",
            above=0,
            reason="interval of the periodic trigger",
        ),
    )
    stable_window_s: float = field(
        default=8.0,
        metadata=doc(
            yaml="optimiser.stableWindowSeconds",
            unit="seconds",
            above=0,
            reason="how long the pending pods must stay the same before the stable-queue "
            "trigger fires",
        ),
    )
    poll_s: float = field(
        default=0.25,
        metadata=doc(
            yaml=None,
            unit="seconds",
            above=0,
            reason="how often the stable-queue trigger looks at the pending pods",
        ),
    )
    convergence_interval_s: float = field(
        default=0.25,
        metadata=doc(
            yaml=None,
            unit="seconds",
            above=0,
            reason="how often an enforced plan is checked for convergence",
        ),
    )
    plan_timeout_s: float = field(
        default=4.0,
        metadata=doc(
            yaml="optimiser.planTimeoutSeconds",
            unit="seconds",
            above=0,
            reason="a plan not carried out by then is torn down and its pods released",
        ),
    )
    failure_cooldown_s: float = field(
        default=10.0,
        metadata=doc(
            yaml="optimiser.failureCooldownSeconds",
            unit="seconds",
            above=0,
            reason="after a plan that disturbed pods and failed, no run starts for this long; "
            "doubles with each failure in a row, so a plan that keeps failing cannot keep evicting",
        ),
    )
    max_failure_cooldown_s: float = field(
        default=300.0,
        metadata=doc(
            yaml=None,
            unit="seconds",
            above=0,
            reason="cap of the doubling cool-down",
        ),
    )


@dataclass(frozen=True)
class LeaderElectionSettings:
    """kube-scheduler's ``leaderElection``: only the holder of one Lease schedules and plans."""

    leader_elect: LeaderElect = field(
        default=LeaderElect.AUTO,
        metadata=doc(
            yaml="leaderElection.leaderElect",
            reason="run as one of several replicas of which only the Lease holder acts (the "
            "others watch, with warm caches); auto: on inside a pod, off for a local process; "
            "--leader-elect overrides it",
        ),
    )
    lease_duration_s: float = field(
        default=15.0,
        metadata=doc(
            yaml="leaderElection.leaseDurationSeconds",
            unit="seconds",
            low=1,
            reason="how long a follower waits after the last renewal it saw before taking the "
            "Lease (kube-scheduler's default); a released Lease is taken at once",
        ),
    )
    renew_deadline_s: float = field(
        default=10.0,
        metadata=doc(
            yaml="leaderElection.renewDeadlineSeconds",
            unit="seconds",
            low=1,
            reason="a leader that has not renewed for this long stops binding and evicting and "
            "exits; less than leaseDurationSeconds, so it stops before anyone else may start",
        ),
    )
    retry_period_s: float = field(
        default=2.0,
        metadata=doc(
            yaml="leaderElection.retryPeriodSeconds",
            unit="seconds",
            low=1,
            reason="between a follower's attempts to take the Lease and a leader's renewals",
        ),
    )
    resource_name: str = field(
        default="opsche",
        metadata=doc(
            yaml="leaderElection.resourceName",
            reason="the Lease's name; a second opsche with another schedulerName needs another "
            "(the Helm chart names it after the scheduler)",
        ),
    )
    resource_namespace: str = field(
        default="kube-system",
        metadata=doc(
            yaml="leaderElection.resourceNamespace",
            reason="the Lease's namespace (kube-scheduler's is kube-system; the Helm chart uses "
            "its release namespace)",
        ),
    )


@dataclass(frozen=True)
class SchedulerConfig:
    """Validated settings of one opsche daemon."""

    scheduler_name: str = field(
        default="opsche",
        metadata=doc(
            yaml="schedulerName",
            reason="opsche schedules the pods whose spec.schedulerName is this and no others; "
            "--scheduler-name overrides it",
        ),
    )
    client: ClientConnection = field(default_factory=ClientConnection)
    bind_workers: int = field(
        default=16,
        metadata=doc(
            yaml="bindWorkers",
            unit="bindings",
            low=1,
            reason="bindings in flight at once; binding runs beside the scheduling loop so a slow "
            "API server does not stall it",
        ),
    )
    queue: QueueSettings = field(default_factory=QueueSettings)
    percentage_of_nodes_to_score: int = field(
        default=0,
        metadata=doc(
            yaml="percentageOfNodesToScore",
            unit="percent",
            low=0,
            high=100,
            reason="stop filtering once this share of the nodes is feasible; 0 is kube-scheduler's "
            "adaptive share (50% minus 1% per 125 nodes, at least 5%, at least 100 nodes)",
        ),
    )
    preemption: PreemptionSettings = field(default_factory=PreemptionSettings)
    profile: ProfileSettings = field(default_factory=ProfileSettings)
    metrics_port: int = field(
        default=10351,
        metadata=doc(
            yaml="metricsPort",
            unit="TCP port",
            low=0,
            high=65535,
            reason="where /metrics, /healthz and /readyz are served; --metrics-port overrides it",
        ),
    )
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    extenders: tuple[ExtenderSettings, ...] = field(
        default=(),
        metadata=doc(
            yaml="extenders",
            unit="list of extenders",
            reason="HTTP services asked to filter and score nodes, as kube-scheduler's extenders "
            "(urlPrefix, filterVerb, prioritizeVerb, weight, httpTimeout, ignorable, "
            "nodeCacheCapable, managedResources, enableHTTPS, tlsConfig); plans only place pods "
            "where the filter extenders accept them",
        ),
    )
