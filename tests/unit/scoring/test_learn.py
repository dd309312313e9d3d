"""Scorers, training and the study's metrics on small generated datasets."""

import pickle
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from opsche_daemon.scoring.dataset import Decision
from opsche_daemon.scoring.features import FEATURES, Candidate, PodDemand, feature_row
from opsche_daemon.scoring.models import (
    DefaultScorer,
    FreeCpuScorer,
    ModelFileError,
    RandomScorer,
    load_scorer,
    save_model,
)

pytest.importorskip("lightgbm", reason="the learn extra (make setup installs it)")

from opsche_daemon.scoring.learn import evaluate, top1, train


def generated(source: str, count: int, seed: int) -> list[Decision]:
    """Decisions of a scheduler that packs: it picks the node with the least free memory that
    fits (so free cpu, the seed's heuristic, is a poor guide here)."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        pod = PodDemand(rng.uniform(0.1, 1.0), rng.uniform(0.5, 4.0), rng.randint(1, 3))
        nodes = [
            Candidate(f"n{i}", 8.0, 32.0, rng.uniform(0, 6), rng.uniform(0, 26)) for i in range(4)
        ]
        nodes.sort(key=lambda c: c.free_memory)
        out.append(Decision(source, f"{source}-{index}", float(index), pod, tuple(nodes)))
    return out


def independent_free_cpu_top1(decisions: Sequence[Decision]) -> float:
    """The heuristic's accuracy computed here, not by the code under test."""
    wins = 0.0
    for d in decisions:
        best = max(c.free_cpu for c in d.candidates)
        tied = [c for c in d.candidates if c.free_cpu == best]
        wins += (1 / len(tied)) if d.chosen in tied else 0.0
    return wins / len(decisions)


def test_the_ranker_learns_a_policy_the_heuristic_misses() -> None:
    train_set = generated("a", 300, 1) + generated("b", 300, 2)
    test_set = generated("c", 300, 3)
    ranker = train("ranker", train_set)
    assert top1(ranker, test_set) >= 0.85
    heuristic = top1(FreeCpuScorer(), test_set)
    assert heuristic == pytest.approx(independent_free_cpu_top1(test_set))
    assert heuristic < 0.5
    assert ranker.meta["sources"] == ["a", "b"] and "num_leaves" in ranker.meta


def test_the_forest_has_an_r2_and_rankers_do_not() -> None:
    train_set = generated("a", 200, 1)
    forest, ranker = train("forest", train_set), train("ranker", train_set)
    results = {
        e.scorer: e for e in evaluate([forest, ranker, RandomScorer(0)], generated("b", 200, 4))
    }
    assert results["forest"].r2 is not None and results["forest"].r2 > 0.2
    assert results["ranker"].r2 is None and results["random"].r2 is None
    assert results["random"].chance == pytest.approx(0.25)
    assert 0.1 < results["random"].top1 < 0.4


def test_a_tie_at_the_top_is_shared() -> None:
    nodes = (Candidate("a", 4, 16), Candidate("b", 4, 16), Candidate("c", 4, 16, 1, 0))
    decision = Decision("t", "p", 0.0, PodDemand(1, 1), nodes)
    assert top1(FreeCpuScorer(), [decision]) == pytest.approx(0.5)


def test_default_scoring_prefers_the_emptier_node_as_least_allocated_does() -> None:
    busy, idle = Candidate("busy", 8, 32, 6, 24), Candidate("idle", 8, 32, 1, 4)
    scores = DefaultScorer().score(PodDemand(1, 2), [busy, idle])
    assert scores[1] > scores[0]


def test_model_files_round_trip_and_refuse_what_is_not_one(tmp_path: Path) -> None:
    forest = train("forest", generated("a", 50, 1))
    path = tmp_path / "m" / "forest.model"
    save_model(forest, path)
    loaded = load_scorer(str(path))
    decision = generated("b", 1, 2)[0]
    assert loaded.score(decision.pod, decision.candidates) == forest.score(
        decision.pod, decision.candidates
    )
    with pytest.raises(ModelFileError, match="no such model file"):
        load_scorer(str(tmp_path / "none"))
    (tmp_path / "junk").write_bytes(b"not a pickle")
    with pytest.raises(ModelFileError, match="not an opsche model file"):
        load_scorer(str(tmp_path / "junk"))
    other = tmp_path / "other.model"
    other.write_bytes(
        pickle.dumps({"format": "opsche-scorer/v1", "kind": "forest", "features": ["x"]})
    )
    with pytest.raises(ModelFileError, match="train it again"):
        load_scorer(str(other))


def test_features_are_in_their_declared_order() -> None:
    row = feature_row(PodDemand(1.0, 2.0, 3), Candidate("n", 4.0, 8.0, 1.0, 2.0))
    values = dict(zip(FEATURES, row, strict=True))
    assert values["free_cpu"] == 3.0 and values["free_memory"] == 6.0
    assert values["cpu_after_fraction"] == pytest.approx(0.5)
    assert values["memory_after_fraction"] == pytest.approx(0.5)
    assert values["job_width"] == 3.0
