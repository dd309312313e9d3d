import random
from collections.abc import Sequence

import pytest

from opsche_daemon.framework.interface import CycleState, NodeScore, Status
from opsche_daemon.framework.runtime import (
    Diagnosis,
    FitError,
    Framework,
    num_feasible_nodes_to_find,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.snapshot import Snapshot
from tests.factories import node, pod, snapshot_of


class CpuFit:
    name = "CpuFit"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        if node.requested.milli_cpu + pod.requests.milli_cpu > node.node.allocatable.milli_cpu:
            return Status.unschedulable(self.name, "Insufficient cpu")
        return Status.success()


class ByName:
    """Scores nodes by a fixed table, to test weighting and selection."""

    name = "ByName"

    def __init__(self, table: dict[str, int]) -> None:
        self.table = table

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        return self.table.get(node.name, 0), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        return Status.success()


def snapshot(cpus: Sequence[int]) -> Snapshot:
    """Nodes ``n0``, ``n1``, ... with these many millicores (and no memory)."""
    return snapshot_of([node(f"n{i}", c, memory=0) for i, c in enumerate(cpus)])


def test_fit_error_message_has_kube_schedulers_form() -> None:
    diagnosis = Diagnosis(
        node_statuses={
            **{f"a{i}": Status.unschedulable("X", "Insufficient cpu") for i in range(3)},
            **{
                f"b{i}": Status.unresolvable("T", "node(s) had untolerated taint {k: v}")
                for i in range(13)
            },
        }
    )
    error = FitError(pod("p", 1), 16, diagnosis)
    assert str(error) == (
        "0/16 nodes are available: 13 node(s) had untolerated taint {k: v}, 3 Insufficient cpu."
    )
    diagnosis.post_filter_message = (
        "preemption: 0/16 nodes are available: 16 No preemption victims found for incoming pod."
    )
    assert str(error).endswith(
        "cpu. preemption: 0/16 nodes are available: "
        "16 No preemption victims found for incoming pod."
    )


def test_schedule_picks_the_highest_weighted_score() -> None:
    framework = Framework([CpuFit(), ByName({"n0": 10, "n1": 50, "n2": 90})], {"ByName": 2})
    state = CycleState(snapshot([1000, 4000, 500]))
    result = framework.schedule(state, pod("p", 800))
    assert result.node == "n1"  # n2 scores best but does not fit
    assert result.feasible == 2


def test_no_fit_raises_with_every_rejected_node() -> None:
    framework = Framework([CpuFit()], {})
    with pytest.raises(FitError) as error:
        framework.schedule(CycleState(snapshot([100, 100])), pod("p", 800))
    assert str(error.value) == "0/2 nodes are available: 2 Insufficient cpu."


def test_ties_are_broken_at_random_over_all_tied_nodes() -> None:
    framework = Framework([ByName({})], {"ByName": 1}, rng=random.Random(7))
    scores = [NodeScore(f"n{i}", 5) for i in range(4)]
    picks = {framework.select_host(scores) for _ in range(200)}
    assert picks == {"n0", "n1", "n2", "n3"}


def test_nominated_higher_priority_pods_keep_their_room() -> None:
    framework = Framework([CpuFit()], {})
    state = CycleState(snapshot([1000]))
    nominated = {"n0": [pod("preemptor", 800, priority=10)]}
    with pytest.raises(FitError):
        framework.schedule(state, pod("p", 500, priority=1), nominated)
    # A pod of higher priority than the nominated one ignores the nomination.
    assert (
        framework.schedule(CycleState(snapshot([1000])), pod("p", 500, priority=20), nominated).node
        == "n0"
    )


@pytest.mark.parametrize(
    ("nodes", "expected"), [(16, 16), (99, 99), (100, 100), (500, 230), (5000, 500), (2000, 680)]
)
def test_adaptive_number_of_nodes_to_find(nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes) == expected
