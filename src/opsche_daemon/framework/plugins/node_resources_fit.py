"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; score by utilisation.

Filtering uses the pod's *real* requests (``Pod.requests``: containers, sidecars, the largest init
container, pod-level requests and overhead, as upstream ``resourcehelper.PodRequests``) against
``allocatable - requested`` of the node. Upstream reports *every* insufficient resource of a node,
in a fixed order: "Too many pods", cpu, memory, ephemeral-storage, then scalar (extended, hugepage)
resources. Go iterates those scalars in random map order; we sort them by name so the message is
stable. A resource is checked only when the pod requests a non-zero amount of it. The status is
Unschedulable, or UnschedulableAndUnresolvable when some request exceeds the node's whole
allocatable (no amount of preemption makes it fit). ``ignoredResources`` and
``ignoredResourceGroups`` (the part before ``/``) exempt *extended* resources only; hugepages and
``kubernetes.io/``-prefixed resources are always checked, as upstream.

Scoring mirrors upstream's ``resourceAllocationScorer``. Per configured resource it compares
``requested = node's usage + pod's request`` with allocatable, where cpu and memory use the
*non-zero* requests (a container without a cpu/memory request counts as 100m / 200Mi, on both the
node side, ``NodeInfo.non_zero_requested``, and the pod side, ``Pod.non_zero_requests``), so
best-effort pods still spread. Ephemeral storage and scalar resources use real requests; a scalar
resource the pod does not request, or one the node does not have, is left out of the weighted
average entirely. All arithmetic is Go's int64 arithmetic (truncating division), except that
RequestedToCapacityRatio rounds its weighted average half away from zero as Go's ``math.Round``.

Args are the camelCase form of upstream ``NodeResourcesFitArgs`` with upstream defaulting (no
``scoringStrategy``: LeastAllocated on cpu and memory; weight 0 or missing: 1) and validation;
unknown keys are rejected as upstream's strict decoding does. Dynamic-resource-allocation backed
extended resources are not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opsche_daemon.framework.interface import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodeScore,
    PluginArgsError,
    PreFilterResult,
    Status,
)
from opsche_daemon.framework.plugins.helpers import go_div, go_round, qualified_name_errors
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources

__all__ = [
    "LEAST_ALLOCATED",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "NodeResourcesFit",
    "ResourceSpec",
    "ShapePoint",
    "allocation_vectors",
    "insufficient_resources",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "parse_resource_specs",
    "pod_request_vector",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# A shape point's score is on a 0..10 scale in the config; scoring multiplies it up to 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10
_MAX_UTILIZATION = 100
_MAX_RESOURCE_WEIGHT = 100

_PRE_FILTER_KEY = "NodeResourcesFit/preFilter"
_PRE_SCORE_KEY = "NodeResourcesFit/preScore"

_NATIVE_PREFIX = "kubernetes.io/"
_QUOTA_REQUESTS_PREFIX = "requests."
_ENVELOPE_KEYS = frozenset({"apiVersion", "kind"})


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One scored resource and its weight (upstream ``config.ResourceSpec``)."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """A RequestedToCapacityRatio point: utilisation (0..100) to score (0..10 in the config)."""

    utilization: int
    score: int


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, ``kubernetes.io/``-prefixed or attachable-volume resources."""
    if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS):
        return False
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def is_extended_resource_name(name: str) -> bool:
    """A resource outside the ``kubernetes.io`` namespace, e.g. ``nvidia.com/gpu``."""
    return (
        "/" in name and _NATIVE_PREFIX not in name and not name.startswith(_QUOTA_REQUESTS_PREFIX)
    )


