"""The scheduling framework's contracts: one Status type and one small Protocol per extension point.

Modelled on kube-scheduler's ``pkg/scheduler/framework/interface.go``. The contract of each
extension point is written on its Protocol, because plugin authors read interfaces, not runners.

The framework is pure: plugins read a ``Snapshot`` and return decisions. Anything that acts on the
cluster (binding, evicting preemption victims) is done by the daemon's binder and kube layer; a
PostFilter plugin therefore *returns* its victims instead of deleting them.
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
    "BindPlugin",
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
    """Decides whether a pod may enter the active queue at all.

    Must be cheap: it runs on every pod add/update. A non-success Status keeps the pod in the
    gated pool (reported as ``pending_pods{queue="gated"}``) until an update lets it through.
    """

    def pre_enqueue(self, pod: Pod) -> Status:
        """Success to admit the pod to the queue."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Runs once per cycle before any Filter: precompute into ``state``, or reject the pod early.

    Return Skip to have this plugin's Filter skipped for this pod. A PreFilterResult narrows the
    nodes every Filter sees (the NodeName plugin uses it for a pod naming its node).
    """

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Precompute or reject."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Says whether the pod may run on one node. Called for many nodes; must not mutate state."""

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Success if the pod fits on ``node`` as far as this plugin is concerned."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs only when no node passed the filters: tries to make room (preemption).

    ``statuses`` maps every node to the Status that rejected it, so the plugin can skip nodes that
    are unresolvable. It returns the decision; the caller carries it out.
    """

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """A nomination and victims, or a Status saying why nothing helps."""
        ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Runs once before Score with the feasible nodes; precompute, or Skip this plugin's Score."""

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Precompute scoring data."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks feasible nodes. Scores are normalised to 0..100, then weighted and summed."""

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """A raw score for one node."""
        ...

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Rewrite ``scores`` in place to the 0..100 range (no-op for already-bounded scores)."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Reserve is called once a node is chosen, Unreserve when binding later fails.

    Unreserve must undo exactly what Reserve did and must not fail.
    """

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Claim per-node state for the pod."""
        ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Release what ``reserve`` claimed."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds the pod to the node (the default writes a Binding through the API server)."""

    async def bind(self, pod: Pod, node_name: str) -> Status:
        """Success once the API server accepted the binding."""
        ...
