"""DefaultPreemption: eligibility, candidate nodes, victim selection, node choice and messages.

The framework under test is a real one with NodeResourcesFit as PreFilter/Filter, so node statuses
come from an actual Filter pass (``find_feasible``) as the scheduler would hand them over.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from opsche_daemon.framework.interface import (
    Code,
    CycleState,
    Plugin,
    PluginArgsError,
    PostFilterResult,
    Status,
)
from opsche_daemon.framework.plugins.default_preemption import (
    NO_VICTIMS,
    NOT_HELPFUL,
    Candidate,
    DefaultPreemption,
    pick_one_node_for_preemption,
    split_by_pdb_violation,
)
from opsche_daemon.framework.plugins.node_resources_fit import NodeResourcesFit
from opsche_daemon.framework.runtime import Framework
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.model.selectors import LabelSelector
from opsche_daemon.model.snapshot import DisruptionBudget, Snapshot
from opsche_daemon.safety import never_protected
from tests.factories import node, pod, snapshot_of

# ---------------------------------------------------------------------------------- builders


def mk_pod(
    name: str,
    priority: int = 0,
    cpu: int = 0,
    *,
    node: str = "",
    created: float = 0.0,
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    preemption_policy: str = "PreemptLowerPriority",
    nominated: str = "",
    deleting: bool = False,
    owner: Owner | None = None,
) -> Pod:
    """A preemptor or victim: priority and cpu come first, as in upstream's ``MakePod()``."""
    return pod(
        name,
        cpu,
        non_zero=True,
        namespace=namespace,
        labels=labels,
        on=node,
        nominated=nominated,
        priority=priority,
        preemption_policy=preemption_policy,
        owner=owner,
        created=created,
        deleting=deleting,
    )


def mk_budget(
    allowed: int, labels: Mapping[str, str], namespace: str = "default"
) -> DisruptionBudget:
    return DisruptionBudget(
        namespace, "pdb", LabelSelector(match_labels=tuple(sorted(labels.items()))), allowed
    )


class FixedOffset(random.Random):
    """An rng whose randrange always returns ``offset`` (modulo the range)."""

    def __init__(self, offset: int) -> None:
        super().__init__(0)
        self.offset = offset

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        upper = start if stop is None else stop
        return self.offset % upper


class ErrorOnNode:
    """A Filter plugin that fails with an internal error on one node."""

    NAME = "ErrorOnNode"

    def __init__(self, node: str) -> None:
        self.node = node

    @property
    def name(self) -> str:
        return self.NAME

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if node.name == self.node:
            return Status.error(self.NAME, f"boom on {node.name}")
        return Status.success()


def mk_framework(*extra: Plugin) -> Framework:
    return Framework([NodeResourcesFit(), *extra], {})


def run(
    snapshot: Snapshot,
    preemptor: Pod,
    *,
    framework: Framework | None = None,
    statuses: dict[str, Status] | None = None,
    args: Mapping[str, Any] | None = None,
    respect_pdbs: bool = False,
    avoid_bare_victims: bool = False,
    protected: Callable[[Pod], bool] | None = None,
    rng: random.Random | None = None,
    nominated: Callable[[], Mapping[str, Sequence[Pod]]] | None = None,
) -> tuple[PostFilterResult | None, Status]:
    """Filter like the scheduler (unless ``statuses`` is given), then run PostFilter."""
    fw = framework or mk_framework()
    if statuses is None:
        feasible, diagnosis = fw.find_feasible(CycleState(snapshot), preemptor)
        assert feasible == [], "the preemptor must not fit anywhere for these tests"
        statuses = diagnosis.node_statuses
    plugin = DefaultPreemption(
        lambda: fw,
        args,
        respect_pdbs=respect_pdbs,
        avoid_bare_victims=avoid_bare_victims,
        protected=protected or never_protected,
        rng=rng or FixedOffset(0),
        nominated=nominated,
    )
    return plugin.post_filter(CycleState(snapshot), preemptor, statuses)


