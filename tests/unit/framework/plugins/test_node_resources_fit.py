from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from opsche_daemon.framework.interface import (
    Code,
    FilterPlugin,
    NodeScore,
    PluginArgsError,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from opsche_daemon.framework.plugins.node_resources_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFit,
    ResourceSpec,
    ShapePoint,
    _broken_linear,
)
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, container, node_info, requests_pod, state_of

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
HUGEPAGES = "hugepages-2Mi"

# upstream fit_test.go: makeAllocatableResources(10, 20, 32, 5, 20, 5)
FILTER_NODE_ALLOCATABLE = {
    "cpu": "10m",
    "memory": "20",
    "pods": "32",
    EXT_A: "5",
    "ephemeral-storage": "20",
    HUGEPAGES: "5",
}


def _req(cpu_m: int = 0, mem: int = 0, /, **extra: str) -> dict[str, Any]:
    """Requests in upstream test units: millicores and bytes, plus named resources."""
    out: dict[str, Any] = {"cpu": f"{cpu_m}m", "memory": str(mem)}
    out.update(extra)
    return out


def _filter(
    incoming: Pod,
    existing: Sequence[Pod] = (),
    args: Mapping[str, Any] | None = None,
    allocatable: Mapping[str, Any] = FILTER_NODE_ALLOCATABLE,
) -> Status:
    target = node_info(api_node("n", allocatable=allocatable), *existing)
    plugin = NodeResourcesFit(args)
    state = state_of(target)
    result, pre = plugin.pre_filter(state, incoming, [target])
    assert result is None
    assert pre.code == Code.SUCCESS
    return plugin.filter(state, incoming, target)


def test_implements_the_upstream_extension_points() -> None:
    plugin = NodeResourcesFit()
    assert plugin.name == "NodeResourcesFit"
    for protocol in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
        assert isinstance(plugin, protocol)


# --- Filter: upstream TestEnoughRequests / TestNotEnoughRequests / TestStorageRequests -----------


def test_no_resources_requested_always_fits() -> None:
    # "no resources requested always fits"
    empty = api_pod(containers=[])
    assert _filter(empty, [requests_pod("full", _req(10, 20))]).code == Code.SUCCESS


def test_all_insufficient_resources_are_reported() -> None:
    # "too many resources fails"
    status = _filter(requests_pod("p", _req(1, 1)), [requests_pod("full", _req(10, 20))])
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Insufficient cpu", "Insufficient memory")
    assert status.plugin == "NodeResourcesFit"


def test_init_container_cpu_counts_when_it_is_the_largest() -> None:
    # "too many resources fails due to init container cpu"
    incoming = api_pod(
        containers=[container(requests=_req(1, 1))],
        init_containers=[container("init", requests=_req(3, 1))],
    )
    status = _filter(incoming, [requests_pod("used", _req(8, 19))])
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Insufficient cpu",)


def test_init_container_is_max_not_sum() -> None:
    # "init container fits because it's the max, not sum, of containers and init containers"
    incoming = api_pod(
        containers=[container(requests=_req(1, 1))],
        init_containers=[container("init", requests=_req(1, 1))],
    )
    assert _filter(incoming, [requests_pod("used", _req(9, 19))]).code == Code.SUCCESS


def test_exactly_full_node_still_fits() -> None:
    # "equal edge case"
    assert _filter(requests_pod("p", _req(5, 1)), [requests_pod("u", _req(5, 19))]).ok


def test_extended_resource_beyond_capacity_is_unresolvable() -> None:
    # "extended resource capacity enforced"
    status = _filter(requests_pod("p", _req(1, 1, **{EXT_A: "10"})), [requests_pod("u", _req())])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"Insufficient {EXT_A}",)


def test_extended_resource_in_use_is_only_unschedulable() -> None:
    # "extended resource allocatable enforced": preemption could free it
    status = _filter(
        requests_pod("p", _req(1, 1, **{EXT_A: "1"})),
        [requests_pod("u", _req(**{EXT_A: "5"}))],
    )
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == (f"Insufficient {EXT_A}",)


