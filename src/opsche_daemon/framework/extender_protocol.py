"""The extender protocol's JSON (k8s.io/kube-scheduler/extender/v1), both ways, without HTTP.

The scheduler sends ``ExtenderArgs`` ``{"Pod": <v1.Pod>, "Nodes": <v1.NodeList>}`` (or
``"NodeNames": [...]`` instead of ``Nodes`` to a ``nodeCacheCapable`` extender); filter answers an
``ExtenderFilterResult`` ``{"Nodes"|"NodeNames", "FailedNodes", "FailedAndUnresolvableNodes",
"Error"}``, prioritize a ``HostPriorityList`` ``[{"Host": name, "Score": 0..10}]``. The Go types
have no JSON tags, so the keys are the Go field names, and Go's decoder matches them without
regard to case: ``{"host": ..., "score": ...}`` is read the same here, as kube-scheduler reads it.

One module for both sides: opsche's HTTP extender client encodes arguments and decodes answers,
and ``opsche score serve`` decodes arguments and encodes answers, so the two cannot disagree on a
field name. Decoding checks every type and raises ``ValueError`` with what was wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opsche_daemon.framework.extender import FilterResult
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = [
    "ExtenderArgs",
    "extender_args",
    "filter_result_json",
    "host_priority_list_json",
    "node_json",
    "parse_extender_args",
    "parse_filter_result",
    "parse_host_priorities",
    "pod_json",
]


def pod_json(pod: Pod) -> dict[str, Any]:
    """The pod as the API server has it; a pod built in memory gets a minimal equivalent."""
    if pod.raw is not None:
        return dict(pod.raw)  # already without managedFields (Pod.from_api)
    requests = pod.requests.to_api()
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "labels": dict(pod.labels),
        },
        "spec": {
            "schedulerName": pod.scheduler_name,
            "priority": pod.priority,
            "containers": [{"name": "main", "resources": {"requests": requests}}],
        },
        "status": {"phase": pod.phase},
    }


def node_json(info: NodeInfo) -> dict[str, Any]:
    """The node as the API server has it; a node built in memory gets a minimal equivalent."""
    node = info.node
    if node.raw is not None:
        return dict(node.raw)  # already without managedFields (Node.from_api)
    allocatable = node.allocatable.to_api()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels)},
        "spec": {"unschedulable": node.unschedulable},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def extender_args(
    pod: Pod, nodes: Sequence[NodeInfo], *, node_cache_capable: bool
) -> dict[str, Any]:
    """``ExtenderArgs`` for ``pod`` and candidate ``nodes``."""
    if node_cache_capable:
        return {"Pod": pod_json(pod), "Nodes": None, "NodeNames": [n.name for n in nodes]}
    items = [node_json(n) for n in nodes]
    return {
        "Pod": pod_json(pod),
        "Nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items},
        "NodeNames": None,
    }


def _field(data: Mapping[str, Any], name: str) -> Any:
    """``data[name]``, matching the key without regard to case as Go's decoder does."""
    if name in data:
        return data[name]
    lowered = name.lower()
    for key, value in data.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


def _names_of(node_list: Any, what: str) -> list[str]:
    if not isinstance(node_list, Mapping):
        raise ValueError(f"{what}: expected a NodeList object, got {type(node_list).__name__}")
    items = _field(node_list, "items") or []
    if not isinstance(items, list):
        raise ValueError(f"{what}.items: expected a list")
    names = []
    for index, item in enumerate(items):
        meta = _field(item, "metadata") if isinstance(item, Mapping) else None
        name = _field(meta, "name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}.items[{index}]: a Node without metadata.name")
        names.append(name)
    return names


def _string_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what}: expected a list of node names")
    return list(value)


def _failed_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what}: expected a map of node name to message")
    return dict(value)


