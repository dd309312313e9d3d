"""NodeName: a pod that names its node in ``spec.nodeName`` fits only that node.

Why only a Filter: in kube-scheduler v1.36 this plugin has no PreFilter, so a pod naming a node is
still filtered against every node and each other node reports "node(s) didn't match the requested
node name". Narrowing with a PreFilterResult would change the per-node diagnostics (the other
nodes would be reported as excluded by PreFilter instead), so we mirror upstream and do not narrow.

In practice a pod with ``spec.nodeName`` set is already bound and never reaches the scheduling
queue; ``Pod.node_name`` is that same field, so for the pending pods we schedule it is empty and
this filter passes every node. It matters for plan validation and for callers that check whether a
pod could run on its current node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsche_daemon.framework.interface import CycleState, Status
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = ["ERR_REASON", "NodeName", "fits"]

ERR_REASON = "node(s) didn't match the requested node name"


def fits(pod: Pod, node: NodeInfo) -> bool:
    """True when the pod names no node or names this one."""
    return not pod.node_name or pod.node_name == node.name


class NodeName:
    """Filter: only the node named in ``spec.nodeName`` (if any) fits."""

    NAME = "NodeName"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Unresolvable on any node other than the requested one."""
        if fits(pod, node):
            return Status.success()
        return Status.unresolvable(self.NAME, ERR_REASON)
