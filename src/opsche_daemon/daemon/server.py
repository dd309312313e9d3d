"""The daemon's HTTP endpoints: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz``.

``/healthz`` answers as long as the process serves at all; ``/readyz`` only once the cache has
synced from the API server and the scheduling loop runs (a scheduler deciding on an empty cache
would place pods onto nodes it has not heard of yet), and again 503 while shutting down. Its body
names the replica's role: ``leader`` or ``follower`` under leader election (a follower is ready:
its cache is warm, and it takes over the moment it leads), ``single`` without.

A malformed request is answered 400 by aiohttp; its traceback would otherwise land in the JSON
log as many lines for every port scanner, so it is logged as one line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from opsche_daemon.daemon.errors import StartupError

__all__ = ["serve_http"]

log = structlog.get_logger("opsche.daemon")


class _OneLine(logging.Logger):
    """aiohttp's server logger, as one structured line per failed request (no traceback)."""

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        """What aiohttp's ``log_exception`` calls: a bad request, or a handler that raised."""
        error = kwargs.get("exc_info")
        text = str(msg) % args if args else str(msg)
        log.warning("HTTP request failed", detail=text,
                    error=repr(error) if isinstance(error, BaseException) else None)  # fmt: skip


async def serve_http(
    registry: CollectorRegistry,
    ready: Callable[[], bool],
    address: str,
    port: int,
    role: Callable[[], str] = lambda: "single",
) -> web.AppRunner:
    """Start serving; the caller cleans the returned runner up. A taken port is a StartupError."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text=f"ok: {role()}")
        return web.Response(status=503, text="cache not synced")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, logger=_OneLine("opsche.http"))
    await runner.setup()
    site = web.TCPSite(runner, address, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise StartupError(
            f"cannot serve metrics on {address}:{port}: {exc.strerror}"
            " (choose another with --metrics-port)"
        ) from None
    log.info("serving metrics and health", address=address, port=port)
    return runner
