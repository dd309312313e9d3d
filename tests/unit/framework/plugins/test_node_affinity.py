from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from opsche_daemon.framework.interface import (
    Code,
    FilterPlugin,
    NodeScore,
    PluginArgsError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from opsche_daemon.framework.plugins.node_affinity import NodeAffinity
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, node_info, state_of

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POD_REASON = "node(s) didn't match Pod's node affinity/selector"


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def _name_in(*names: str) -> dict[str, Any]:
    return {"matchFields": [_expr("metadata.name", "In", *names)]}


def _required(*terms: Mapping[str, Any]) -> Pod:
    affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [dict(t) for t in terms]}}}
    return api_pod("p", spec={"affinity": affinity})


def _run(
    incoming: Pod,
    labels: Mapping[str, str] | None = None,
    node_name: str = "node1",
    args: Mapping[str, Any] | None = None,
) -> tuple[PreFilterResult | None, Code, Any]:
    target = node_info(api_node(node_name, labels=labels))
    plugin = NodeAffinity(args)
    state = state_of(target)
    result, pre = plugin.pre_filter(state, incoming, [target])
    return result, pre.code, plugin.filter(state, incoming, target)


def test_extension_points() -> None:
    plugin = NodeAffinity()
    assert plugin.name == "NodeAffinity"
    for protocol in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
        assert isinstance(plugin, protocol)


# --- PreFilter / Filter: upstream TestNodeAffinity ------------------------------------------------


def test_missing_labels() -> None:
    # "missing labels"
    _, pre, status = _run(api_pod(spec={"nodeSelector": {"foo": "bar"}}))
    assert pre == Code.SUCCESS
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (POD_REASON,)
    assert status.plugin == "NodeAffinity"


def test_node_selector_superset_matches_subset_does_not() -> None:
    # "node labels are superset" / "node labels are subset"
    selector = api_pod(spec={"nodeSelector": {"foo": "bar"}})
    assert _run(selector, {"foo": "bar", "baz": "blah"})[2].ok
    assert _run(api_pod(spec={"nodeSelector": {"foo": "bar", "baz": "blah"}}), {"foo": "bar"})[
        2
    ].rejected


@pytest.mark.parametrize(
    ("case", "expressions", "fits"),
    [
        (
            "Pod with matchExpressions using In operator that matches the existing node",
            [_expr("foo", "In", "bar", "value2")],
            True,
        ),
        (
            "Pod with matchExpressions using Gt operator that matches the existing node",
            [_expr("kernel-version", "Gt", "0204")],
            True,
        ),
        (
            "Pod with matchExpressions using NotIn operator that matches the existing node",
            [_expr("mem-type", "NotIn", "DDR", "DDR2")],
            True,
        ),
        (
            "Pod with matchExpressions using Exists operator that matches the existing node",
            [_expr("GPU", "Exists")],
            True,
        ),
        (
            "Pod with affinity that don't match node's labels won't schedule onto the node",
            [_expr("foo", "In", "value1", "value2")],
            False,
        ),
        (
            "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
            [_expr("GPU", "Exists"), _expr("GPU", "In", "AMD", "INTER")],
            False,
        ),
    ],
)
def test_required_match_expressions(case: str, expressions: list[Any], fits: bool) -> None:
    labels = {"foo": "bar", "kernel-version": "0206", "mem-type": "DDR3", "GPU": "NVIDIA-GRID-K1"}
    _, pre, status = _run(_required({"matchExpressions": expressions}), labels)
    assert pre == Code.SUCCESS
    assert status.ok is fits, case


def test_empty_match_expressions_match_nothing() -> None:
    # "Pod with empty MatchExpressions is not a valid value will match no objects ..."
    _, _, status = _run(_required({"matchExpressions": []}), {"foo": "bar"})
    assert status.reasons == (POD_REASON,)


def test_terms_are_ored() -> None:
    # "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels ..."
    incoming = _required(
        {"matchExpressions": [_expr("foo", "In", "bar", "value2")]},
        {"matchExpressions": [_expr("diffkey", "In", "wrong", "value2")]},
    )
    assert _run(incoming, {"foo": "bar"})[2].ok


def test_node_selector_and_affinity_must_both_match() -> None:
    # "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector ... is not matched"
    affinity = {
        "nodeAffinity": {
            REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("foo", "Exists")]}]}
        }
    }
    incoming = api_pod(spec={"affinity": affinity, "nodeSelector": {"foo": "bar"}})
    assert _run(incoming, {"foo": "bar"})[2].ok
    assert _run(incoming, {"foo": "barrrrrr"})[2].reasons == (POD_REASON,)


