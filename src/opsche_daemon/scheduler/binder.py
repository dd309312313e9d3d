"""What the scheduler needs from the API side, as a Protocol the kube layer implements.

The scheduler decides; something else talks to the API server. Keeping that something behind a
small structural interface lets the unit tests record binds and events in memory, and lets the
kube layer (``kube.binder.KubeBinder``) implement it without importing the scheduler.
"""

from __future__ import annotations

from typing import Protocol

from opsche_daemon.framework.interface import PostFilterResult
from opsche_daemon.model.pod import Pod

__all__ = ["Binder"]


class Binder(Protocol):
    """Binding, events, the PodScheduled condition and preemption evictions."""

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST the Binding; raise on any failure (the scheduler forgets the assumption)."""
        ...

    def event(self, pod: Pod, reason: str, note: str, *, type_: str = "Normal") -> None:
        """Post an event in the background; never raises and never blocks the cycle."""
        ...

    async def set_unschedulable(
        self, pod: Pod, message: str, nominated_node: str | None, *, reason: str = "Unschedulable"
    ) -> None:
        """Set the PodScheduled=False condition (``reason``: Unschedulable or SchedulerError)."""
        ...

    async def preempt(self, preemptor: Pod, result: PostFilterResult) -> bool:
        """Evict the victims through the Eviction API; False if any eviction was refused."""
        ...
