"""``opsche score serve``: a scheduler extender that scores nodes with a scorer (FastAPI).

The service speaks the kube-scheduler extender protocol (``framework.extender_protocol``), so the
same config fragment plugs it into kube-scheduler and into opsche:

* ``POST /prioritize``: the scorer's score per candidate, scaled to the protocol's 0-10 within
  the request (min-max: the best candidate 10, the worst 0; all equal: all 5), because only the
  order within one decision means anything;
* ``POST /filter`` (with ``--filter``): refuses the candidates where the pod's requests do not fit
  in what the service's cluster view says is free, with a message naming the resource;
* ``GET /healthz``: ``ok`` (and whether the cluster view has synced);
* ``GET /metrics``: request latency per verb, requests by verb and status code, the process's
  memory (``process_resident_memory_bytes``).

``--delay`` adds latency to each answer (filter and prioritize), for the seed's overhead
experiment. Candidates are described by :func:`scoring.features.feature_row`, the same
function training used.
FastAPI is imported at the top (its annotations must resolve at module level), so this module
is imported only where the learn extra is installed (``opsche score serve`` imports it late).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from opsche_daemon.framework.extender_protocol import (
    ExtenderArgs,
    filter_result_json,
    host_priority_list_json,
    parse_extender_args,
)
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.scoring.features import Candidate, PodDemand
from opsche_daemon.scoring.models import Scorer
from opsche_daemon.scoring.view import ClusterView

__all__ = ["Scoring", "check_kubeconfig", "create_app", "scale_scores", "serve"]

_GIB = 2**30


def scale_scores(values: Sequence[float]) -> list[int]:
    """Scores to the protocol's 0-10, best 10 and worst 0 (all equal: 5)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [5 for _ in values]
    return [round(10 * (v - low) / (high - low)) for v in values]


def _demand(pod: Mapping[str, Any], view: ClusterView) -> PodDemand:
    requests = Pod.from_api(pod).requests
    return PodDemand(requests.milli_cpu / 1000, requests.memory / _GIB, view.width(pod))


def _candidates(args: ExtenderArgs, view: ClusterView) -> list[Candidate]:
    """The candidates with allocatable from the request's Nodes (or the view's, for names)."""
    if args.nodes is not None:
        nodes = [Node.from_api(raw) for raw in args.nodes]
    else:
        missing = [n for n in args.node_names if n not in view.nodes]
        if missing:
            raise ValueError(
                f"nodeCacheCapable request for nodes this service does not know ({missing[0]}); "
                "run it with --kubeconfig, or configure the extender without nodeCacheCapable"
            )
        nodes = [view.nodes[n] for n in args.node_names]
    out = []
    for node in nodes:
        used = view.used(node.name)
        out.append(
            Candidate(
                node.name,
                node.allocatable.milli_cpu / 1000,
                node.allocatable.memory / _GIB,
                used.milli_cpu / 1000,
                used.memory / _GIB,
            )
        )
    return out


class Scoring:
    """What the endpoints do, without HTTP: answers to ExtenderArgs from a scorer and a view."""

    def __init__(self, scorer: Scorer, view: ClusterView, *, enable_filter: bool) -> None:
        self.scorer = scorer
        self.view = view
        self.enable_filter = enable_filter

    def prioritize(self, args: ExtenderArgs) -> list[dict[str, Any]]:
        """A HostPriorityList: the scorer's scores scaled to 0-10 within the request."""
        candidates = _candidates(args, self.view)
        scores = scale_scores(self.scorer.score(_demand(args.pod, self.view), candidates))
        return host_priority_list_json({c.name: s for c, s in zip(candidates, scores, strict=True)})

    def filter(self, args: ExtenderArgs) -> dict[str, Any]:
        """An ExtenderFilterResult: the candidates where the pod fits in what is free."""
        candidates = _candidates(args, self.view)
        pod = _demand(args.pod, self.view)
        passed, failed = [], {}
        for c in candidates:
            if c.fits(pod):
                passed.append(c.name)
            else:
                short = "cpu" if pod.cpu > c.free_cpu + 1e-9 else "memory"
                failed[c.name] = f"opsche-score: not enough free {short} for the pod"
        return filter_result_json(args, passed, failed)