def parse_filter_result(
    data: Any, sent: Sequence[str], *, node_cache_capable: bool
) -> tuple[FilterResult, str]:
    """An ``ExtenderFilterResult`` as (result, its Error field); ``sent``: the names asked about.

    As upstream, an answer with neither ``Nodes`` nor ``NodeNames`` accepts no node, and a node
    the scheduler did not send is an error (upstream checks this for ``NodeNames``; opsche for
    ``Nodes`` too, rather than place a pod on a node its filters never saw).
    """
    if data is None:
        return FilterResult(nodes=()), ""  # Go decodes null into an empty result: no node passes
    if not isinstance(data, Mapping):
        raise ValueError(f"expected an ExtenderFilterResult object, got {type(data).__name__}")
    error = _field(data, "Error") or ""
    if not isinstance(error, str):
        raise ValueError("Error: expected a string")
    names_value, nodes_value = _field(data, "NodeNames"), _field(data, "Nodes")
    # Upstream reads NodeNames only from a nodeCacheCapable extender and Nodes otherwise; an
    # answer with neither (or the other one) lets no node pass.
    if node_cache_capable and names_value is not None:
        names = _string_list(names_value, "NodeNames")
    elif nodes_value is not None:
        names = _names_of(nodes_value, "Nodes")
    else:
        names = []
    known = set(sent)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"claims a filtered node {unknown[0]!r} which is not in the input node list"
        )
    result = FilterResult(
        nodes=tuple(names),
        failed=_failed_map(_field(data, "FailedNodes"), "FailedNodes"),
        failed_unresolvable=_failed_map(
            _field(data, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes"
        ),
    )
    return result, error


def parse_host_priorities(data: Any) -> dict[str, int]:
    """A ``HostPriorityList`` as node name -> score (scores as given; upstream clamps none)."""
    if data is None:
        return {}
    if not isinstance(data, list):
        raise ValueError(f"expected a HostPriorityList (a JSON list), got {type(data).__name__}")
    scores: dict[str, int] = {}
    for index, entry in enumerate(data):
        if not isinstance(entry, Mapping):
            raise ValueError(f"[{index}]: expected {{Host, Score}}")
        host, score = _field(entry, "Host"), _field(entry, "Score")
        if not isinstance(host, str) or isinstance(score, bool) or not isinstance(score, int):
            raise ValueError(f"[{index}]: expected Host as a string and Score as an integer")
        scores[host] = score
    return scores


class ExtenderArgs:
    """What the service side reads from a request: the pod, and the candidates."""

    def __init__(
        self, pod: Mapping[str, Any], nodes: list[Mapping[str, Any]] | None, node_names: list[str]
    ) -> None:
        self.pod = pod
        # Whole Node objects when the scheduler sent them (not nodeCacheCapable), else None.
        self.nodes = nodes
        self.node_names = node_names


def parse_extender_args(data: Any) -> ExtenderArgs:
    """``ExtenderArgs`` from a request body; raises ``ValueError`` naming what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError("expected an ExtenderArgs object")
    pod = _field(data, "Pod")
    if not isinstance(pod, Mapping):
        raise ValueError("Pod: expected a v1.Pod object")
    nodes_value, names_value = _field(data, "Nodes"), _field(data, "NodeNames")
    if nodes_value is not None:
        if not isinstance(nodes_value, Mapping):
            raise ValueError("Nodes: expected a v1.NodeList object")
        items = _field(nodes_value, "items") or []
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise ValueError("Nodes.items: expected a list of v1.Node objects")
        return ExtenderArgs(pod, list(items), _names_of(nodes_value, "Nodes"))
    if names_value is not None:
        return ExtenderArgs(pod, None, _string_list(names_value, "NodeNames"))
    return ExtenderArgs(pod, [], [])


def filter_result_json(
    args: ExtenderArgs,
    passed: Sequence[str],
    failed: Mapping[str, str],
    *,
    unresolvable: Mapping[str, str] | None = None,
    error: str = "",
) -> dict[str, Any]:
    """An ``ExtenderFilterResult`` answering ``args`` in the form it was asked in."""
    keep = set(passed)
    result: dict[str, Any] = {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": dict(failed),
        "FailedAndUnresolvableNodes": dict(unresolvable or {}),
        "Error": error,
    }
    if args.nodes is not None:
        items = [n for n in args.nodes if _field(_field(n, "metadata") or {}, "name") in keep]
        result["Nodes"] = {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}
    else:
        result["NodeNames"] = [n for n in args.node_names if n in keep]
    return result


def host_priority_list_json(scores: Mapping[str, int]) -> list[dict[str, Any]]:
    """A ``HostPriorityList``."""
    return [{"Host": host, "Score": int(score)} for host, score in scores.items()]
