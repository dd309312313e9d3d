"""InterPodAffinity against upstream v1.36.3 cases (interpodaffinity/filtering_test.go etc.)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from opsche_daemon.framework.interface import (
    Code,
    CycleState,
    NodeScore,
    PluginArgsError,
    Status,
)
from opsche_daemon.framework.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from tests.factories import api_node, api_pod, snapshot_of

NAMESPACES = {
    "default": {"kubernetes.io/metadata.name": "default"},
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}

S, U, UU, SKIP = (
    Code.SUCCESS,
    Code.UNSCHEDULABLE,
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    Code.SKIP,
)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def term(topology_key: str, *expressions: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting with ``expressions`` (ANDed)."""
    return {
        "labelSelector": {"matchExpressions": [dict(e) for e in expressions]},
        "topologyKey": topology_key,
        **extra,
    }


def weighted(weight: int, pod_term: Mapping[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": dict(pod_term)}


def affinity(
    *,
    required: Iterable[Mapping[str, Any]] = (),
    preferred: Iterable[Mapping[str, Any]] = (),
    anti_required: Iterable[Mapping[str, Any]] = (),
    anti_preferred: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    key_required = "requiredDuringSchedulingIgnoredDuringExecution"
    key_preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    result: dict[str, Any] = {}
    if required or preferred:
        result["podAffinity"] = {key_required: list(required), key_preferred: list(preferred)}
    if anti_required or anti_preferred:
        result["podAntiAffinity"] = {
            key_required: list(anti_required),
            key_preferred: list(anti_preferred),
        }
    return result


_counter = iter(range(1_000_000))


def make_pod(
    labels: Mapping[str, str] | None = None,
    *,
    node: str = "",
    namespace: str = "default",
    pod_affinity: Mapping[str, Any] | None = None,
    name: str = "",
) -> Pod:
    """An API pod told apart by its ``labels``; named ``pod-<n>`` unless ``name`` is given."""
    return api_pod(
        name or f"pod-{next(_counter)}",
        namespace=namespace,
        labels=labels or {},
        node_name=node,
        spec={"affinity": dict(pod_affinity)} if pod_affinity else None,
    )


def make_snapshot(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> Snapshot:
    return snapshot_of(nodes, pods, namespace_labels=NAMESPACES)


def run_filter(
    pod: Pod, nodes: Iterable[Node], pods: Iterable[Pod] = (), args: Mapping[str, Any] | None = None
) -> dict[str, Status]:
    """Statuses per node; {"*": <PreFilter status>} when PreFilter did not succeed."""
    plugin = InterPodAffinity(args)
    snapshot = make_snapshot(nodes, pods)
    state = CycleState(snapshot)
    _, status = plugin.pre_filter(state, pod, snapshot.node_infos())
    if status.code != Code.SUCCESS:
        return {"*": status}
    return {info.name: plugin.filter(state, pod, info) for info in snapshot.node_infos()}


def codes(statuses: Mapping[str, Status]) -> dict[str, Code]:
    return {name: status.code for name, status in statuses.items()}


def run_score(
    pod: Pod,
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    args: Mapping[str, Any] | None = None,
) -> dict[str, int] | Code:
    """Normalised scores per node, or the PreScore code when it did not succeed."""
    plugin = InterPodAffinity(args)
    snapshot = make_snapshot(nodes, pods)
    state = CycleState(snapshot)
    infos = snapshot.node_infos()
    status = plugin.pre_score(state, pod, infos)
    if status.code != Code.SUCCESS:
        return status.code
    scores = []
    for info in infos:
        raw, status = plugin.score(state, pod, info)
        assert status.ok
        scores.append(NodeScore(info.name, raw))
    assert plugin.normalize_score(state, pod, scores).ok
    return {s.name: s.score for s in scores}


# --- Filter: one node (upstream TestRequiredAffinitySingleNode) -----------------------------

NODE1 = api_node("node1", labels={"region": "r1", "zone": "z11"})
SECURITY_S1 = {"security": "S1"}
SERVICE_SCAN = {"service": "securityscan"}


def scan_pod(**kw: Any) -> Pod:
    return make_pod(SERVICE_SCAN, node="node1", **kw)


def test_no_rules_skips() -> None:
    # upstream "A pod that has no required pod affinity scheduling rules can schedule onto a node
    # with no existing pods"
    assert codes(run_filter(make_pod(), [NODE1])) == {"*": SKIP}


def test_affinity_satisfied_by_existing_pod() -> None:
    # upstream "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using
    # In operator that matches the existing pod"
    pod = make_pod(
        SECURITY_S1,
        pod_affinity=affinity(
            required=[term("region", expr("service", "In", "securityscan", "value2"))]
        ),
    )
    assert codes(run_filter(pod, [NODE1], [scan_pod()])) == {"node1": S}


def test_affinity_in_other_namespace_does_not_match() -> None:
    # upstream "Does not satisfy the PodAffinity with labelSelector because of diff Namespace"
    pod = make_pod(
        SECURITY_S1,
        pod_affinity=affinity(
            required=[
                term("", expr("service", "In", "securityscan", "value2"), namespaces=["Diff"])
            ]
        ),
    )
    got = run_filter(pod, [NODE1], [scan_pod(namespace="ns")])
    assert got == {"node1": Status(UU, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,), "InterPodAffinity")}
    assert got["node1"].reasons == ("node(s) didn't match pod affinity rules",)


def test_affinity_terms_are_anded() -> None:
    # upstream "The labelSelector requirements(items of matchExpressions) are ANDed, the pod
    # cannot schedule onto the node because one of the matchExpression item don't match."
    pod = make_pod(
        SECURITY_S1,
        pod_affinity=affinity(
            required=[
                term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                term(
                    "region",
                    expr("service", "In", "securityscan2"),
                    expr("service", "NotIn", "WrongValue"),
                ),
            ]
        ),
    )
    assert codes(run_filter(pod, [NODE1], [scan_pod()])) == {"node1": UU}


def test_pod_anti_affinity_rejects() -> None:
    # upstream "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the
    # existing pod"
    pod = make_pod(
        SECURITY_S1,
        pod_affinity=affinity(
            required=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti_required=[term("zone", expr("service", "In", "securityscan", "value2"))],
        ),
    )
    got = run_filter(pod, [NODE1], [scan_pod()])
    assert got == {
        "node1": Status(U, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,), "InterPodAffinity")
    }
    assert got["node1"].reasons == ("node(s) didn't match pod anti-affinity rules",)


def test_existing_pod_anti_affinity_rejects() -> None:
    # upstream "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity
    # symmetry with the existing pod"
    pod = make_pod(
        SERVICE_SCAN,
        pod_affinity=affinity(
            required=[term("region", expr("service", "In", "securityscan", "value2"))],
            anti_required=[term("node", expr("service", "In", "antivirusscan", "value2"))],
        ),
    )
    existing = scan_pod(
        pod_affinity=affinity(
            anti_required=[term("zone", expr("service", "In", "securityscan", "value2"))]
        )
    )
    got = run_filter(pod, [NODE1], [existing])
    assert got == {
        "node1": Status(U, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,), "InterPodAffinity")
    }
    assert got["node1"].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


def test_existing_anti_affinity_not_matching_skips() -> None:
    # upstream "verify that PodAntiAffinity from existing pod is respected when pod has no
    # AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod"
    existing = scan_pod(
        pod_affinity=affinity(
            anti_required=[term("zone", expr("service", "NotIn", "securityscan", "value2"))]
        )
    )
    assert codes(run_filter(make_pod(SERVICE_SCAN), [NODE1], [existing])) == {"*": SKIP}


def test_partial_symmetry_b1() -> None:
    # upstream "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match
    # each other on AffinityTerms": the incoming pod's anti-affinity is checked first.
    rules = affinity(
        anti_required=[term("zone", expr("abc", "Exists")), term("zone", expr("def", "Exists"))]
    )
    pod = make_pod({"abc": "", "xyz": ""}, pod_affinity=rules)
    existing = make_pod({"def": "", "xyz": ""}, node="node1", pod_affinity=rules)
    assert codes(run_filter(pod, [NODE1], [existing])) == {"node1": U}
    assert run_filter(pod, [NODE1], [existing])["node1"].reasons == (
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    )


@pytest.mark.parametrize(
    ("pod_namespace", "existing_namespace", "namespace_selector", "anti", "expected"),
    [
        # upstream "affinity with NamespaceSelector"
        ("default", "subteam1.team1", TEAM1, False, S),
        # upstream "affinity with non-matching NamespaceSelector"
        ("default", "subteam1.team2", TEAM1, False, UU),
        # upstream "anti-affinity with matching NamespaceSelector"
        ("subteam1.team1", "subteam2.team1", TEAM1, True, U),
        # upstream "anti-affinity with matching all NamespaceSelector"
        ("subteam1.team1", "subteam2.team1", {}, True, U),
        # upstream "anti-affinity with non-matching NamespaceSelector"
        ("subteam1.team1", "subteam1.team2", TEAM1, True, S),
    ],
)
def test_namespace_selector(
    pod_namespace: str,
    existing_namespace: str,
    namespace_selector: dict[str, Any],
    anti: bool,
    expected: Code,
) -> None:
    rule = term(
        "zone" if anti else "region",
        expr("service", "In", "securityscan", "value2"),
        namespaceSelector=namespace_selector,
    )
    rules = affinity(anti_required=[rule]) if anti else affinity(required=[rule])
    pod = make_pod(SECURITY_S1, namespace=pod_namespace, pod_affinity=rules)
    existing = make_pod(SERVICE_SCAN, node="node1", namespace=existing_namespace)
    got = run_filter(pod, [NODE1], [existing])
    assert codes(got) == {"node1": expected}


def test_incoming_namespace_selector_only_resolves_known_namespaces() -> None:
    # Upstream lists namespaces to resolve the incoming pod's selector: a pod in a namespace the
    # lister does not know ("ghost") is not selected, even by "team DoesNotExist".
    rule = term(
        "zone",
        expr("service", "Exists"),
        namespaceSelector={"matchExpressions": [expr("team", "DoesNotExist")]},
    )
    pod = make_pod(SECURITY_S1, pod_affinity=affinity(anti_required=[rule]))
    nodes = [api_node("n1", labels={"zone": "a"}), api_node("n2", labels={"zone": "b"})]
    pods = [
        make_pod(SERVICE_SCAN, node="n1", namespace="default"),
        make_pod(SERVICE_SCAN, node="n2", namespace="ghost"),
    ]
    assert codes(run_filter(pod, nodes, pods)) == {"n1": U, "n2": S}


def test_existing_namespace_selector_sees_unknown_namespace_as_unlabelled() -> None:
    # Upstream evaluates an existing pod's namespaceSelector on the incoming pod's namespace
    # labels, an empty set when the namespace is unknown.
    rule = term(
        "zone",
        expr("security", "Exists"),
        namespaceSelector={"matchExpressions": [expr("team", "DoesNotExist")]},
    )
    existing = make_pod(SERVICE_SCAN, node="n1", pod_affinity=affinity(anti_required=[rule]))
    nodes = [api_node("n1", labels={"zone": "a"}), api_node("n2", labels={"zone": "b"})]
    assert codes(run_filter(make_pod(SECURITY_S1, namespace="ghost"), nodes, [existing])) == {
        "n1": U,
        "n2": S,
    }
    got = run_filter(make_pod(SECURITY_S1, namespace="subteam1.team1"), nodes, [existing])
    assert got == {"*": Status.skip()}


# --- Filter: several nodes (upstream TestRequiredAffinityMultipleNodes) ---------------------


def test_affinity_spans_the_topology_domain() -> None:
    # upstream "A pod can be scheduled onto all the nodes that have the same topology key & label
    # value with one of them has an existing pod that matches the affinity rules"
    pod = make_pod(pod_affinity=affinity(required=[term("region", expr("foo", "In", "bar"))]))
    nodes = [
        api_node("node1", labels={"region": "China"}),
        api_node("node2", labels={"region": "China", "az": "az1"}),
        api_node("node3", labels={"region": "India"}),
    ]
    got = run_filter(pod, nodes, [make_pod({"foo": "bar"}, node="node1")])
    assert codes(got) == {"node1": S, "node2": S, "node3": UU}


def test_first_pod_of_a_group_may_satisfy_its_own_affinity() -> None:
    # upstream "The affinity rule is to schedule all of the pods of this collection to the same
    # zone. The first pod of the collection should not be blocked from being scheduled onto any
    # node, even there's no existing pod that matches the rule anywhere."
    rules = affinity(
        required=[
            term("zone", expr("foo", "In", "bar")),
            term("zone", expr("service", "In", "securityscan")),
        ]
    )
    pod = make_pod({"foo": "bar", "service": "securityscan"}, pod_affinity=rules)
    existing = [make_pod({"foo": "bar"}, node="nodeA")]
    nodes = [
        api_node("nodeA", labels={"zone": "az1", "hostname": "h1"}),
        api_node("nodeB", labels={"zone": "az2", "hostname": "h2"}),
    ]
    assert codes(run_filter(pod, nodes, existing)) == {"nodeA": S, "nodeB": S}
    # upstream "The first pod of the collection can only be scheduled on nodes labelled with the
    # requested topology keys"
    nodes = [
        api_node("nodeA", labels={"zoneLabel": "az1", "hostname": "h1"}),
        api_node("nodeB", labels={"zoneLabel": "az2", "hostname": "h2"}),
    ]
    assert codes(run_filter(pod, nodes, existing)) == {"nodeA": UU, "nodeB": UU}


def test_first_pod_exception_needs_no_match_anywhere() -> None:
    # Once one pod matches the terms somewhere, only its domain is acceptable.
    rules = affinity(required=[term("zone", expr("app", "In", "db"))])
    pod = make_pod({"app": "db"}, pod_affinity=rules)
    nodes = [api_node("n1", labels={"zone": "a"}), api_node("n2", labels={"zone": "b"})]
    assert codes(run_filter(pod, nodes)) == {"n1": S, "n2": S}
    got = run_filter(pod, nodes, [make_pod({"app": "db"}, node="n2")])
    assert codes(got) == {"n1": UU, "n2": S}
    # A pod that does not match its own terms gets no exception.
    other = make_pod({"app": "web"}, pod_affinity=rules)
    assert codes(run_filter(other, nodes)) == {"n1": UU, "n2": UU}


def test_anti_affinity_covers_the_whole_domain() -> None:
    # upstream "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod
    # that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB."
    pod = make_pod(pod_affinity=affinity(anti_required=[term("region", expr("foo", "In", "abc"))]))
    nodes = [
        api_node("nodeA", labels={"region": "r1", "hostname": "nodeA"}),
        api_node("nodeB", labels={"region": "r1", "hostname": "nodeB"}),
    ]
    got = run_filter(pod, nodes, [make_pod({"foo": "abc"}, node="nodeA")])
    assert codes(got) == {"nodeA": U, "nodeB": U}


def test_existing_anti_affinity_blocks_its_domain_only() -> None:
    # upstream "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one
    # anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC"
    nodes = [
        api_node("nodeA", labels={"region": "r1", "zone": "z1", "hostname": "nodeA"}),
        api_node("nodeB", labels={"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        api_node("nodeC", labels={"region": "r1", "zone": "z3", "hostname": "nodeC"}),
    ]
    existing = [
        make_pod(
            node="nodeA",
            pod_affinity=affinity(
                anti_required=[
                    term("zone", expr("foo", "Exists")),
                    term("zone", expr("labelA", "Exists")),
                ]
            ),
        ),
        make_pod(
            node="nodeB",
            pod_affinity=affinity(
                anti_required=[
                    term("zone", expr("bar", "Exists")),
                    term("zone", expr("labelB", "Exists")),
                ]
            ),
        ),
    ]
    got = run_filter(make_pod({"foo": "", "bar": ""}), nodes, existing)
    assert codes(got) == {"nodeA": U, "nodeB": U, "nodeC": S}
    assert got["nodeA"].reasons == (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)


# --- matchLabelKeys / mismatchLabelKeys ----------------------------------------------------


def test_match_label_keys_are_merged_from_the_pod() -> None:
    nodes = [api_node("n1", labels={"host": "n1"}), api_node("n2", labels={"host": "n2"})]
    existing = [
        make_pod({"app": "web", "version": "v1"}, node="n1"),
        make_pod({"app": "web", "version": "v2"}, node="n2"),
    ]
    rule = term("host", expr("app", "In", "web"), matchLabelKeys=["version"])
    pod = make_pod({"app": "web", "version": "v2"}, pod_affinity=affinity(anti_required=[rule]))
    assert codes(run_filter(pod, nodes, existing)) == {"n1": S, "n2": U}


def test_match_label_keys_already_merged_by_the_api_server_are_kept() -> None:
    # The API server merged "version in (v1)" at creation; the pod's label changed since. The
    # scheduler reads the merged selector only, so v1 pods still repel it.
    nodes = [api_node("n1", labels={"host": "n1"}), api_node("n2", labels={"host": "n2"})]
    existing = [
        make_pod({"app": "web", "version": "v1"}, node="n1"),
        make_pod({"app": "web", "version": "v2"}, node="n2"),
    ]
    rule = term(
        "host",
        expr("app", "In", "web"),
        expr("version", "In", "v1"),
        matchLabelKeys=["version"],
    )
    pod = make_pod({"app": "web", "version": "v2"}, pod_affinity=affinity(anti_required=[rule]))
    assert codes(run_filter(pod, nodes, existing)) == {"n1": U, "n2": S}


def test_mismatch_label_keys_select_other_tenants() -> None:
    nodes = [api_node("n1", labels={"host": "n1"}), api_node("n2", labels={"host": "n2"})]
    existing = [
        make_pod({"tenant": "a"}, node="n1"),
        make_pod({"tenant": "b"}, node="n2"),
    ]
    rule = term("host", expr("tenant", "Exists"), mismatchLabelKeys=["tenant"])
    pod = make_pod({"tenant": "a"}, pod_affinity=affinity(anti_required=[rule]))
    assert codes(run_filter(pod, nodes, existing)) == {"n1": S, "n2": U}


def test_filter_without_prefilter_state_is_an_error() -> None:
    snapshot = make_snapshot([NODE1])
    status = InterPodAffinity().filter(CycleState(snapshot), make_pod(), snapshot.node_infos()[0])
    assert status.code == Code.ERROR


# --- Score (upstream TestPreferredAffinity) -----------------------------------------------

CHINA, INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
S2 = {"security": "S2"}
STAY_WITH_S1 = affinity(preferred=[weighted(5, term("region", expr("security", "In", "S1")))])
STAY_WITH_S2 = affinity(preferred=[weighted(6, term("region", expr("security", "In", "S2")))])
AWAY_FROM_S1 = affinity(anti_preferred=[weighted(5, term("az", expr("security", "In", "S1")))])
AWAY_FROM_S2 = affinity(anti_preferred=[weighted(5, term("az", expr("security", "In", "S2")))])
STAY_S1_AWAY_S2 = affinity(
    preferred=[weighted(8, term("region", expr("security", "In", "S1")))],
    anti_preferred=[weighted(5, term("az", expr("security", "In", "S2")))],
)
HARD_AFFINITY = affinity(
    required=[
        term("region", expr("security", "In", "S1", "value2")),
        term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
)


def three_nodes() -> list[Node]:
    return [
        api_node("node1", labels=CHINA),
        api_node("node2", labels=INDIA),
        api_node("node3", labels=AZ1),
    ]


def test_score_skips_without_any_affinity() -> None:
    # upstream "all nodes are same priority as Affinity is nil"
    assert run_score(make_pod(SECURITY_S1), three_nodes()) == SKIP
    # upstream "No nodes to score"
    assert run_score(make_pod(S2), []) == SKIP


def test_score_preferred_affinity() -> None:
    # upstream "Affinity: pod that matches topology key & pods in nodes will get high score
    # comparing to others which doesn't match either pods in nodes or in topology key"
    pods = [
        make_pod(SECURITY_S1, node="node1"),
        make_pod(S2, node="node2"),
        make_pod(SECURITY_S1, node="node3"),
    ]
    got = run_score(make_pod(SECURITY_S1, pod_affinity=STAY_WITH_S1), three_nodes(), pods)
    assert got == {"node1": 100, "node2": 0, "node3": 0}


def test_score_operators_and_partial_matches() -> None:
    # upstream "Affinity: different Label operators and values for pod affinity scheduling
    # preference, including some match failures": raw 2 / 10 / 0 -> 20 / 100 / 0
    rules = affinity(
        preferred=[
            weighted(
                8,
                term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2")),
            ),
            weighted(
                2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))
            ),
        ]
    )
    pods = [
        make_pod(SECURITY_S1, node="node1"),
        make_pod(S2, node="node2"),
        make_pod(SECURITY_S1, node="node3"),
    ]
    got = run_score(make_pod(SECURITY_S1, pod_affinity=rules), three_nodes(), pods)
    assert got == {"node1": 20, "node2": 100, "node3": 0}


def test_score_symmetry_of_existing_preferred_terms() -> None:
    # upstream "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuring
    # Execution in pod affinity symmetry"
    pods = [
        make_pod(SECURITY_S1, node="node1", pod_affinity=STAY_WITH_S1),
        make_pod(S2, node="node2", pod_affinity=STAY_WITH_S2),
    ]
    got = run_score(make_pod(S2), three_nodes(), pods)
    assert got == {"node1": 0, "node2": 100, "node3": 0}


def test_score_symmetry_of_existing_required_terms() -> None:
    # upstream "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in
    # pod affinity symmetry" (hardPodAffinityWeight 1)
    pods = [
        make_pod(SECURITY_S1, node="node1", pod_affinity=HARD_AFFINITY),
        make_pod(S2, node="node2", pod_affinity=HARD_AFFINITY),
    ]
    got = run_score(make_pod(SECURITY_S1), three_nodes(), pods)
    assert got == {"node1": 100, "node2": 100, "node3": 0}


def test_score_anti_affinity_symmetry_with_namespace_selector() -> None:
    # upstream "AntiAffinity symmetry with namespace selector"
    rules = affinity(
        anti_preferred=[
            weighted(
                5,
                term(
                    "region",
                    expr("security", "In", "S1"),
                    namespaces=["subteam2.team2"],
                    namespaceSelector=TEAM1,
                ),
            )
        ]
    )
    pods = [
        make_pod(SECURITY_S1, node="node1", pod_affinity=rules),
        make_pod(S2, node="node2", pod_affinity=STAY_WITH_S2),
    ]
    pod = make_pod(SECURITY_S1, namespace="subteam1.team1")
    assert run_score(pod, three_nodes(), pods) == {"node1": 0, "node2": 100, "node3": 100}


def test_score_affinity_anti_affinity_and_symmetry() -> None:
    # upstream "Affinity and Anti Affinity and symmetry: considered only preferredDuringScheduling
    # IgnoredDuringExecution in both pod affinity & anti affinity & symmetry"
    nodes = [
        api_node("node1", labels=CHINA),
        api_node("node2", labels=AZ1),
        api_node("node3", labels=INDIA),
        api_node("node4", labels=AZ2),
    ]
    pods = [
        make_pod(SECURITY_S1, node="node1"),
        make_pod(S2, node="node2"),
        make_pod(node="node3", pod_affinity=STAY_S1_AWAY_S2),
        make_pod(node="node4", pod_affinity=AWAY_FROM_S1),
    ]
    got = run_score(make_pod(SECURITY_S1, pod_affinity=STAY_S1_AWAY_S2), nodes, pods)
    assert got == {"node1": 100, "node2": 0, "node3": 100, "node4": 0}


def test_score_partial_topology_without_affinity_pods() -> None:
    # upstream "Avoid panic when partial nodes in a topology don't have pods with affinity"
    nodes = [api_node("node1", labels=CHINA), api_node("node2", labels=CHINA)]
    pods = [
        make_pod(SECURITY_S1, node="node1"),
        make_pod(node="node2", pod_affinity=STAY_S1_AWAY_S2),
    ]
    assert run_score(make_pod(SECURITY_S1), nodes, pods) == {"node1": 0, "node2": 0}


def test_score_incoming_namespace_selector() -> None:
    # upstream "Affinity with pods matching NamespaceSelector"
    rules = affinity(
        preferred=[
            weighted(
                5,
                term(
                    "region",
                    expr("security", "In", "S1"),
                    namespaces=["subteam2.team2"],
                    namespaceSelector=TEAM1,
                ),
            )
        ]
    )
    nodes = [api_node("node1", labels=CHINA), api_node("node2", labels=INDIA)]
    pods = [
        make_pod(SECURITY_S1, node="node1", namespace="subteam1.team1"),
        make_pod(SECURITY_S1, node="node1", namespace="subteam1.team1"),
        make_pod(SECURITY_S1, node="node1", namespace="subteam1.team2"),
        make_pod(SECURITY_S1, node="node2", namespace="subteam2.team1"),
    ]
    pod = make_pod(SECURITY_S1, namespace="subteam1.team1", pod_affinity=rules)
    assert run_score(pod, nodes, pods) == {"node1": 100, "node2": 0}


@pytest.mark.parametrize(
    ("ignore", "expected"),
    [
        # upstream "Ignore preferred terms of existing pods"
        (True, SKIP),
        # upstream "Do not ignore preferred terms of existing pods"
        (False, {"node1": 0, "node2": 100}),
    ],
)
def test_ignore_preferred_terms_of_existing_pods(ignore: bool, expected: object) -> None:
    nodes = [api_node("node1", labels=CHINA), api_node("node2", labels=INDIA)]
    pods = [
        make_pod(SECURITY_S1, node="node1", pod_affinity=STAY_S1_AWAY_S2),
        make_pod(S2, node="node2", pod_affinity=STAY_WITH_S2),
    ]
    args = {"ignorePreferredTermsOfExistingPods": ignore}
    assert run_score(make_pod(S2), nodes, pods, args) == expected


def test_ignore_preferred_terms_still_scores_pods_with_own_preferences() -> None:
    # With preferred terms of its own, existing pods' preferred terms still count (upstream only
    # skips PreScore when the incoming pod has none).
    nodes = [api_node("node1", labels=CHINA), api_node("node2", labels=INDIA)]
    pods = [make_pod(SECURITY_S1, node="node1", pod_affinity=STAY_WITH_S2)]
    pod = make_pod(S2, pod_affinity=AWAY_FROM_S1)  # az key: no node has it
    args = {"ignorePreferredTermsOfExistingPods": True}
    assert run_score(pod, nodes, pods, args) == {"node1": 100, "node2": 0}


HARD_WITH_NAMESPACES = affinity(
    required=[
        term(
            "region",
            expr("service", "In", "S1"),
            namespaces=["default", "subteam2.team2"],
            namespaceSelector=TEAM1,
        )
    ]
)


@pytest.mark.parametrize(
    ("namespace", "weight", "expected"),
    [
        # upstream TestPreferredAffinityWithHardPodAffinitySymmetricWeight "with default weight"
        ("default", None, {"node1": 100, "node2": 100, "node3": 0}),
        # "with zero weight"
        ("default", 0, SKIP),
        # "with no matching namespace"
        ("subteam1.team2", None, SKIP),
        # "with matching NamespaceSelector"
        ("subteam1.team1", None, {"node1": 100, "node2": 100, "node3": 0}),
        # "with matching Namespaces"
        ("subteam2.team2", None, {"node1": 100, "node2": 100, "node3": 0}),
    ],
)
def test_hard_pod_affinity_weight(namespace: str, weight: int | None, expected: object) -> None:
    pods = [
        make_pod(node="node1", pod_affinity=HARD_WITH_NAMESPACES),
        make_pod(node="node2", pod_affinity=HARD_WITH_NAMESPACES),
    ]
    args = {} if weight is None else {"hardPodAffinityWeight": weight}
    pod = make_pod({"service": "S1"}, namespace=namespace)
    assert run_score(pod, three_nodes(), pods, args) == expected


def test_normalize_truncates_like_go() -> None:
    # Raw -2 (az1 holds an S1 pod), +1 (China holds an S2 pod), 0: min-max over 3 gives
    # 0, 100 and int(100 * 2/3) = 66 (truncated, not rounded to 67).
    rules = affinity(
        preferred=[weighted(1, term("region", expr("security", "In", "S2")))],
        anti_preferred=[weighted(2, term("az", expr("security", "In", "S1")))],
    )
    nodes = [
        api_node("node1", labels=AZ1),
        api_node("node2", labels=CHINA),
        api_node("node3", labels=INDIA),
    ]
    pods = [make_pod(SECURITY_S1, node="node1"), make_pod(S2, node="node2")]
    got = run_score(make_pod(pod_affinity=rules), nodes, pods)
    assert got == {"node1": 0, "node2": 100, "node3": 66}


def test_equal_raw_scores_normalise_to_zero() -> None:
    # Entries exist (both regions hold a match) but every node scores the same: all 0.
    nodes = [api_node("node1", labels=CHINA), api_node("node2", labels=INDIA)]
    pods = [make_pod(SECURITY_S1, node="node1"), make_pod(SECURITY_S1, node="node2")]
    got = run_score(make_pod(pod_affinity=STAY_WITH_S1), nodes, pods)
    assert got == {"node1": 0, "node2": 0}


# --- args ---------------------------------------------------------------------------------


def test_name() -> None:
    assert InterPodAffinity().name == "InterPodAffinity" == InterPodAffinity.NAME


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"hardPodAffinityWeight": 101}, r"not in valid range \[0, 100\]"),
        ({"hardPodAffinityWeight": -1}, r"not in valid range \[0, 100\]"),
        ({"hardPodAffinityWeight": "1"}, "must be an integer"),
        ({"hardPodAffinityWeight": True}, "must be an integer"),
        ({"ignorePreferredTermsOfExistingPods": "yes"}, "must be a boolean"),
        ({"defaultingType": "List"}, "unknown field"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError, match=message):
        InterPodAffinity(args)


def test_boundary_weights_are_valid() -> None:
    assert InterPodAffinity({"hardPodAffinityWeight": 0}).name == "InterPodAffinity"
    assert InterPodAffinity({"hardPodAffinityWeight": 100}).name == "InterPodAffinity"
