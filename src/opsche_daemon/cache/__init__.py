"""The scheduler's cache of the cluster (``cache``): nodes, every pod, assumed pods."""

from __future__ import annotations

from opsche_daemon.cache.cache import Cache, CacheStats

__all__ = ["Cache", "CacheStats"]
