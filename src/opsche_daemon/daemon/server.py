"""The daemon's HTTP endpoints: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz``.

``/healthz`` answers as long as the process serves at all; ``/readyz`` only once the cache has
synced from the API server and the scheduling loop runs (a scheduler deciding on an empty cache
would place pods onto nodes it has not heard of yet), and again 503 while shutting down.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from opsche_daemon.daemon.errors import StartupError

__all__ = ["serve_http"]

log = structlog.get_logger("opsche.daemon")


async def serve_http(
    registry: CollectorRegistry, ready: Callable[[], bool], address: str, port: int
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
            return web.Response(text="ok")
        return web.Response(status=503, text="cache not synced")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
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