def keys(pods: Sequence[Pod]) -> list[str]:
    return [p.name for p in pods]


# ---------------------------------------------------------------------------------- victims


def test_minimal_victims_after_reprieve() -> None:
    pods = [
        mk_pod("a", 1, 200, node="n1"),
        mk_pod("b", 2, 500, node="n1"),
        mk_pod("c", 3, 300, node="n1"),
    ]
    result, status = run(snapshot_of([node("n1", 1000)], pods), mk_pod("p", 10, 500))
    assert status.ok
    assert result is not None
    # c (300) reprieved first, b (500) does not fit back, a (200) fits back.
    assert result.nominated_node == "n1"
    assert keys(result.victims) == ["b"]
    assert isinstance(result.victims, tuple)


def test_victims_sorted_most_important_first() -> None:
    pods = [
        mk_pod("low-old", 1, 400, node="n1", created=1),
        mk_pod("mid", 5, 400, node="n1"),
        mk_pod("low-new", 1, 200, node="n1", created=5),
    ]
    result, _ = run(snapshot_of([node("n1", 1000)], pods), mk_pod("p", 10, 1000))
    assert result is not None
    assert keys(result.victims) == ["mid", "low-old", "low-new"]


def test_equal_or_higher_priority_pods_are_never_victims() -> None:
    pods = [mk_pod("same", 10, 600, node="n1"), mk_pod("higher", 20, 300, node="n1")]
    result, status = run(snapshot_of([node("n1", 1000)], pods), mk_pod("p", 10, 500))
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == DefaultPreemption.NAME
    assert status.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_nominated_pods_of_higher_priority_keep_their_room() -> None:
    pods = [mk_pod("a", 1, 300, node="n1"), mk_pod("b", 1, 300, node="n1", created=1)]
    snapshot = snapshot_of([node("n1", 1000)], pods)
    preemptor = mk_pod("p", 10, 500)
    result, _ = run(snapshot, preemptor)
    assert result is not None
    assert keys(result.victims) == ["b"]  # a is older, hence more important: reprieved first
    waiting = mk_pod("waiting", 20, 300, nominated="n1")
    result, _ = run(snapshot, preemptor, nominated=lambda: {"n1": [waiting]})
    assert result is not None
    assert keys(result.victims) == ["a", "b"]


