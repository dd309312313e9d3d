"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) accepts only pods that tolerate it.

Why check the flag rather than rely on the taint: the node lifecycle controller adds the
``node.kubernetes.io/unschedulable:NoSchedule`` taint only some time after a cordon, and upstream
filters on ``spec.unschedulable`` directly so a cordon takes effect immediately. A pod that
tolerates that taint (DaemonSet pods get the toleration automatically) also tolerates the flag.

The rejection is unresolvable: evicting pods never uncordons a node, so preemption must skip it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsche_daemon.framework.interface import CycleState, Status
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import Taint

__all__ = ["ERR_REASON_UNSCHEDULABLE", "TAINT_NODE_UNSCHEDULABLE", "NodeUnschedulable"]

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


class NodeUnschedulable:
    """Filter: reject cordoned nodes unless the pod tolerates the unschedulable taint."""

    NAME = "NodeUnschedulable"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Unresolvable on a cordoned node the pod does not tolerate."""
        if not node.node.unschedulable:
            return Status.success()
        if any(t.tolerates(_UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return Status.success()
        return Status.unresolvable(self.NAME, ERR_REASON_UNSCHEDULABLE)
