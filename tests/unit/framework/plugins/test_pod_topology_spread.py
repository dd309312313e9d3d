"""PodTopologySpread against upstream v1.36.3 cases (podtopologyspread/filtering_test.go etc.)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opsche_daemon.framework.interface import (
    Code,
    CycleState,
    NodeScore,
    PluginArgsError,
    Status,
)
from opsche_daemon.framework.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
    compile_selector,
    default_selector,
)
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.selectors import LabelSelector, Requirement
from opsche_daemon.model.snapshot import Snapshot
from tests.factories import api_node, api_pod, snapshot_of

HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
LIST = {"defaultingType": "List"}


def spread(
    max_skew: int,
    key: str,
    action: str,
    selector: Mapping[str, Any] | None,
    **extra: Any,
) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": action,
        **extra,
    }
    if selector is not None:
        constraint["labelSelector"] = dict(selector)
    return constraint


def make_pod(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    node: str = "",
    namespace: str = "default",
    constraints: Iterable[Mapping[str, Any]] = (),
    terminating: bool = False,
    spec: Mapping[str, Any] | None = None,
) -> Pod:
    """An API pod with ``constraints``; its uid names the namespace (names repeat across them)."""
    body: dict[str, Any] = {}
    if constraints:
        body["topologySpreadConstraints"] = [dict(c) for c in constraints]
    body.update(spec or {})
    return api_pod(
        name,
        namespace=namespace,
        uid=f"uid-{namespace}-{name}",
        labels=labels or {},
        node_name=node,
        deleting=terminating,
        spec=body,
    )


def make_snapshot(
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    *,
    workload_selectors: Mapping[str, tuple[LabelSelector, ...]] | None = None,
) -> Snapshot:
    return snapshot_of(nodes, pods, workload_selectors=workload_selectors)


def zone_nodes() -> list[Node]:
    """node-a/node-b in zone1, node-x/node-y in zone2, each with a "node" label."""
    return [
        api_node(n, labels={"zone": z, "node": n})
        for n, z in (
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-x", "zone2"),
            ("node-y", "zone2"),
        )
    ]


def placed(spec: str, labels: Mapping[str, str] | None = None, **kw: Any) -> list[Pod]:
    """Pods from "node-a:2,node-b:1": that many pods labelled ``labels`` (default foo="")."""
    pods = []
    for part in spec.split(","):
        node, count = part.split(":")
        for i in range(int(count)):
            pods.append(
                make_pod(
                    f"p-{node}-{i}",
                    labels=labels if labels is not None else {"foo": ""},
                    node=node,
                    **kw,
                )
            )
    return pods


def run_filter(plugin: PodTopologySpread, pod: Pod, snapshot: Snapshot) -> dict[str, Status]:
    state = CycleState(snapshot)
    _, status = plugin.pre_filter(state, pod, snapshot.node_infos())
    assert status.code == Code.SUCCESS, status
    return {info.name: plugin.filter(state, pod, info) for info in snapshot.node_infos()}


def codes(statuses: Mapping[str, Status]) -> dict[str, Code]:
    return {name: status.code for name, status in statuses.items()}


def run_score(
    plugin: PodTopologySpread, pod: Pod, snapshot: Snapshot, feasible: Iterable[str]
) -> dict[str, int]:
    state = CycleState(snapshot)
    infos = [snapshot.nodes[name] for name in feasible]
    status = plugin.pre_score(state, pod, infos)
    assert status.code == Code.SUCCESS, status
    scores = []
    for info in infos:
        raw, status = plugin.score(state, pod, info)
        assert status.ok
        scores.append(NodeScore(info.name, raw))
    assert plugin.normalize_score(state, pod, scores).ok
    return {s.name: s.score for s in scores}


S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- Filter -------------------------------------------------------------------------------


def test_other_namespaces_do_not_count() -> None:
    # upstream TestSingleConstraint "existing pods in a different namespace do not count"
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "DoNotSchedule", FOO)])
    pods = [
        make_pod("p-a1", labels={"foo": ""}, node="node-a", namespace="ns1"),
        make_pod("p-b1", labels={"foo": ""}, node="node-a", namespace="ns2"),
        make_pod("p-x1", labels={"foo": ""}, node="node-x"),
        make_pod("p-y1", labels={"foo": ""}, node="node-y"),
    ]
    got = run_filter(PodTopologySpread(LIST), pod, make_snapshot(zone_nodes(), pods))
    assert codes(got) == {"node-a": S, "node-b": S, "node-x": U, "node-y": U}
    assert got["node-x"] == Status(U, (ERR_REASON_CONSTRAINTS_NOT_MATCH,), "PodTopologySpread")


def test_node_missing_topology_label_is_unresolvable() -> None:
    # upstream "pods spread across zones as 1/2 due to absence of label 'zone' on node-b"
    nodes = zone_nodes()
    nodes[1] = api_node("node-b", labels={"zon": "zone1", "node": "node-b"})
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "DoNotSchedule", FOO)])
    got = run_filter(
        PodTopologySpread(LIST),
        pod,
        make_snapshot(nodes, placed("node-a:1,node-b:1,node-x:1,node-y:1")),
    )
    assert codes(got) == {"node-a": S, "node-b": UU, "node-x": U, "node-y": U}
    assert got["node-b"].reasons == (ERR_REASON_NODE_LABEL_NOT_MATCH,)
    assert got["node-b"].reasons == (
        "node(s) didn't match pod topology spread constraints (missing required label)",
    )
    assert got["node-x"].reasons == ("node(s) didn't match pod topology spread constraints",)


def test_no_node_has_the_key() -> None:
    # upstream "pod cannot be scheduled as all nodes don't have label 'rack'"
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "rack", "DoNotSchedule", FOO)])
    nodes = [
        api_node("node-a", labels={"zone": "zone1"}),
        api_node("node-x", labels={"zone": "zone2"}),
    ]
    got = run_filter(PodTopologySpread(LIST), pod, make_snapshot(nodes))
    assert codes(got) == {"node-a": UU, "node-x": UU}


@pytest.mark.parametrize(
    ("max_skew", "pod_labels", "expected"),
    [
        # upstream "pods spread across nodes as 2/1/0/3, only node-x fits"
        (1, {"foo": ""}, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
        # upstream "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit"
        (2, {"foo": ""}, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
        # upstream "pods spread across nodes as 2/1/0/3, but pod doesn't match itself"
        (1, {"bar": ""}, {"node-a": U, "node-b": S, "node-x": S, "node-y": U}),
    ],
)
def test_spread_over_nodes(
    max_skew: int, pod_labels: dict[str, str], expected: dict[str, Code]
) -> None:
    pod = make_pod(
        "p", labels=pod_labels, constraints=[spread(max_skew, "node", "DoNotSchedule", FOO)]
    )
    snapshot = make_snapshot(zone_nodes(), placed("node-a:2,node-b:1,node-y:3"))
    assert codes(run_filter(PodTopologySpread(LIST), pod, snapshot)) == expected


def test_null_selector_matches_nothing() -> None:
    # upstream "existing pods do not match null selector"
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "DoNotSchedule", None)])
    snapshot = make_snapshot(zone_nodes(), placed("node-x:1,node-y:1"))
    got = run_filter(PodTopologySpread(LIST), pod, snapshot)
    assert set(codes(got).values()) == {S}


def test_empty_selector_counts_nothing_but_matches_the_pod() -> None:
    # labels.Everything() is Empty(): countPodsMatchSelector returns 0 for it, so the 2/0 split
    # below is invisible and every node passes with skew 1.
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "node", "DoNotSchedule", {})])
    snapshot = make_snapshot(zone_nodes(), placed("node-a:2"))
    assert set(codes(run_filter(PodTopologySpread(LIST), pod, snapshot)).values()) == {S}


def test_node_affinity_limits_the_domains() -> None:
    # upstream "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits"
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "node", "operator": "In", "values": ["node-a", "node-y"]}
                        ]
                    }
                ]
            }
        }
    }
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(1, "node", "DoNotSchedule", FOO)],
        spec={"affinity": affinity},
    )
    snapshot = make_snapshot(zone_nodes(), placed("node-a:2,node-b:1,node-y:3"))
    got = run_filter(PodTopologySpread(LIST), pod, snapshot)
    # node-b and node-x are NodeAffinity's business; this plugin counts only node-a and node-y.
    assert codes(got) == {"node-a": S, "node-b": S, "node-x": S, "node-y": U}


def test_terminating_pods_are_excluded() -> None:
    # upstream "terminating Pods should be excluded"
    nodes = [
        api_node("node-a", labels={"node": "node-a"}),
        api_node("node-b", labels={"node": "node-b"}),
    ]
    pods = [
        make_pod("p-a", labels={"foo": ""}, node="node-a", terminating=True),
        make_pod("p-b", labels={"foo": ""}, node="node-b"),
    ]
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "node", "DoNotSchedule", FOO)])
    got = run_filter(PodTopologySpread(LIST), pod, make_snapshot(nodes, pods))
    assert codes(got) == {"node-a": S, "node-b": U}


@pytest.mark.parametrize(
    ("min_domains", "expected"),
    [
        # upstream "... 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the
        # third node fits"
        (4, {"node-a": U, "node-b": U, "node-c": S}),
        # upstream "... the number of domains > minDomains, then the all nodes fit"
        (2, {"node-a": S, "node-b": S, "node-c": S}),
    ],
)
def test_min_domains(min_domains: int, expected: dict[str, Code]) -> None:
    nodes = [api_node(n, labels={"node": n}) for n in ("node-a", "node-b", "node-c")]
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(2, "node", "DoNotSchedule", FOO, minDomains=min_domains)],
    )
    snapshot = make_snapshot(nodes, placed("node-a:2,node-b:2,node-c:1"))
    assert codes(run_filter(PodTopologySpread(LIST), pod, snapshot)) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # upstream "NodeTaintsPolicy honored": the tainted node-y is no domain, min is 0.
        ({"nodeTaintsPolicy": "Honor"}, {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
        # upstream "NodeTaintsPolicy ignored"
        ({}, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ],
)
def test_node_taints_policy(policy: dict[str, str], expected: dict[str, Code]) -> None:
    nodes = [api_node(n, labels={"node": n, "foo": ""}) for n in ("node-a", "node-b", "node-x")]
    nodes.append(api_node("node-y", labels={"node": "node-y"}, taints=[UNSCHEDULABLE_TAINT]))
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(1, "node", "DoNotSchedule", FOO, **policy)],
    )
    snapshot = make_snapshot(nodes, placed("node-a:1,node-b:1,node-y:1"))
    assert codes(run_filter(PodTopologySpread(LIST), pod, snapshot)) == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # upstream "NodeAffinityPolicy honored with labelSelectors"
        ({}, {"node-a": U, "node-b": U, "node-x": S, "node-y": S}),
        # upstream "NodeAffinityPolicy ignored with labelSelectors"
        ({"nodeAffinityPolicy": "Ignore"}, {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
    ],
)
def test_node_affinity_policy(policy: dict[str, str], expected: dict[str, Code]) -> None:
    nodes = [api_node(n, labels={"node": n, "foo": ""}) for n in ("node-a", "node-b", "node-x")]
    nodes.append(api_node("node-y", labels={"node": "node-y"}))
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(1, "node", "DoNotSchedule", FOO, **policy)],
        spec={"nodeSelector": {"foo": ""}},
    )
    snapshot = make_snapshot(nodes, placed("node-a:1,node-b:1,node-y:1"))
    assert codes(run_filter(PodTopologySpread(LIST), pod, snapshot)) == expected


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        # upstream TestMultipleConstraints
        # "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]"
        ("node-a:2,node-b:1,node-y:3", {"node-a": U, "node-b": U, "node-x": S, "node-y": U}),
        # upstream "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]"
        ("node-a:2,node-b:1,node-y:4", {"node-a": U, "node-b": U, "node-x": U, "node-y": U}),
    ],
)
def test_multiple_constraints_intersect(existing: str, expected: dict[str, Code]) -> None:
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[
            spread(1, "zone", "DoNotSchedule", FOO),
            spread(1, "node", "DoNotSchedule", FOO),
        ],
    )
    snapshot = make_snapshot(zone_nodes(), placed(existing))
    assert codes(run_filter(PodTopologySpread(LIST), pod, snapshot)) == expected


def test_match_label_keys_narrow_the_selector() -> None:
    # Pods of an older revision do not count against the new one (matchLabelKeys pod-template-hash).
    nodes = [api_node(n, labels={"node": n}) for n in ("node-a", "node-b")]
    old = placed("node-a:3", labels={"app": "web", "pod-template-hash": "v1"})
    new = placed("node-b:1", labels={"app": "web", "pod-template-hash": "v2"})
    constraint = spread(
        1,
        "node",
        "DoNotSchedule",
        {"matchLabels": {"app": "web"}},
        matchLabelKeys=["pod-template-hash"],
    )
    pod = make_pod("p", labels={"app": "web", "pod-template-hash": "v2"}, constraints=[constraint])
    got = run_filter(PodTopologySpread(LIST), pod, make_snapshot(nodes, old + new))
    assert codes(got) == {"node-a": S, "node-b": U}


def test_prefilter_skips_without_hard_constraints() -> None:
    # upstream TestPreFilterDisabled counterpart: only ScheduleAnyway constraints -> Skip.
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "ScheduleAnyway", FOO)])
    state = CycleState(make_snapshot(zone_nodes()))
    _, status = PodTopologySpread().pre_filter(state, pod, state.snapshot.node_infos())
    assert status.code == Code.SKIP


def test_filter_without_prefilter_state_is_an_error() -> None:
    pod = make_pod("p")
    snapshot = make_snapshot(zone_nodes())
    status = PodTopologySpread().filter(CycleState(snapshot), pod, snapshot.node_infos()[0])
    assert status.code == Code.ERROR


# --- Score --------------------------------------------------------------------------------

HOST_NODES = ("node-a", "node-b", "node-c", "node-d")


def host_nodes(names: Iterable[str] = HOST_NODES) -> list[Node]:
    return [api_node(n, labels={HOST: n}) for n in names]


@pytest.mark.parametrize(
    ("max_skew", "existing", "expected"),
    [
        # upstream "one constraint on node, all 4 nodes are candidates" (2/1/0/3)
        (
            "1",
            "node-a:2,node-b:1,node-d:3",
            {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        ),
        # upstream "..., maxSkew=2"
        (
            "2",
            "node-a:2,node-b:1,node-d:3",
            {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        ),
        # upstream "..., maxSkew=3" (4/3/2/1)
        (
            "3",
            "node-a:4,node-b:3,node-c:2,node-d:1",
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
    ],
)
def test_score_hostname(max_skew: str, existing: str, expected: dict[str, int]) -> None:
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(int(max_skew), HOST, "ScheduleAnyway", FOO)],
    )
    snapshot = make_snapshot(host_nodes(), placed(existing))
    assert run_score(PodTopologySpread(), pod, snapshot, HOST_NODES) == expected


def test_score_no_existing_pods_and_null_selector() -> None:
    # upstream "one constraint on node, no existing pods" and "..., null selector"
    for selector, existing in ((FOO, ""), (None, "node-a:2,node-b:1,node-d:3")):
        pod = make_pod(
            "p", labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway", selector)]
        )
        snapshot = make_snapshot(host_nodes(), placed(existing) if existing else [])
        assert set(run_score(PodTopologySpread(), pod, snapshot, HOST_NODES).values()) == {100}


def test_score_node_missing_key_is_ignored() -> None:
    # upstream "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match
    # topology key"
    nodes = [
        api_node("node-a", labels={HOST: "node-a"}),
        api_node("node-b", labels={"n": "node-b"}),
        api_node("node-x", labels={HOST: "node-x"}),
        api_node("node-y", labels={HOST: "node-y"}),
    ]
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway", FOO)])
    snapshot = make_snapshot(nodes, placed("node-a:4,node-b:2,node-x:1,node-y:3"))
    got = run_score(PodTopologySpread(), pod, snapshot, ["node-a", "node-b", "node-x"])
    assert got == {"node-a": 16, "node-b": 0, "node-x": 100}


def test_score_zone_counts_infeasible_nodes_too() -> None:
    # upstream "one constraint on zone, 3 out of 4 nodes are candidates" (4/2/1/~3~)
    nodes = [
        api_node(n, labels={"zone": z, HOST: n})
        for n, z in (
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-x", "zone2"),
            ("node-y", "zone2"),
        )
    ]
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "ScheduleAnyway", FOO)])
    snapshot = make_snapshot(nodes, placed("node-a:4,node-b:2,node-x:1,node-y:3"))
    got = run_score(PodTopologySpread(), pod, snapshot, ["node-a", "node-b", "node-x"])
    assert got == {"node-a": 75, "node-b": 75, "node-x": 100}


def test_score_two_constraints() -> None:
    # upstream "two Constraints on zone and node, 2 out of 4 nodes are candidates" (2/~1~/2/~4~)
    nodes = [
        api_node(n, labels={"zone": z, HOST: n})
        for n, z in (
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-x", "zone2"),
            ("node-y", "zone2"),
        )
    ]
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[
            spread(1, "zone", "ScheduleAnyway", FOO),
            spread(1, HOST, "ScheduleAnyway", FOO),
        ],
    )
    snapshot = make_snapshot(nodes, placed("node-a:2,node-b:1,node-x:2,node-y:4"))
    got = run_score(PodTopologySpread(), pod, snapshot, ["node-a", "node-x"])
    assert got == {"node-a": 100, "node-x": 63}


def test_score_two_constraints_with_different_selectors() -> None:
    # upstream "two Constraints on zone and node, with different labelSelectors"
    nodes = [
        api_node(n, labels={"zone": z, HOST: n})
        for n, z in (
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-x", "zone2"),
            ("node-y", "zone2"),
        )
    ]
    pods = [
        make_pod("p-a1", labels={"foo": ""}, node="node-a"),
        make_pod("p-b1", labels={"foo": "", "bar": ""}, node="node-b"),
        make_pod("p-y1", labels={"foo": ""}, node="node-y"),
        make_pod("p-y2", labels={"bar": ""}, node="node-y"),
    ]
    pod = make_pod(
        "p",
        labels={"foo": "", "bar": ""},
        constraints=[
            spread(1, "zone", "ScheduleAnyway", FOO),
            spread(1, HOST, "ScheduleAnyway", BAR),
        ],
    )
    got = run_score(PodTopologySpread(), pod, make_snapshot(nodes, pods), [n.name for n in nodes])
    assert got == {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60}


def test_score_match_label_keys_with_empty_selector() -> None:
    # upstream "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"
    nodes = [
        api_node(n, labels={"zone": z, HOST: n})
        for n, z in (
            ("node-a", "zone1"),
            ("node-b", "zone1"),
            ("node-c", "zone2"),
            ("node-d", "zone2"),
        )
    ]
    pods = [
        make_pod("p-a1", labels={"foo": ""}, node="node-a"),
        make_pod("p-b1", labels={"foo": "", "bar": ""}, node="node-b"),
        make_pod("p-y1", labels={"foo": ""}, node="node-c"),
        make_pod("p-y2", labels={"bar": ""}, node="node-c"),
    ]
    pod = make_pod(
        "p",
        labels={"foo": "", "bar": ""},
        constraints=[
            spread(1, "zone", "ScheduleAnyway", {}, matchLabelKeys=["foo"]),
            spread(1, HOST, "ScheduleAnyway", {}, matchLabelKeys=["bar"]),
        ],
    )
    got = run_score(PodTopologySpread(), pod, make_snapshot(nodes, pods), [n.name for n in nodes])
    assert got == {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}


def test_score_node_taints_policy_honored() -> None:
    # upstream scoring "NodeTaintsPolicy honored"
    nodes = [api_node(n, labels={"node": n}) for n in ("node-a", "node-b")]
    nodes.append(api_node("node-c", labels={"node": "node-c"}, taints=[UNSCHEDULABLE_TAINT]))
    pod = make_pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(1, "node", "ScheduleAnyway", FOO, nodeTaintsPolicy="Honor")],
    )
    snapshot = make_snapshot(nodes, placed("node-a:2,node-b:1,node-c:1"))
    got = run_score(PodTopologySpread(), pod, snapshot, ["node-a", "node-b", "node-c"])
    assert got == {"node-a": 0, "node-b": 33, "node-c": 100}


def test_score_terminating_and_foreign_pods_do_not_count() -> None:
    # upstream "terminating Pods should be excluded" and "existing pods in a different namespace
    # do not count"
    nodes = host_nodes(("node-a", "node-b"))
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway", FOO)])
    pods = [
        make_pod("p-a", labels={"foo": ""}, node="node-a", terminating=True),
        make_pod("p-b", labels={"foo": ""}, node="node-b"),
    ]
    got = run_score(PodTopologySpread(), pod, make_snapshot(nodes, pods), ["node-a", "node-b"])
    assert got == {"node-a": 100, "node-b": 0}
    pods = [
        make_pod("p-a1", labels={"foo": ""}, node="node-a", namespace="ns1"),
        make_pod("p-a2", labels={"foo": ""}, node="node-a"),
        make_pod("p-b1", labels={"foo": ""}, node="node-b"),
        make_pod("p-b2", labels={"foo": ""}, node="node-b"),
    ]
    got = run_score(PodTopologySpread(), pod, make_snapshot(nodes, pods), ["node-a", "node-b"])
    assert got == {"node-a": 100, "node-b": 33}


def test_prescore_skips_without_soft_constraints() -> None:
    # upstream TestPreScoreSkip "the pod doesn't have soft topology spread Constraints"
    state = CycleState(make_snapshot(host_nodes(("node-a", "node-b"))))
    status = PodTopologySpread(LIST).pre_score(state, make_pod("p"), state.snapshot.node_infos())
    assert status.code == Code.SKIP


# --- default constraints ------------------------------------------------------------------


def test_system_defaults_spread_a_service() -> None:
    # upstream "system defaulting, nodes don't have zone, pods match service": same scores as
    # one hostname constraint with maxSkew 3, and nodes without a zone label are not ignored.
    snapshot = make_snapshot(
        host_nodes(),
        placed("node-a:4,node-b:3,node-c:2,node-d:1"),
        workload_selectors={"default": (LabelSelector((("foo", ""),)),)},
    )
    pod = make_pod("p", labels={"foo": ""})
    got = run_score(PodTopologySpread(), pod, snapshot, HOST_NODES)
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}
    # Both system defaults are soft: PreFilter has nothing to check.
    state = CycleState(snapshot)
    _, status = PodTopologySpread().pre_filter(state, pod, snapshot.node_infos())
    assert status.code == Code.SKIP


def test_system_defaults_need_a_matching_workload() -> None:
    # upstream TestPreScoreSkip "default constraints and a replicaset that doesn't match"
    snapshot = make_snapshot(
        [api_node("node-a", labels={"planet": "mars"})],
        workload_selectors={
            "default": (LabelSelector(expressions=(_req("tar", "Exists"),)),),
            "other": (LabelSelector((("foo", "bar"),)),),
        },
    )
    pod = make_pod("p", labels={"foo": "bar", "baz": "sup"})
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    }
    state = CycleState(snapshot)
    status = PodTopologySpread(args).pre_score(state, pod, snapshot.node_infos())
    assert status.code == Code.SKIP


def test_own_constraints_replace_the_defaults() -> None:
    snapshot = make_snapshot(
        host_nodes(("node-a", "node-b")),
        placed("node-a:2"),
        workload_selectors={"default": (LabelSelector((("foo", ""),)),)},
    )
    # The pod's only constraint is hard, so no soft constraint remains: the defaults do not apply.
    pod = make_pod("p", labels={"foo": ""}, constraints=[spread(5, HOST, "DoNotSchedule", FOO)])
    state = CycleState(snapshot)
    assert PodTopologySpread().pre_score(state, pod, snapshot.node_infos()).code == Code.SKIP


def test_list_defaults_can_be_hard() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    snapshot = make_snapshot(
        host_nodes(("node-a", "node-b")),
        placed("node-a:1", labels={"app": "web", "tier": "fe"}),
        workload_selectors={
            "default": (
                LabelSelector((("app", "web"),)),
                LabelSelector(expressions=(_req("tier", "In", "fe"),)),
                LabelSelector((("app", "db"),)),
            )
        },
    )
    pod = make_pod("p", labels={"app": "web", "tier": "fe"})
    got = run_filter(PodTopologySpread(args), pod, snapshot)
    assert codes(got) == {"node-a": U, "node-b": S}


def test_default_selector_ands_matching_workloads() -> None:
    snapshot = make_snapshot(
        [],
        workload_selectors={
            "default": (
                LabelSelector((("app", "web"),)),  # a Service
                LabelSelector((("app", "web"),), (_req("rev", "In", "1", "2"),)),  # a ReplicaSet
                LabelSelector((("app", "db"),)),  # selects other pods
            ),
            "other": (LabelSelector((("zone", "x"),)),),
        },
    )
    pod = make_pod("p", labels={"app": "web", "rev": "2", "zone": "x"})
    selector = default_selector(pod, snapshot)
    assert selector == LabelSelector((("app", "web"),), (_req("rev", "In", "1", "2"),))
    assert default_selector(make_pod("q", labels={"x": "y"}), snapshot).empty


def test_default_constraints_ignore_nodes_without_zone_only_for_system() -> None:
    # System defaults: node-c lacks a zone label yet keeps its hostname score; zone spreading
    # counts zone1 = 3 pods, zone2 = 0, and the node without a zone falls into the "" domain.
    nodes = [
        api_node("node-a", labels={HOST: "node-a", "topology.kubernetes.io/zone": "zone1"}),
        api_node("node-b", labels={HOST: "node-b", "topology.kubernetes.io/zone": "zone2"}),
        api_node("node-c", labels={HOST: "node-c"}),
    ]
    snapshot = make_snapshot(
        nodes,
        placed("node-a:3,node-c:1"),
        workload_selectors={"default": (LabelSelector((("foo", ""),)),)},
    )
    pod = make_pod("p", labels={"foo": ""})
    got = run_score(PodTopologySpread(), pod, snapshot, ["node-a", "node-b", "node-c"])
    # Raw: hostname weight ln(3 + 2); zone weight ln(3 + 2) (domains zone1, zone2 and "").
    #   node-a: 3*ln5+2 + 3*ln5+4 = 15.66 -> 16; node-b: 0+2 + 0+4 = 6; node-c: 1*ln5+2 = 3.61 -> 4
    # Normalised 100 * (max + min - s) / max with max 16, min 4: 25, 87 (87.5 truncated), 100.
    assert got == {"node-a": 25, "node-b": 87, "node-c": 100}


# --- args ---------------------------------------------------------------------------------


def test_default_args_are_system_defaulting() -> None:
    assert PodTopologySpread().name == "PodTopologySpread"
    assert PodTopologySpread({"defaultingType": "System"}).name == PodTopologySpread.NAME


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultingType": "Foo"}, 'Unsupported value: "Foo"'),
        (
            {
                "defaultingType": "System",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "when .defaultConstraints are not empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            r"defaultConstraints\[0\].maxSkew",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}],
            },
            "topologyKey: Required value",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "-bad-", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "not a valid label key",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
            },
            "whenUnsatisfiable: Required value",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}
                ],
            },
            'Unsupported value: "Sometimes"',
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"a": "b"}},
                    }
                ],
            },
            "must not define a selector",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            r"defaultConstraints\[1\]: Duplicate value",
        ),
        ({"hardPodAffinityWeight": 1}, "unknown field"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError, match=message):
        PodTopologySpread(args)


def test_prefixed_topology_key_is_valid() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ],
    }
    assert PodTopologySpread(args).name == "PodTopologySpread"


def _req(key: str, operator: str, *values: str) -> Requirement:
    return Requirement(key, operator, values)


# --- compiled selectors -------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c"])
_VALUES = st.sampled_from(["", "1", "2", "x"])
_REQUIREMENTS = st.builds(
    Requirement,
    _KEYS,
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
    st.lists(_VALUES, max_size=2).map(tuple),
)
_SELECTORS = st.builds(
    LabelSelector,
    st.lists(st.tuples(_KEYS, _VALUES), max_size=2).map(tuple),
    st.lists(_REQUIREMENTS, max_size=3).map(tuple),
)


@given(
    st.one_of(st.none(), _SELECTORS),
    st.dictionaries(_KEYS, _VALUES, max_size=3),
)
def test_compiled_selector_matches_like_the_model(
    selector: LabelSelector | None, labels: dict[str, str]
) -> None:
    expected = selector is not None and selector.matches(labels)
    assert compile_selector(selector)(labels) is expected
