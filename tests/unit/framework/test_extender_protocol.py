"""The extender JSON: upstream's Go field names, both directions, and strict decoding."""

import json

import pytest

from opsche_daemon.framework.extender_protocol import (
    extender_args,
    filter_result_json,
    host_priority_list_json,
    parse_extender_args,
    parse_filter_result,
    parse_host_priorities,
)
from opsche_daemon.model.node import Node, NodeInfo
from tests.factories import api_pod, node, node_info, node_manifest, pod


def infos() -> list[NodeInfo]:
    return [NodeInfo.build(Node.from_api(node_manifest(n))) for n in ("a", "b")]


def test_args_carry_the_api_objects_under_go_field_names() -> None:
    target = api_pod("p")
    args = extender_args(target, infos(), node_cache_capable=False)
    assert set(args) == {"Pod", "Nodes", "NodeNames"}
    assert args["Pod"]["metadata"]["name"] == "p"
    assert args["Pod"]["spec"] == dict(target.raw or {})["spec"]
    assert args["Nodes"]["kind"] == "NodeList"
    assert [n["metadata"]["name"] for n in args["Nodes"]["items"]] == ["a", "b"]
    assert args["NodeNames"] is None
    json.dumps(args)  # plain JSON all the way down


def test_node_cache_capable_extenders_get_names_only() -> None:
    args = extender_args(api_pod("p"), infos(), node_cache_capable=True)
    assert args["Nodes"] is None and args["NodeNames"] == ["a", "b"]


def test_managed_fields_are_not_sent() -> None:
    manifest = node_manifest("a")
    manifest["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    args = extender_args(
        api_pod("p"), [NodeInfo.build(Node.from_api(manifest))], node_cache_capable=False
    )
    assert "managedFields" not in args["Nodes"]["items"][0]["metadata"]
    assert "managedFields" in manifest["metadata"]  # the cached object is left alone


def test_objects_built_in_memory_get_a_minimal_form() -> None:
    args = extender_args(
        pod("p", 500, memory=1024), [node_info(node("a", 2000))], node_cache_capable=False
    )
    requests = args["Pod"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "500m", "memory": "1024"}
    assert args["Nodes"]["items"][0]["status"]["allocatable"]["cpu"] == "2000m"


def test_a_round_trip_through_the_service_side() -> None:
    args = parse_extender_args(
        json.loads(json.dumps(extender_args(api_pod("p"), infos(), node_cache_capable=False)))
    )
    assert args.node_names == ["a", "b"] and args.nodes is not None
    answer = filter_result_json(args, ["b"], {"a": "too hot"})
    result, error = parse_filter_result(answer, ["a", "b"], node_cache_capable=False)
    assert (result.nodes, dict(result.failed), error) == (("b",), {"a": "too hot"}, "")
    scores = parse_host_priorities(host_priority_list_json({"a": 3, "b": 10}))
    assert scores == {"a": 3, "b": 10}


def test_names_are_matched_without_regard_to_case_as_go_does() -> None:
    assert parse_host_priorities([{"host": "a", "score": 4}]) == {"a": 4}
    result, _ = parse_filter_result(
        {"nodenames": ["a"], "failedNodes": {"b": "no"}}, ["a", "b"], node_cache_capable=True
    )
    assert result.nodes == ("a",) and dict(result.failed) == {"b": "no"}


def test_an_answer_without_nodes_accepts_none() -> None:
    result, error = parse_filter_result({"Error": ""}, ["a"], node_cache_capable=False)
    assert result.nodes == () and error == ""


def test_the_error_field_is_returned() -> None:
    _, error = parse_filter_result({"Error": "model not loaded"}, ["a"], node_cache_capable=False)
    assert error == "model not loaded"


def test_a_node_that_was_not_sent_is_refused() -> None:
    with pytest.raises(ValueError, match="'z' which is not in the input node list"):
        parse_filter_result({"NodeNames": ["z"]}, ["a"], node_cache_capable=True)


@pytest.mark.parametrize(
    "body",
    [
        {"items": []},
        [{"Host": "a"}],
        [{"Host": "a", "Score": "3"}],
        [{"Host": "a", "Score": True}],
        [["a", 3]],
    ],
)
def test_malformed_priorities_are_refused(body: object) -> None:
    with pytest.raises(ValueError):
        parse_host_priorities(body)


def test_malformed_filter_results_are_refused() -> None:
    with pytest.raises(ValueError, match="FailedNodes"):
        parse_filter_result({"NodeNames": [], "FailedNodes": ["a"]}, ["a"], node_cache_capable=True)
    with pytest.raises(ValueError, match=r"metadata\.name"):
        parse_filter_result({"Nodes": {"items": [{}]}}, ["a"], node_cache_capable=False)


def test_args_that_are_not_extender_args_are_refused() -> None:
    with pytest.raises(ValueError, match="Pod"):
        parse_extender_args({"Nodes": None})
    with pytest.raises(ValueError, match="NodeNames"):
        parse_extender_args({"Pod": {}, "NodeNames": "a"})


def test_null_and_the_other_form_pass_no_node_as_upstream() -> None:
    assert parse_filter_result(None, ["a"], node_cache_capable=False)[0].nodes == ()
    # NodeNames from an extender that was sent whole Nodes: upstream reads Nodes only.
    result, _ = parse_filter_result({"NodeNames": ["a"]}, ["a"], node_cache_capable=False)
    assert result.nodes == ()


def test_pods_keep_their_api_object_only_when_asked() -> None:
    from opsche_daemon.model.pod import Pod
    from tests.factories import pod_manifest

    manifest = pod_manifest("p")
    manifest["metadata"]["managedFields"] = [{"manager": "x"}]
    kept = Pod.from_api(manifest)
    assert kept.raw is not None and "managedFields" not in kept.raw["metadata"]
    assert Pod.from_api(manifest, keep_raw=False).raw is None
