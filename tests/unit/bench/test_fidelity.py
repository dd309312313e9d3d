"""Real-cluster and virtual-time runs of the same traces, matched and compared."""

from __future__ import annotations

from dataclasses import replace

import pytest

from opsche_daemon.bench.fidelity import compare, format_fidelity
from opsche_daemon.trace.result import ReplayResult, Sample
from tests.unit.bench.test_report import KS, run


def virtual(result: ReplayResult, pending: list[int]) -> ReplayResult:
    samples = tuple(Sample(float(t), 10, p, 0.5, 0.5) for t, p in enumerate(pending, 1))
    return replace(result, environment={"backend": "virtual"}, samples=samples)


def real(result: ReplayResult, pending: list[int]) -> ReplayResult:
    samples = tuple(Sample(float(t), 10, p, 0.5, 0.5) for t, p in enumerate(pending, 1))
    return replace(result, samples=samples)


def test_runs_are_matched_by_trace_and_label_and_compared() -> None:
    reals = [
        real(run("t1", KS, usage=0.90), [0, 2, 2]),
        real(run("t1", "periodic", usage=0.91), [0, 1, 0]),
        real(run("t2", "periodic", usage=0.91), [0, 0, 0]),  # no virtual twin
    ]
    virtuals = [
        virtual(run("t1", KS, usage=0.893), [0, 1, 3]),
        virtual(run("t1", "periodic", usage=0.92), [0, 1, 0]),
        virtual(run("t3", "periodic", usage=0.9), [0]),  # no real twin
        real(run("t1", "stable-queue", usage=0.9), [0]),  # not virtual: ignored
    ]
    comparisons = compare(reals, virtuals)
    assert [(c.trace, c.label) for c in comparisons] == [("t1", KS), ("t1", "periodic")]
    baseline, periodic = comparisons
    assert baseline.usage_gap_pp == pytest.approx(-0.7)
    assert not baseline.within_tolerance
    assert baseline.pending_gap == pytest.approx(2 / 3)
    assert periodic.usage_gap_pp == pytest.approx(1.0)
    assert periodic.pending_gap == 0
    text = format_fidelity(comparisons)
    assert "90.00 / 89.30 (-0.70)" in text
    assert "1.33 / 1.33 (0.67)" in text
    assert "0 of 2 runs within 0.5 points of usage; the largest gap is 1.00 points." in text
