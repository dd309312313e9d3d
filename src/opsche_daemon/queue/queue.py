"""The scheduling queue: active, backoff, unschedulable and gated pools, as kube-scheduler has.

* **active**: a heap ordered by PrioritySort (priority high first, then first enqueued);
  ``pop()`` waits on it.
* **backoff**: pods that failed recently wait ``1 s * 2^(attempts-1)``, capped at 10 s, so a pod
  that keeps failing does not starve the others; a periodic flush moves expired ones to active.
  When active is empty, ``pop()`` takes a backed-off pod at once instead of idling (upstream's
  ``SchedulerPopFromBackoffQ``, on by default since 1.33): the one whose backoff ends first, in
  1 s windows, then by priority and arrival. Pods backing off after an error (an API failure, a
  bind conflict) are not taken early, as upstream's separate error backoff queue.
* **unschedulable**: pods no node fits. They stay until a cluster event that could make them fit
  (node added or changed, pod deleted) moves them out, or until they have waited 5 minutes (the
  periodic leftover flush), as upstream ``podMaxInUnschedulablePodsDuration``.
* **gated**: pods that a PreEnqueue plugin refused (scheduling gates, or a plan holding them
  back); re-checked when the pod is updated or when the gate owner asks.

A pod that failed while a cluster event arrived during its cycle goes to backoff, not to the
unschedulable pool, so that event is not lost (upstream's "moveRequestCycle").

Time is injected (``clock``), so backoff and flush behaviour are tested without sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from opsche_daemon.config import QueueSettings
from opsche_daemon.framework.interface import Status
from opsche_daemon.model.pod import Pod

__all__ = ["QueuedPod", "SchedulingQueue"]

Clock = Callable[[], float]
_BACKOFF_WINDOW_S = 1.0  # upstream's backoffQOrderingWindowDuration


@dataclass
class QueuedPod:
    """A pod in the queue, with its scheduling history."""

    pod: Pod
    enqueued_at: float  # last time it entered active (PrioritySort's tie-breaker)
    initial_attempt_at: float | None = None  # first pop, for the SLI duration metric
    attempts: int = 0
    unschedulable_since: float = 0.0
    backoff_until: float = 0.0
    unschedulable_plugins: set[str] = field(default_factory=set)
    gate: Status | None = None
    error_backoff: bool = False  # backing off after an error: never popped before it ends

    @property
    def key(self) -> str:
        """The pod's ``namespace/name``."""
        return self.pod.key


