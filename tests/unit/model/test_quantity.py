from fractions import Fraction

import pytest

from opsche_daemon.model.quantity import QuantityError, parse_quantity, to_int, to_milli


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4", Fraction(4)),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        ("16Gi", Fraction(16 * 2**30)),
        ("128Mi", Fraction(128 * 2**20)),
        ("1k", Fraction(1000)),
        ("1G", Fraction(10**9)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("100n", Fraction(1, 10**7)),
        (".5", Fraction(1, 2)),
        ("-2", Fraction(-2)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parses_like_the_api_server(text: str | int | float, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "4 cores", "1Gb", "1.2.3", "m", "Gi", "1ki"])
def test_rejects_non_quantities_with_a_helpful_message(text: str) -> None:
    with pytest.raises(QuantityError, match="not a Kubernetes quantity"):
        parse_quantity(text)


def test_rejects_booleans_and_infinities() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)
    with pytest.raises(QuantityError):
        parse_quantity(float("inf"))


def test_rounds_up_like_milli_value_and_value() -> None:
    # Upstream rounds towards +infinity: 1n of cpu is 1 millicore, 1.5 bytes is 2 bytes.
    assert to_milli(parse_quantity("1n")) == 1
    assert to_milli(parse_quantity("250m")) == 250
    assert to_int(parse_quantity("1.5")) == 2
    assert to_int(parse_quantity("1Ki")) == 1024
