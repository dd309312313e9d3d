"""Arithmetic and validation shared by the plugins, mirroring kube-scheduler's ``plugins/helper``.

Why a module of its own: several plugins (TaintToleration, NodeAffinity, PodTopologySpread,
InterPodAffinity) normalise raw scores the same way, and the exact integer arithmetic matters to
place pods like kube-scheduler does. Go's ``/`` on integers truncates toward zero while Python's
``//`` floors, so every division that may see a negative operand goes through ``go_div``; and Go's
``math.Round`` rounds halves away from zero where Python's ``round`` rounds them to even.
``qualified_name_errors`` checks label keys and resource names in plugin args the way apimachinery
validates them, so a typo in the config file fails at start-up instead of silently never matching.
"""

from __future__ import annotations

import math
import re
from collections.abc import MutableSequence

from opsche_daemon.framework.interface import MAX_NODE_SCORE, NodeScore

__all__ = [
    "default_normalize_score",
    "go_div",
    "go_round",
    "label_value_errors",
    "qualified_name_errors",
]

# A qualified name: optional DNS-subdomain prefix and "/", then a name part of up to 63 characters.
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_NAME_PART = 63
_MAX_PREFIX = 253


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero like Go's ``/`` on int64 (``b`` must not be 0)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round(x: float) -> int:
    """Round half away from zero like Go's ``math.Round`` (Python's ``round`` goes to even)."""
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return whole


def default_normalize_score(
    scores: MutableSequence[NodeScore],
    reverse: bool = False,
    max_priority: int = MAX_NODE_SCORE,
) -> None:
    """Scale ``scores`` in place so the highest becomes ``max_priority``; optionally reverse.

    Mirrors upstream ``helper.DefaultNormalizeScore``: each score becomes
    ``max_priority * score / max`` (integer division); with ``reverse`` it is then subtracted from
    ``max_priority``. When every score is zero (or negative) nothing is scaled, and with ``reverse``
    every node gets ``max_priority``.
    """
    max_count = 0
    for node_score in scores:
        max_count = max(max_count, node_score.score)
    if max_count == 0:
        if reverse:
            for node_score in scores:
                node_score.score = max_priority
        return
    for node_score in scores:
        value = go_div(max_priority * node_score.score, max_count)
        node_score.score = max_priority - value if reverse else value


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (a label key, upstream ``IsQualifiedName``), if not."""
    prefix, _, name = value.rpartition("/")
    errors: list[str] = []
    if "/" in prefix:
        return ["a qualified name must have at most one '/'"]
    if "/" in value and not prefix:
        errors.append("prefix part must be non-empty")
    elif prefix and (len(prefix) > _MAX_PREFIX or not _DNS_SUBDOMAIN.match(prefix)):
        errors.append("prefix part must be a lowercase DNS subdomain")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _MAX_NAME_PART:
        errors.append(f"name part must be no more than {_MAX_NAME_PART} characters")
    elif not _NAME_PART.match(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value (empty, or a name part), if it is not."""
    if not value:
        return []
    if len(value) > _MAX_NAME_PART:
        return [f"must be no more than {_MAX_NAME_PART} characters"]
    if not _NAME_PART.match(value):
        return [
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        ]
    return []
