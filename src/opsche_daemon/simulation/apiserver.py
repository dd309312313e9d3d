"""An in-process stand-in for the API server and the rest of the cluster, on the loop's clock.

It does for a replay's workload what the local cluster does, no more:

* the store: nodes, namespaces, ReplicaSets, PodDisruptionBudgets and pods, as the same JSON
  objects the API server returns (``Pod.from_api`` and the replay's monitor read them as they
  read real ones), replaced on every change, never mutated, so an event holds the state it was
  sent with;
* one write at a time: every write (the replayer's, opsche's, the controllers' and KWOK's) is
  committed ``write_service_s`` after the previous one, so a burst queues as it does on a real
  API server, and a caller's round trip is its wait, the commit and a fixed overhead;
* watches: every change reaches each subscriber in commit order, ``watch_s`` later;
* kube-controller-manager: a ReplicaSet creates its missing pods ``create_pods_s`` after it or
  one of its pods changed (an evicted or deleted pod is replaced as soon as it is terminating,
  as the ReplicaSet controller does); a deleted ReplicaSet's pods are deleted ``collect_s``
  later (the garbage collector, background propagation);
* admission: a pod gets ``spec.priority`` from its PriorityClass (the Priority plugin);
* KWOK and the kubelet: a bound pod is Running ``running_s`` later; a bound pod being deleted
  is gone ``delete_s`` later, an unbound one at once (the API server's rule);
* the Binding, status and Eviction subresources, with the API server's refusals: binding a pod
  that is gone, already bound or terminating is a conflict; an eviction a
  PodDisruptionBudget does not allow is refused (429) and leaves the pod alone; an eviction
  marks the pod ``DisruptionTarget`` (``EvictionByEvictionAPI``) before deleting it.

Names follow the API server's: a ReplicaSet's pods are ``<name>-<5 characters>`` from the same
alphabet, drawn from a seeded generator so a virtual replay is repeatable.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import functools
import itertools
import random
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.simulation.latency import Latencies

__all__ = ["ApiError", "Listener", "Obj", "VirtualApiServer"]

Obj = dict[str, Any]
Listener = Callable[[str, str, Obj], None]  # (kind, event type, object)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet
_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# A virtual clock lands exactly on a timer's deadline, rounded to its resolution (1 us): a wait
# shorter than that is due now, or the loop would sleep for nothing over and over.
_TIME_EPSILON_S = 1e-6


class ApiError(Exception):
    """An API call the API server would refuse; ``status`` is its HTTP code."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


@dataclass
class _Feed:
    """One watcher: changes queued in commit order, delivered ``delay`` after each commit."""

    listener: Listener
    delay: float
    queue: deque[tuple[float, str, str, Obj]] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.queue:
                self.wake.clear()
                await self.wake.wait()
                continue
            due, kind, type_, obj = self.queue[0]
            wait = due - loop.time()
            if wait > _TIME_EPSILON_S:
                await asyncio.sleep(wait)
                continue
            self.queue.popleft()
            self.listener(kind, type_, obj)


