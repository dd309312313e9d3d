"""Await cluster conditions through the watch API, with a bound on every wait.

Polling with sleeps would make tests slow when the cluster is fast and flaky when it is slow; a
watch wakes us on the change itself. Every wait has a limit and fails with the last state seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes_asyncio import client, watch

Objects = dict[str, Any]


async def wait_for(
    list_fn: Callable[..., Awaitable[Any]],
    namespace: str | None,
    condition: Callable[[Objects], bool],
    *,
    within: float = 60.0,
    what: str = "objects",
) -> Objects:
    """Wait until ``condition(objects by name)`` holds for a namespaced list; return the objects.

    ``list_fn`` is a kubernetes-asyncio list call such as ``CoreV1Api.list_namespaced_pod``
    (``namespace`` None for cluster-scoped lists): it is listed once, then watched from that
    resourceVersion, so no change between the two is missed.
    """
    objects: Objects = {}

    async def run() -> Objects:
        args = () if namespace is None else (namespace,)
        listing = await list_fn(*args)
        objects.update({o.metadata.name: o for o in listing.items})
        if condition(objects):
            return objects
        version = listing.metadata.resource_version
        while True:  # a watch may end on its server-side timeout; resume from where it was
            w = watch.Watch()
            async with w.stream(
                list_fn,
                *args,
                resource_version=version,
                timeout_seconds=max(1, int(within)),
                allow_watch_bookmarks=True,
            ) as stream:
                async for event in stream:
                    if event["type"] == "BOOKMARK":  # not deserialised: a plain dict
                        version = event["raw_object"]["metadata"]["resourceVersion"]
                        continue
                    obj: Any = event["object"]
                    version = obj.metadata.resource_version
                    if event["type"] == "DELETED":
                        objects.pop(obj.metadata.name, None)
                    else:
                        objects[obj.metadata.name] = obj
                    if condition(objects):
                        return objects

    try:
        return await asyncio.wait_for(run(), within)
    except TimeoutError:
        raise AssertionError(
            f"timed out after {within}s waiting for {what}; saw {describe(objects)}"
        ) from None


async def wait_for_pods(
    api: client.ApiClient,
    namespace: str,
    condition: Callable[[Objects], bool],
    *,
    within: float = 60.0,
    what: str = "pods",
) -> Objects:
    """``wait_for`` on the namespace's pods."""
    core = client.CoreV1Api(api)
    return await wait_for(core.list_namespaced_pod, namespace, condition, within=within, what=what)


def describe(objects: Objects) -> dict[str, Any]:
    """A compact view for failure messages: pods by phase and node, others by status."""
    out: dict[str, Any] = {}
    for name, obj in objects.items():
        if isinstance(obj, client.V1Pod):
            out[name] = (obj.status.phase, obj.spec.node_name)
        else:
            out[name] = getattr(obj, "status", None)
    return out


def running(pod: client.V1Pod) -> bool:
    """Bound to a node, Running, and not being deleted."""
    return bool(
        pod.spec.node_name
        and pod.status.phase == "Running"
        and pod.metadata.deletion_timestamp is None
    )