def test_pod_without_constraints_is_skipped() -> None:
    # "Pod with no Affinity will schedule onto a node" and
    # "Pod with Affinity but nil NodeSelector will schedule onto a node"
    for incoming in (api_pod(), api_pod(spec={"affinity": {"nodeAffinity": {}}})):
        result, pre, status = _run(incoming, {"foo": "bar"})
        assert (result, pre) == (None, Code.SKIP)
        assert status.ok


def test_match_fields_narrow_the_nodes() -> None:
    # "Pod with matchFields using In operator that matches the existing node"
    result, pre, status = _run(_required(_name_in("node1")), node_name="node1")
    assert result == PreFilterResult(frozenset({"node1"}))
    assert pre == Code.SUCCESS
    assert status.ok
    # "Pod with matchFields using In operator that does not match the existing node"
    result, _, status = _run(_required(_name_in("node1")), node_name="node2")
    assert result == PreFilterResult(frozenset({"node1"}))
    assert status.reasons == (POD_REASON,)


def test_a_term_without_name_fields_prevents_narrowing() -> None:
    # "Pod with two terms: matchFields does not match, but matchExpressions matches"
    incoming = _required(
        {"matchFields": [_expr("metadata.name", "In", "node1")]},
        {"matchExpressions": [_expr("foo", "In", "bar")]},
    )
    result, pre, status = _run(incoming, {"foo": "bar"}, node_name="node2")
    assert (result, pre) == (None, Code.SUCCESS)
    assert status.ok


def test_fields_and_expressions_in_one_term_are_anded() -> None:
    # "Pod with one term: matchFields does not match, but matchExpressions matches"
    term = {
        "matchFields": [_expr("metadata.name", "In", "node1")],
        "matchExpressions": [_expr("foo", "In", "bar")],
    }
    result, _, status = _run(_required(term), {"foo": "bar"}, node_name="node2")
    assert result == PreFilterResult(frozenset({"node1"}))
    assert status.rejected
    # "Pod with one term: both matchFields and matchExpressions match"
    assert _run(_required(term), {"foo": "bar"}, node_name="node1")[2].ok


def test_name_terms_are_unioned() -> None:
    # "Pod with two terms of node.Name affinity"
    result, _, status = _run(_required(_name_in("node1"), _name_in("node2")), node_name="node2")
    assert result == PreFilterResult(frozenset({"node1", "node2"}))
    assert status.ok


def test_conflicting_name_fields_are_unresolvable() -> None:
    # "Pod with two conflicting mach field requirements"
    term = {
        "matchFields": [
            _expr("metadata.name", "In", "node1"),
            _expr("metadata.name", "In", "node2"),
        ]
    }
    target = node_info(api_node("node2", labels={"foo": "bar"}))
    _, status = NodeAffinity().pre_filter(state_of(target), _required(term), [target])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("pod affinity terms conflict",)


ADDED_NODE2 = {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [_name_in("node2")]}}}


def test_added_affinity_is_enforced_first() -> None:
    # "Matches added affinity and Pod's node affinity"
    zone_foo = _required({"matchExpressions": [_expr("zone", "In", "foo")]})
    assert _run(zone_foo, {"zone": "foo"}, "node2", ADDED_NODE2)[2].ok
    # "Matches added affinity but not Pod's node affinity"
    zone_bar = _required({"matchExpressions": [_expr("zone", "In", "bar")]})
    assert _run(zone_bar, {"zone": "foo"}, "node2", ADDED_NODE2)[2].reasons == (POD_REASON,)
    # "Doesn't match added affinity": not skipped even for a pod without constraints
    added = {
        "addedAffinity": {
            REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("zone", "In", "bar")]}]}
        }
    }
    result, pre, status = _run(api_pod(), {"zone": "foo"}, "node2", added)
    assert (result, pre) == (None, Code.SUCCESS)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) didn't match scheduler-enforced node affinity",)


def test_filter_works_without_pre_filter() -> None:
    # "Matches node selector correctly even if PreFilter is not called"
    target = node_info(api_node("n", labels={"foo": "bar", "baz": "blah"}))
    incoming = api_pod(spec={"nodeSelector": {"foo": "bar"}})
    assert NodeAffinity().filter(state_of(target), incoming, target).ok


# --- Score: upstream TestNodeAffinityPriority ----------------------------------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def _pref(weight: int, *expressions: Mapping[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": [dict(e) for e in expressions]}}


AFFINITY1 = {PREFERRED: [_pref(2, _expr("foo", "In", "bar"))]}
AFFINITY2 = {
    PREFERRED: [
        _pref(2, _expr("foo", "In", "bar")),
        _pref(4, _expr("key", "In", "value")),
        _pref(5, _expr("foo", "In", "bar"), _expr("key", "In", "value"), _expr("az", "In", "az1")),
    ]
}


