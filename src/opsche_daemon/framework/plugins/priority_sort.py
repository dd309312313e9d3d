"""PrioritySort: the active queue pops the highest-priority pod first, then the longest-waiting.

Upstream expresses this as ``Less(a, b)``: ``priority(a) > priority(b)``, or equal priorities and
``a`` enqueued earlier. Our queue orders by a key instead of a comparator (heaps and ``sorted`` in
Python take keys), so the plugin provides ``priority_sort_key``: ``(-priority, enqueued_at)``
sorts ascending into exactly upstream's order. Pods with equal priority and timestamp compare
equal, as they do upstream (neither is Less), leaving their relative order to the queue.

A pod's priority is ``spec.priority`` as resolved by the admission controller from its
PriorityClass, 0 when unset (upstream ``corev1helpers.PodPriority``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsche_daemon.model.pod import Pod

__all__ = ["PrioritySort", "priority_sort_key"]


def priority_sort_key(pod: Pod, enqueued_at: float) -> tuple[int, float]:
    """Ascending order of this key is the queue order: higher priority, then earlier enqueue."""
    return (-pod.priority, enqueued_at)


class PrioritySort:
    """QueueSort: higher priority first, then earlier timestamp."""

    NAME = "PrioritySort"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    @staticmethod
    def sort_key(pod: Pod, enqueued_at: float) -> tuple[int, float]:
        """The queue-order key (see ``priority_sort_key``)."""
        return priority_sort_key(pod, enqueued_at)

    @staticmethod
    def less(pod_a: Pod, enqueued_a: float, pod_b: Pod, enqueued_b: float) -> bool:
        """Upstream ``Less``: whether ``pod_a`` should be popped before ``pod_b``."""
        return priority_sort_key(pod_a, enqueued_a) < priority_sort_key(pod_b, enqueued_b)