def _int_field(value: Any, path: str, errors: list[str]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(f"{path}: must be an integer, got {value!r}")
        return None
    return value


def _mapping_field(value: Any, path: str, errors: list[str]) -> Mapping[str, Any] | None:
    if not isinstance(value, Mapping):
        errors.append(f"{path}: must be a mapping, got {value!r}")
        return None
    return value


def _list_field(value: Any, path: str, errors: list[str]) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        errors.append(f"{path}: must be a list, got {value!r}")
        return ()
    return value


def _unknown_keys(raw: Mapping[str, Any], allowed: Sequence[str], path: str) -> list[str]:
    prefix = f"{path}." if path else ""
    return [f'{prefix}{key}: unknown field "{key}"' for key in raw if key not in allowed]


def parse_resource_specs(raw: Any, path: str, errors: list[str]) -> tuple[ResourceSpec, ...]:
    """Parse ``[{"name": ..., "weight": ...}]``; missing or zero weights default to 1.

    An empty or absent list yields the default cpu and memory, weight 1 each. Problems are
    appended to ``errors`` with the field path; the caller decides which weights are valid.
    """
    specs: list[ResourceSpec] = []
    for i, item in enumerate(_list_field(raw, path, errors)):
        item_path = f"{path}[{i}]"
        entry = _mapping_field(item, item_path, errors)
        if entry is None:
            continue
        errors.extend(_unknown_keys(entry, ("name", "weight"), item_path))
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"{item_path}.name: must be a non-empty string, got {name!r}")
            continue
        weight = _int_field(entry.get("weight", 0) or 0, f"{item_path}.weight", errors)
        if weight is None:
            continue
        specs.append(ResourceSpec(name, weight or 1))
    return tuple(specs) or DEFAULT_RESOURCES


def _parse_shape(raw: Any, path: str, errors: list[str]) -> tuple[ShapePoint, ...]:
    points: list[ShapePoint] = []
    known_errors = len(errors)
    for i, item in enumerate(_list_field(raw, path, errors)):
        item_path = f"{path}[{i}]"
        entry = _mapping_field(item, item_path, errors)
        if entry is None:
            continue
        errors.extend(_unknown_keys(entry, ("utilization", "score"), item_path))
        utilization = _int_field(entry.get("utilization", 0), f"{item_path}.utilization", errors)
        score = _int_field(entry.get("score", 0), f"{item_path}.score", errors)
        if utilization is not None and score is not None:
            points.append(ShapePoint(utilization, score))
    if not points:
        if len(errors) == known_errors:
            errors.append(f"{path}: Required value: at least one point must be specified")
        return ()
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {points[i].utilization}: "
                "values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(points):
        if not 0 <= point.utilization <= _MAX_UTILIZATION:
            errors.append(
                f"{path}[{i}].utilization: Invalid value: {point.utilization}: "
                f"not in valid range [0, {_MAX_UTILIZATION}]"
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{path}[{i}].score: Invalid value: {point.score}: "
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return tuple(points)


def _parse_names(raw: Any, path: str, errors: list[str], *, group: bool) -> frozenset[str]:
    names: set[str] = set()
    for i, item in enumerate(_list_field(raw, path, errors)):
        item_path = f"{path}[{i}]"
        if not isinstance(item, str):
            errors.append(f"{item_path}: must be a string, got {item!r}")
            continue
        if group and "/" in item:
            errors.append(
                f"{item_path}: Invalid value: {item!r}: resource group name can't contain '/'"
            )
        errors.extend(
            f"{item_path}: Invalid value: {item!r}: {e}" for e in qualified_name_errors(item)
        )
        names.add(item)
    return frozenset(names)


# --- scoring -------------------------------------------------------------------------------------


def pod_request_vector(
    pod: Pod, resources: Sequence[ResourceSpec], *, use_requested: bool
) -> tuple[int, ...]:
    """The pod's request of each scored resource.

    With ``use_requested`` False (NodeResourcesFit) cpu and memory are the non-zero requests
    (100m / 200Mi for containers that request nothing); otherwise the real requests
    (NodeResourcesBalancedAllocation).
    """
    source = pod.requests if use_requested else pod.non_zero_requests
    return tuple(_pod_amount(source, spec.name) for spec in resources)


def _pod_amount(requests: Resources, name: str) -> int:
    if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS):
        return requests.get(name)
    return requests.scalars.get(name, 0)


def _node_amounts(node: NodeInfo, name: str, *, use_requested: bool) -> tuple[int, int]:
    """(allocatable, already requested) of one resource on a node; (0, 0) when not scored."""
    allocatable = node.node.allocatable
    usage = node.requested if use_requested else node.non_zero_requested
    if name == CPU:
        return allocatable.milli_cpu, usage.milli_cpu
    if name == MEMORY:
        return allocatable.memory, usage.memory
    if name == EPHEMERAL_STORAGE:
        # Upstream always uses the real requests here, even when scoring with non-zero ones.
        return allocatable.ephemeral_storage, node.requested.ephemeral_storage
    if name in allocatable.scalars:
        return allocatable.scalars[name], node.requested.scalars.get(name, 0)
    # "pods" and unknown names are not in upstream's scalar map: they are left out.
    return 0, 0