def test_protected_pods_are_never_victims() -> None:
    daemon = Owner("DaemonSet", "ds", "uid-ds")
    pods = [
        mk_pod("system", 0, 900, node="n1", namespace="kube-system"),
        mk_pod("agent", 0, 900, node="n2", owner=daemon),
        mk_pod("app", 0, 900, node="n3"),
    ]
    nodes = [node("n1", 1000), node("n2", 1000), node("n3", 1000)]

    def protected(pod: Pod) -> bool:
        return pod.namespace == "kube-system" or pod.is_daemonset or pod.is_mirror

    result, status = run(snapshot_of(nodes, pods), mk_pod("p", 10, 500), protected=protected)
    assert status.ok
    assert result is not None
    assert result.nominated_node == "n3"
    assert keys(result.victims) == ["app"]

    result, status = run(
        snapshot_of(nodes[:2], pods[:2]), mk_pod("p", 10, 500), protected=protected
    )
    assert result is None
    assert status.message == (
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


# ---------------------------------------------------------------------------------- nodes


def test_unresolvable_nodes_are_skipped_and_message_mixes_reasons() -> None:
    nodes = [node("n1", 1000), node("n2", 1000), node("n3", 100)]
    pods = [
        mk_pod("high", 100, 800, node="n1"),
        mk_pod("low", 0, 100, node="n1"),  # evicting it is not enough
        mk_pod("peer", 10, 900, node="n2"),  # same priority: no victims
    ]
    preemptor = mk_pod("p", 10, 300)
    snapshot = snapshot_of(nodes, pods)
    fw = mk_framework()
    _, diagnosis = fw.find_feasible(CycleState(snapshot), preemptor)
    assert diagnosis.node_statuses["n3"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    result, status = run(snapshot, preemptor, framework=fw)
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_unresolvable_node_is_not_a_candidate_even_with_victims() -> None:
    pods = [mk_pod("low", 0, 900, node="n1")]
    statuses = {"n1": Status.unresolvable("SomePlugin", "node(s) didn't match")}
    result, status = run(
        snapshot_of([node("n1", 1000)], pods), mk_pod("p", 10, 500), statuses=statuses
    )
    assert result is None
    assert status.message == f"preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."


def test_nodes_without_status_count_as_not_helpful() -> None:
    nodes = [node("n1", 1000), node("n2", 1000), node("n3", 1000), node("n4", 1000)]
    pods = [mk_pod("high1", 100, 900, node="n1"), mk_pod("high2", 100, 900, node="n2")]
    pods += [mk_pod("low1", 0, 50, node="n1"), mk_pod("low2", 0, 50, node="n2")]
    statuses = {
        "n1": Status.unschedulable("NodeResourcesFit", "Insufficient cpu"),
        "n2": Status.unschedulable("NodeResourcesFit", "Insufficient cpu"),
        "n4": Status.unresolvable("NodeAffinity", "node(s) didn't match"),
    }
    result, status = run(snapshot_of(nodes, pods), mk_pod("p", 10, 300), statuses=statuses)
    assert result is None
    assert status.message == (
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling."
    )


def test_chooses_node_with_lowest_priority_victims() -> None:
    nodes = [node("n1", 1000), node("n2", 1000)]
    pods = [mk_pod("mid", 5, 900, node="n1"), mk_pod("low", 1, 900, node="n2")]
    result, _ = run(snapshot_of(nodes, pods), mk_pod("p", 10, 500))
    assert result is not None
    assert result.nominated_node == "n2"
    assert keys(result.victims) == ["low"]


def test_a_bare_victim_is_avoided_while_a_node_with_only_controlled_victims_exists() -> None:
    """The tie of the issue: one low-priority victim per node, one of them without a controller.

    Upstream's cascade ends on the latest start time and picks the bare pod (created later);
    with ``avoid_bare_victims`` the node whose victim comes back is chosen.
    """
    owner = Owner("ReplicaSet", "rs", "uid-rs")
    nodes = [node("n1", 1000), node("n2", 1000)]
    pods = [
        mk_pod("managed", 1, 900, node="n1", created=1.0, owner=owner),
        mk_pod("bare", 1, 900, node="n2", created=2.0),
    ]
    snapshot = snapshot_of(nodes, pods)
    upstream, _ = run(snapshot, mk_pod("p", 10, 500))
    assert upstream is not None and keys(upstream.victims) == ["bare"]
    result, _ = run(snapshot, mk_pod("p", 10, 500), avoid_bare_victims=True)
    assert result is not None
    assert (result.nominated_node, keys(result.victims)) == ("n1", ["managed"])
    # When every candidate has a bare victim, preemption still happens, by upstream's order.
    only_bare = snapshot_of(nodes, [mk_pod("b1", 1, 900, node="n1"), pods[1]])
    result, _ = run(only_bare, mk_pod("p", 10, 500), avoid_bare_victims=True)
    assert result is not None and keys(result.victims) == ["bare"]


def test_random_offset_decides_among_ties_and_dry_run_stops_early() -> None:
    nodes = [node(f"n{i}", 1000) for i in range(1, 5)]
    pods = [mk_pod(f"v{i}", 0, 900, node=f"n{i}") for i in range(1, 5)]
    snapshot = snapshot_of(nodes, pods)
    args = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}
    for offset, expected in ((0, "n1"), (2, "n3"), (5, "n2")):
        result, _ = run(snapshot, mk_pod("p", 10, 500), args=args, rng=FixedOffset(offset))
        assert result is not None
        assert result.nominated_node == expected
    # With all four as candidates the ties go to the first one examined, from the offset on.
    result, _ = run(snapshot, mk_pod("p", 10, 500), rng=FixedOffset(3))
    assert result is not None
    assert result.nominated_node == "n4"


def test_dry_run_keeps_looking_until_a_pdb_clean_candidate() -> None:
    nodes = [node("n1", 1000), node("n2", 1000)]
    pods = [
        mk_pod("guarded", 0, 900, node="n1", labels={"app": "db"}),
        mk_pod("free", 5, 900, node="n2"),
    ]
    budgets = (mk_budget(0, {"app": "db"}),)
    args = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}
    result, _ = run(
        snapshot_of(nodes, pods, disruption_budgets=budgets), mk_pod("p", 10, 500), args=args
    )
    assert result is not None
    assert result.nominated_node == "n2"  # fewer PDB violations beats lower victim priority


