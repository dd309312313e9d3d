"""Decisions from placements: the sweep line's as-of occupancy, rivals, and both sources."""

import gzip
import json
from pathlib import Path

import pytest

from opsche_daemon.scoring.dataset import (
    DatasetError,
    Placement,
    decisions_from_alibaba,
    decisions_from_placements,
    decisions_from_replay,
    load_decisions,
)
from opsche_daemon.scoring.features import PodDemand

NODES = {"a": (4.0, 16.0), "b": (4.0, 16.0), "c": (4.0, 16.0)}
REPO = Path(__file__).resolve().parents[3]


def placement(key: str, node: str, start: float, end: float | None, cpu: float) -> Placement:
    return Placement(key, node, start, end, PodDemand(cpu, 1.0))


def test_occupancy_is_what_ran_just_before_the_decision() -> None:
    decisions = decisions_from_placements(
        "t",
        [
            placement("first", "a", 0.0, 10.0, 3.0),
            placement("second", "b", 5.0, None, 1.0),
            placement("third", "c", 10.0, None, 1.0),  # starts when 'first' ends
        ],
        NODES,
    )
    by_key = {d.key: d for d in decisions}
    second = {c.name: c.used_cpu for c in by_key["second"].candidates}
    assert second == {"b": 0.0, "a": 3.0, "c": 0.0}
    third = {c.name: c.used_cpu for c in by_key["third"].candidates}
    assert third == {"c": 0.0, "a": 0.0, "b": 1.0}  # ends are applied before starts
    assert by_key["second"].chosen.name == "b"
    big = decisions_from_placements(
        "t", [placement("x", "a", 0.0, None, 3.0), placement("y", "b", 1.0, None, 2.0)], NODES
    )
    assert {c.name for c in big[1].candidates} == {"b", "c"}  # a has 1 core left: no rival
    assert by_key["second"].labels() == [100.0, 20.0, 20.0]


def test_rivals_are_feasible_at_most_three_and_reproducible() -> None:
    nodes = {f"n{i}": (4.0, 16.0) for i in range(8)}
    nodes["tiny"] = (0.5, 16.0)
    placements = [placement("p", "n0", 0.0, None, 1.0)]
    first = decisions_from_placements("t", placements, nodes)
    again = decisions_from_placements("t", placements, nodes)
    (decision,) = first
    assert len(decision.candidates) == 4
    assert "tiny" not in {c.name for c in decision.candidates}  # 1 core does not fit in 0.5
    assert first == again


def test_a_decision_without_rivals_is_dropped() -> None:
    full = decisions_from_placements(
        "t",
        [placement("big-a", "a", 0, None, 4.0), placement("big-b", "b", 1, None, 4.0)],
        {"a": (4.0, 16.0), "b": (4.0, 16.0)},
    )
    assert [d.key for d in full] == ["big-a"]  # when big-b came, a was full


def test_a_real_kube_scheduler_replay_becomes_decisions() -> None:
    result = REPO / "docs/evaluation/real-16n-15m/n16-p1-iat8-15m-s1__kube-scheduler.json"
    decisions = decisions_from_replay(result)
    assert len(decisions) > 200
    assert {d.source for d in decisions} == {"n16-p1-iat8-15m-s1"}
    assert all(2 <= len(d.candidates) <= 4 for d in decisions)
    assert all(c.allocatable_cpu == 8.0 for d in decisions for c in d.candidates)


def test_a_compressed_replay_gives_the_same_decisions(tmp_path: Path) -> None:
    """Grids write ``.json.gz``; learning from them must read what they wrote."""
    source = REPO / "docs/evaluation/real-16n-15m"
    result = source / "n16-p1-iat8-15m-s1__kube-scheduler.json"
    packed = tmp_path / (result.name + ".gz")
    packed.write_bytes(gzip.compress(result.read_bytes()))
    assert decisions_from_replay(packed) == decisions_from_replay(result)