def create_app(
    scorer: Scorer,
    *,
    view: ClusterView | None = None,
    delay_s: float = 0.0,
    enable_filter: bool = False,
    kubeconfig: Path | None = None,
) -> Any:
    """The FastAPI application (built here so that tests and ``serve`` share it)."""
    scoring = Scoring(scorer, view or ClusterView(), enable_filter=enable_filter)
    metrics = _ServiceMetrics()

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        if kubeconfig is not None:
            scoring.view.start(kubeconfig)
        yield
        await scoring.view.stop()

    app = FastAPI(title="opsche score", lifespan=lifespan)

    async def answer(verb: str, request: Request) -> JSONResponse:
        started = time.monotonic()
        try:
            args = parse_extender_args(json.loads(await request.body()))
            body: Any = scoring.prioritize(args) if verb == "prioritize" else scoring.filter(args)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            metrics.requests.labels(verb, "400").inc()
            return JSONResponse({"error": f"not answerable ExtenderArgs: {exc}"}, 400)
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        metrics.latency.labels(verb).observe(time.monotonic() - started)
        metrics.requests.labels(verb, "200").inc()
        return JSONResponse(body)

    @app.post("/prioritize")
    async def prioritize(request: Request) -> JSONResponse:
        return await answer("prioritize", request)

    @app.post("/filter")
    async def filter_nodes(request: Request) -> JSONResponse:
        if not enable_filter:
            metrics.requests.labels("filter", "404").inc()
            return JSONResponse({"error": "filtering is off (opsche score serve --filter)"}, 404)
        return await answer("filter", request)

    @app.get("/healthz")
    async def healthz() -> PlainTextResponse:
        synced = ""
        if kubeconfig is not None:
            synced = " (synced)" if scoring.view.synced else " (syncing)"
        return PlainTextResponse(f"ok: {scorer.name}{synced}")

    @app.get("/metrics")
    async def metrics_page() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


class _ServiceMetrics:
    """The service's own registry: latency and count per verb, and the process's memory."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.latency = Histogram(
            "opsche_score_request_duration_seconds",
            "Time to answer an extender call, by verb (the injected delay included).",
            ["verb"],
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5),
            registry=self.registry,
        )
        self.requests = Counter(
            "opsche_score_requests_total",
            "Extender calls by verb and HTTP status.",
            ["verb", "code"],
            registry=self.registry,
        )


def check_kubeconfig(path: Path) -> str | None:
    """Why ``path`` cannot be used to watch the cluster, or None (checked before serving)."""
    from kubernetes_asyncio import client, config  # noqa: PLC0415

    async def load() -> None:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(path), client_configuration=configuration)

    try:
        asyncio.run(load())
    except Exception as exc:  # the loader raises many kinds for a bad file
        return f"not a usable kubeconfig ({exc})"
    return None


def serve(
    scorer: Scorer,
    *,
    host: str = "127.0.0.1",
    port: int = 8888,
    delay_s: float = 0.0,
    enable_filter: bool = False,
    kubeconfig: Path | None = None,
) -> int:
    """Serve until SIGINT/SIGTERM; prints the address (port 0 picks a free one)."""
    import uvicorn  # noqa: PLC0415 - the learn extra

    app = create_app(scorer, delay_s=delay_s, enable_filter=enable_filter, kubeconfig=kubeconfig)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without, Nagle's algorithm and the client's delayed ACK
    # held every answer on a kept-alive connection for 40 ms (measured: 44-48 ms per call at
    # no injected delay, against 6 ms on a fresh connection).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    print(f"opsche score: serving {scorer.name} on http://{host}:{bound}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