def test_internal_error_on_one_node_does_not_stop_the_others() -> None:
    nodes = [node("bad", 1000), node("good", 1000)]
    pods = [mk_pod("v1", 0, 900, node="bad"), mk_pod("v2", 0, 900, node="good")]
    snapshot = snapshot_of(nodes, pods)
    statuses = {n.name: Status.unschedulable("NodeResourcesFit", "Insufficient cpu") for n in nodes}
    fw = mk_framework(ErrorOnNode("bad"))
    result, status = run(snapshot, mk_pod("p", 10, 500), framework=fw, statuses=statuses)
    assert status.ok
    assert result is not None
    assert result.nominated_node == "good"

    result, status = run(
        snapshot_of(nodes[:1], pods[:1]),
        mk_pod("p", 10, 500),
        framework=fw,
        statuses={"bad": statuses["bad"]},
    )
    assert result is None
    assert status.code == Code.ERROR
    assert status.message == "preemption: boom on bad"


# ---------------------------------------------------------------------------------- eligibility


def test_preemption_policy_never() -> None:
    pods = [mk_pod("low", 0, 900, node="n1")]
    preemptor = mk_pod("p", 10, 500, preemption_policy="Never")
    result, status = run(snapshot_of([node("n1", 1000)], pods), preemptor)
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == "preemption: not eligible due to preemptionPolicy=Never."


def test_waits_for_terminating_victim_on_nominated_node() -> None:
    pods = [
        mk_pod("leaving", 0, 600, node="n1", deleting=True),
        mk_pod("low", 0, 300, node="n1"),
    ]
    snapshot = snapshot_of([node("n1", 1000)], pods)
    preemptor = mk_pod("p", 10, 500, nominated="n1")
    result, status = run(snapshot, preemptor)
    assert result is None
    assert (
        status.message == "preemption: not eligible due to a terminating pod on the nominated node."
    )

    # A terminating pod of equal priority does not count.
    same = [mk_pod("leaving", 10, 400, node="n1", deleting=True), mk_pod("low", 0, 400, node="n1")]
    result, _ = run(snapshot_of([node("n1", 1000)], same), preemptor)
    assert result is not None
    assert keys(result.victims) == ["low"]

    # Nominated node became unresolvable: preempt elsewhere.
    nodes = [node("n1", 1000), node("n2", 1000)]
    other = [*pods, mk_pod("other", 0, 900, node="n2")]
    statuses = {
        "n1": Status.unresolvable("NodeUnschedulable", "node(s) were unschedulable"),
        "n2": Status.unschedulable("NodeResourcesFit", "Insufficient cpu"),
    }
    result, status = run(snapshot_of(nodes, other), preemptor, statuses=statuses)
    assert status.ok
    assert result is not None
    assert result.nominated_node == "n2"


# ---------------------------------------------------------------------------------- PDBs


