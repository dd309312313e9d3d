from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from opsche_daemon.framework.interface import Code, PluginArgsError, PreScorePlugin, ScorePlugin
from opsche_daemon.framework.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
)
from opsche_daemon.framework.plugins.node_resources_fit import ResourceSpec
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, container, node_info, requests_pod, state_of

GPU = "nvidia.com/gpu"
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}


def _node(name: str, milli_cpu: int, memory: int, gpus: int = 0) -> Node:
    """upstream makeNode(name, milliCPU, memory, extended)."""
    alloc = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if gpus:
        alloc[GPU] = str(gpus)
    return api_node(name, allocatable=alloc)


def _split(*pairs: tuple[str, str]) -> Pod:
    """A pod with one container per (cpu, memory) request; empty strings are left out."""
    containers = []
    for i, (cpu, memory) in enumerate(pairs):
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
        containers.append(container(f"c{i}", requests=requests))
    return api_pod(containers=containers)


CPU_AND_MEMORY_POD = _split(("1000m", "2000"), ("2000m", "3000"))
CPU_ONLY_EXISTING = _split(("1000m", ""), ("2000m", ""))


def _scores(
    incoming: Pod,
    nodes: Sequence[Node],
    existing: Mapping[str, Sequence[Pod]] | None = None,
    args: Mapping[str, Any] | None = None,
    *,
    pre_score: bool = True,
) -> list[int]:
    infos = [node_info(n, *(existing or {}).get(n.name, ())) for n in nodes]
    plugin = NodeResourcesBalancedAllocation(args)
    state = state_of(*infos)
    if pre_score:
        assert plugin.pre_score(state, incoming, infos).code == Code.SUCCESS
    out = []
    for i in infos:
        score, status = plugin.score(state, incoming, i)
        assert status.code == Code.SUCCESS
        out.append(score)
    return out


def test_extension_points_and_defaults() -> None:
    plugin = NodeResourcesBalancedAllocation()
    assert plugin.name == "NodeResourcesBalancedAllocation"
    assert isinstance(plugin, PreScorePlugin)
    assert isinstance(plugin, ScorePlugin)
    assert plugin.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def test_best_effort_pod_is_skipped_in_pre_score() -> None:
    # upstream "nothing scheduled, nothing requested, skip in PreScore": real requests are used,
    # so a container without requests counts as nothing (not 100m/200Mi as in NodeResourcesFit).
    infos = [node_info(_node("node1", 4000, 10000))]
    assert NodeResourcesBalancedAllocation().pre_score(state_of(*infos), api_pod(), infos).code == (
        Code.SKIP
    )
    # Score without PreScore gives 0 for such a pod.
    score, _ = NodeResourcesBalancedAllocation().score(state_of(*infos), api_pod(), infos[0])
    assert score == 0


def test_pod_requesting_only_unscored_resources_is_best_effort() -> None:
    storage_only = requests_pod("p", {"ephemeral-storage": "1Gi"})
    infos = [node_info(_node("node1", 4000, 10000))]
    plugin = NodeResourcesBalancedAllocation()
    assert plugin.pre_score(state_of(*infos), storage_only, infos).code == Code.SKIP


def test_differently_sized_nodes() -> None:
    # upstream "nothing scheduled, resources requested, differently sized nodes"
    nodes = [_node("node1", 4000, 10000), _node("node2", 6000, 10000)]
    assert _scores(CPU_AND_MEMORY_POD, nodes) == [68, 75]


def test_existing_pods_count_with_their_real_requests() -> None:
    # upstream "resources requested, pods scheduled with resources"
    nodes = [_node("node1", 10000, 20000), _node("node2", 10000, 20000)]
    existing = {"node1": [CPU_ONLY_EXISTING], "node2": [CPU_AND_MEMORY_POD]}
    assert _scores(CPU_AND_MEMORY_POD, nodes, existing) == [73, 74]
    # "... if PreScore not called"
    assert _scores(CPU_AND_MEMORY_POD, nodes, existing, pre_score=False) == [73, 74]
    # "resources requested, pods scheduled with resources, differently sized nodes"
    nodes = [_node("node1", 10000, 20000), _node("node2", 10000, 50000)]
    assert _scores(CPU_AND_MEMORY_POD, nodes, existing) == [73, 70]


