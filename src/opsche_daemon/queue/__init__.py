"""The scheduling queue (``queue``): active, backoff, unschedulable and gated pools."""

from __future__ import annotations

from opsche_daemon.queue.queue import QueuedPod, SchedulingQueue

__all__ = ["QueuedPod", "SchedulingQueue"]