def test_split_by_pdb_violation_counts_budget_down() -> None:
    pods = [mk_pod(f"p{i}", labels={"app": "x"}) for i in range(3)]
    unlabelled = mk_pod("bare")
    elsewhere = mk_pod("other-ns", labels={"app": "x"}, namespace="prod")
    budgets = [mk_budget(1, {"app": "x"})]
    violating, clean = split_by_pdb_violation([*pods, unlabelled, elsewhere], budgets)
    assert keys(violating) == ["p1", "p2"]
    assert keys(clean) == ["p0", "bare", "other-ns"]
    # An empty or nil selector matches nothing in preemption.
    empty = [
        DisruptionBudget("default", "all", LabelSelector(), 0),
        DisruptionBudget("default", "none", None, 0),
    ]
    violating, clean = split_by_pdb_violation(pods, empty)
    assert violating == []
    assert len(clean) == 3


def test_pdb_violations_counted_for_evicted_violators() -> None:
    pods = [
        mk_pod("a", 1, 500, node="n1", labels={"app": "x"}),
        mk_pod("b", 1, 500, node="n1", labels={"app": "x"}, created=1),
    ]
    snapshot = snapshot_of(
        [node("n1", 1000)], pods, disruption_budgets=(mk_budget(1, {"app": "x"}),)
    )
    fw = mk_framework()
    plugin = DefaultPreemption(lambda: fw)
    info = snapshot.get("n1")
    assert info is not None
    victims, violations, status = plugin.select_victims_on_node(
        fw, snapshot, mk_pod("p", 10, 1000), info, snapshot.disruption_budgets
    )
    assert status.ok
    assert violations == 1
    assert keys(victims) == ["a", "b"]


def test_pdb_violating_pods_are_reprieved_first() -> None:
    pods = [
        mk_pod("guarded", 5, 500, node="n1", labels={"app": "db"}),
        mk_pod("unguarded", 6, 500, node="n1"),
    ]
    snapshot = snapshot_of(
        [node("n1", 1000)], pods, disruption_budgets=(mk_budget(0, {"app": "db"}),)
    )
    result, _ = run(snapshot, mk_pod("p", 10, 500))
    assert result is not None
    assert keys(result.victims) == ["unguarded"]


def test_respect_pdbs_discards_violating_candidates() -> None:
    pods = [mk_pod("guarded", 0, 900, node="n1", labels={"app": "db"})]
    snapshot = snapshot_of(
        [node("n1", 1000)], pods, disruption_budgets=(mk_budget(0, {"app": "db"}),)
    )
    result, status = run(snapshot, mk_pod("p", 10, 500))
    assert result is not None  # upstream preempts even when a budget is violated
    assert keys(result.victims) == ["guarded"]

    result, status = run(snapshot, mk_pod("p", 10, 500), respect_pdbs=True)
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == (
        "preemption: 0/1 nodes are available: 1 Preemption would violate a PodDisruptionBudget."
    )

    # A budget with room is fine.
    roomy = snapshot_of([node("n1", 1000)], pods, disruption_budgets=(mk_budget(1, {"app": "db"}),))
    result, status = run(roomy, mk_pod("p", 10, 500), respect_pdbs=True)
    assert status.ok
    assert result is not None


# ---------------------------------------------------------------------------------- ordering


