import pytest

from opsche_daemon.framework.interface import NodeScore
from opsche_daemon.framework.plugins.helpers import (
    default_normalize_score,
    go_div,
    go_round,
    label_value_errors,
    qualified_name_errors,
)


def _normalized(raw: list[int], reverse: bool) -> list[int]:
    scores = [NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    default_normalize_score(scores, reverse)
    return [s.score for s in scores]


@pytest.mark.parametrize(
    ("reverse", "raw", "expected"),
    [
        # upstream TestDefaultNormalizeScore cases, in order
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
        (False, [0, 0, 0, 0], [0, 0, 0, 0]),
        (True, [0, 0, 0, 0], [100, 100, 100, 100]),
    ],
)
def test_default_normalize_score(reverse: bool, raw: list[int], expected: list[int]) -> None:
    assert _normalized(raw, reverse) == expected


def test_go_div_truncates_toward_zero() -> None:
    assert go_div(7, 2) == 3
    assert go_div(-7, 2) == -3
    assert go_div(7, -2) == -3
    assert go_div(-1, 2) == 0


def test_go_round_rounds_half_away_from_zero() -> None:
    assert go_round(12.5) == 13
    assert go_round(37.5) == 38
    assert go_round(-2.5) == -3
    assert go_round(2.4999) == 2


def test_name_validation() -> None:
    assert qualified_name_errors("example.com/gpu") == []
    assert qualified_name_errors("cpu") == []
    assert qualified_name_errors("a/b/c")
    assert qualified_name_errors("/gpu")
    assert qualified_name_errors("Example.com/gpu")
    assert qualified_name_errors("invalid key")
    assert qualified_name_errors("x" * 64)
    assert label_value_errors("") == []
    assert label_value_errors("az-1.b_c") == []
    assert label_value_errors("-bad")
