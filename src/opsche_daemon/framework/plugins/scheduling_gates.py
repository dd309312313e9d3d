"""SchedulingGates: keep a pod out of the active queue while ``spec.schedulingGates`` is non-empty.

Why a PreEnqueue plugin and not a Filter: a gated pod must not consume scheduling cycles at all
(upstream KEP-3521). Checking at enqueue time parks it in the gated pool until an update removes
the last gate, which is also what keeps ``pending_pods{queue="gated"}`` meaningful.

The rejection mirrors upstream exactly: code ``UnschedulableAndUnresolvable`` (preemption cannot
remove a gate) and the message ``waiting for scheduling gates: [a b]``, the gates in spec order
formatted the way Go prints a string slice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsche_daemon.framework.interface import Status
from opsche_daemon.model.pod import Pod

__all__ = ["SchedulingGates"]


class SchedulingGates:
    """PreEnqueue: admit only pods without scheduling gates."""

    NAME = "SchedulingGates"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        """Success for an ungated pod; otherwise the gates that still hold it."""
        if not pod.scheduling_gates:
            return Status.success()
        gates = " ".join(pod.scheduling_gates)
        return Status.unresolvable(self.NAME, f"waiting for scheduling gates: [{gates}]")
