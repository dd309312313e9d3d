from opsche_daemon.cache import Cache
from opsche_daemon.model.node import Node
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources


def node(name: str, cpu: int = 4000) -> Node:
    return Node(name=name, allocatable=Resources(milli_cpu=cpu, memory=2**34, pods=110))


def pod(name: str, node_name: str = "", cpu: int = 1000, phase: str = "Running") -> Pod:
    return Pod(
        namespace="ns",
        name=name,
        node_name=node_name,
        phase=phase if node_name else "Pending",
        requests=Resources(milli_cpu=cpu),
    )


def test_bound_pods_count_on_their_node_and_terminal_ones_do_not() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod("a", "n1"))
    cache.upsert_pod(pod("done", "n1", phase="Succeeded"))
    info = cache.snapshot().nodes["n1"]
    assert info.requested.milli_cpu == 1000
    assert [p.name for p in info.pods] == ["a"]


def test_assumed_pod_counts_until_forgotten() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    pending = pod("p")
    cache.upsert_pod(pending)
    cache.assume(pending, "n1")
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000
    assert cache.is_assumed("ns/p")
    # A stale unbound update racing the bind must not undo the assumption.
    cache.upsert_pod(pending)
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000
    cache.forget(cache.snapshot().nodes["n1"].pods[0])
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 0
    assert [p.name for p in cache.unbound()] == ["p"]


def test_the_watch_confirms_an_assumed_pod() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.assume(pod("p"), "n1")
    cache.upsert_pod(pod("p", "n1"))
    assert not cache.is_assumed("ns/p")
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000


def test_pods_on_an_unknown_node_count_once_it_appears() -> None:
    cache = Cache()
    cache.upsert_pod(pod("early", "n2"))
    assert "n2" not in cache.snapshot().nodes
    cache.upsert_node(node("n2"))
    assert cache.snapshot().nodes["n2"].requested.milli_cpu == 1000


def test_deleting_a_pod_frees_its_node_and_snapshots_are_immutable() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod("a", "n1"))
    before = cache.snapshot()
    cache.remove_pod("ns/a")
    after = cache.snapshot()
    assert before.nodes["n1"].requested.milli_cpu == 1000
    assert after.nodes["n1"].requested.milli_cpu == 0
    assert after.generation > before.generation


def test_moving_a_pod_between_nodes_moves_its_requests() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_node(node("n2"))
    cache.upsert_pod(pod("a", "n1"))
    cache.upsert_pod(pod("a", "n2"))
    snap = cache.snapshot()
    assert snap.nodes["n1"].requested.milli_cpu == 0
    assert snap.nodes["n2"].requested.milli_cpu == 1000
