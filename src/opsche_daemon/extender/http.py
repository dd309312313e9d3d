"""One configured extender as an HTTP client: POST ``urlPrefix/verb`` with JSON, within a timeout.

As upstream's ``HTTPExtender.send``: the URL is the prefix without trailing slashes, a slash and
the verb; the body is JSON with ``Content-Type: application/json``; anything but 200 is a failure
("failed filter with extender at URL ..., code 500"); the whole call (connect, send, answer) is
bounded by ``httpTimeout``. Failures are classified for the metrics (timeout, connection, status,
decode, error) and raised as ``ExtenderError``, whose text is what the FailedScheduling event
says for a non-ignorable extender.

The aiohttp session is made on first use (it needs the running loop) and closed by ``aclose``;
one session per extender keeps its connections alive between cycles, which matters at a
millisecond-scale budget per pod.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import structlog

from opsche_daemon.config import ExtenderSettings
from opsche_daemon.framework.extender import ExtenderError, FilterResult, interested
from opsche_daemon.framework.extender_protocol import (
    extender_args,
    parse_filter_result,
    parse_host_priorities,
)
from opsche_daemon.metrics import Metrics
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = ["HttpExtender", "build_extenders"]

log = structlog.get_logger("opsche.extender")


def _ssl_context(settings: ExtenderSettings) -> ssl.SSLContext | None:
    """TLS as upstream's ``makeTransport``.

    An https URL is verified against the system's roots (or ``tlsConfig.caFile``), unless
    ``tlsConfig.insecure``; ``enableHTTPS: true`` without a CA file does not verify the server,
    exactly as kube-scheduler (``cfg.Insecure = true`` when there is no CA).
    """
    https = settings.enable_https or settings.url_prefix.startswith("https://")
    if not https:
        return None
    tls = settings.tls
    ca_file = tls.ca_file if tls else ""
    context = ssl.create_default_context(cafile=ca_file or None)
    if (tls and tls.insecure) or (settings.enable_https and not ca_file):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if tls and tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file or None)
    return context


class HttpExtender:
    """kube-scheduler's HTTPExtender for opsche's scheduling cycle and plans."""

    def __init__(self, settings: ExtenderSettings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics
        self._managed = frozenset(settings.managed_resources)
        self._ssl = _ssl_context(settings)
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    @property
    def name(self) -> str:
        """Its URL prefix."""
        return self.settings.url_prefix

    @property
    def ignorable(self) -> bool:
        """Scheduling goes on without it when it fails."""
        return self.settings.ignorable

    @property
    def is_filter(self) -> bool:
        """It has a filter verb."""
        return bool(self.settings.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        """It has a prioritize verb."""
        return bool(self.settings.prioritize_verb)

    @property
    def weight(self) -> int:
        """Multiplier of its scores."""
        return self.settings.weight

    @property
    def timeout_s(self) -> float:
        """Its httpTimeout."""
        return self.settings.http_timeout_s

    def is_interested(self, pod: Pod) -> bool:
        """True unless it manages resources and ``pod`` requests none of them."""
        return interested(pod, self._managed)

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult:
        """The nodes it accepts for ``pod``; raises ``ExtenderError``."""
        cache_capable = self.settings.node_cache_capable
        args = extender_args(pod, nodes, node_cache_capable=cache_capable)
        data = await self._send(self.settings.filter_verb, "filter", args)
        try:
            result, error = parse_filter_result(
                data, [n.name for n in nodes], node_cache_capable=cache_capable
            )
        except ValueError as exc:
            raise self._failed("filter", "decode", f"extender {self.name!r}: {exc}") from exc
        if error:
            raise self._failed("filter", "error", error)
        return result

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Mapping[str, int]:
        """Its 0-10 score per node; raises ``ExtenderError``."""
        args = extender_args(pod, nodes, node_cache_capable=self.settings.node_cache_capable)
        data = await self._send(self.settings.prioritize_verb, "prioritize", args)
        try:
            return parse_host_priorities(data)
        except ValueError as exc:
            raise self._failed("prioritize", "decode", f"extender {self.name!r}: {exc}") from exc

    async def aclose(self) -> None:
        """Close its connections (at shutdown)."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _session_now(self) -> aiohttp.ClientSession:
        if self._closed:  # shutting down: a late call (a solve's) must not open a new session
            raise ExtenderError(f"extender {self.name!r}: closed (shutting down)", "connection")
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl else False),
                json_serialize=json.dumps,
            )
        return self._session

    def _failed(self, verb: str, kind: str, message: str) -> ExtenderError:
        if self.metrics is not None:
            ignored = "true" if self.ignorable or verb == "prioritize" else "false"
            self.metrics.extender_errors.labels(self.name, verb, kind, ignored).inc()
        return ExtenderError(message, kind)

    def _observe(self, verb: str, result: str, started: float) -> None:
        seconds = time.monotonic() - started
        if self.metrics is not None:
            self.metrics.extender_duration.labels(self.name, verb, result).observe(seconds)
        log.debug("extender call", extender=self.name, verb=verb, result=result, seconds=seconds)

    async def _send(self, action: str, verb: str, args: Mapping[str, Any]) -> Any:
        url = self.settings.url_prefix.rstrip("/") + "/" + action
        timeout = self.settings.http_timeout_s
        server_name = self.settings.tls.server_name if self.settings.tls else ""
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                async with self._session_now().post(
                    url,
                    data=json.dumps(args, separators=(",", ":")),
                    headers={"Content-Type": "application/json"},
                    server_hostname=server_name or None,
                ) as response:
                    if response.status != 200:
                        self._observe(verb, "status", started)
                        raise self._failed(
                            verb,
                            "status",
                            f"failed {action} with extender at URL {url}, code {response.status}",
                        )
                    body = await response.read()
        except TimeoutError as exc:
            self._observe(verb, "timeout", started)
            raise self._failed(
                verb,
                "timeout",
                f'Post "{url}": no answer within httpTimeout {_seconds(timeout)} '
                "(Client.Timeout exceeded)",
            ) from exc
        except aiohttp.ClientError as exc:
            self._observe(verb, "connection", started)
            raise self._failed(verb, "connection", f'Post "{url}": {exc}') from exc
        try:
            data = json.loads(body)
        except ValueError as exc:
            self._observe(verb, "decode", started)
            raise self._failed(
                verb, "decode", f"extender {self.name!r} answered {action} with invalid JSON"
            ) from exc
        self._observe(verb, "ok", started)
        return data


def _seconds(value: float) -> str:
    return f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"


def build_extenders(
    settings: Sequence[ExtenderSettings], metrics: Metrics | None = None
) -> list[HttpExtender]:
    """One client per configured extender, the ignorable ones last (the order filters run in).

    As upstream's ``buildExtenders``: the required extenders see the nodes first, so a node one
    of them finds unresolvable is marked so even if an ignorable one would have refused it.
    """
    ordered = [s for s in settings if not s.ignorable] + [s for s in settings if s.ignorable]
    return [HttpExtender(s, metrics) for s in ordered]
