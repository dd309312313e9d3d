"""Kubernetes resource quantities ("500m", "16Gi", "1e3") parsed exactly as the API server does.

Why our own parser: scheduling decisions compare sums of requests against allocatable capacity, so
a rounding difference from upstream would make opsche over-commit a node or refuse a fit that
kube-scheduler accepts. Upstream (``k8s.io/apimachinery/pkg/api/resource``) keeps quantities as
exact decimals and rounds *up* when asked for an integer or milli value; we keep a ``Fraction`` and
round the same way.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["QuantityError", "parse_quantity", "to_int", "to_milli"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# sign, digits with an optional fraction, then a suffix: binary, decimal SI or a decimal exponent.
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message says what was expected."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Return the exact value of a quantity such as ``"250m"`` (0.25) or ``"1Gi"`` (1073741824).

    Numbers (as YAML or JSON may deliver them) are accepted too. Raises ``QuantityError`` with a
    message fit to show a user.
    """
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a finite quantity")
        return Fraction(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(
            f"{text!r} is not a Kubernetes quantity (examples: 4, 500m, 16Gi, 1.5G, 1e3)"
        )
    value = Fraction(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix[:1] in ("e", "E"):
        value *= Fraction(10) ** int(suffix[1:])
    else:
        value *= _DECIMAL[suffix]
    return -value if match["sign"] == "-" else value


def to_milli(value: Fraction) -> int:
    """Milli-units rounded up, as ``Quantity.MilliValue()`` does (CPU is compared in millicores)."""
    return math.ceil(value * 1000)


def to_int(value: Fraction) -> int:
    """Whole units rounded up, as ``Quantity.Value()`` does (memory and pods are whole numbers)."""
    return math.ceil(value)
