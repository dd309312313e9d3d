"""The scoring service's answers, without HTTP (the integration tests run the real process)."""

import pytest

from opsche_daemon.framework.extender_protocol import extender_args, parse_extender_args
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.scoring.models import FreeCpuScorer
from opsche_daemon.scoring.view import ClusterView
from tests.factories import api_pod, container, node_manifest, requests_pod

pytest.importorskip("fastapi", reason="the learn extra (make setup installs it)")

from opsche_daemon.scoring.service import Scoring, scale_scores


def nodes(*cores: str) -> list[NodeInfo]:
    return [
        NodeInfo.build(
            Node.from_api(node_manifest(f"n{i}", allocatable={"cpu": c, "memory": "8Gi"}))
        )
        for i, c in enumerate(cores)
    ]


def test_scores_are_scaled_within_the_request() -> None:
    assert scale_scores([1.0, 3.0, 2.0]) == [0, 10, 5]
    assert scale_scores([2.0, 2.0]) == [5, 5]
    assert scale_scores([]) == []


def test_prioritize_ranks_by_what_the_view_says_is_free() -> None:
    view = ClusterView()
    view.apply("pod", "ADDED", api_pod("busy", node_name="n1", phase="Running",
               containers=[container("c", requests={"cpu": "3"})]).raw or {})  # fmt: skip
    scoring = Scoring(FreeCpuScorer(), view, enable_filter=True)
    args = parse_extender_args(
        extender_args(
            requests_pod("p", {"cpu": "1"}), nodes("4", "4", "2"), node_cache_capable=False
        )
    )
    answer = {h["Host"]: h["Score"] for h in scoring.prioritize(args)}
    assert answer == {"n0": 10, "n1": 0, "n2": 3}  # free 4, 1, 2


def test_filter_refuses_where_the_pod_does_not_fit() -> None:
    scoring = Scoring(FreeCpuScorer(), ClusterView(), enable_filter=True)
    args = parse_extender_args(
        extender_args(requests_pod("p", {"cpu": "3"}), nodes("4", "2"), node_cache_capable=True)
    )
    with pytest.raises(ValueError, match="--kubeconfig"):
        scoring.filter(args)  # names only, and no view to know the nodes
    args = parse_extender_args(
        extender_args(requests_pod("p", {"cpu": "3"}), nodes("4", "2"), node_cache_capable=False)
    )
    answer = scoring.filter(args)
    assert [n["metadata"]["name"] for n in answer["Nodes"]["items"]] == ["n0"]
    assert answer["FailedNodes"] == {"n1": "opsche-score: not enough free cpu for the pod"}


def test_the_view_counts_running_pods_per_node_and_controller() -> None:
    view = ClusterView()
    owned = api_pod("a", node_name="n0", phase="Running").raw or {}
    owned = {**owned, "metadata": {**owned["metadata"], "ownerReferences": [
        {"kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}]}}  # fmt: skip
    view.apply("pod", "ADDED", owned)
    view.apply("pod", "ADDED", {**owned, "metadata": {**owned["metadata"], "name": "b"}})
    assert view.width(owned) == 2
    view.apply("pod", "DELETED", owned)
    assert view.width(owned) == 1
    pending = api_pod("c").raw or {}
    view.apply("pod", "ADDED", pending)
    assert Pod.from_api(pending).key not in view.pods  # not bound: uses nothing yet
