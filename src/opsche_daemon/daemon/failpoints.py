"""Failpoints: named places where a test can stop the real daemon and change the cluster.

Some safety properties are about races a test cannot win by timing: "a plan made stale by a
concurrent change is discarded, not applied" needs the change to land between the solve and the
validation, a window of a few milliseconds. As etcd's gofail does, a failpoint makes the window
as wide as the test needs, in the real process against the real API server, with no fake parts.

``OPSCHE_FAILPOINTS="before-validate=pause:/some/dir"``: the first time a run reaches the
validation of its plan, it creates ``/some/dir/reached`` and waits until ``/some/dir/release``
exists (at most ``PAUSE_LIMIT_S``), then carries on. A failpoint fires once per process, so the
runs after it behave normally. Unset (always, outside tests), nothing happens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import structlog

__all__ = ["ENV", "KNOWN", "PAUSE_LIMIT_S", "FailpointError", "parse_failpoints", "wait_for_file"]

log = structlog.get_logger("opsche.failpoints")

ENV = "OPSCHE_FAILPOINTS"
KNOWN = ("before-validate",)
PAUSE_LIMIT_S = 120.0
_POLL_S = 0.05

Hook = Callable[[], Awaitable[None]]


class FailpointError(ValueError):
    """The failpoint variable is malformed or names a failpoint that does not exist."""


def parse_failpoints(environ: Mapping[str, str]) -> dict[str, Hook]:
    """The hooks named in ``$OPSCHE_FAILPOINTS`` (comma-separated ``name=pause:DIR``)."""
    spec = environ.get(ENV, "").strip()
    hooks: dict[str, Hook] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, action = item.partition("=")
        if name not in KNOWN:
            raise FailpointError(f"{ENV}: unknown failpoint {name!r} (known: {', '.join(KNOWN)})")
        kind, _, argument = action.partition(":")
        if kind != "pause" or not argument:
            raise FailpointError(f"{ENV}: {item!r}: the action must be pause:DIRECTORY")
        hooks[name] = _pause_once(name, Path(argument))
    return hooks


def wait_for_file(path: Path, within: float) -> bool:
    """Block until ``path`` exists or ``within`` seconds pass; True if it exists.

    Another process creates it, and a file is all the two share, so this polls (in a thread).
    """
    deadline = time.monotonic() + within
    while not path.exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _reach(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "reached").touch()


def _pause_once(name: str, directory: Path) -> Hook:
    fired = False

    async def hook() -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        await asyncio.to_thread(_reach, directory)
        log.warning("failpoint reached; paused until released", failpoint=name, dir=str(directory))
        released = await asyncio.to_thread(wait_for_file, directory / "release", PAUSE_LIMIT_S)
        log.warning("failpoint over", failpoint=name, released=released)

    return hook
