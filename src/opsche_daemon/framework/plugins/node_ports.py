"""NodePorts: a pod's ``hostPort``s must be free on the node.

Why PreFilter plus Filter: the wanted ports are collected once per cycle (regular containers and
restartable init containers, i.e. sidecars, as upstream ``GetHostPorts`` does) and a pod without
host ports returns Skip so the runner never calls this Filter for it, which is the common case.

Conflict semantics mirror upstream ``HostPortInfo.CheckConflict``: a port is identified by
(host IP, protocol, port), with an empty IP meaning ``0.0.0.0`` and an empty protocol ``TCP``.
Wanting ``0.0.0.0`` conflicts with the same protocol/port bound on *any* address; wanting a
specific address conflicts with that address or with ``0.0.0.0``. The rejection is plain
Unschedulable: evicting the pod holding the port frees it, so preemption can help.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opsche_daemon.framework.interface import CycleState, PreFilterResult, Status
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import HostPort, Pod

__all__ = ["BIND_ALL_HOST_IP", "ERR_REASON", "NodePorts", "fits_ports"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL_HOST_IP = "0.0.0.0"  # noqa: S104 - the API's "all addresses", not a socket we open

_STATE_KEY = "NodePorts/preFilter"


def _conflicts(want: HostPort, used: frozenset[HostPort]) -> bool:
    if want.port <= 0:
        return False
    ip = want.host_ip or BIND_ALL_HOST_IP
    protocol = want.protocol or "TCP"
    if ip == BIND_ALL_HOST_IP:
        return any(u.port == want.port and u.protocol == protocol for u in used)
    return (
        HostPort(want.port, protocol, BIND_ALL_HOST_IP) in used
        or HostPort(want.port, protocol, ip) in used
    )


def fits_ports(wanted: Sequence[HostPort], used: frozenset[HostPort]) -> bool:
    """True when none of ``wanted`` conflicts with the ports already ``used`` on a node."""
    return not any(_conflicts(want, used) for want in wanted)


class NodePorts:
    """PreFilter/Filter: reject nodes where a wanted host port is already taken."""

    NAME = "NodePorts"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Record the wanted ports; Skip when the pod wants none."""
        if not pod.host_ports:
            return None, Status.skip()
        state.write(_STATE_KEY, pod.host_ports)
        return None, Status.success()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Unschedulable when a wanted port conflicts with one in use on the node."""
        try:
            wanted: tuple[HostPort, ...] = state.read(_STATE_KEY)
        except KeyError:
            return Status.error(self.NAME, f"reading {_STATE_KEY!r} from cycle state: not found")
        if fits_ports(wanted, node.used_ports):
            return Status.success()
        return Status.unschedulable(self.NAME, ERR_REASON)
