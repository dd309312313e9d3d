from opsche_daemon.framework.plugins.priority_sort import PrioritySort, priority_sort_key
from tests.factories import api_pod


def test_name() -> None:
    assert PrioritySort().name == "PrioritySort"
    assert PrioritySort.NAME == "PrioritySort"


def test_higher_priority_first_then_earlier_timestamp() -> None:
    # upstream TestLess: "p1.priority less than p2.priority", "p1.priority greater than
    # p2.priority", "equal priority. p1 is added to schedulingQ earlier than p2"
    high = api_pod("high", spec={"priority": 100})
    low = api_pod("low", spec={"priority": 50})
    default = api_pod("default")  # no priority: 0
    queued = [
        (low, 1.0),
        (default, 0.5),
        (high, 3.0),
        (api_pod("high-early", spec={"priority": 100}), 2.0),
    ]
    ordered = sorted(queued, key=lambda pair: priority_sort_key(*pair))
    assert [p.name for p, _ in ordered] == ["high-early", "high", "low", "default"]


def test_less_mirrors_upstream() -> None:
    # upstream TestLess "equal priority. p2 is added to schedulingQ earlier than p1" and ties
    a = api_pod("a", spec={"priority": 10})
    b = api_pod("b", spec={"priority": 10})
    assert PrioritySort.less(a, 1.0, b, 2.0)
    assert not PrioritySort.less(b, 2.0, a, 1.0)
    # equal priority and timestamp: neither is less
    assert not PrioritySort.less(a, 1.0, b, 1.0)
    assert not PrioritySort.less(b, 1.0, a, 1.0)
    assert PrioritySort.less(api_pod("neg", spec={"priority": -5}), 9.0, api_pod("x"), 1.0) is False
    assert PrioritySort.sort_key(a, 1.0) == (-10, 1.0)