class SchedulingQueue:
    """Pending pods of one scheduler, and the rules that move them between pools."""

    def __init__(
        self,
        pre_enqueue: Callable[[Pod], Status],
        settings: QueueSettings | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self._pre_enqueue = pre_enqueue
        self.settings = settings or QueueSettings()
        self._clock = clock
        self._active: list[tuple[int, float, int, str]] = []
        self._counter = itertools.count()
        self._infos: dict[str, QueuedPod] = {}
        # key -> active | backoff | unschedulable | gated | inflight, and the size of each pool
        self._where: dict[str, str] = {}
        self._sizes: Counter[str] = Counter()
        self._cycle = 0
        self._move_request_cycle = -1
        self._wakeup = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------------ sizes
    def counts(self) -> dict[str, int]:
        """Pods per pool, for ``pending_pods{queue=...}`` (kept up to date, O(1) to read)."""
        return {pool: self._sizes[pool] for pool in ("active", "backoff", "unschedulable", "gated")}

    def _place(self, key: str, pool: str | None) -> None:
        """Move a pod between pools (None: out of the queue), keeping the pool sizes exact."""
        old = self._where.pop(key, None)
        if old is not None:
            self._sizes[old] -= 1
        if pool is not None:
            self._where[key] = pool
            self._sizes[pool] += 1
            if pool == "backoff" and not self._infos[key].error_backoff:
                self._wakeup.set()  # an idle pop() may take it now

    def __contains__(self, key: str) -> bool:
        return key in self._where

    def where(self, key: str) -> str | None:
        """Which pool holds the pod (``inflight`` while being scheduled), or None."""
        return self._where.get(key)

    # ------------------------------------------------------------------ intake
    def add(self, pod: Pod) -> None:
        """A new pending pod (or one seen again after a restart of the watch)."""
        if pod.key in self._where:
            self.update(pod)
            return
        info = QueuedPod(pod, self._clock())
        self._infos[pod.key] = info
        self._admit(info)

    def update(self, pod: Pod) -> None:
        """A pending pod changed. Gated pods are re-checked; parked pods get another chance."""
        info = self._infos.get(pod.key)
        if info is None:
            self.add(pod)
            return
        old = info.pod
        info.pod = pod
        where = self._where[pod.key]
        if where == "gated":
            self._admit(info)
        elif where == "unschedulable" and _spec_changed(old, pod):
            self._move_out_of_unschedulable(info)
        elif where == "active":
            self._push_active(info)  # priority may have changed; the stale heap entry is skipped

    def delete(self, key: str) -> None:
        """The pod was deleted or bound by someone else."""
        self._place(key, None)
        self._infos.pop(key, None)

    def _admit(self, info: QueuedPod) -> None:
        status = self._pre_enqueue(info.pod)
        if not status.ok:
            info.gate = status
            self._place(info.key, "gated")
            return
        info.gate = None
        if info.backoff_until > self._clock():
            self._place(info.key, "backoff")
        else:
            self._push_active(info)

    def reevaluate_gated(self, keys: Iterable[str] | None = None) -> None:
        """Run PreEnqueue again for gated pods (all, or ``keys``): a gate may have opened."""
        for key in list(keys if keys is not None else self._where):
            if self._where.get(key) == "gated":
                self._admit(self._infos[key])

    def gate_active(self) -> None:
        """Re-run PreEnqueue on pods waiting in active/backoff/unschedulable (a gate closed)."""
        for key, where in list(self._where.items()):
            if where in ("active", "backoff", "unschedulable"):
                info = self._infos[key]
                status = self._pre_enqueue(info.pod)
                if not status.ok:
                    info.gate = status
                    self._place(key, "gated")

    # ------------------------------------------------------------------ active heap
    def _push_active(self, info: QueuedPod) -> None:
        info.enqueued_at = self._clock()
        self._place(info.key, "active")
        heapq.heappush(
            self._active, (-info.pod.priority, info.enqueued_at, next(self._counter), info.key)
        )
        self._wakeup.set()

    def pop_nowait(self) -> QueuedPod | None:
        """The next active pod, or None if the active queue is empty."""
        while self._active:
            _, enqueued_at, _, key = heapq.heappop(self._active)
            info = self._infos.get(key)
            if info is None or self._where.get(key) != "active" or info.enqueued_at != enqueued_at:
                continue  # stale entry: deleted, moved or re-pushed since
            return self._in_flight(info)
        info = self._first_backed_off()
        return None if info is None else self._in_flight(info)

    def _in_flight(self, info: QueuedPod) -> QueuedPod:
        self._place(info.key, "inflight")
        self._cycle += 1
        info.attempts += 1
        if info.initial_attempt_at is None:
            info.initial_attempt_at = self._clock()
        return info

    def _first_backed_off(self) -> QueuedPod | None:
        """The backed-off pod upstream's backoffQ would give when active is empty (no errors)."""
        best: QueuedPod | None = None
        best_rank: tuple[float, int, float, str] | None = None
        for key, where in self._where.items():
            if where != "backoff":
                continue
            info = self._infos[key]
            if info.error_backoff:
                continue
            window = math.floor(info.backoff_until / _BACKOFF_WINDOW_S)
            rank = (window, -info.pod.priority, info.enqueued_at, key)
            if best_rank is None or rank < best_rank:
                best, best_rank = info, rank
        return best

    async def pop(self) -> QueuedPod:
        """The next pod to schedule (waits until there is one). Raises CancelledError on close."""
        while True:
            info = self.pop_nowait()
            if info is not None:
                return info
            if self._closed:
                raise asyncio.CancelledError
            self._wakeup.clear()
            await self._wakeup.wait()

    def close(self) -> None:
        """Wake ``pop()`` waiters so they end."""
        self._closed = True
        self._wakeup.set()

    @property
    def scheduling_cycle(self) -> int:
        """Number of pops so far (upstream's scheduling cycle counter)."""
        return self._cycle

    # ------------------------------------------------------------------ outcomes
    def done(self, key: str) -> None:
        """The pod was scheduled (assumed and handed to the binder): it leaves the queue."""
        self.delete(key)

    def requeue_unschedulable(self, info: QueuedPod, plugins: set[str], cycle: int) -> None:
        """No node fit. Park it, unless a cluster event arrived during its cycle (then back off)."""
        if info.key not in self._infos:
            return  # deleted while in flight
        info.unschedulable_plugins = plugins
        info.error_backoff = not plugins  # no plugin to blame: upstream's error backoff queue
        info.backoff_until = self._clock() + self._backoff(info)
        if self._move_request_cycle >= cycle:
            self._place(info.key, "backoff")
        else:
            info.unschedulable_since = self._clock()
            self._place(info.key, "unschedulable")

    def requeue_error(self, info: QueuedPod) -> None:
        """An error (API failure, bind conflict): retry after backoff."""
        if info.key not in self._infos:
            return
        info.error_backoff = True
        info.backoff_until = self._clock() + self._backoff(info)
        self._place(info.key, "backoff")

    def _backoff(self, info: QueuedPod) -> float:
        s = self.settings
        exponent = max(info.attempts - 1, 0)
        backoff: float = s.initial_backoff_s * float(2 ** min(exponent, 30))
        return min(backoff, s.max_backoff_s)

    # ------------------------------------------------------------------ moves
    def move_all_to_active_or_backoff(
        self, event: str, pod_filter: Callable[[QueuedPod], bool] | None = None
    ) -> int:
        """A cluster event that may make parked pods fit: move them out. Returns how many moved."""
        del event  # recorded by the caller's metrics; every event here is a "could help" event
        moved = 0
        for key, where in list(self._where.items()):
            if where != "unschedulable":
                continue
            info = self._infos[key]
            if pod_filter is not None and not pod_filter(info):
                continue
            self._move_out_of_unschedulable(info)
            moved += 1
        self._move_request_cycle = self._cycle
        return moved

    def _move_out_of_unschedulable(self, info: QueuedPod) -> None:
        if info.backoff_until > self._clock():
            self._place(info.key, "backoff")
        else:
            self._push_active(info)

    def activate(self, keys: Iterable[str]) -> int:
        """Move the given pods to active now, whatever pool (or backoff) they are in."""
        moved = 0
        for key in keys:
            info = self._infos.get(key)
            if info is None or self._where.get(key) in (None, "active", "inflight"):
                continue
            info.backoff_until = 0.0
            self._admit(info)
            moved += 1
        return moved

    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff expired to active (run every second)."""
        now = self._clock()
        moved = 0
        for key, where in list(self._where.items()):
            if where == "backoff" and self._infos[key].backoff_until <= now:
                self._push_active(self._infos[key])
                moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Move pods parked longer than ``max_in_unschedulable_s`` (run every 30 s)."""
        now = self._clock()
        limit = self.settings.max_in_unschedulable_s
        moved = 0
        for key, where in list(self._where.items()):
            info = self._infos[key]
            if where == "unschedulable" and now - info.unschedulable_since >= limit:
                self._move_out_of_unschedulable(info)
                moved += 1
        return moved

    def pending(self) -> list[QueuedPod]:
        """Every pod in the queue (any pool), for snapshots and triggers."""
        return list(self._infos.values())

    def info(self, key: str) -> QueuedPod | None:
        """The queue entry of a pod."""
        return self._infos.get(key)


def _spec_changed(old: Pod, new: Pod) -> bool:
    """Whether an update could change where the pod fits (not just its status)."""
    return (
        old.requests != new.requests
        or old.node_selector != new.node_selector
        or old.required_node_affinity != new.required_node_affinity
        or old.tolerations != new.tolerations
        or old.labels != new.labels
        or old.scheduling_gates != new.scheduling_gates
        or old.priority != new.priority
    )
