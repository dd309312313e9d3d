"""NodeResourcesBalancedAllocation: prefer nodes whose resource usage stays balanced.

What upstream v1.36 does, and so what we mirror:

* It scores with the pod's and the node's *real* requests (``useRequested``), not the non-zero
  defaults NodeResourcesFit scores with; a container without a cpu request adds no cpu here.
* PreScore returns Skip for a pod requesting nothing of the scored resources (a best-effort pod):
  it cannot unbalance anything, so the plugin contributes nothing for it. Score without PreScore
  returns 0 for such a pod.
* Per node it computes each scored resource's utilisation fraction (capped at 1) before and after
  adding the pod, and the standard deviation of those fractions: half the absolute difference
  for two resources, the population standard deviation for more. A resource the node has none of,
  or a scalar resource the pod does not request, is left out.
* ``balance(x) = int((1 - std(x)) * 100)`` (truncated), and the score rewards the *change*:
  ``50 + (50 + balance(with pod) - balance(without pod)) / 2`` in Go integer arithmetic. Balance
  never drops below 50 (a standard deviation of fractions in [0, 1] is at most 0.5), so the
  numerator lies in 0..100 and the score in 50..100: 50 when the pod turns a perfectly balanced
  node into a maximally unbalanced one, 100 for the reverse.

The floating-point steps (division, summation order, ``sqrt``) are done in the same order as the
Go code so the truncated integers agree. Args are upstream ``NodeResourcesBalancedAllocationArgs``
(``resources``; default cpu and memory; every weight must be 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from opsche_daemon.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    NodeScore,
    PluginArgsError,
    Status,
)
from opsche_daemon.framework.plugins.helpers import go_div
from opsche_daemon.framework.plugins.node_resources_fit import (
    ResourceSpec,
    allocation_vectors,
    parse_resource_specs,
    pod_request_vector,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = ["NodeResourcesBalancedAllocation", "balanced_resource_score"]

_PRE_SCORE_KEY = "NodeResourcesBalancedAllocation/preScore"
_TWO_RESOURCES = 2


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``int((1 - std) * 100)`` of the utilisation fractions of the resources the node has."""
    fractions: list[float] = []
    total = 0.0
    for i, capacity in enumerate(allocatable):
        if capacity == 0:
            continue
        fraction = min(float(requested[i]) / float(capacity), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == _TWO_RESOURCES:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > _TWO_RESOURCES:
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def _balanced_scorer(
    requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
) -> int:
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


class NodeResourcesBalancedAllocation:
    """PreScore/Score: favour nodes where the pod improves (or least harms) resource balance."""

    NAME = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        raw = dict(args or {})
        errors = [
            f'{key}: unknown field "{key}"'
            for key in raw
            if key not in ("resources", "apiVersion", "kind")
        ]
        self.resources: tuple[ResourceSpec, ...] = parse_resource_specs(
            raw.get("resources"), "resources", errors
        )
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                errors.append(f"resources[{i}].name: Duplicate value: {spec.name!r}")
            seen.add(spec.name)
            if spec.weight != 1:
                errors.append(f"resources[{i}].weight: Invalid value: {spec.weight}: must be 1")
        if errors:
            raise PluginArgsError(f"{self.NAME} args: " + "; ".join(errors))

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Record the pod's real requests; Skip a pod that requests none of the resources."""
        pod_requests = pod_request_vector(pod, self.resources, use_requested=True)
        if not any(pod_requests):
            return Status.skip()
        state.write(_PRE_SCORE_KEY, pod_requests)
        return Status.success()

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """50 plus half the change in balance the pod causes on ``node``."""
        pod_requests: tuple[int, ...] | None = state.data.get(_PRE_SCORE_KEY)
        if pod_requests is None:
            pod_requests = pod_request_vector(pod, self.resources, use_requested=True)
            if not any(pod_requests):
                return 0, Status.success()
        requested, allocated, allocatable = allocation_vectors(
            node, self.resources, pod_requests, use_requested=True
        )
        return _balanced_scorer(requested, allocated, allocatable), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Scores are already 0..100 (upstream has no ScoreExtensions): nothing to do."""
        return Status.success()