def test_unknown_extended_resource_is_unresolvable() -> None:
    # "extended resource allocatable enforced for unknown resource"
    status = _filter(requests_pod("p", _req(1, 1, **{EXT_B: "1"})))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"Insufficient {EXT_B}",)


def test_kubernetes_io_and_hugepages_resources_are_enforced() -> None:
    # "kubernetes.io resource capacity enforced", "hugepages resource capacity enforced"
    k8s = _filter(requests_pod("p", _req(1, 1, **{K8S_IO_A: "10"})))
    assert k8s.reasons == (f"Insufficient {K8S_IO_A}",)
    assert k8s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    huge = _filter(requests_pod("p", _req(1, 1, **{HUGEPAGES: "10"})))
    assert huge.reasons == (f"Insufficient {HUGEPAGES}",)
    assert huge.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_ignored_extended_resource_is_not_checked() -> None:
    # "skip checking ignored extended resource"
    incoming = requests_pod("p", _req(1, 1, **{EXT_B: "1"}))
    assert _filter(incoming, args={"ignoredResources": [EXT_B]}).ok


def test_resource_groups_exempt_only_extended_resources() -> None:
    # "skip checking ignored extended resource via resource groups"
    incoming = requests_pod("p", _req(1, 1, **{EXT_B: "1", K8S_IO_A: "1"}))
    status = _filter(incoming, args={"ignoredResourceGroups": ["example.com"]})
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (f"Insufficient {K8S_IO_A}",)


def test_hugepages_cannot_be_ignored() -> None:
    incoming = requests_pod("p", _req(1, 1, **{HUGEPAGES: "10"}))
    assert _filter(incoming, args={"ignoredResources": [HUGEPAGES]}).rejected


def test_zero_quantity_scalar_request_is_not_checked() -> None:
    # "skip checking extended resource request with quantity zero via resource groups"
    incoming = requests_pod("p", _req(1, 1, **{EXT_A: "0"}))
    assert _filter(incoming, [requests_pod("u", _req(**{EXT_A: "6"}))]).ok


def test_pod_overhead_is_added_to_requests() -> None:
    # "resources + pod overhead fits" and "requests + overhead does not fit for memory"
    fits = requests_pod("p", _req(1, 1), spec={"overhead": {"cpu": "3m", "memory": "13"}})
    assert _filter(fits, [requests_pod("u", _req(5, 5))]).ok
    too_big = requests_pod("p", _req(1, 1), spec={"overhead": {"cpu": "1m", "memory": "15"}})
    status = _filter(too_big, [requests_pod("u", _req(5, 5))])
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Insufficient memory",)


def test_ephemeral_storage_beyond_allocatable_is_unresolvable() -> None:
    # TestStorageRequests "storage ephemeral local storage request exceeds allocatable"
    incoming = requests_pod("p", {"ephemeral-storage": "25"})
    status = _filter(incoming, [requests_pod("u", _req(2, 2))])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("Insufficient ephemeral-storage",)
    # "pod fits"
    assert _filter(requests_pod("p", {"ephemeral-storage": "10"})).ok


def test_pod_count_limit_applies_even_without_requests() -> None:
    # TestNotEnoughRequests "even without specified resources, predicate fails when there's
    # no space for additional pod"
    one_pod = {"cpu": "10m", "memory": "20", "pods": "1"}
    status = _filter(api_pod(containers=[]), [requests_pod("u", _req(10, 20))], allocatable=one_pod)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods",)
    # "even if both resources fit, predicate fails when there's no space for additional pod"
    status = _filter(
        requests_pod("p", _req(1, 1)), [requests_pod("u", _req(5, 5))], allocatable=one_pod
    )
    assert status.reasons == ("Too many pods",)


