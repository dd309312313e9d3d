"""Scheduler extenders over HTTP: kube-scheduler's ``HTTPExtender``, asynchronous and bounded.

``HttpExtender`` implements ``opsche_daemon.framework.extender.Extender`` with aiohttp; the rules
of when it is called and what its answers mean are in that (pure) module.
"""

from __future__ import annotations

from opsche_daemon.extender.http import HttpExtender, build_extenders

__all__ = ["HttpExtender", "build_extenders"]