def cand(node: str, *victims: tuple[int, float], pdb: int = 0) -> Candidate:
    pods = tuple(
        mk_pod(f"{node}-{i}", prio, created=created) for i, (prio, created) in enumerate(victims)
    )
    return Candidate(node, pods, pdb)


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        pytest.param(
            [cand("a", (1, 0), pdb=1), cand("b", (9, 0))], "b", id="fewest-pdb-violations"
        ),
        pytest.param(
            [cand("a", (5, 0)), cand("b", (3, 0), (3, 0))], "b", id="lowest-highest-priority"
        ),
        pytest.param([cand("a", (5, 0), (4, 0)), cand("b", (5, 0), (2, 0))], "b", id="lowest-sum"),
        pytest.param(
            [cand("a", (-100, 0), (-100, 0)), cand("b", (-100, 0))],
            "b",
            id="sum-offset-for-negative-priorities",
        ),
        pytest.param(
            [cand("a", (5, 0), (0, 0), (0, 0)), cand("b", (5, 0), (0, 0))], "b", id="fewest-victims"
        ),
        pytest.param(
            [cand("a", (5, 10), (5, 30)), cand("b", (5, 20), (5, 25))],
            "b",
            id="latest-earliest-start-of-top-priority",
        ),
        pytest.param([cand("a", (5, 7)), cand("b", (5, 7))], "a", id="first-on-full-tie"),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], expected: str) -> None:
    chosen = pick_one_node_for_preemption(candidates)
    assert chosen is not None
    assert chosen.node == expected


def test_pick_one_node_empty() -> None:
    assert pick_one_node_for_preemption([]) is None


# ---------------------------------------------------------------------------------- args


def test_args_defaults_and_num_candidates() -> None:
    plugin = DefaultPreemption(mk_framework)
    assert plugin.name == "DefaultPreemption"
    assert plugin.min_candidate_nodes_percentage == 10
    assert plugin.min_candidate_nodes_absolute == 100
    assert plugin.calculate_num_candidates(10) == 10
    assert plugin.calculate_num_candidates(1000) == 100
    assert plugin.calculate_num_candidates(5000) == 500
    custom = DefaultPreemption(
        mk_framework,
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "DefaultPreemptionArgs",
            "minCandidateNodesPercentage": 40,
            "minCandidateNodesAbsolute": 0,
        },
    )
    assert custom.calculate_num_candidates(10) == 4
    assert custom.calculate_num_candidates(1) == 0  # as upstream: 40% of 1 is 0
    offset, wanted = custom.get_offset_and_num_candidates(50)
    assert 0 <= offset < 50
    assert wanted == 20


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            {"minCandidateNodesPercentage": 110},
            "minCandidateNodesPercentage: Invalid value: 110: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": -1},
            "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        ({"minCandidateNodes": 3}, 'minCandidateNodes: unknown field "minCandidateNodes"'),
        ({"minCandidateNodesAbsolute": "5"}, "must be an integer"),
        ({"minCandidateNodesAbsolute": True}, "must be an integer"),
    ],
)
def test_args_validation(args: dict[str, object], fragment: str) -> None:
    with pytest.raises(PluginArgsError, match="DefaultPreemption args") as excinfo:
        DefaultPreemption(mk_framework, args)
    assert fragment in str(excinfo.value)


def test_zero_percentage_with_absolute_is_valid() -> None:
    plugin = DefaultPreemption(mk_framework, {"minCandidateNodesPercentage": 0})
    assert plugin.calculate_num_candidates(1000) == 100


# ---------------------------------------------------------------------------------- misc


def test_no_victims_constant_matches_upstream_text() -> None:
    assert NO_VICTIMS == "No preemption victims found for incoming pod"
    assert NOT_HELPFUL == "Preemption is not helpful for scheduling"


def test_plugin_is_a_post_filter_plugin_of_the_framework() -> None:
    holder: list[Framework] = []
    plugin = DefaultPreemption(lambda: holder[0])
    fw = Framework([NodeResourcesFit(), plugin], {})
    holder.append(fw)
    assert fw.post_filter_plugins == [plugin]
    pods = [mk_pod("low", 0, 900, node="n1")]
    snapshot = snapshot_of([node("n1", 1000)], pods)
    preemptor = mk_pod("p", 10, 500)
    _, diagnosis = fw.find_feasible(CycleState(snapshot), preemptor)
    result, status = fw.run_post_filter(CycleState(snapshot), preemptor, diagnosis.node_statuses)
    assert status.ok
    assert result == PostFilterResult("n1", (pods[0],))