def test_reasons_come_in_upstream_order_and_any_overcapacity_is_unresolvable() -> None:
    one_pod = {**FILTER_NODE_ALLOCATABLE, "pods": "1"}
    incoming = requests_pod(
        "p", _req(2, 2, **{"ephemeral-storage": "2", HUGEPAGES: "1", EXT_A: "1"})
    )
    used = requests_pod("u", _req(9, 19, **{"ephemeral-storage": "19", HUGEPAGES: "5", EXT_A: "5"}))
    status = _filter(incoming, [used], allocatable=one_pod)
    assert status.reasons == (
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient ephemeral-storage",
        f"Insufficient {EXT_A}",
        f"Insufficient {HUGEPAGES}",
    )
    # Nothing asks for more than the node's whole allocatable: preemption may help.
    assert status.code == Code.UNSCHEDULABLE
    bigger = requests_pod("p", _req(11, 2))
    assert _filter(bigger, [used], allocatable=one_pod).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_filter_without_pre_filter_is_an_error() -> None:
    target = node_info(api_node("n"))
    status = NodeResourcesFit().filter(state_of(target), api_pod(), target)
    assert status.code == Code.ERROR


# --- Score ---------------------------------------------------------------------------------------


def _scores(
    args: Mapping[str, Any] | None,
    incoming: Pod,
    nodes: Sequence[Node],
    existing: Mapping[str, Sequence[Pod]] | None = None,
    *,
    pre_score: bool = True,
) -> list[int]:
    infos: list[NodeInfo] = [node_info(n, *(existing or {}).get(n.name, ())) for n in nodes]
    plugin = NodeResourcesFit(args)
    state = state_of(*infos)
    if pre_score:
        assert plugin.pre_score(state, incoming, infos).code == Code.SUCCESS
    out = []
    for i in infos:
        score, status = plugin.score(state, incoming, i)
        assert status.code == Code.SUCCESS
        out.append(score)
    scores = [NodeScore(i.name, s) for i, s in zip(infos, out, strict=True)]
    assert plugin.normalize_score(state, incoming, scores).ok
    assert [s.score for s in scores] == out  # no normalisation for this plugin
    return out


def _strategy(kind: str, resources: Sequence[Mapping[str, Any]] | None = None, **extra: Any) -> Any:
    strategy: dict[str, Any] = {"type": kind, **extra}
    if resources is not None:
        strategy["resources"] = list(resources)
    return {"scoringStrategy": strategy}


def _cap(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory, **extra}


TWO_NODES_4_AND_6 = [
    api_node("node1", allocatable=_cap("4000", "10000")),
    api_node("node2", allocatable=_cap("6000", "10000")),
]
SPLIT_POD = api_pod(
    containers=[
        container("a", requests={"cpu": "1000", "memory": "2000"}),
        container("b", requests={"cpu": "2000", "memory": "3000"}),
    ]
)


def test_least_allocated_is_the_default_strategy() -> None:
    plugin = NodeResourcesFit()
    assert plugin.strategy == LEAST_ALLOCATED
    assert plugin.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    # least_allocated_test "nothing scheduled, resources requested, differently sized nodes"
    assert _scores(None, SPLIT_POD, TWO_NODES_4_AND_6) == [37, 50]


def test_least_allocated_nothing_requested_scores_max() -> None:
    # least_allocated_test "nothing scheduled, nothing requested" (a pod without containers)
    nodes = [api_node("node1", allocatable=_cap("4000", "10000"))] * 1
    assert _scores(None, api_pod(containers=[]), nodes) == [100]


def test_least_allocated_counts_existing_pods() -> None:
    # least_allocated_test "resources requested, pods scheduled with resources"
    nodes = [
        api_node("node1", allocatable=_cap("10000", "20000")),
        api_node("node2", allocatable=_cap("10000", "20000")),
    ]
    existing = {
        "node1": [requests_pod("e1", {"cpu": "3000", "memory": "0"})],
        "node2": [requests_pod("e2", {"cpu": "3000", "memory": "5000"})],
    }
    assert _scores(None, SPLIT_POD, nodes, existing) == [57, 45]
    # "no resources requested, pods scheduled with resources" (memory 0 is an explicit request)
    existing = {
        "node1": [requests_pod(f"e1{i}", {"cpu": "3000", "memory": "0"}) for i in range(2)],
        "node2": [
            requests_pod("e21", {"cpu": "3000", "memory": "0"}),
            requests_pod("e22", {"cpu": "3000", "memory": "5000"}),
        ],
    }
    assert _scores(None, api_pod(containers=[]), nodes, existing) == [70, 57]


