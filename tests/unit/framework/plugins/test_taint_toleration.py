from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from opsche_daemon.framework.interface import (
    Code,
    FilterPlugin,
    NodeScore,
    PreScorePlugin,
    ScorePlugin,
)
from opsche_daemon.framework.plugins.taint_toleration import TaintToleration
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, node_info, state_of


def _taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def _tolerant(*tolerations: Mapping[str, Any]) -> Pod:
    return api_pod("pod1", spec={"tolerations": [dict(t) for t in tolerations]})


def _scores(incoming: Pod, taints_by_node: Sequence[Iterable[Mapping[str, Any]]]) -> list[int]:
    infos = [
        node_info(api_node(f"node{chr(65 + i)}", taints=t)) for i, t in enumerate(taints_by_node)
    ]
    plugin = TaintToleration()
    state = state_of(*infos)
    assert plugin.pre_score(state, incoming, infos).code == Code.SUCCESS
    scores = []
    for i in infos:
        score, status = plugin.score(state, incoming, i)
        assert status.code == Code.SUCCESS
        scores.append(NodeScore(i.name, score))
    assert plugin.normalize_score(state, incoming, scores).ok
    return [s.score for s in scores]


def test_extension_points() -> None:
    plugin = TaintToleration()
    assert plugin.name == "TaintToleration"
    for protocol in (FilterPlugin, PreScorePlugin, ScorePlugin):
        assert isinstance(plugin, protocol)


# --- Filter: upstream TestTaintTolerationFilter --------------------------------------------------

DEDICATED_USER1 = _taint("dedicated", "user1", "NoSchedule")


@pytest.mark.parametrize(
    ("case", "tolerations", "taints", "fits"),
    [
        (
            "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
            [],
            [DEDICATED_USER1],
            False,
        ),
        (
            "A pod which can be scheduled on a dedicated node assigned to user1 with effect "
            "NoSchedule",
            [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
            [DEDICATED_USER1],
            True,
        ),
        (
            "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
            "NoSchedule",
            [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
            [DEDICATED_USER1],
            False,
        ),
        (
            "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
            "tolerates the taints on the node",
            [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
            [_taint("foo", "bar", "NoSchedule")],
            True,
        ),
        (
            "A pod has a toleration that keys and values match the taint on the node, but "
            "(non-empty) effect doesn't match",
            [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
            [_taint("foo", "bar", "NoSchedule")],
            False,
        ),
        (
            "The pod has a toleration that keys and values match the taint on the node, the "
            "effect of toleration is empty",
            [{"key": "foo", "operator": "Equal", "value": "bar"}],
            [_taint("foo", "bar", "NoSchedule")],
            True,
        ),
        (
            "The pod has a toleration that key and value don't match the taint on the node, but "
            "the effect of taint on node is PreferNoSchedule",
            [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
            [_taint("dedicated", "user1", "PreferNoSchedule")],
            True,
        ),
        ("NoExecute taints are filtered too", [], [_taint("k", "", "NoExecute")], False),
        (
            "Pod with Gt toleration cannot be scheduled when feature gate is disabled",
            [{"key": "sla", "operator": "Gt", "value": "100", "effect": "NoSchedule"}],
            [_taint("sla", "200", "NoSchedule")],
            False,
        ),
    ],
)
def test_filter(case: str, tolerations: list[Any], taints: list[Any], fits: bool) -> None:
    target = node_info(api_node("n", taints=taints))
    status = TaintToleration().filter(state_of(target), _tolerant(*tolerations), target)
    if fits:
        assert status.code == Code.SUCCESS, case
    else:
        # v1.36 no longer names the taint in the reason
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE, case
        assert status.reasons == ("node(s) had untolerated taint(s)",)
        assert status.plugin == "TaintToleration"


# --- Score: upstream TestTaintTolerationScore ----------------------------------------------------

FOO_BAR_PREFER = {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}


def test_tolerated_taints_score_higher() -> None:
    # "node with taints tolerated by the pod, gets a higher score than those node with
    # intolerable taints"
    scores = _scores(
        _tolerant(FOO_BAR_PREFER),
        [[_taint("foo", "bar", "PreferNoSchedule")], [_taint("foo", "blah", "PreferNoSchedule")]],
    )
    assert scores == [100, 0]


def test_number_of_tolerated_taints_does_not_matter() -> None:
    # "the nodes that all of their taints are tolerated by the pod, get the same score, no matter
    # how many tolerable taints a node has"
    tolerations = [
        {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
        {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
    ]
    scores = _scores(
        _tolerant(*tolerations),
        [
            [],
            [_taint("cpu-type", "arm64", "PreferNoSchedule")],
            [
                _taint("cpu-type", "arm64", "PreferNoSchedule"),
                _taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
    )
    assert scores == [100, 100, 100]


def test_more_intolerable_taints_score_lower() -> None:
    # "the more intolerable taints a node has, the lower score it gets."
    scores = _scores(
        _tolerant(FOO_BAR_PREFER),
        [
            [],
            [_taint("cpu-type", "arm64", "PreferNoSchedule")],
            [
                _taint("cpu-type", "arm64", "PreferNoSchedule"),
                _taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
    )
    assert scores == [100, 50, 0]


def test_only_prefer_no_schedule_taints_and_tolerations_count() -> None:
    # "only taints and tolerations that have effect PreferNoSchedule are checked by
    # taints-tolerations priority function": NoSchedule tolerations do not soften them.
    tolerations = [
        {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
        {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
    ]
    scores = _scores(
        _tolerant(*tolerations),
        [
            [],
            [_taint("cpu-type", "arm64", "NoSchedule")],
            [
                _taint("cpu-type", "arm64", "PreferNoSchedule"),
                _taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ],
    )
    assert scores == [100, 100, 0]


def test_default_behaviour_prefers_untainted_node() -> None:
    # "Default behaviour No taints and tolerations, lands on node with no taints"
    scores = _scores(api_pod("pod1"), [[], [_taint("cpu-type", "arm64", "PreferNoSchedule")]])
    assert scores == [100, 0]


def test_raw_score_counts_untolerated_preference_taints() -> None:
    target = node_info(
        api_node(
            "n",
            taints=[
                _taint("a", "1", "PreferNoSchedule"),
                _taint("b", "2", "PreferNoSchedule"),
                _taint("c", "3", "NoSchedule"),
            ],
        )
    )
    state = state_of(target)
    plugin = TaintToleration()
    incoming = _tolerant({"key": "a", "operator": "Exists"})  # empty effect counts
    plugin.pre_score(state, incoming, [target])
    score, status = plugin.score(state, incoming, target)
    assert (score, status.code) == (1, Code.SUCCESS)


def test_no_untolerated_taints_anywhere_gives_every_node_max() -> None:
    assert _scores(api_pod("p"), [[], []]) == [100, 100]


def test_score_without_pre_score_is_an_error() -> None:
    target = node_info(api_node("n"))
    _, status = TaintToleration().score(state_of(target), api_pod(), target)
    assert status.code == Code.ERROR