def _scores(
    incoming: Pod,
    labels: Sequence[Mapping[str, str]],
    args: Mapping[str, Any] | None = None,
    *,
    pre_score: bool = True,
) -> list[int]:
    infos = [node_info(api_node(f"node{i + 1}", labels=lbl)) for i, lbl in enumerate(labels)]
    plugin = NodeAffinity(args)
    state = state_of(*infos)
    if pre_score:
        assert plugin.pre_score(state, incoming, infos).code == Code.SUCCESS
    scores = []
    for i in infos:
        score, status = plugin.score(state, incoming, i)
        assert status.code == Code.SUCCESS
        scores.append(NodeScore(i.name, score))
    assert plugin.normalize_score(state, incoming, scores).ok
    return [s.score for s in scores]


def _affine(node_affinity: Mapping[str, Any]) -> Pod:
    return api_pod("p", spec={"affinity": {"nodeAffinity": dict(node_affinity)}})


def test_pre_score_skips_without_preferred_terms() -> None:
    # "Skip is returned in PreScore when NodeAffinity is nil"
    infos = [node_info(api_node("node1", labels=LABEL1))]
    assert NodeAffinity().pre_score(state_of(*infos), api_pod(), infos).code == Code.SKIP
    # "all nodes are same priority as NodeAffinity is nil" (Score without PreScore)
    assert _scores(api_pod(), [LABEL1, LABEL2, LABEL3], pre_score=False) == [0, 0, 0]


def test_no_node_matches_preferred_terms() -> None:
    # "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes'
    # priority is zero"
    assert _scores(_affine(AFFINITY1), [LABEL4, LABEL2, LABEL3]) == [0, 0, 0]


def test_only_matching_node_scores() -> None:
    # "only node1 matches the preferred scheduling requirements of pod"
    assert _scores(_affine(AFFINITY1), [LABEL1, LABEL2, LABEL3]) == [100, 0, 0]


def test_weights_are_summed_and_normalised() -> None:
    # "all nodes matches the preferred scheduling requirements of pod but with different
    # priorities": raw 2, 11, 4 -> 200/11 = 18, 100, 400/11 = 36
    assert _scores(_affine(AFFINITY2), [LABEL1, LABEL5, LABEL2]) == [18, 100, 36]
    # "calculate the priorities correctly even if PreScore is not called"
    assert _scores(_affine(AFFINITY2), [LABEL1, LABEL5, LABEL2], pre_score=False) == [18, 100, 36]


def test_added_preferred_affinity() -> None:
    # "added affinity"
    assert _scores(api_pod(), [LABEL1, LABEL2], {"addedAffinity": AFFINITY1}) == [100, 0]
    # "added affinity and pod has default affinity": raw 2, 3, 5
    added = {"addedAffinity": {PREFERRED: [_pref(3, _expr("key", "In", "value"))]}}
    assert _scores(_affine(AFFINITY1), [LABEL1, LABEL2, LABEL5], added) == [40, 60, 100]


def test_raw_score_is_the_sum_of_matching_weights() -> None:
    target = node_info(api_node("node5", labels=LABEL5))
    state = state_of(target)
    incoming = _affine(AFFINITY2)
    assert NodeAffinity().score(state, incoming, target)[0] == 11


# --- Args ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("added", "message"),
    [
        (
            {
                REQUIRED: {
                    "nodeSelectorTerms": [{"matchExpressions": [_expr("foo", "Equals", "x")]}]
                }
            },
            r"nodeSelectorTerms\[0\]\.matchExpressions\[0\]\.operator: Unsupported value",
        ),
        (
            {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("foo", "In")]}]}},
            r"values set can't be empty",
        ),
        (
            {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("foo", "Gt", "x")]}]}},
            r"the value must be an integer",
        ),
        (
            {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [_expr("metadata.name", "In")]}]}},
            r"matchFields\[0\]\.values: Invalid value: \[\]: must have one element",
        ),
        (
            {PREFERRED: [_pref(2, _expr("invalid key", "In", "bar"))]},
            r"preference\.matchExpressions\[0\]\.key: Invalid value: 'invalid key'",
        ),
        ({"requiredDuringSchedulingRequiredDuringExecution": {}}, r"unknown field"),
    ],
)
def test_invalid_added_affinity_is_rejected(added: Any, message: str) -> None:
    with pytest.raises(PluginArgsError, match=message):
        NodeAffinity({"addedAffinity": added})


def test_zero_weight_and_empty_preferred_terms_are_ignored_not_validated() -> None:
    plugin = NodeAffinity(
        {
            "addedAffinity": {
                PREFERRED: [
                    _pref(0, _expr("invalid key", "In", "bar")),
                    {"weight": 3, "preference": {}},
                ]
            }
        }
    )
    assert plugin.added_preferred == ()
