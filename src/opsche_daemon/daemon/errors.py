"""The one error the daemon raises for a user to read: it cannot start, and here is why."""

from __future__ import annotations

__all__ = ["StartupError"]


class StartupError(RuntimeError):
    """The daemon cannot start (port taken, API server unreachable); the message says why."""
