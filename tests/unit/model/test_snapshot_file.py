import json
from pathlib import Path

import pytest

from opsche_daemon.model.snapshot_file import SnapshotFileError, dump_snapshot, load_snapshot

NODE = {
    "metadata": {"name": "n1", "labels": {"disk": "ssd"}, "managedFields": [{"x": 1}]},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
BOUND = {
    "metadata": {"name": "a", "namespace": "ns"},
    "spec": {
        "nodeName": "n1",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    },
    "status": {"phase": "Running"},
}
PENDING = {"metadata": {"name": "b", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}}
DONE = {
    "metadata": {"name": "c", "namespace": "ns"},
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Succeeded"},
}


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    dump_snapshot(
        path,
        nodes=[NODE],
        pods=[BOUND, PENDING, DONE],
        workloads=[
            {
                "kind": "ReplicaSet",
                "namespace": "ns",
                "name": "rs",
                "selector": {"matchLabels": {"app": "a"}},
            }
        ],
        budgets=[
            {
                "metadata": {"name": "b", "namespace": "ns"},
                "spec": {"selector": {"matchLabels": {"app": "a"}}},
                "status": {"disruptionsAllowed": 1},
            }
        ],
        generation=4,
    )
    assert "managedFields" not in path.read_text()
    snap = load_snapshot(path)
    assert snap.generation == 4
    assert [p.key for p in snap.nodes["n1"].pods] == ["ns/a"]
    assert snap.nodes["n1"].requested.milli_cpu == 1000
    assert [p.key for p in snap.pending] == ["ns/b"]
    assert len(snap.workload_selectors["ns"]) == 1
    assert snap.disruption_budgets[0].disruptions_allowed == 1


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "top level must be an object"),
        ({"pods": []}, "'nodes' is missing"),
        ({"nodes": [NODE, NODE], "pods": []}, "node 'n1' appears twice"),
        (
            {"nodes": [NODE], "pods": [{**BOUND, "spec": {"nodeName": "ghost"}}]},
            "unknown node 'ghost'",
        ),
        ({"nodes": [{"metadata": {}}], "pods": []}, r"nodes\[0\]: metadata.name is missing"),
        ({"nodes": "x", "pods": []}, "'nodes' must be a list"),
        (
            {"nodes": [{**NODE, "status": {"allocatable": {"cpu": "-4"}}}], "pods": []},
            r"nodes\[0\] \(n1\): status.allocatable.cpu: '-4' must not be negative",
        ),
        (
            {"nodes": [{**NODE, "status": {"capacity": {"memory": "lots"}}}], "pods": []},
            r"nodes\[0\] \(n1\): status.capacity.memory: 'lots' is not a Kubernetes quantity",
        ),
        (
            {
                "nodes": [NODE],
                "pods": [
                    {
                        **PENDING,
                        "spec": {
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]
                        },
                    }
                ],
            },
            r"pods\[0\] \(b\): spec.containers\[0\].resources.requests.cpu: 'abc' is not a "
            "Kubernetes quantity",
        ),
        (
            {
                "nodes": [NODE],
                "pods": [{**PENDING, "spec": {"containers": [], "overhead": {"cpu": "-1"}}}],
            },
            r"pods\[0\] \(b\): spec.overhead.cpu: '-1' must not be negative",
        ),
    ],
)
def test_mistakes_are_named(tmp_path: Path, document: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SnapshotFileError, match=message):
        load_snapshot(path)


def test_unreadable_and_non_json(tmp_path: Path) -> None:
    with pytest.raises(SnapshotFileError, match="cannot read"):
        load_snapshot(tmp_path / "missing.json")
    bad = tmp_path / "x.json"
    bad.write_text("{nope")
    with pytest.raises(SnapshotFileError, match="is not JSON"):
        load_snapshot(bad)


def test_every_bad_quantity_of_an_object_is_named_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    node = {**NODE, "status": {"allocatable": {"cpu": "-4", "memory": "x"}}}
    path.write_text(json.dumps({"nodes": [node], "pods": []}))
    with pytest.raises(SnapshotFileError) as info:
        load_snapshot(path)
    assert str(info.value).splitlines() == [
        f"{path}: nodes[0] (n1): status.allocatable.cpu: '-4' must not be negative",
        f"{path}: nodes[0] (n1): status.allocatable.memory: 'x' is not a Kubernetes quantity",
    ]
