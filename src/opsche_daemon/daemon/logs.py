"""Structured logs: one JSON object per line on stderr, the way log pipelines ingest them.

Every decision opsche makes is one line with its context (pod, node, plan, outcome), ISO UTC
timestamps whatever the host's time zone, and client libraries held at WARNING so their request
dumps do not drown the scheduler's own lines.
"""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str) -> None:
    """Structured JSON logs on stderr: ISO UTC timestamps, level, logger, event and context."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    # Client libraries log request bodies at debug level: far too much, even for debugging opsche.
    for noisy in ("kubernetes_asyncio", "aiohttp", "kopf", "asyncio"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