def test_least_allocated_over_capacity_resource_scores_zero() -> None:
    # least_allocated_test "requested resources exceed node capacity"
    nodes = [
        api_node("node1", allocatable=_cap("4000", "10000")),
        api_node("node2", allocatable=_cap("4000", "10000")),
    ]
    existing = {
        "node1": [requests_pod("e1", {"cpu": "3000", "memory": "0"})],
        "node2": [requests_pod("e2", {"cpu": "3000", "memory": "5000"})],
    }
    incoming = requests_pod("p", {"cpu": "3000", "memory": "0"})
    assert _scores(None, incoming, nodes, existing) == [50, 25]


def test_nodes_without_resources_score_zero() -> None:
    # least_allocated_test "zero node resources, pods scheduled with resources"
    nodes = [api_node("node1", allocatable={}), api_node("node2", allocatable={})]
    assert _scores(None, api_pod(containers=[]), nodes) == [0, 0]


def test_weights_are_applied() -> None:
    # least_allocated_test "... with different weight on CPU and memory, differently sized nodes"
    args = _strategy(
        LEAST_ALLOCATED, [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]
    )
    assert _scores(args, SPLIT_POD, TWO_NODES_4_AND_6) == [41, 50]


def test_scalar_resource_counts_only_when_requested_and_present() -> None:
    resources = [{"name": "cpu"}, {"name": "memory"}, {"name": "abc.com/xyz"}]
    nodes = [
        api_node("node1", allocatable=_cap("6000", "10000", **{"abc.com/xyz": "4"})),
        api_node("node2", allocatable=_cap("6000", "10000", **{"abc.com/xyz": "10"})),
    ]
    # "bypass extended resource if the pod does not request"
    bypass = [api_node("node1", allocatable=_cap("6000", "10000")), nodes[0]]
    assert _scores(_strategy(LEAST_ALLOCATED, resources), SPLIT_POD, bypass) == [50, 50]
    # "honor extended resource if the pod requests"
    wants = requests_pod("p", {"cpu": "3000", "memory": "5000", "abc.com/xyz": "2"})
    assert _scores(_strategy(LEAST_ALLOCATED, resources), wants, nodes) == [50, 60]
    assert _scores(_strategy(MOST_ALLOCATED, resources), wants, nodes) == [50, 40]
    # "if the node doesn't have a resource": the resource drops out of the average
    weighted: list[dict[str, object]] = [
        {"name": "abc.com/xyz", "weight": 2},
        {"name": "cpu"},
        {"name": "memory"},
    ]
    small = requests_pod("p", {"cpu": "3000", "memory": "4000"})
    assert _scores(_strategy(LEAST_ALLOCATED, weighted), small, bypass) == [55, 55]
    assert _scores(_strategy(MOST_ALLOCATED, weighted), small, bypass) == [45, 45]


def test_most_allocated() -> None:
    args = _strategy(MOST_ALLOCATED)
    # most_allocated_test "nothing scheduled, resources requested, differently sized nodes"
    assert _scores(args, SPLIT_POD, TWO_NODES_4_AND_6) == [62, 50]
    # "resources requested equal node capacity"
    nodes = [
        api_node("node1", allocatable=_cap("5000", "10000")),
        api_node("node2", allocatable=_cap("10000", "9000")),
    ]
    full = api_pod(
        containers=[
            container("a", requests={"cpu": "2000", "memory": "4000"}),
            container("b", requests={"cpu": "3000", "memory": "5000"}),
        ]
    )
    assert _scores(args, full, nodes) == [95, 75]


