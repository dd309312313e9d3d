"""The plugin registry: names to factories, default weights, and building a profile's Framework.

One explicit table, as kube-scheduler's ``plugins/registry.go`` and ``default_plugins.go``: a
reader sees in one place which plugins exist, which run by default and with what Score weight.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opsche_daemon.framework.interface import Plugin, PluginArgsError
from opsche_daemon.framework.plugins.image_locality import ImageLocality
from opsche_daemon.framework.plugins.inter_pod_affinity import InterPodAffinity
from opsche_daemon.framework.plugins.node_affinity import NodeAffinity
from opsche_daemon.framework.plugins.node_name import NodeName
from opsche_daemon.framework.plugins.node_ports import NodePorts
from opsche_daemon.framework.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from opsche_daemon.framework.plugins.node_resources_fit import NodeResourcesFit
from opsche_daemon.framework.plugins.node_unschedulable import NodeUnschedulable
from opsche_daemon.framework.plugins.pod_topology_spread import PodTopologySpread
from opsche_daemon.framework.plugins.priority_sort import PrioritySort
from opsche_daemon.framework.plugins.scheduling_gates import SchedulingGates
from opsche_daemon.framework.plugins.taint_toleration import TaintToleration
from opsche_daemon.framework.runtime import Framework

__all__ = ["DEFAULT_PLUGINS", "DEFAULT_WEIGHTS", "REGISTRY", "ProfileError", "build_framework"]

Factory = Callable[[Mapping[str, Any] | None], Plugin]

REGISTRY: dict[str, Factory] = {
    SchedulingGates.NAME: SchedulingGates,
    PrioritySort.NAME: PrioritySort,
    NodeUnschedulable.NAME: NodeUnschedulable,
    NodeName.NAME: NodeName,
    TaintToleration.NAME: TaintToleration,
    NodeAffinity.NAME: NodeAffinity,
    NodePorts.NAME: NodePorts,
    NodeResourcesFit.NAME: NodeResourcesFit,
    PodTopologySpread.NAME: PodTopologySpread,
    InterPodAffinity.NAME: InterPodAffinity,
    NodeResourcesBalancedAllocation.NAME: NodeResourcesBalancedAllocation,
    ImageLocality.NAME: ImageLocality,
}

# kube-scheduler's default profile, in its order (filters run in this order, which decides the
# reason reported for a node that fails several). Volume plugins are not implemented: pods with
# volumes that need them are refused with an explicit event instead.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
)

# pkg/scheduler/apis/config/v1/default_plugins.go
DEFAULT_WEIGHTS: dict[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


class ProfileError(ValueError):
    """A profile names an unknown plugin or gives it bad arguments."""


def build_framework(
    *,
    disabled: Sequence[str] = (),
    weights: Mapping[str, int] | None = None,
    plugin_args: Mapping[str, Mapping[str, Any]] | None = None,
    extra: Sequence[Plugin] = (),
    percentage_of_nodes_to_score: int | None = None,
    rng: random.Random | None = None,
) -> Framework:
    """The default profile minus ``disabled``, with weight and argument overrides.

    ``extra`` plugins (preemption, plan enforcement) are appended after the defaults.
    """
    unknown = [
        n
        for n in (*disabled, *(weights or {}), *(plugin_args or {}))
        if n not in REGISTRY and n not in {p.name for p in extra}
    ]
    if unknown:
        raise ProfileError(
            f"unknown plugin(s): {', '.join(sorted(set(unknown)))}; known: {', '.join(REGISTRY)}"
        )
    plugins: list[Plugin] = []
    for name in DEFAULT_PLUGINS:
        if name in disabled:
            continue
        try:
            plugins.append(REGISTRY[name]((plugin_args or {}).get(name)))
        except PluginArgsError as exc:
            raise ProfileError(f"pluginConfig {name}: {exc}") from None
    plugins.extend(extra)
    final_weights = {**DEFAULT_WEIGHTS, **(weights or {})}
    return Framework(
        plugins,
        final_weights,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score or None,
        rng=rng,
    )
