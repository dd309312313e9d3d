"""How far a virtual-time replay agrees with the real cluster's, run by run.

A virtual result counts only where it is shown to agree with the real cluster. This module
matches the runs of two result directories (same trace file name, same label) and sets their
numbers side by side: effective usage (the target: within ``USAGE_TOLERANCE_PP`` points), the
pending pods over time (their mean and the mean absolute difference of the two 1 s series),
scheduling latency percentiles, deletions and opsche's counters.

The ``kube-scheduler`` rows compare two different schedulers on purpose: the real one against
its virtual stand-in (opsche with plans off); the parity test says they decide alike, and this
table says how alike their outcomes are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opsche_daemon.bench.report import backend
from opsche_daemon.trace.result import ReplayResult

__all__ = ["USAGE_TOLERANCE_PP", "Comparison", "compare", "format_fidelity"]

USAGE_TOLERANCE_PP = 0.5


@dataclass(frozen=True)
class Comparison:
    """One trace under one label, replayed on the real cluster and in virtual time."""

    trace: str
    label: str
    real: ReplayResult
    virtual: ReplayResult

    @property
    def usage_gap_pp(self) -> float:
        """Virtual minus real effective usage, percentage points."""
        return (self.virtual.summary.effective_usage - self.real.summary.effective_usage) * 100

    @property
    def pending_gap(self) -> float:
        """Mean absolute difference of the pending pods, second by second."""
        pairs = list(zip(self.real.samples, self.virtual.samples, strict=False))
        if not pairs:
            return 0.0
        return sum(abs(a.pending - b.pending) for a, b in pairs) / len(pairs)

    @property
    def within_tolerance(self) -> bool:
        """Usage within ``USAGE_TOLERANCE_PP`` points."""
        return abs(self.usage_gap_pp) <= USAGE_TOLERANCE_PP


def compare(real: Sequence[ReplayResult], virtual: Sequence[ReplayResult]) -> list[Comparison]:
    """Pairs (trace, label) present in both; each side must be of its own backend."""
    by_key = {(str(r.trace["name"]), r.scheduler.label): r for r in real if backend(r) == "cluster"}
    out = []
    for v in virtual:
        if backend(v) != "virtual":
            continue
        key = (str(v.trace["name"]), v.scheduler.label)
        if key in by_key:
            out.append(Comparison(key[0], key[1], by_key[key], v))
    out.sort(key=lambda c: (c.trace, c.label != "kube-scheduler", c.label))
    return out


def _mean_pending(result: ReplayResult) -> float:
    samples = result.samples
    return sum(s.pending for s in samples) / len(samples) if samples else 0.0


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def format_fidelity(comparisons: Sequence[Comparison]) -> str:
    """A Markdown table, real / virtual in each cell, and a verdict line."""
    head = [
        "trace",
        "scheduler",
        "usage % real / virtual (Δ pp)",
        "pending mean (mean abs Δ per s)",
        "latency p50 ms",
        "latency p95 ms",
        "latency mean ms",
        "disruptions",
        "solver runs",
        "plan activations",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in comparisons:
        r, v = c.real.summary, c.virtual.summary
        cells = [
            c.trace,
            c.label,
            f"{r.effective_usage * 100:.2f} / {v.effective_usage * 100:.2f} "
            f"({c.usage_gap_pp:+.2f})",
            f"{_mean_pending(c.real):.2f} / {_mean_pending(c.virtual):.2f} ({c.pending_gap:.2f})",
            f"{_ms(r.latency_p50_ms)} / {_ms(v.latency_p50_ms)}",
            f"{_ms(r.latency_p95_ms)} / {_ms(v.latency_p95_ms)}",
            f"{_ms(r.latency_mean_ms)} / {_ms(v.latency_mean_ms)}",
            f"{r.disruptions} / {v.disruptions}",
            f"{_count(r.solver_runs)} / {_count(v.solver_runs)}",
            f"{_count(r.plan_activations)} / {_count(v.plan_activations)}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    inside = sum(c.within_tolerance for c in comparisons)
    gaps = [abs(c.usage_gap_pp) for c in comparisons]
    worst = max(gaps) if gaps else 0.0
    lines += [
        "",
        f"{inside} of {len(comparisons)} runs within {USAGE_TOLERANCE_PP} points of usage; "
        f"the largest gap is {worst:.2f} points.",
    ]
    return "\n".join(lines) + "\n"