def allocation_vectors(
    node: NodeInfo,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    *,
    use_requested: bool,
) -> tuple[list[int], list[int], list[int]]:
    """Per scored resource: (requested with the pod, allocated without it, allocatable).

    A scalar resource the pod does not request, and any resource the node has none of, stay at
    zero allocatable, which every scorer reads as "leave this resource out".
    """
    count = len(resources)
    requested, allocated, allocatable = [0] * count, [0] * count, [0] * count
    for i, spec in enumerate(resources):
        if pod_requests[i] == 0 and is_scalar_resource_name(spec.name):
            continue
        node_allocatable, node_allocated = _node_amounts(
            node, spec.name, use_requested=use_requested
        )
        if node_allocatable == 0:
            continue
        allocatable[i] = node_allocatable
        allocated[i] = node_allocated
        requested[i] = node_allocated + pod_requests[i]
    return requested, allocated, allocatable


_Scorer = Callable[[Sequence[int], Sequence[int]], int]


def _least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


def _most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return go_div(min(requested, capacity) * MAX_NODE_SCORE, capacity)


def _weighted_scorer(
    resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]
) -> _Scorer:
    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            weight = resources[i].weight
            node_score += per_resource(requested[i], capacity) * weight
            weight_sum += weight
        return 0 if weight_sum == 0 else go_div(node_score, weight_sum)

    return score


def _broken_linear(shape: Sequence[ShapePoint]) -> Callable[[int], int]:
    """Piecewise-linear interpolation through ``shape`` (scores already on the 0..100 scale)."""

    def value(p: int) -> int:
        for i, point in enumerate(shape):
            if p <= point.utilization:
                if i == 0:
                    return shape[0].score
                prev = shape[i - 1]
                return prev.score + go_div(
                    (point.score - prev.score) * (p - prev.utilization),
                    point.utilization - prev.utilization,
                )
        return shape[-1].score

    return value


