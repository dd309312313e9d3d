"""Leader election's pure parts: when a replica may act, and the Lease's times in UTC."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from opsche_daemon.config import LeaderElect, LeaderElectionSettings
from opsche_daemon.daemon.daemon import elects_leader
from opsche_daemon.kube.leader import Leadership, _UtcLeaseLock, new_identity


def test_a_leader_may_act_only_within_the_renew_deadline_of_its_last_renewal() -> None:
    now = [100.0]
    leadership = Leadership(10.0, clock=lambda: now[0])
    assert not leadership.may_act()  # a follower
    leadership.renewed()
    now[0] = 109.9
    assert leadership.may_act()
    now[0] = 110.0
    assert not leadership.may_act()  # past the deadline: fenced before anyone may take over
    leadership.renewed()
    assert leadership.may_act()
    leadership.leading = False
    assert not leadership.may_act()


def test_identities_are_unique_per_process_and_name_the_host() -> None:
    a, b = new_identity(), new_identity()
    assert a != b
    assert a.split("_")[0] == b.split("_")[0]


@pytest.fixture
def tokyo() -> Iterator[None]:
    """Run in a time zone 9 hours east of UTC (the library's bug only shows outside UTC)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
async def lock() -> AsyncIterator[_UtcLeaseLock]:
    api = client.ApiClient()
    try:
        yield _UtcLeaseLock("opsche", "kube-system", "me", api)
    finally:
        await api.close()


@pytest.mark.usefixtures("tokyo")
async def test_record_times_are_written_in_utc_whatever_the_time_zone(lock: _UtcLeaseLock) -> None:
    moment = 1_790_000_000.25
    local = str(datetime.fromtimestamp(moment))  # how the election writes its record times
    written = lock.time_str_to_iso(local)
    expected = datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert written == expected
    # A renewal at a whole second has no fraction in str(); the library could not parse it.
    whole = str(datetime.fromtimestamp(1_790_000_000))
    utc = datetime.fromtimestamp(1_790_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    assert lock.time_str_to_iso(whole) == utc


@pytest.mark.usefixtures("tokyo")
async def test_the_lease_read_back_gives_the_same_local_times_the_election_wrote(
    lock: _UtcLeaseLock,
) -> None:
    moment = datetime(2026, 12, 2, 3, 0, 0, 123456, tzinfo=UTC)
    lease = client.V1Lease(
        spec=client.V1LeaseSpec(
            holder_identity="other",
            lease_duration_seconds=15,
            acquire_time=moment,
            renew_time=moment,
        )
    )
    record = lock.election_record(lease)
    assert record.holder_identity == "other"
    assert record.lease_duration == "15"
    assert record.renew_time == "2026-12-02 12:00:00.123456"  # Tokyo local, as the election keeps
    assert lock.time_str_to_iso(record.renew_time) == "2026-12-02T03:00:00.123456Z"


async def test_a_released_lease_reads_as_having_no_holder(lock: _UtcLeaseLock) -> None:
    lease = client.V1Lease(spec=client.V1LeaseSpec(holder_identity="", lease_duration_seconds=1))
    assert lock.election_record(lease).holder_identity is None  # taken at once


@pytest.mark.parametrize(
    ("choice", "in_pod", "expected"),
    [
        (LeaderElect.AUTO, True, True),
        (LeaderElect.AUTO, False, False),
        (LeaderElect.TRUE, False, True),
        (LeaderElect.FALSE, True, False),
    ],
)
def test_leader_election_is_on_inside_a_pod_unless_told_otherwise(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    choice: LeaderElect,
    in_pod: bool,
    expected: bool,
) -> None:
    token = tmp_path / "token"
    if in_pod:
        token.write_text("t")
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    else:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert elects_leader(LeaderElectionSettings(leader_elect=choice), token=token) is expected
