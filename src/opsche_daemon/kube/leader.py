"""Leader election on a ``coordination.k8s.io`` Lease as kube-scheduler's, over kubernetes-asyncio.

kubernetes-asyncio's ``leaderelection`` (LeaseLock, from 32.3.2) does the protocol: a follower
takes the Lease once the holder has not renewed it for ``leaseDurationSeconds`` (timed from when
*it* saw the last renewal, as client-go does, so clocks need not agree), and a leader renews it
every ``retryPeriodSeconds`` until a renewal has failed for ``renewDeadlineSeconds``. Its gaps, and
how they are covered here:

* it never releases the Lease, so after a clean shutdown the successor waits a whole lease
  duration: ``release`` hands it back as client-go's ``ReleaseOnCancel`` does (no holder, lease
  of 1 s), and a follower watching its Lease (by name, so RBAC can pin the watch to that one
  object) tries again at once instead of at its next retry;
* it writes local time with a ``Z`` suffix (wrong unless the process runs in UTC): times are
  converted to UTC here, and a renewal at a whole second (which it cannot parse) is kept;
* it logs a traceback for every lost race to update the Lease (a 409 between two candidates is
  the protocol working): one line instead;
* it never counts ``leaseTransitions``: counted on each change of holder, as client-go does.

``Leadership`` is what the rest of the daemon asks: ``may_act()`` is true only while this replica
holds the Lease *and* its last renewal is younger than the renew deadline. The deadline is shorter
than the lease, so a leader cut off from the API server stops binding and evicting (``fenced``)
before any follower may take over: two replicas never act at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import structlog
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.leaderelection.electionconfig import Config
from kubernetes_asyncio.leaderelection.leaderelection import LeaderElection
from kubernetes_asyncio.leaderelection.leaderelectionrecord import LeaderElectionRecord
from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

from opsche_daemon.config import LeaderElectionSettings
from opsche_daemon.metrics import Metrics

__all__ = ["LeaderElector", "Leadership", "LeadershipLost", "new_identity"]

log = structlog.get_logger("opsche.leader")

_RECORD_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")  # str() of a naive datetime


class LeadershipLost(RuntimeError):
    """The Lease could not be renewed within the renew deadline: this replica must stop."""


def new_identity() -> str:
    """``hostname_uuid``, as kube-scheduler's: unique even for two processes on one host."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Leadership:
    """Whether this replica may act now (bind, evict, write status): it leads and renewed lately."""

    def __init__(self, renew_deadline_s: float, clock: Callable[[], float] = time.monotonic):
        self.renew_deadline_s = renew_deadline_s
        self.clock = clock
        self.leading = False
        self.renewed_at = -math.inf

    def renewed(self) -> None:
        """A renewal (or the acquisition) succeeded now."""
        self.leading = True
        self.renewed_at = self.clock()

    def may_act(self) -> bool:
        """True while leading and within the renew deadline of the last renewal."""
        return self.leading and self.clock() - self.renewed_at < self.renew_deadline_s


class _UtcLeaseLock(LeaseLock):
    """kubernetes-asyncio's LeaseLock, writing UTC and counting transitions, without tracebacks.

    The election keeps its record times as ``str()`` of naive *local* datetimes; the Lease holds
    UTC. Both directions are converted here, so the election's comparisons stay consistent.
    """

    def time_str_to_iso(self, str_time: str | None) -> str | None:
        """A record time (naive local) as RFC 3339 UTC with microseconds."""
        for fmt in _RECORD_FORMATS:
            try:
                local = datetime.strptime(str_time or "", fmt)
            except ValueError:
                continue
            return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        log.warning("unreadable leader election time", value=str_time)
        return None

    def election_record(self, lease: client.V1Lease) -> LeaderElectionRecord:
        """The Lease's record, its times as naive local datetimes (the election's convention)."""
        record = LeaderElectionRecord(None, None, None, None)
        spec: client.V1LeaseSpec | None = lease.spec
        if not spec:
            return record
        record.holder_identity = spec.holder_identity or None
        if spec.lease_duration_seconds:
            record.lease_duration = str(spec.lease_duration_seconds)
        if spec.acquire_time:
            record.acquire_time = str(_local(spec.acquire_time))
        if spec.renew_time:
            record.renew_time = str(_local(spec.renew_time))
        return record

    async def create(
        self, name: str, namespace: str, election_record: LeaderElectionRecord
    ) -> bool:
        """Create the Lease with this candidate as holder; False if another got there first."""
        spec = self.update_lease(election_record)
        spec.lease_transitions = 0
        body = client.V1Lease(metadata=client.V1ObjectMeta(name=name), spec=spec)
        try:
            await self.api_instance.create_namespaced_lease(namespace, body)
        except ApiException as exc:
            log.info("could not create the Lease", lease=f"{namespace}/{name}", status=exc.status,
                     reason=exc.reason)  # fmt: skip
            return False
        return True

    async def update(self, name: str, namespace: str, updated_record: LeaderElectionRecord) -> bool:
        """Replace the Lease (read just before) with ``updated_record``; False on a lost race."""
        lease = self.lease_reference
        if lease is None:
            return False
        old = lease.spec or client.V1LeaseSpec()
        transitions = old.lease_transitions or 0
        if old.holder_identity != updated_record.holder_identity:
            transitions += 1
        lease.spec = self.update_lease(updated_record, old)
        lease.spec.lease_transitions = transitions
        try:
            await self.api_instance.replace_namespaced_lease(name, namespace, lease)
        except ApiException as exc:
            log.info("could not update the Lease", lease=f"{namespace}/{name}", status=exc.status,
                     reason=exc.reason)  # fmt: skip
            return False
        return True