def test_min_and_max_scores() -> None:
    # upstream "resources requested, pods scheduled with resources, nodes to reach min/max score"
    nodes = [_node("node1", 3000, 5000), _node("node2", 3000, 5000)]
    memory_only = _split(("", "2000"), ("", "3000"))
    assert _scores(memory_only, nodes, {"node1": [CPU_ONLY_EXISTING]}) == [100, 50]


def test_requested_resources_at_node_capacity() -> None:
    # upstream "requested resources at node capacity"
    nodes = [_node("node1", 6000, 10000), _node("node2", 6000, 10000)]
    existing = {"node1": [CPU_ONLY_EXISTING], "node2": [CPU_AND_MEMORY_POD]}
    assert _scores(CPU_ONLY_EXISTING, nodes, existing) == [62, 62]


def test_scalar_resource_is_included_only_when_requested() -> None:
    # upstream "scalar resource is included in the score computation if pod requests the scalar
    # resource" (three resources: population standard deviation)
    nodes = [_node("node1", 3500, 40000, gpus=8), _node("node2", 3500, 40000, gpus=8)]
    gpu_pod = requests_pod("p", {"cpu": "0", "memory": "0", GPU: "1"})
    existing = {
        "node1": [
            api_pod(
                "e1",
                containers=[
                    container("a", requests={"cpu": "1000m", "memory": "2000"}),
                    container("b", requests={"cpu": "2000m", "memory": "3000", GPU: "3"}),
                ],
            )
        ],
        "node2": [CPU_AND_MEMORY_POD],
    }
    assert _scores(gpu_pod, nodes, existing, WITH_GPU) == [75, 76]
    # "... is not included in the score computation if pod doesn't request the scalar resource"
    nodes = [_node("node1", 3500, 40000, gpus=8), _node("node2", 3500, 40000)]
    assert _scores(CPU_AND_MEMORY_POD, nodes, None, WITH_GPU) == [56, 56]


def test_balance_is_truncated_and_fractions_are_capped() -> None:
    # fractions 0.75 and 0.5: std 0.125, (1 - 0.125) * 100 = 87.5 truncates to 87
    assert balanced_resource_score([3000, 5000], [4000, 10000]) == 87
    # a request above capacity counts as a fraction of 1: |1 - 0| / 2 = 0.5 -> 50
    assert balanced_resource_score([1020, 0], [1000, 1000]) == 50
    # the worst possible change (100 -> 50) still scores 50 + (50 + 50 - 100) / 2 = 50
    nodes = [_node("node1", 1000, 1000)]
    assert _scores(requests_pod("p", {"cpu": "1020m", "memory": "0"}), nodes) == [50]


def test_balance_uses_population_std_dev_for_three_resources() -> None:
    # fractions 0.5, 0.25, 0.0: mean 0.25, variance (0.0625 + 0 + 0.0625) / 3, std 0.2041...
    assert balanced_resource_score([50, 25, 0], [100, 100, 100]) == 79
    # a resource the node lacks is left out: two fractions 0.5 and 0.25 -> std 0.125
    assert balanced_resource_score([50, 25, 7], [100, 100, 0]) == 87
    assert balanced_resource_score([5], [10]) == 100


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, r"resources\[0\]\.weight: .*must be 1"),
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            r"resources\[1\]\.name: Duplicate value: 'cpu'",
        ),
        ({"resource": []}, r"resource: unknown field"),
        ({"resources": "cpu"}, r"resources: must be a list"),
    ],
)
def test_invalid_args(args: Any, message: str) -> None:
    # upstream ValidateNodeResourcesBalancedAllocationArgs
    with pytest.raises(PluginArgsError, match=message):
        NodeResourcesBalancedAllocation(args)


def test_zero_weight_defaults_to_one() -> None:
    plugin = NodeResourcesBalancedAllocation({"resources": [{"name": GPU, "weight": 0}]})
    assert plugin.resources == (ResourceSpec(GPU, 1),)
