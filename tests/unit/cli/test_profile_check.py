"""``profile_problems``: what ``opsche config check`` and ``opsche run`` check of the profile.

It must agree with ``build_framework`` (what the daemon builds later): a profile it passes must
build, and one it rejects must not.
"""

from dataclasses import dataclass

import pytest

from opsche_daemon.config import ProfileSettings
from opsche_daemon.framework.registry import ProfileError, build_framework, profile_problems

PLAN = ("PlanGate", "PlanPin", "PlanReserve")


@dataclass(frozen=True)
class Named:
    """Stands in for an extra plugin (DefaultPreemption, the plan plugins) in build_framework."""

    name: str


def test_the_default_profile_has_no_problem() -> None:
    assert profile_problems(ProfileSettings()) == []


def test_unknown_names_in_every_field_are_reported_at_once() -> None:
    profile = ProfileSettings(
        disabled=("ImageLocalty",),
        weights={"NodeAfinity": 2, "Zzz": 1},
        plugin_args={"TaintTolerations": {}},
    )
    problems = profile_problems(profile)
    assert problems[:2] == [
        "profile.disabled: unknown plugin 'ImageLocalty' (did you mean ImageLocality?)",
        "profile.weights: unknown plugin 'NodeAfinity' (did you mean NodeAffinity?)",
    ]
    assert problems[2].startswith(
        "profile.weights: unknown plugin 'Zzz' (known: DefaultPreemption, ImageLocality,"
    )
    assert problems[3] == (
        "profile.pluginConfig: unknown plugin 'TaintTolerations' (did you mean TaintToleration?)"
    )
    assert len(problems) == 4


def test_every_plugins_args_are_parsed() -> None:
    profile = ProfileSettings(
        plugin_args={
            "NodeResourcesFit": {"scoringStrategy": {"type": "Most"}},
            "InterPodAffinity": {"hardPodAffinityWeight": 500},
            "DefaultPreemption": {"minCandidateNodesAbsolute": -1},
        }
    )
    assert profile_problems(profile) == [
        "profile.pluginConfig: NodeResourcesFit args: scoringStrategy.type: Unsupported value: "
        '\'Most\': supported values: "LeastAllocated", "MostAllocated", '
        '"RequestedToCapacityRatio"',
        "profile.pluginConfig: InterPodAffinityArgs.hardPodAffinityWeight: Invalid value: 500: "
        "not in valid range [0, 100]",
        "profile.pluginConfig: DefaultPreemption args: minCandidateNodesAbsolute: Invalid "
        "value: -1: not in valid range [0, inf)",
    ]


def test_default_preemption_args_are_parsed_even_with_preemption_off() -> None:
    # The daemon builds DefaultPreemption either way (with its args), so its args must be valid.
    profile = ProfileSettings(plugin_args={"DefaultPreemption": {"typo": 1}})
    assert profile_problems(profile, preemption_enabled=False) == [
        'profile.pluginConfig: DefaultPreemption args: typo: unknown field "typo"'
    ]


def test_default_preemption_is_named_in_the_profile_only_when_enabled() -> None:
    profile = ProfileSettings(weights={"DefaultPreemption": 1})
    assert profile_problems(profile) == []
    assert profile_problems(profile, preemption_enabled=False) == [
        "profile.weights: unknown plugin 'DefaultPreemption' "
        "(it is in the profile only while preemption.enabled is true)"
    ]


def test_args_of_a_disabled_plugin_are_not_parsed() -> None:
    profile = ProfileSettings(
        disabled=("NodeAffinity",), plugin_args={"NodeAffinity": {"bogus": 1}}
    )
    assert profile_problems(profile) == []


def test_extra_plugins_are_known() -> None:
    profile = ProfileSettings(weights={"PlanGate": 1})
    [problem] = profile_problems(profile)
    assert problem.startswith("profile.weights: unknown plugin 'PlanGate' (")
    assert profile_problems(profile, extra_plugins=PLAN) == []


PROFILES = [
    ProfileSettings(),
    ProfileSettings(disabled=("ImageLocality",), weights={"NodeResourcesFit": 3}),
    ProfileSettings(disabled=("Nope",)),
    ProfileSettings(weights={"PlanPin": 1, "DefaultPreemption": 2}),
    ProfileSettings(plugin_args={"NodeAffinity": {"bogus": 1}}),
    ProfileSettings(plugin_args={"PodTopologySpread": {"defaultingType": "List"}}),
    ProfileSettings(plugin_args={"PlanGate": {}}),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("preemption", [True, False])
def test_it_agrees_with_build_framework(profile: ProfileSettings, preemption: bool) -> None:
    extra = [Named(n) for n in (*(("DefaultPreemption",) if preemption else ()), *PLAN)]
    problems = profile_problems(profile, preemption_enabled=preemption, extra_plugins=PLAN)
    args = {
        k: v for k, v in profile.plugin_args.items() if k != "DefaultPreemption"
    }  # as the daemon
    try:
        build_framework(
            disabled=profile.disabled,
            weights=profile.weights,
            plugin_args=args,
            extra=extra,
        )
    except ProfileError as exc:
        # The same problems; only the hint in parentheses may differ (build_framework does not
        # know why a plugin is missing from its extras).
        assert [p.split(" (")[0] for p in exc.problems] == [p.split(" (")[0] for p in problems]
        assert problems
    else:
        assert problems == []
