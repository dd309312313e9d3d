"""TaintToleration: hard NoSchedule/NoExecute taints filter; PreferNoSchedule taints score.

Filter: a node with a NoSchedule or NoExecute taint that none of the pod's tolerations tolerates
is rejected as unresolvable (evicting pods never removes a taint). Since kube-scheduler v1.35
(kubernetes/kubernetes#134740) the reason no longer names the taint, whose key and value may be
sensitive: it is the fixed ``node(s) had untolerated taint(s)``, which also lets the reasons of many
nodes aggregate into one line of the FailedScheduling event.

Score: the number of PreferNoSchedule taints the pod does not tolerate, counting only tolerations
whose effect is empty or PreferNoSchedule (a NoSchedule toleration does not soften a preference
taint, as upstream). NormalizeScore reverses that count onto 0..100 with upstream's
``DefaultNormalizeScore(reverse=True)``: fewest untolerated preference taints scores 100, and when
no node has any every node scores 100.

Toleration operators Gt/Lt (feature gate TaintTolerationComparisonOperators) are alpha and off by
default in v1.36, so, as ``Toleration.tolerates`` does, they tolerate nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opsche_daemon.framework.interface import CycleState, NodeScore, Status
from opsche_daemon.framework.plugins.helpers import default_normalize_score
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import Toleration

__all__ = ["ERR_REASON_UNTOLERATED", "TaintToleration"]

ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

_PRE_SCORE_KEY = "TaintToleration/preScore"


def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    return tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


class TaintToleration:
    """Filter on hard taints; score by untolerated PreferNoSchedule taints (fewer is better)."""

    NAME = "TaintToleration"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Unresolvable when a NoSchedule/NoExecute taint is not tolerated."""
        if pod.untolerated_taint(node.node.taints, (NO_SCHEDULE, NO_EXECUTE)) is None:
            return Status.success()
        return Status.unresolvable(self.NAME, ERR_REASON_UNTOLERATED)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Keep only the tolerations that can tolerate a PreferNoSchedule taint."""
        state.write(_PRE_SCORE_KEY, _prefer_no_schedule_tolerations(pod))
        return Status.success()

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """How many PreferNoSchedule taints of ``node`` the pod does not tolerate."""
        try:
            tolerations: tuple[Toleration, ...] = state.read(_PRE_SCORE_KEY)
        except KeyError:
            return 0, Status.error(
                self.NAME, f"reading {_PRE_SCORE_KEY!r} from cycle state: not found"
            )
        count = sum(
            1
            for taint in node.node.taints
            if taint.effect == PREFER_NO_SCHEDULE
            and not any(t.tolerates(taint) for t in tolerations)
        )
        return count, Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Reverse the counts onto 0..100: the fewest untolerated taints scores highest."""
        default_normalize_score(scores, reverse=True)
        return Status.success()
