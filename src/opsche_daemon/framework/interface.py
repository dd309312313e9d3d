"""The scheduling framework's contracts: one Status type and one small Protocol per extension point.

Modelled on kube-scheduler's ``pkg/scheduler/framework/interface.go``. The contract of each
extension point is written on its Protocol, because plugin authors read interfaces, not runners;
the wording is upstream's where opsche behaves the same, and says so where it does not.

The framework is pure: plugins read a ``Snapshot`` and return decisions. Anything that acts on the
cluster (binding, evicting preemption victims) is done through the scheduler's ``Binder``
(``kube.binder.KubeBinder``); a PostFilter plugin therefore *returns* its victims instead of
deleting them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol, runtime_checkable

from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot

__all__ = [
    "MAX_NODE_SCORE",
    "Code",
    "CycleState",
    "FilterPlugin",
    "NodeScore",
    "Plugin",
    "PluginArgsError",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "ReservePlugin",
    "ScorePlugin",
    "Status",
]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class PluginArgsError(ValueError):
    """A plugin's arguments in the config file are invalid; the message names the field."""


class Code(IntEnum):
    """What happened, and so what the queue does next (upstream ``framework.Code``)."""

    SUCCESS = 0
    # An internal error: retry with backoff.
    ERROR = 1
    # The pod does not fit now; preemption may help; park it until a cluster event.
    UNSCHEDULABLE = 2
    # Does not fit and preemption cannot help (e.g. node selector mismatch).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # A Permit plugin asks to wait (unused by the default plugins).
    WAIT = 4
    # This plugin has nothing to do for this pod; skip its later extension points.
    SKIP = 5
    # Waiting for something outside the scheduler (PreEnqueue gates).
    PENDING = 6


@dataclass(frozen=True, slots=True)
class Status:
    """A result with a code, human-readable reasons and the plugin that produced it."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        """Nothing to report."""
        return _SUCCESS

    @classmethod
    def unschedulable(cls, plugin: str, *reasons: str) -> Status:
        """Does not fit now; preemption might help."""
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, plugin: str, *reasons: str) -> Status:
        """Does not fit and preemption cannot help."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, plugin: str, *reasons: str) -> Status:
        """An unexpected failure; the pod is retried with backoff."""
        return cls(Code.ERROR, reasons, plugin)

    @classmethod
    def skip(cls) -> Status:
        """The plugin does not apply to this pod."""
        return _SKIP

    @property
    def ok(self) -> bool:
        """Success (or Skip, which is a kind of success)."""
        return self.code in (Code.SUCCESS, Code.SKIP)

    @property
    def rejected(self) -> bool:
        """Unschedulable, with or without hope of preemption, or pending."""
        return self.code in (
            Code.UNSCHEDULABLE,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            Code.PENDING,
        )

    @property
    def message(self) -> str:
        """Reasons joined, for events and logs."""
        return ", ".join(self.reasons)


_SUCCESS = Status()
_SKIP = Status(Code.SKIP)


@dataclass(slots=True)
class CycleState:
    """Scratch space for one scheduling cycle: PreFilter/PreScore results that later points read.

    Plugins key their data by their own name. ``skip_filter`` and ``skip_score`` hold plugins that
    returned Skip at PreFilter/PreScore, so the runner does not call them for every node.
    """

    snapshot: Snapshot
    data: dict[str, Any] = field(default_factory=dict)
    skip_filter: set[str] = field(default_factory=set)
    skip_score: set[str] = field(default_factory=set)

    def write(self, key: str, value: Any) -> None:
        """Store a plugin's precomputed data."""
        self.data[key] = value

    def read(self, key: str) -> Any:
        """Read what a plugin stored; KeyError if PreFilter/PreScore did not run."""
        return self.data[key]


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin narrowed the search to (``None``: all nodes)."""

    node_names: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) decided: a node to nominate and pods to evict."""

    nominated_node: str
    victims: tuple[Pod, ...] = ()


@dataclass(slots=True)
class NodeScore:
    """One node's score for the pod being scheduled; NormalizeScore rewrites ``score``."""

    name: str
    score: int


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a unique name, used in configs, metrics, logs and Status.plugin."""

    @property
    def name(self) -> str:
        """The plugin's registered name (e.g. ``NodeResourcesFit``)."""
        ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """Called before a pod is added to the active queue; a rejection keeps it in the gated pool.

    It runs in the event handlers on every pod add and update, so it must be cheap: no calls to
    anything remote, or every other pod's enqueuing waits. A non-success Status keeps the pod
    gated (``pending_pods{queue="gated"}``) until an update, or the gate's owner, re-checks it.
    """

    def pre_enqueue(self, pod: Pod) -> Status:
        """Success to admit the pod to the active queue."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Called at the beginning of the scheduling cycle, once, before any Filter.

    Every PreFilter must return success or the pod is rejected. A PreFilterResult narrows the
    nodes evaluated downstream (when the subset is known cheaply: the NodeName plugin, a plan's
    pin); nodes it leaves out count as UnschedulableAndUnresolvable, so preemption does not try
    them. Skip means: ignore the result, and skip this plugin's Filter for this cycle.
    """

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Precompute into ``state``, narrow the nodes, or reject the pod."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Filters out the nodes that cannot run the pod (once called a "predicate").

    Anything but Success excludes the node: Unschedulable, UnschedulableAndUnresolvable (so
    preemption will not try it) or Error. Called for many nodes, possibly concurrently in
    upstream: it reads the node from the ``NodeInfo`` passed in (which may count nominated pods
    the snapshot does not) and never mutates shared state.
    """

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Success if the pod fits on ``node`` as far as this plugin is concerned."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Called only after the scheduling cycle failed at PreFilter or Filter: tries to make room.

    ``statuses`` holds the Status every node got; skipping the UnschedulableAndUnresolvable ones
    is the plugin's responsibility. Return Unschedulable when the pod cannot be made schedulable,
    Success (with a PostFilterResult naming the nominated node and victims) when it can, Error on
    an internal failure. The plugin decides; the scheduler carries the decision out.
    """

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """A nomination and victims, or a Status saying why nothing helps."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Informational, called once with the nodes that passed filtering, before any Score.

    Skip skips this plugin's Score for this cycle. Upstream rejects the pod on any other
    non-success Status; opsche's runtime ignores it (no default plugin returns one).
    """

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Precompute scoring data into ``state``."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks the nodes that passed filtering: normalised to 0..100, then weighted and summed."""

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """A raw score for one filtered node (the Status is not read: scores always succeed)."""
        ...

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Called once with all of this plugin's scores: rewrite them in place to 0..100."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Updates the plugin's own state once a node is chosen (what used to be called "assume").

    Reserve runs when the scheduler assumes the pod on the node; if any Reserve fails, the pod is
    rejected and Unreserve runs (in reverse order) on the Reserve plugins up to and including the
    one that failed. Unreserve also runs when the binding fails later.
    """

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Claim per-node state for the pod; anything but Success rejects the pod."""
        ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Release what ``reserve`` claimed for this pod, if anything.

        Must be idempotent and must not fail: it may run after this plugin's own Reserve failed,
        or without any Reserve for the pod, and more than once.
        """
        ...
