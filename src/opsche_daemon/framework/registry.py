"""The plugin registry: names to factories, default weights, and building a profile's Framework.

One explicit table, as kube-scheduler's ``plugins/registry.go`` and ``default_plugins.go``: a
reader sees in one place which plugins exist, which run by default and with what Score weight.

``profile_problems`` checks a profile (plugin names and every plugin's arguments, those of
DefaultPreemption included) without building a live daemon, so ``opsche run`` and ``opsche config
check`` report a misspelt plugin before anything connects to a cluster; ``build_framework`` applies
the same checks.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from opsche_daemon.config import ProfileSettings, yaml_key
from opsche_daemon.framework.interface import Plugin, PluginArgsError
from opsche_daemon.framework.plugins.default_preemption import (
    DefaultPreemption,
    parse_preemption_args,
)
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

__all__ = [
    "DEFAULT_PLUGINS",
    "DEFAULT_WEIGHTS",
    "REGISTRY",
    "ProfileError",
    "build_framework",
    "profile_problems",
]

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
    """A profile names an unknown plugin or gives it bad arguments; ``problems`` lists each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def _unknown_names(
    disabled: Sequence[str],
    weights: Mapping[str, int],
    plugin_args: Mapping[str, Mapping[str, Any]],
    known: Collection[str],
    args_known: Collection[str],
    hints: Mapping[str, str] | None = None,
) -> list[str]:
    """One problem per unknown plugin name, naming the setting it was found in.

    ``hints`` replaces the did-you-mean of a name with a sentence saying why it is not known.
    """
    problems = []
    for attr, names, allowed in (
        ("disabled", disabled, known),
        ("weights", weights, known),
        ("plugin_args", plugin_args, args_known),
    ):
        key = yaml_key(ProfileSettings, attr)
        for name in dict.fromkeys(names):  # each once, in the file's order
            if name in allowed:
                continue
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(sorted(allowed))}"
            hint = (hints or {}).get(name, hint)
            problems.append(f"{key}: unknown plugin {name!r} ({hint})")
    return problems


def _build_plugins(
    disabled: Sequence[str], plugin_args: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Plugin], list[str]]:
    """The enabled default plugins built with their args, and one problem per bad args."""
    key = yaml_key(ProfileSettings, "plugin_args")
    plugins: list[Plugin] = []
    problems: list[str] = []
    for name in DEFAULT_PLUGINS:
        if name in disabled:
            continue  # as kube-scheduler's args of a disabled plugin, never parsed
        try:
            plugins.append(REGISTRY[name](plugin_args.get(name)))
        except PluginArgsError as exc:
            problems.append(f"{key}: {exc}")
    return plugins, problems


def profile_problems(
    profile: ProfileSettings,
    *,
    preemption_enabled: bool = True,
    extra_plugins: Collection[str] = (),
) -> list[str]:
    """Every problem of ``profile`` (empty: ``build_framework`` will accept it); pure, no I/O.

    Checks that every name in ``disabled``, ``weights`` and ``plugin_args`` is a plugin and that
    each enabled plugin accepts its args. DefaultPreemption's args are always parsed (the daemon
    builds it either way), but its name may be disabled or weighted only when
    ``preemption_enabled``, as in the daemon, where it joins the profile only then.
    ``extra_plugins`` names the other plugins the caller adds to the profile (the daemon's plan
    plugins, ``opsche_daemon.plans.PLAN_PLUGINS``). Weight values are bounds of the settings
    tree, checked by ``opsche_daemon.config.check_config``.
    """
    preemption = {DefaultPreemption.NAME}
    known = {*REGISTRY, *extra_plugins, *(preemption if preemption_enabled else ())}
    problems = _unknown_names(
        profile.disabled,
        profile.weights,
        profile.plugin_args,
        known,
        known | preemption,
        {DefaultPreemption.NAME: "it is in the profile only while preemption.enabled is true"},
    )
    problems += _build_plugins(profile.disabled, profile.plugin_args)[1]
    try:
        parse_preemption_args(profile.plugin_args.get(DefaultPreemption.NAME))
    except PluginArgsError as exc:
        problems.append(f"{yaml_key(ProfileSettings, 'plugin_args')}: {exc}")
    return problems


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

    ``extra`` plugins (preemption, plan enforcement) are appended after the defaults. Raises
    ``ProfileError`` listing every unknown name and every plugin's bad args.
    """
    known = {*REGISTRY, *(p.name for p in extra)}
    problems = _unknown_names(disabled, weights or {}, plugin_args or {}, known, known)
    plugins, args_problems = _build_plugins(disabled, plugin_args or {})
    if problems or args_problems:
        raise ProfileError(problems + args_problems)
    plugins.extend(extra)
    final_weights = {**DEFAULT_WEIGHTS, **(weights or {})}
    return Framework(
        plugins,
        final_weights,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score or None,
        rng=rng,
    )
