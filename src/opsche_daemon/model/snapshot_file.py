"""The snapshot file: a cluster's state on disk, for ``opsche solve`` and for sharing.

Format (JSON, one document)::

    {
      "apiVersion": "opsche.dev/v1alpha1",
      "kind": "ClusterSnapshot",
      "takenAt": "2026-11-30T04:00:00Z",      # informational
      "generation": 0,                        # optional, recorded in plans
      "nodes": [ <v1 Node, as the API returns it> ],
      "pods": [ <v1 Pod, bound and pending, as the API returns it> ],
      "namespaces": [ {"name": "...", "labels": {...}} ],
      "workloads": [ {"kind": "ReplicaSet", "namespace": "...", "name": "...",
                      "selector": <LabelSelector>} ],
      "disruptionBudgets": [ <policy/v1 PodDisruptionBudget> ]
    }

Objects are kept in their API form (``managedFields`` dropped) so a snapshot can be produced by
``opsche snapshot`` from a live cluster or by hand from ``kubectl get -o json`` output, and read
with the same parsers the daemon uses on watch events. Only ``nodes`` and ``pods`` are required.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.quantity import QuantityError, parse_quantity
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot

__all__ = [
    "API_VERSION",
    "KIND",
    "SnapshotFileError",
    "dump_snapshot",
    "load_snapshot",
    "to_snapshot",
]

API_VERSION = "opsche.dev/v1alpha1"
KIND = "ClusterSnapshot"


class SnapshotFileError(ValueError):
    """The file is not a valid snapshot; the message names the entry and the problem."""


def _strip(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def dump_snapshot(
    path: Path,
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    namespaces: Sequence[Mapping[str, Any]] = (),
    workloads: Sequence[Mapping[str, Any]] = (),
    budgets: Sequence[Mapping[str, Any]] = (),
    taken_at: str = "",
    generation: int = 0,
) -> None:
    """Write a snapshot file atomically (a reader never sees half a file)."""
    document = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "takenAt": taken_at,
        "generation": generation,
        "nodes": [_strip(n) for n in nodes],
        "pods": [_strip(p) for p in pods],
        "namespaces": list(namespaces),
        "workloads": list(workloads),
        "disruptionBudgets": [_strip(b) for b in budgets],
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_snapshot(path: Path) -> Snapshot:
    """Read and validate a snapshot file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SnapshotFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotFileError(f"{path} is not JSON: {exc}") from None
    try:
        return to_snapshot(document)
    except SnapshotFileError as exc:
        # One problem per line, each naming the file (the CLI prints each as an error line).
        lines = (f"{path}: {line}" for line in str(exc).splitlines())
        raise SnapshotFileError("\n".join(lines)) from None


def _entries(document: Mapping[str, Any], key: str, required: bool) -> list[Mapping[str, Any]]:
    value = document.get(key)
    if value is None:
        if required:
            raise SnapshotFileError(f"'{key}' is missing")
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise SnapshotFileError(f"'{key}' must be a list of objects")
    return value


def _named(entry: Mapping[str, Any], where: str) -> str:
    name = (entry.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotFileError(f"{where}: metadata.name is missing")
    return name


def _quantities(values: Any, field: str) -> list[str]:
    """Problems of one resource list (``{"cpu": "500m", ...}``): each must be a quantity >= 0.

    The API server never stores anything else, so the daemon's parsers skip what they cannot
    read; a snapshot edited by hand is checked here instead, or a pod requesting cpu "abc" would
    count as requesting nothing and be planned onto a full node.
    """
    if values is None:
        return []
    if not isinstance(values, Mapping):
        return [f"{field}: expected a mapping of resource name -> quantity, got {values!r}"]
    problems = []
    for name, raw in values.items():
        try:
            value = parse_quantity(raw)
        except QuantityError:
            problems.append(f"{field}.{name}: {raw!r} is not a Kubernetes quantity")
            continue
        if value < 0:
            problems.append(f"{field}.{name}: {raw!r} must not be negative")
    return problems


def _node_quantities(raw: Mapping[str, Any]) -> list[str]:
    status = raw.get("status") or {}
    return _quantities(status.get("allocatable"), "status.allocatable") + _quantities(
        status.get("capacity"), "status.capacity"
    )


def _pod_quantities(raw: Mapping[str, Any]) -> list[str]:
    spec = raw.get("spec") or {}
    problems = _quantities(spec.get("overhead"), "spec.overhead")
    problems += _quantities(
        (spec.get("resources") or {}).get("requests"), "spec.resources.requests"
    )
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(kind) or ()):
            resources = (container or {}).get("resources") or {}
            for part in ("requests", "limits"):
                problems += _quantities(resources.get(part), f"spec.{kind}[{i}].resources.{part}")
    return problems