def test_scoring_uses_non_zero_requests_for_containers_without_requests() -> None:
    # most_allocated_test "no resources requested, pods scheduled, nonzero request for resource":
    # each request-less container counts as 100m cpu and 200Mi memory, on both sides.
    nodes = [
        api_node("node1", allocatable=_cap("250m", "1000Mi")),
        api_node("node2", allocatable=_cap("250m", "1000Mi")),
    ]
    existing = {"node1": [api_pod("e1"), api_pod("e2")]}
    assert _scores(_strategy(MOST_ALLOCATED), api_pod("p"), nodes, existing) == [80, 30]


def test_requested_to_capacity_ratio() -> None:
    existing = {
        "node1": [requests_pod("e1", {"cpu": "2000", "memory": "4000"})],
        "node2": [requests_pod("e2", {"cpu": "1000", "memory": "2000"})],
    }
    incoming = requests_pod("p", {"cpu": "3000", "memory": "5000"})
    # fit_test TestFitScore "... RequestedToCapacityRatio case1"
    falling = _strategy(
        REQUESTED_TO_CAPACITY_RATIO,
        requestedToCapacityRatio={
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        },
    )
    assert _scores(falling, incoming, TWO_NODES_4_AND_6, existing) == [10, 32]
    # "... case1 if PreScore is not called"
    assert _scores(falling, incoming, TWO_NODES_4_AND_6, existing, pre_score=False) == [10, 32]
    # "... RequestedToCapacityRatio case2"
    rising = _strategy(
        REQUESTED_TO_CAPACITY_RATIO,
        requestedToCapacityRatio={
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    )
    assert _scores(rising, incoming, TWO_NODES_4_AND_6, existing) == [95, 68]


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    # requested_to_capacity_ratio_test "nothing scheduled, resources requested, differently sized
    # nodes": node1 averages (25 + 50) / 2 = 37.5, which Go's math.Round makes 38.
    falling = _strategy(
        REQUESTED_TO_CAPACITY_RATIO,
        requestedToCapacityRatio={
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        },
    )
    assert _scores(falling, SPLIT_POD, TWO_NODES_4_AND_6) == [38, 50]
    # cpu 88% -> 12 and memory 87% -> 13 average 12.5: Go rounds to 13 where round() gives 12.
    nodes = [api_node("node1", allocatable=_cap("10000m", "10000"))]
    odd = requests_pod("p", {"cpu": "8800m", "memory": "8700"})
    assert _scores(falling, odd, nodes) == [13]


def test_requested_to_capacity_ratio_multiple_extended_resources() -> None:
    # requested_to_capacity_ratio_test TestResourceBinPackingMultipleExtended
    args = _strategy(
        REQUESTED_TO_CAPACITY_RATIO,
        [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
        requestedToCapacityRatio={
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]
        },
    )
    nodes = [
        api_node(
            "node1", allocatable=_cap("4", "8Gi", **{"intel.com/foo": "8", "intel.com/bar": "4"})
        ),
        api_node(
            "node2", allocatable=_cap("4", "8Gi", **{"intel.com/foo": "4", "intel.com/bar": "8"})
        ),
    ]
    pod1 = requests_pod("p", {"intel.com/foo": "2", "intel.com/bar": "2"})
    # "nothing scheduled, nothing requested"
    assert _scores(args, api_pod(containers=[]), nodes) == [0, 0]
    # "resources requested, pods scheduled with less resources"
    assert _scores(args, pod1, nodes) == [4, 3]
    # "resources requested, pods scheduled with resources, on node with existing pod running"
    existing = {"node2": [requests_pod("e", {"intel.com/foo": "4", "intel.com/bar": "2"})]}
    assert _scores(args, pod1, nodes, existing) == [4, 7]


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        (
            [(10, 1), (90, 9)],
            {-10: 1, 0: 1, 9: 1, 10: 1, 15: 1, 19: 1, 20: 2, 89: 8, 90: 9, 99: 9, 100: 9, 110: 9},
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            {-10: 2, 0: 2, 20: 6, 30: 8, 40: 10, 70: 5, 100: 0, 110: 0},
        ),
        ([(0, 2), (40, 2), (100, 2)], {-10: 2, 0: 2, 20: 2, 40: 2, 70: 2, 100: 2, 110: 2}),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], expected: dict[int, int]) -> None:
    # upstream TestBrokenLinearFunction
    fn = _broken_linear([ShapePoint(u, s) for u, s in points])
    assert {p: fn(p) for p in expected} == expected


