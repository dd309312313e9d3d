"""The test-only failpoints: parsed strictly, paused by a file, fired once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from opsche_daemon.daemon.failpoints import ENV, FailpointError, parse_failpoints, wait_for_file


def test_unset_means_no_failpoints() -> None:
    assert parse_failpoints({}) == {}
    assert parse_failpoints({ENV: " "}) == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("after-bind=pause:/tmp/x", "unknown failpoint 'after-bind'"),
        ("before-validate=sleep:3", "the action must be pause:DIRECTORY"),
        ("before-validate=pause:", "the action must be pause:DIRECTORY"),
    ],
)
def test_a_malformed_failpoint_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(FailpointError, match=message):
        parse_failpoints({ENV: spec})


async def test_pause_waits_for_release_and_fires_only_once(tmp_path: Path) -> None:
    hook = parse_failpoints({ENV: f"before-validate=pause:{tmp_path}"})["before-validate"]
    task = asyncio.ensure_future(hook())
    assert await asyncio.to_thread(wait_for_file, tmp_path / "reached", 5)
    assert not task.done(), "paused until the release file appears"
    (tmp_path / "release").touch()
    await asyncio.wait_for(task, 5)
    (tmp_path / "release").unlink()
    await asyncio.wait_for(hook(), 1)  # the second time it does not pause
