"""Nominated pods: preemptors waiting on a node for their victims to leave.

Upstream keeps this beside the queue (``nominator``): after a preemption the preemptor is
nominated to the node, and every later cycle counts the nominated pods of higher or equal priority
on that node as if they were there, so the room the victims free is not taken by someone else.
The scheduling cycle and the event handlers both update it, so it is a part of its own.
"""

from __future__ import annotations

from opsche_daemon.model.pod import Pod

__all__ = ["Nominator"]


class Nominator:
    """Node name -> pod key -> nominated pod."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, Pod]] = {}

    def nominate(self, pod: Pod, node_name: str) -> None:
        """Nominate ``pod`` to ``node_name`` (replacing any earlier nomination)."""
        self.clear(pod.key)
        self._by_node.setdefault(node_name, {})[pod.key] = pod

    def clear(self, key: str) -> None:
        """The pod was bound, deleted or scheduled: it no longer holds room anywhere."""
        for pods in self._by_node.values():
            pods.pop(key, None)

    def node_deleted(self, node_name: str) -> None:
        """Nominations to a node that went away."""
        self._by_node.pop(node_name, None)

    def nominated(self) -> dict[str, list[Pod]]:
        """Nominated pods per node, for the framework and DefaultPreemption's dry runs."""
        return {node: list(pods.values()) for node, pods in self._by_node.items() if pods}