# --- Args ----------------------------------------------------------------------------------------


def test_missing_and_zero_weights_default_to_one() -> None:
    plugin = NodeResourcesFit(
        _strategy(MOST_ALLOCATED, [{"name": "cpu"}, {"name": "memory", "weight": 0}])
    )
    assert plugin.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    empty = NodeResourcesFit(_strategy(MOST_ALLOCATED, []))
    assert empty.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def test_envelope_keys_are_accepted() -> None:
    args = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs"}
    assert NodeResourcesFit(args).strategy == LEAST_ALLOCATED


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            _strategy(LEAST_ALLOCATED, [{"name": "memory", "weight": -1}, {"name": "cpu"}]),
            r"scoringStrategy\.resources\[0\]\.weight: Invalid value: -1: resource weight of "
            r"memory not in valid range \(0, 100\]",
        ),
        (
            _strategy(LEAST_ALLOCATED, [{"name": "memory"}, {"name": "cpu", "weight": 101}]),
            r"scoringStrategy\.resources\[1\]\.weight",
        ),
        (_strategy("Spread"), r"scoringStrategy\.type: Unsupported value: 'Spread'"),
        ({"scoringStrategy": {}}, r"scoringStrategy\.type: Unsupported value: ''"),
        (
            _strategy(REQUESTED_TO_CAPACITY_RATIO),
            r"scoringStrategy\.requestedToCapacityRatio: Required value",
        ),
        (
            _strategy(REQUESTED_TO_CAPACITY_RATIO, requestedToCapacityRatio={"shape": []}),
            r"shape: Required value: at least one point must be specified",
        ),
        (
            _strategy(
                REQUESTED_TO_CAPACITY_RATIO,
                requestedToCapacityRatio={
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                },
            ),
            r"shape\[1\]\.utilization: Invalid value: 10: values must be sorted",
        ),
        (
            _strategy(
                REQUESTED_TO_CAPACITY_RATIO,
                requestedToCapacityRatio={"shape": [{"utilization": 101, "score": 11}]},
            ),
            r"shape\[0\]\.utilization: Invalid value: 101: not in valid range \[0, 100\].*"
            r"shape\[0\]\.score: Invalid value: 11: not in valid range \[0, 10\]",
        ),
        (
            _strategy(
                MOST_ALLOCATED,
                requestedToCapacityRatio={"shape": [{"utilization": 0, "score": 0}]},
            ),
            r"requestedToCapacityRatio: Forbidden: must be nil when type is not",
        ),
        (
            {"ignoredResourceGroups": ["example.com/aaa"]},
            r"ignoredResourceGroups\[0\]: Invalid value: 'example.com/aaa': resource group name "
            r"can't contain '/'",
        ),
        ({"ignoredResources": ["bad name!"]}, r"ignoredResources\[0\]: Invalid value"),
        ({"ignoredResource": ["example.com/aaa"]}, r"ignoredResource: unknown field"),
        (_strategy(LEAST_ALLOCATED, [{"name": "cpu", "weight": "1"}]), r"must be an integer"),
        ({"scoringStrategy": "LeastAllocated"}, r"scoringStrategy: must be a mapping"),
    ],
)
def test_invalid_args_are_rejected_with_the_field_path(args: Any, message: str) -> None:
    with pytest.raises(PluginArgsError, match=message):
        NodeResourcesFit(args)
