"""What one eviction through the Eviction API came to: data shared by the writer and its callers.

Preemption and plan enforcement both evict, and both must tell "done" (or "already gone") from
"refused by a PodDisruptionBudget" from "failed"; an enum keeps the callers from comparing strings
that a typo would silently never match.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["EvictionOutcome", "EvictionResult"]


class EvictionOutcome(StrEnum):
    """How the API server answered an eviction."""

    EVICTED = "evicted"  # 201: the pod is being deleted
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget does not allow it now
    NOT_FOUND = "not_found"  # 404: already gone, which is as good as evicted
    ERROR = "error"  # anything else

    @property
    def gone(self) -> bool:
        """The pod is leaving (or left): its room will be free."""
        return self in (EvictionOutcome.EVICTED, EvictionOutcome.NOT_FOUND)


@dataclass(frozen=True)
class EvictionResult:
    """Outcome of one eviction, with the API server's message when it was not done."""

    pod: str
    outcome: EvictionOutcome
    message: str = ""
