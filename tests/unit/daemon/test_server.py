"""The health endpoints say the replica's role, and a malformed request costs one log line."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from opsche_daemon.daemon.server import serve_http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def get(port: int, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.text()


async def test_readyz_names_the_role_once_ready() -> None:
    port, ready, role = free_port(), [False], ["follower"]
    runner = await serve_http(
        CollectorRegistry(), lambda: ready[0], "127.0.0.1", port, role=lambda: role[0]
    )
    try:
        assert await get(port, "/readyz") == (503, "cache not synced")
        assert await get(port, "/healthz") == (200, "ok")
        ready[0] = True
        assert await get(port, "/readyz") == (200, "ok: follower")
        role[0] = "leader"
        assert await get(port, "/readyz") == (200, "ok: leader")
    finally:
        await runner.cleanup()


async def test_a_malformed_request_is_answered_400_and_logged_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    runner = await serve_http(CollectorRegistry(), lambda: True, "127.0.0.1", port)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(200), timeout=5)
        writer.close()
        await writer.wait_closed()
    finally:
        await runner.cleanup()
    assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request"), answer
    out = capsys.readouterr()
    logged = [line for line in (out.out + out.err).splitlines() if "serving metrics" not in line]
    assert len(logged) == 1, logged
    assert "HTTP request failed" in logged[0]
    assert "Content-Length" in logged[0]  # what was wrong, on the same line