class VirtualApiServer:
    """The store, its watches and the controllers, driven by the running event loop's clock."""

    def __init__(self, latencies: Latencies | None = None, seed: int = 0) -> None:
        self.latencies = latencies or Latencies()
        self.random = random.Random(seed)  # noqa: S311 - names, not secrets; repeatable by seed
        self.nodes: dict[str, Obj] = {}
        self.namespaces: dict[str, Obj] = {}
        self.priority_classes: dict[str, int] = {}
        self.replicasets: dict[tuple[str, str], Obj] = {}
        self.budgets: dict[tuple[str, str], Obj] = {}
        self.pods: dict[tuple[str, str], Obj] = {}
        self.events: list[tuple[str, str, str]] = []  # (pod key, reason, note) of Events posted
        self.bindings = 0
        self._feeds: list[_Feed] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._version = itertools.count(1)
        self._uids = itertools.count(1)
        self._busy_until = 0.0  # when the write being committed is done
        self._creating: dict[tuple[str, str], int] = {}  # pod creations queued per ReplicaSet

    # ------------------------------------------------------------------ clock and plumbing
    @staticmethod
    def now() -> float:
        """The loop's clock: virtual seconds under the simulation."""
        return asyncio.get_running_loop().time()

    def timestamp(self) -> str:
        """``now()`` as the API server writes times (RFC 3339, whole seconds)."""
        moment = _EPOCH + datetime.timedelta(seconds=self.now())
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def watch(self, listener: Listener) -> None:
        """Send ``listener`` every object that exists now (as ADDED), then every change."""
        feed = _Feed(listener, self.latencies.watch_s)
        for kind, store in self._stores():
            for obj in store.values():
                listener(kind, "ADDED", obj)
        self._feeds.append(feed)
        self._spawn(feed.run())

    def _stores(self) -> Iterator[tuple[str, dict[Any, Obj]]]:
        yield "Node", self.nodes
        yield "Namespace", self.namespaces
        yield "ReplicaSet", self.replicasets
        yield "PodDisruptionBudget", self.budgets
        yield "Pod", self.pods

    def _commit(self, kind: str, type_: str, obj: Obj) -> None:
        due = self.now() + self.latencies.watch_s
        for feed in self._feeds:
            feed.queue.append((due, kind, type_, obj))
            feed.wake.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _later(self, delay: float, callback: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(delay, callback)

    def _admit(self) -> float:
        """Seconds until a write arriving now is committed (writes are served one at a time)."""
        now = self.now()
        self._busy_until = max(now, self._busy_until) + self.latencies.write_service_s
        return self._busy_until - now

    async def _commit_write(self) -> None:
        """A caller's write: wait in the queue until it is committed."""
        await asyncio.sleep(self._admit())

    def _write_later(self, delay: float, callback: Callable[[], None]) -> None:
        """A controller's write, issued ``delay`` from now and applied when committed."""
        self._later(delay, lambda: self._later(self._admit(), callback))

    def _stamp(self, obj: Obj) -> Obj:
        obj["metadata"]["resourceVersion"] = str(next(self._version))
        return obj

    async def close(self) -> None:
        """Stop the watches."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ------------------------------------------------------------------ setup objects
    def add_node(self, node: Obj) -> None:
        """Register a node (a KWOK node: Ready, no kubelet behind it)."""
        obj = self._stamp(copy.deepcopy(node))
        self.nodes[obj["metadata"]["name"]] = obj
        self._commit("Node", "ADDED", obj)

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """Create a namespace."""
        obj = self._stamp({"metadata": {"name": name, "labels": dict(labels or {})}})
        self.namespaces[name] = obj
        self._commit("Namespace", "ADDED", obj)

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace and everything in it."""
        for key in [k for k in self.replicasets if k[0] == name]:
            self._drop_replicaset(*key, collect=False)
        for key in [k for k in self.pods if k[0] == name]:
            self._remove_pod(key)
        obj = self.namespaces.pop(name, None)
        if obj is not None:
            self._commit("Namespace", "DELETED", obj)

    def add_priority_class(self, name: str, value: int) -> None:
        """A PriorityClass: pods naming it get ``spec.priority = value``."""
        self.priority_classes[name] = value

    def add_budget(self, namespace: str, name: str, selector: Obj, min_available: int) -> None:
        """A PodDisruptionBudget with an integer ``minAvailable``."""
        obj = {
            "metadata": {"namespace": namespace, "name": name},
            "spec": {"selector": selector, "minAvailable": min_available},
            "status": {"disruptionsAllowed": 0},
        }
        self.budgets[(namespace, name)] = obj
        self._refresh_budgets(namespace)

    # ------------------------------------------------------------------ ReplicaSets
    async def create_replicaset(self, namespace: str, body: Obj) -> None:
        """POST a ReplicaSet; its pods follow ``create_pods_s`` later."""
        await self._commit_write()
        if namespace not in self.namespaces:
            raise ApiError(404, f'namespaces "{namespace}" not found')
        name = body["metadata"]["name"]
        key = (namespace, name)
        if key in self.replicasets:
            raise ApiError(409, f'replicasets.apps "{name}" already exists')
        obj = copy.deepcopy(body)
        obj["metadata"].update(
            namespace=namespace, uid=f"rs-{next(self._uids)}", creationTimestamp=self.timestamp()
        )
        self.replicasets[key] = self._stamp(obj)
        self._commit("ReplicaSet", "ADDED", obj)
        self._reconcile_later(key)
        await asyncio.sleep(self.latencies.write_s)

    async def delete_replicaset(self, namespace: str, name: str) -> None:
        """DELETE a ReplicaSet (background propagation: the collector deletes its pods)."""
        await self._commit_write()
        self._drop_replicaset(namespace, name, collect=True)
        await asyncio.sleep(self.latencies.write_s)

    def _drop_replicaset(self, namespace: str, name: str, *, collect: bool) -> None:
        key = (namespace, name)
        obj = self.replicasets.pop(key, None)
        if obj is None:
            raise ApiError(404, f'replicasets.apps "{name}" not found')
        self._commit("ReplicaSet", "DELETED", obj)
        uid = obj["metadata"]["uid"]
        if collect:
            self._later(self.latencies.collect_s, lambda: self._collect(namespace, uid))

    def _collect(self, namespace: str, owner_uid: str) -> None:
        for key, pod in list(self.pods.items()):
            if key[0] == namespace and _owner_uid(pod) == owner_uid:
                self._write_later(0.0, functools.partial(self._collect_one, key))

    def _collect_one(self, key: tuple[str, str]) -> None:
        self._delete_pod(*key)

    def _reconcile_later(self, key: tuple[str, str]) -> None:
        self._later(self.latencies.create_pods_s, lambda: self._reconcile(key))

    def _reconcile(self, key: tuple[str, str]) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            return
        uid = rs["metadata"]["uid"]
        active = sum(
            1
            for pod_key, pod in self.pods.items()
            if pod_key[0] == key[0]
            and _owner_uid(pod) == uid
            and "deletionTimestamp" not in pod["metadata"]
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        missing = int(rs["spec"].get("replicas", 1)) - active - self._creating.get(key, 0)
        for _ in range(missing):
            self._creating[key] = self._creating.get(key, 0) + 1
            self._write_later(0.0, lambda: self._create_pod(key))

    def _create_pod(self, key: tuple[str, str]) -> None:
        self._creating[key] -= 1
        rs = self.replicasets.get(key)
        if rs is None:
            return
        meta = rs["metadata"]
        template = copy.deepcopy(rs["spec"]["template"])
        while True:
            suffix = "".join(self.random.choice(_NAME_ALPHABET) for _ in range(5))
            name = f"{meta['name']}-{suffix}"
            if (meta["namespace"], name) not in self.pods:
                break
        spec = template.get("spec") or {}
        class_name = spec.get("priorityClassName")
        if class_name:
            if class_name not in self.priority_classes:
                return  # the Priority admission plugin refuses the pod; the RS keeps trying
            spec["priority"] = self.priority_classes[class_name]
        spec.setdefault("priority", 0)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "uid": f"pod-{next(self._uids)}",
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "creationTimestamp": self.timestamp(),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
            "status": {"phase": "Pending", "qosClass": "Burstable"},
        }
        self.pods[(meta["namespace"], name)] = self._stamp(pod)
        self._commit("Pod", "ADDED", pod)

    # ------------------------------------------------------------------ pods
    def _replace(self, key: tuple[str, str], change: Callable[[Obj], None]) -> Obj:
        pod = copy.deepcopy(self.pods[key])
        change(pod)
        self.pods[key] = self._stamp(pod)
        self._commit("Pod", "MODIFIED", pod)
        return pod

    async def delete_pod(self, namespace: str, name: str) -> bool:
        """DELETE a pod (False if there is none)."""
        await self._commit_write()
        found = self._delete_pod(namespace, name)
        await asyncio.sleep(self.latencies.write_s)
        return found

    def _delete_pod(self, namespace: str, name: str) -> bool:
        """An unbound pod goes at once, a bound one when KWOK removes it ``delete_s`` later."""
        key = (namespace, name)
        pod = self.pods.get(key)
        if pod is None:
            return False
        if "deletionTimestamp" in pod["metadata"]:
            return True
        if not pod["spec"].get("nodeName"):
            self._remove_pod(key)
        else:
            stamp = self.timestamp()
            self._replace(key, lambda p: p["metadata"].update(deletionTimestamp=stamp))
            self._write_later(self.latencies.delete_s, lambda: self._remove_pod(key))
        self._owner_changed(pod)
        return True

    def _remove_pod(self, key: tuple[str, str]) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        # As the API server's: the DELETED event carries the deletion's own resourceVersion.
        pod = self._stamp(copy.deepcopy(pod))
        self._commit("Pod", "DELETED", pod)
        self._owner_changed(pod)
        self._refresh_budgets(key[0])

    def _owner_changed(self, pod: Obj) -> None:
        owner = _owner_uid(pod)
        if owner is None:
            return
        for key, rs in self.replicasets.items():
            if key[0] == pod["metadata"]["namespace"] and rs["metadata"]["uid"] == owner:
                self._reconcile_later(key)
                return

    def _running(self, key: tuple[str, str], uid: str) -> None:
        pod = self.pods.get(key)
        if pod is None or pod["metadata"]["uid"] != uid or "deletionTimestamp" in pod["metadata"]:
            return
        stamp = self.timestamp()

        def run(p: Obj) -> None:
            status = p.setdefault("status", {})
            status["phase"] = "Running"
            status["startTime"] = stamp
            status["conditions"] = [
                c for c in status.get("conditions") or [] if c.get("type") != "Ready"
            ] + [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}]

        self._replace(key, run)
        self._refresh_budgets(key[0])

    # ------------------------------------------------------------------ subresources
    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/binding, committed in turn; refusals as the API server's."""
        await self._commit_write()
        key = (namespace, name)
        pod = self.pods.get(key)
        if pod is None or (uid and pod["metadata"]["uid"] != uid):
            raise ApiError(404, f'pods "{name}" not found')
        if pod["spec"].get("nodeName"):
            raise ApiError(
                409, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"'
            )
        if "deletionTimestamp" in pod["metadata"]:
            raise ApiError(409, f"pod {name} is being deleted, cannot be assigned to a host")
        if node not in self.nodes:
            raise ApiError(404, f'nodes "{node}" not found')
        stamp = self.timestamp()

        def assign(p: Obj) -> None:
            p["spec"]["nodeName"] = node
            status = p.setdefault("status", {})
            status["conditions"] = [
                c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"
            ] + [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}]

        self._replace(key, assign)
        self.bindings += 1
        uid_now = pod["metadata"]["uid"]
        self._write_later(self.latencies.running_s, lambda: self._running(key, uid_now))
        await asyncio.sleep(self.latencies.bind_s)

    async def patch_status(self, namespace: str, name: str, status: Obj) -> None:
        """PATCH pods/status (strategic merge of conditions by type, other fields replaced)."""
        await self._commit_write()
        key = (namespace, name)
        if key not in self.pods:
            await asyncio.sleep(self.latencies.write_s)
            raise ApiError(404, f'pods "{name}" not found')

        def merge(p: Obj) -> None:
            current = p.setdefault("status", {})
            for field_name, value in status.items():
                if field_name != "conditions":
                    current[field_name] = value
                    continue
                by_type = {c["type"]: c for c in current.get("conditions") or []}
                for condition in value:
                    by_type[condition["type"]] = condition
                current["conditions"] = list(by_type.values())

        self._replace(key, merge)
        await asyncio.sleep(self.latencies.write_s)

    async def evict(self, namespace: str, name: str, uid: str | None) -> None:
        """POST pods/eviction: 404 if gone, 429 if a budget forbids it, else mark and delete."""
        await self._commit_write()
        await asyncio.sleep(self.latencies.write_s)  # the answer comes back after the commit
        key = (namespace, name)
        pod = self.pods.get(key)
        if pod is None or (uid and pod["metadata"]["uid"] != uid):
            raise ApiError(404, f'pods "{name}" not found')
        if "deletionTimestamp" not in pod["metadata"]:
            for budget in self._budgets_of(pod):
                if budget["status"]["disruptionsAllowed"] < 1:
                    raise ApiError(
                        429,
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                    )
            stamp = self.timestamp()
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastTransitionTime": stamp,
            }
            conditions = (pod.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "DisruptionTarget" for c in conditions):
                self._replace(
                    key,
                    lambda p: (
                        p.setdefault("status", {}).setdefault("conditions", []).append(condition)
                    ),
                )
        self._delete_pod(namespace, name)
        self._refresh_budgets(namespace)

    def record_event(self, pod_key: str, reason: str, note: str) -> None:
        """An events.k8s.io Event (kept for counts; nothing watches them)."""
        self.events.append((pod_key, reason, note))

    # ------------------------------------------------------------------ budgets
    def _budgets_of(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        return [
            b
            for (ns, _), b in self.budgets.items()
            if ns == namespace and _selects(b["spec"]["selector"], labels)
        ]

    def _refresh_budgets(self, namespace: str) -> None:
        """Recompute ``disruptionsAllowed`` (healthy matching pods minus ``minAvailable``)."""
        for key, budget in list(self.budgets.items()):
            if key[0] != namespace:
                continue
            healthy = sum(
                1
                for (ns, _), pod in self.pods.items()
                if ns == namespace
                and _selects(budget["spec"]["selector"], pod["metadata"].get("labels") or {})
                and (pod.get("status") or {}).get("phase") == "Running"
                and "deletionTimestamp" not in pod["metadata"]
            )
            allowed = max(0, healthy - int(budget["spec"]["minAvailable"]))
            if (
                allowed != budget["status"]["disruptionsAllowed"]
                or "resourceVersion" not in (budget["metadata"])
            ):
                fresh = copy.deepcopy(budget)
                fresh["status"]["disruptionsAllowed"] = allowed
                self.budgets[key] = self._stamp(fresh)
                self._commit("PodDisruptionBudget", "MODIFIED", fresh)


def _selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    """policy/v1: a null selector selects no pod, an empty one every pod."""
    parsed = LabelSelector.parse(selector)
    return parsed is not None and parsed.matches(labels)


def _owner_uid(pod: Obj) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None