def _local(moment: datetime) -> datetime:
    """An aware datetime as naive local time."""
    return moment.astimezone().replace(tzinfo=None)


class _Election(LeaderElection):
    """The library's election, reporting renewals and changes of holder, woken early by a watch."""

    def __init__(self, config: Config, elector: LeaderElector) -> None:
        super().__init__(config)
        self.elector = elector
        self.wake = asyncio.Event()

    async def acquire(self) -> bool:
        """Try every retry period, or at once when the Lease is released."""
        while True:
            self.wake.clear()
            if await self.try_acquire_or_renew():
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), self.election_config.retry_period)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt, then the bookkeeping: renewal time, holder seen."""
        try:
            succeeded = await super().try_acquire_or_renew()
        except ApiException as exc:
            log.info("leader election attempt failed", status=exc.status, reason=exc.reason)
            succeeded = False
        except (OSError, TimeoutError) as exc:
            # The library catches only some API errors: a refused connection must count as a
            # failed attempt (the leader then stops at its renew deadline), not end the election.
            log.info("leader election attempt failed", error=str(exc) or type(exc).__name__)
            succeeded = False
        holder = self.observed_record.holder_identity if self.observed_record else None
        if succeeded:
            self.elector.leadership.renewed()
        elif holder != self.election_config.lock.identity:
            # Someone else holds it: stop acting now, not at the renew deadline (the protocol
            # cannot get here, but an operator editing the Lease can).
            self.elector.leadership.leading = False
        self.elector.saw_holder(holder)
        return succeeded


async def _noop() -> None:
    """The library insists on callbacks; the daemon drives leading itself."""


class LeaderElector:
    """One candidate: ``acquire`` (follow till leading), ``hold`` (renew till lost), ``release``."""

    def __init__(
        self,
        api: client.ApiClient,
        settings: LeaderElectionSettings,
        metrics: Metrics,
        identity: str | None = None,
    ) -> None:
        self.api = api
        self.name = settings.resource_name
        self.namespace = settings.resource_namespace
        self.identity = identity or new_identity()
        self.metrics = metrics
        self.leadership = Leadership(settings.renew_deadline_s)
        self.lock = _UtcLeaseLock(self.name, self.namespace, self.identity, api)
        config = Config(
            self.lock,
            lease_duration=math.ceil(settings.lease_duration_s),  # the Lease holds whole seconds
            renew_deadline=settings.renew_deadline_s,
            retry_period=settings.retry_period_s,
            onstarted_leading=_noop,
            onstopped_leading=_noop,
        )
        self.election = _Election(config, self)
        self.holder: str | None = None  # the holder last seen (None: none yet, or released)
        metrics.leader_status.labels(self.name).set(0)

    @property
    def lease(self) -> str:
        """``namespace/name`` of the Lease, for logs."""
        return f"{self.namespace}/{self.name}"

    def saw_holder(self, holder: str | None) -> None:
        """Count and log a change of the Lease's holder."""
        if holder == self.holder:
            return
        self.holder = holder
        if holder is not None:
            self.metrics.leader_transitions.labels(self.name).inc()
            log.info("lease holder changed", lease=self.lease, holder=holder,
                     me=holder == self.identity)  # fmt: skip

    async def acquire(self) -> None:
        """Follow until this replica holds the Lease."""
        log.info("waiting to lead", lease=self.lease, identity=self.identity)
        watcher = asyncio.get_running_loop().create_task(self._watch(), name="lease-watch")
        try:
            await self.election.acquire()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        self.metrics.leader_status.labels(self.name).set(1)
        log.info("became the leader", lease=self.lease, identity=self.identity)

    async def hold(self) -> None:
        """Renew until a renewal fails for the renew deadline; then raise ``LeadershipLost``."""
        try:
            await self.election.renew_loop()
        finally:
            self.leadership.leading = False
            self.metrics.leader_status.labels(self.name).set(0)
        raise LeadershipLost(
            f"could not renew the Lease {self.lease} for "
            f"{self.election.election_config.renew_deadline:g}s"
        )

    async def release(self) -> bool:
        """Hand the Lease back (no holder), so a follower takes over at once; True if released.

        Only if this replica still holds it; called after it has stopped acting.
        """
        self.leadership.leading = False
        self.metrics.leader_status.labels(self.name).set(0)
        coordination = client.CoordinationV1Api(self.api)
        try:
            lease = await coordination.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return False
            now = datetime.now(UTC)
            lease.spec = client.V1LeaseSpec(
                holder_identity=None,
                lease_duration_seconds=1,
                acquire_time=now,
                renew_time=now,
                lease_transitions=lease.spec.lease_transitions,
            )
            await coordination.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("could not release the Lease", lease=self.lease, status=exc.status,
                            reason=exc.reason)  # fmt: skip
            return False
        except (OSError, TimeoutError) as exc:
            log.warning("could not release the Lease", lease=self.lease, error=str(exc))
            return False
        log.info("released the Lease", lease=self.lease)
        return True

    async def _watch(self) -> None:
        """Wake the election when the Lease is released (or deleted); polling covers the rest."""
        coordination = client.CoordinationV1Api(self.api)
        selector = f"metadata.name={self.name}"
        while True:
            try:
                async with watch.Watch() as stream:
                    async for event in stream.stream(
                        coordination.list_namespaced_lease,
                        self.namespace,
                        field_selector=selector,
                        timeout_seconds=300,
                    ):
                        lease = event["object"]
                        spec = getattr(lease, "spec", None)
                        if event["type"] == "DELETED" or spec is None or not spec.holder_identity:
                            self.election.wake.set()
            except (ApiException, OSError, TimeoutError, ValueError) as exc:
                log.debug("lease watch ended; polling only", error=str(exc))
                await asyncio.sleep(self.election.election_config.retry_period)