def _nodes(document: Mapping[str, Any]) -> list[Node]:
    nodes: list[Node] = []
    seen: set[str] = set()
    for i, raw in enumerate(_entries(document, "nodes", required=True)):
        name = _named(raw, f"nodes[{i}]")
        if name in seen:
            raise SnapshotFileError(f"nodes[{i}]: node {name!r} appears twice")
        seen.add(name)
        problems = _node_quantities(raw)
        if problems:
            raise SnapshotFileError("\n".join(f"nodes[{i}] ({name}): {p}" for p in problems))
        try:
            nodes.append(Node.from_api(raw))
        except (TypeError, ValueError) as exc:
            raise SnapshotFileError(f"nodes[{i}] ({name}): {exc}") from None
    return nodes


def _pods(
    document: Mapping[str, Any], node_names: set[str]
) -> tuple[dict[str, list[Pod]], list[Pod]]:
    bound: dict[str, list[Pod]] = {n: [] for n in node_names}
    pending: list[Pod] = []
    seen: set[str] = set()
    for i, raw in enumerate(_entries(document, "pods", required=True)):
        name = _named(raw, f"pods[{i}]")
        problems = _pod_quantities(raw)
        if problems:
            raise SnapshotFileError("\n".join(f"pods[{i}] ({name}): {p}" for p in problems))
        try:
            pod = Pod.from_api(raw)
        except (TypeError, ValueError) as exc:
            raise SnapshotFileError(f"pods[{i}] ({name}): {exc}") from None
        if pod.key in seen:
            raise SnapshotFileError(f"pods[{i}]: pod {pod.key!r} appears twice")
        seen.add(pod.key)
        if pod.terminal:
            continue
        if not pod.node_name:
            pending.append(pod)
        elif pod.node_name in bound:
            bound[pod.node_name].append(pod)
        else:
            raise SnapshotFileError(
                f"pods[{i}] ({pod.key}) is bound to unknown node {pod.node_name!r}"
            )
    return bound, pending


def to_snapshot(document: Any) -> Snapshot:
    """Build a Snapshot from a parsed snapshot document."""
    if not isinstance(document, Mapping):
        raise SnapshotFileError("the top level must be an object")
    if document.get("kind", KIND) != KIND:
        raise SnapshotFileError(f"kind is {document.get('kind')!r}, expected {KIND!r}")
    nodes = _nodes(document)
    bound, pending = _pods(document, {n.name for n in nodes})
    namespace_labels = {
        str(ns.get("name")): dict(ns.get("labels") or {})
        for ns in _entries(document, "namespaces", required=False)
    }
    selectors: dict[str, list[LabelSelector]] = {}
    for w in _entries(document, "workloads", required=False):
        selector = LabelSelector.parse(w.get("selector"))
        if selector is not None and not selector.empty:
            selectors.setdefault(str(w.get("namespace")), []).append(selector)
    budgets = tuple(
        DisruptionBudget(
            namespace=str((b.get("metadata") or {}).get("namespace")),
            name=str((b.get("metadata") or {}).get("name")),
            selector=LabelSelector.parse((b.get("spec") or {}).get("selector")),
            disruptions_allowed=int((b.get("status") or {}).get("disruptionsAllowed") or 0),
        )
        for b in _entries(document, "disruptionBudgets", required=False)
    )
    generation = document.get("generation", 0)
    return Snapshot.of(
        [NodeInfo.build(n, tuple(bound[n.name])) for n in nodes],
        tuple(sorted(pending, key=lambda p: (p.created, p.key))),
        generation if isinstance(generation, int) else 0,
        namespace_labels=namespace_labels,
        workload_selectors={ns: tuple(s) for ns, s in selectors.items()},
        disruption_budgets=budgets,
    )
