"""All of opsche's Prometheus metrics, in one place (``registry``); see its docstring."""

from __future__ import annotations

from opsche_daemon.metrics.registry import Metrics

__all__ = ["Metrics"]
