"""The HTTP extender client against a real HTTP server on 127.0.0.1: requests, answers, failures."""

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from opsche_daemon.config import ExtenderSettings, ExtenderTLS
from opsche_daemon.extender import HttpExtender, build_extenders
from opsche_daemon.framework.extender import ExtenderError
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import Node, NodeInfo
from tests.factories import api_pod, node_manifest

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Server:
    """An aiohttp app answering ``/filter`` and ``/prioritize`` with whatever the test sets."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, str, Any]] = []
        self.handler: Handler = self.default
        self.port = 0

    async def default(self, request: web.Request) -> web.StreamResponse:
        if request.path.endswith("/prioritize"):
            return web.json_response([{"Host": "a", "Score": 2}, {"Host": "b", "Score": 9}])
        return web.json_response({"NodeNames": None, "Nodes": {"items": []}, "Error": ""})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append((request.path, request.content_type, json.loads(await request.read())))
        return await self.handler(request)


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server()
    app = web.Application()
    app.router.add_post("/{tail:.*}", state.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.port = runner.addresses[0][1]
    yield state
    await runner.cleanup()


def nodes() -> list[NodeInfo]:
    return [NodeInfo.build(Node.from_api(node_manifest(n))) for n in ("a", "b")]


def client(
    port: int, metrics: Metrics | None = None, *, timeout: float = 2.0, **kwargs: Any
) -> HttpExtender:
    settings = ExtenderSettings(
        url_prefix=f"http://127.0.0.1:{port}/sched/",
        filter_verb="filter",
        prioritize_verb="prioritize",
        weight=1,
        http_timeout_s=timeout,
        **kwargs,
    )
    return HttpExtender(settings, metrics)


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


async def test_prioritize_posts_json_to_prefix_slash_verb(server: Server) -> None:
    metrics = Metrics()
    extender = client(server.port, metrics)
    try:
        scores = await extender.prioritize(api_pod("p"), nodes())
    finally:
        await extender.aclose()
    assert scores == {"a": 2, "b": 9}
    path, content_type, body = server.bodies[0]
    assert (path, content_type) == ("/sched/prioritize", "application/json")
    assert body["Pod"]["metadata"]["name"] == "p"
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b"]
    labels = {"extender": extender.name, "verb": "prioritize", "result": "ok"}
    assert sample(metrics, "opsche_extender_request_duration_seconds_count", **labels) == 1


async def test_filter_with_names(server: Server) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.json_response({"NodeNames": ["b"], "FailedNodes": {"a": "busy"}})

    server.handler = answer
    extender = client(server.port, node_cache_capable=True)
    try:
        result = await extender.filter(api_pod("p"), nodes())
    finally:
        await extender.aclose()
    assert result.nodes == ("b",) and dict(result.failed) == {"a": "busy"}
    assert server.bodies[0][2]["NodeNames"] == ["a", "b"]


@pytest.mark.parametrize(
    ("status", "body", "kind", "message"),
    [
        (500, "{}", "status", "failed filter with extender at URL {url}/sched/filter, code 500"),
        (200, "not json", "decode", "answered filter with invalid JSON"),
        (200, '{"Error": "model not loaded"}', "error", "model not loaded"),
        (200, '{"NodeNames": ["z"]}', "decode", "'z' which is not in the input node list"),
    ],
)
async def test_failures_are_classified(
    server: Server, status: int, body: str, kind: str, message: str
) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text=body, content_type="application/json")

    server.handler = answer
    metrics = Metrics()
    extender = client(server.port, metrics, node_cache_capable=True)
    try:
        with pytest.raises(ExtenderError) as raised:
            await extender.filter(api_pod("p"), nodes())
    finally:
        await extender.aclose()
    assert raised.value.kind == kind
    assert message.format(url=f"http://127.0.0.1:{server.port}") in str(raised.value)
    labels = {"extender": extender.name, "verb": "filter", "kind": kind, "ignored": "false"}
    assert sample(metrics, "opsche_extender_errors_total", **labels) == 1


async def test_a_slow_extender_times_out_within_its_http_timeout(server: Server) -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(5)
        return web.json_response([])

    server.handler = slow
    metrics = Metrics()
    extender = client(server.port, metrics, timeout=0.2, ignorable=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(ExtenderError) as raised:
            await extender.prioritize(api_pod("p"), nodes())
    finally:
        await extender.aclose()
    assert loop.time() - started < 1.0
    assert raised.value.kind == "timeout"
    assert "no answer within httpTimeout 200ms" in str(raised.value)
    labels = {"extender": extender.name, "verb": "prioritize", "kind": "timeout", "ignored": "true"}
    assert sample(metrics, "opsche_extender_errors_total", **labels) == 1


async def test_nothing_listening_is_a_connection_failure() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has no listener
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    extender = client(port)
    try:
        with pytest.raises(ExtenderError) as raised:
            await extender.filter(api_pod("p"), nodes())
    finally:
        await extender.aclose()
    assert raised.value.kind == "connection"
    assert str(raised.value).startswith(f'Post "http://127.0.0.1:{port}/sched/filter": ')


def test_ignorable_extenders_are_asked_last() -> None:
    settings = [
        ExtenderSettings(url_prefix="http://a", ignorable=True),
        ExtenderSettings(url_prefix="http://b"),
        ExtenderSettings(url_prefix="http://c", ignorable=True),
        ExtenderSettings(url_prefix="http://d"),
    ]
    names = [e.name for e in build_extenders(settings)]
    assert names == ["http://b", "http://d", "http://a", "http://c"]


def test_https_is_verified_unless_enable_https_has_no_ca() -> None:
    verified = HttpExtender(ExtenderSettings(url_prefix="https://ext.example"))
    assert verified._ssl is not None and verified._ssl.verify_mode == ssl.CERT_REQUIRED
    unverified = HttpExtender(ExtenderSettings(url_prefix="https://x", enable_https=True))
    assert unverified._ssl is not None and unverified._ssl.verify_mode == ssl.CERT_NONE
    insecure = HttpExtender(
        ExtenderSettings(url_prefix="https://x", tls=ExtenderTLS(insecure=True))
    )
    assert insecure._ssl is not None and insecure._ssl.verify_mode == ssl.CERT_NONE
    assert HttpExtender(ExtenderSettings(url_prefix="http://x"))._ssl is None


async def test_a_closed_client_makes_no_new_connection(server: Server) -> None:
    extender = client(server.port)
    await extender.aclose()
    with pytest.raises(ExtenderError, match="closed"):
        await extender.prioritize(api_pod("p"), nodes())
    assert server.bodies == []