def _ratio_scorer(resources: Sequence[ResourceSpec], shape: Sequence[ShapePoint]) -> _Scorer:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = _broken_linear([ShapePoint(p.utilization, p.score * scale) for p in shape])

    def per_resource(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(_MAX_UTILIZATION)
        return raw(go_div(requested * _MAX_UTILIZATION, capacity))

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            weight = resources[i].weight
            resource_score = per_resource(requested[i], capacity)
            # Upstream leaves resources scoring zero out of the average altogether.
            if resource_score > 0:
                node_score += resource_score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    return score


# --- filtering -----------------------------------------------------------------------------------


def insufficient_resources(
    request: Resources,
    node: NodeInfo,
    ignored_resources: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[tuple[str, bool]]:
    """Upstream ``fitsRequest``: (reason, unresolvable) for each resource the node lacks."""
    out: list[tuple[str, bool]] = []
    allocatable = node.node.allocatable
    used = node.requested
    if len(node.pods) + 1 > allocatable.pods:
        out.append(("Too many pods", False))
    if (
        request.milli_cpu == 0
        and request.memory == 0
        and request.ephemeral_storage == 0
        and not request.scalars
    ):
        return out
    native = (
        (CPU, request.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
        (MEMORY, request.memory, allocatable.memory, used.memory),
        (
            EPHEMERAL_STORAGE,
            request.ephemeral_storage,
            allocatable.ephemeral_storage,
            used.ephemeral_storage,
        ),
    )
    for name, wanted, capacity, in_use in native:
        if wanted > 0 and wanted > capacity - in_use:
            out.append((f"Insufficient {name}", wanted > capacity))
    for name in sorted(request.scalars):
        wanted = request.scalars[name]
        if wanted == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources or name.split("/", 1)[0] in ignored_groups
        ):
            continue
        capacity = allocatable.scalars.get(name, 0)
        if wanted > capacity - used.scalars.get(name, 0):
            out.append((f"Insufficient {name}", wanted > capacity))
    return out


class NodeResourcesFit:
    """PreFilter/Filter: requests fit free allocatable. PreScore/Score: utilisation strategy."""

    NAME = "NodeResourcesFit"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        errors: list[str] = []
        raw = dict(args or {})
        errors.extend(
            _unknown_keys(
                raw,
                ("ignoredResources", "ignoredResourceGroups", "scoringStrategy", *_ENVELOPE_KEYS),
                "",
            )
        )
        self.ignored_resources = _parse_names(
            raw.get("ignoredResources"), "ignoredResources", errors, group=False
        )
        self.ignored_resource_groups = _parse_names(
            raw.get("ignoredResourceGroups"), "ignoredResourceGroups", errors, group=True
        )
        self.strategy = LEAST_ALLOCATED
        self.resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
        self.shape: tuple[ShapePoint, ...] = ()
        strategy_raw = raw.get("scoringStrategy")
        if strategy_raw is not None:
            self._parse_strategy(strategy_raw, errors)
        if errors:
            raise PluginArgsError(f"{self.NAME} args: " + "; ".join(errors))
        self._scorer = self._build_scorer()

    def _parse_strategy(self, strategy_raw: Any, errors: list[str]) -> None:
        path = "scoringStrategy"
        strategy = _mapping_field(strategy_raw, path, errors)
        if strategy is None:
            return
        errors.extend(
            _unknown_keys(strategy, ("type", "resources", "requestedToCapacityRatio"), path)
        )
        kind = strategy.get("type", "")
        if kind not in _STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in _STRATEGIES)
            errors.append(
                f"{path}.type: Unsupported value: {kind!r}: supported values: {supported}"
            )
        else:
            self.strategy = kind
        self.resources = parse_resource_specs(
            strategy.get("resources"), f"{path}.resources", errors
        )
        for i, spec in enumerate(self.resources):
            if not 0 < spec.weight <= _MAX_RESOURCE_WEIGHT:
                errors.append(
                    f"{path}.resources[{i}].weight: Invalid value: {spec.weight}: resource weight "
                    f"of {spec.name} not in valid range (0, {_MAX_RESOURCE_WEIGHT}]"
                )
        ratio_path = f"{path}.requestedToCapacityRatio"
        ratio = strategy.get("requestedToCapacityRatio")
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            if ratio is None:
                errors.append(
                    f"{ratio_path}: Required value: must be specified when type is "
                    f"{REQUESTED_TO_CAPACITY_RATIO}"
                )
                return
            ratio_map = _mapping_field(ratio, ratio_path, errors)
            if ratio_map is not None:
                errors.extend(_unknown_keys(ratio_map, ("shape",), ratio_path))
                self.shape = _parse_shape(ratio_map.get("shape"), f"{ratio_path}.shape", errors)
        elif ratio is not None:
            errors.append(
                f"{ratio_path}: Forbidden: "
                f"must be nil when type is not {REQUESTED_TO_CAPACITY_RATIO}"
            )

    def _build_scorer(self) -> _Scorer:
        if self.strategy == MOST_ALLOCATED:
            return _weighted_scorer(self.resources, _most_requested_score)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return _ratio_scorer(self.resources, self.shape)
        return _weighted_scorer(self.resources, _least_requested_score)

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Record the pod's effective requests for the Filter calls of this cycle."""
        state.write(_PRE_FILTER_KEY, pod.requests)
        return None, Status.success()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """All the node's insufficient resources, or success."""
        try:
            request: Resources = state.read(_PRE_FILTER_KEY)
        except KeyError:
            return Status.error(
                self.NAME, f"reading {_PRE_FILTER_KEY!r} from cycle state: not found"
            )
        lacking = insufficient_resources(
            request, node, self.ignored_resources, self.ignored_resource_groups
        )
        if not lacking:
            return Status.success()
        unresolvable = any(flag for _, flag in lacking)
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, tuple(reason for reason, _ in lacking), self.NAME)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Record the pod's (non-zero) request of each scored resource."""
        state.write(_PRE_SCORE_KEY, pod_request_vector(pod, self.resources, use_requested=False))
        return Status.success()

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """The strategy's 0..100 score for ``node``."""
        pod_requests: tuple[int, ...] | None = state.data.get(_PRE_SCORE_KEY)
        if pod_requests is None:
            pod_requests = pod_request_vector(pod, self.resources, use_requested=False)
        requested, _, allocatable = allocation_vectors(
            node, self.resources, pod_requests, use_requested=False
        )
        return self._scorer(requested, allocatable), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Scores are already 0..100 (upstream has no ScoreExtensions): nothing to do."""
        return Status.success()
