from opsche_daemon.cache import Cache
from tests.factories import node, pod


def test_bound_pods_count_on_their_node_and_terminal_ones_do_not() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod("a", 1000, on="n1"))
    cache.upsert_pod(pod("done", 1000, on="n1", phase="Succeeded"))
    info = cache.snapshot().nodes["n1"]
    assert info.requested.milli_cpu == 1000
    assert [p.name for p in info.pods] == ["a"]


def test_assumed_pod_counts_until_forgotten() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    pending = pod("p", 1000)
    cache.upsert_pod(pending)
    cache.assume(pending, "n1")
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000
    assert cache.is_assumed("default/p")
    # A stale unbound update racing the bind must not undo the assumption.
    cache.upsert_pod(pending)
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000
    cache.forget(cache.snapshot().nodes["n1"].pods[0])
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 0
    assert [p.name for p in cache.unbound()] == ["p"]


def test_the_watch_confirms_an_assumed_pod() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.assume(pod("p", 1000), "n1")
    cache.upsert_pod(pod("p", 1000, on="n1"))
    assert not cache.is_assumed("default/p")
    assert cache.snapshot().nodes["n1"].requested.milli_cpu == 1000


def test_pods_on_an_unknown_node_count_once_it_appears() -> None:
    cache = Cache()
    cache.upsert_pod(pod("early", 1000, on="n2"))
    assert "n2" not in cache.snapshot().nodes
    cache.upsert_node(node("n2"))
    assert cache.snapshot().nodes["n2"].requested.milli_cpu == 1000


def test_deleting_a_pod_frees_its_node_and_snapshots_are_immutable() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_pod(pod("a", 1000, on="n1"))
    before = cache.snapshot()
    cache.remove_pod("default/a")
    after = cache.snapshot()
    assert before.nodes["n1"].requested.milli_cpu == 1000
    assert after.nodes["n1"].requested.milli_cpu == 0
    assert after.generation > before.generation


def test_moving_a_pod_between_nodes_moves_its_requests() -> None:
    cache = Cache()
    cache.upsert_node(node("n1"))
    cache.upsert_node(node("n2"))
    cache.upsert_pod(pod("a", 1000, on="n1"))
    cache.upsert_pod(pod("a", 1000, on="n2"))
    snap = cache.snapshot()
    assert snap.nodes["n1"].requested.milli_cpu == 0
    assert snap.nodes["n2"].requested.milli_cpu == 1000