def test_a_virtual_replay_is_refused(tmp_path: Path) -> None:
    virtual = REPO / "docs/evaluation/virtual-16n-15m/n16-p1-iat8-15m-s1__kube-scheduler.json"
    with pytest.raises(DatasetError, match="not by the real kube-scheduler"):
        decisions_from_replay(virtual)
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": "something"}))
    with pytest.raises(DatasetError, match="not a replay result"):
        load_decisions([bad])
    with pytest.raises(DatasetError, match="no such file"):
        load_decisions([tmp_path / "missing.json"])


def write_alibaba(directory: Path) -> None:
    """A small trace in the v2018 schema (no header rows, as the public files)."""
    directory.mkdir()
    (directory / "machine_meta.csv").write_text(
        "m1,0,fd1,fd1a,4,100,USING\n"
        "m2,0,fd1,fd1b,4,100,USING\n"
        "m3,0,fd2,fd2a,4,100,USING\n"
        "m4,0,fd1,fd1c,4,100,USING\n"
    )
    (directory / "batch_task.csv").write_text(
        "M1,2,j_1,1,Terminated,100,400,150,10\n"  # 1.5 cores, 10 % of a machine's memory
        "R2_1,1,j_1,1,Terminated,100,400,100,5\n"
        "M1,1,j_2,1,Terminated,200,300,50,5\n"
    )
    (directory / "batch_instance.csv").write_text(
        "i1,M1,j_1,1,Terminated,100,300,m1,1,1,0,0,0,0\n"
        "i2,M1,j_1,1,Terminated,110,300,m2,1,1,0,0,0,0\n"
        "i3,R2_1,j_1,1,Terminated,120,400,m1,1,1,0,0,0,0\n"
        "i4,M1,j_2,1,Terminated,200,300,m3,1,1,0,0,0,0\n"
        "i5,M1,j_9,1,Terminated,200,300,m3,1,1,0,0,0,0\n"  # unknown task: skipped
        "i6,M1,j_2,1,Terminated,0,300,,1,1,0,0,0,0\n"  # no machine: skipped
    )


def test_the_alibaba_schema_is_read_with_its_units(tmp_path: Path) -> None:
    write_alibaba(tmp_path / "ali")
    decisions = {d.key.split("/")[-1]: d for d in decisions_from_alibaba(tmp_path / "ali")}
    assert set(decisions) == {"i1", "i2", "i3"}  # i4 has no rival in failure domain fd2
    i3 = decisions["i3"]
    assert i3.pod == PodDemand(1.0, 5.0, 2)  # 100 cpu units = 1 core; job j_1 has 2 tasks
    used = {c.name: c.used_cpu for c in i3.candidates}
    assert used["m1"] == pytest.approx(1.5)  # i1 runs there
    assert set(used) == {"m1", "m2", "m4"}  # rivals from fd1 only


def test_a_malformed_alibaba_file_is_named(tmp_path: Path) -> None:
    write_alibaba(tmp_path / "ali")
    (tmp_path / "ali" / "batch_task.csv").write_text("M1,2,j_1\n")
    with pytest.raises(DatasetError, match=r"batch_task.csv:1: 3 columns, expected 9"):
        decisions_from_alibaba(tmp_path / "ali")


def test_a_placement_that_ended_as_it_started_holds_nothing() -> None:
    decisions = decisions_from_placements(
        "t",
        [placement("flash", "a", 10.0, 10.0, 2.0), placement("next", "a", 10.0, None, 1.0)],
        NODES,
    )
    assert [d.key for d in decisions] == ["next"]
    assert all(c.used_cpu >= 0 for d in decisions for c in d.candidates)


def test_a_malformed_record_is_named(tmp_path: Path) -> None:
    source = REPO / "docs/evaluation/real-16n-15m/n16-p1-iat8-15m-s1__kube-scheduler.json"
    result = json.loads(source.read_text())
    result["pods"][0]["running_s"] = "soon"
    result["trace"]["path"] = str(REPO / result["trace"]["path"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(result))
    with pytest.raises(DatasetError, match="a malformed pod record"):
        decisions_from_replay(bad)
