"""One switch at a time: each configuration beside its twin with one switch flipped.

"Across settings" ranks configurations by their means; it cannot say what one switch does,
because a mean over many traces hides whether the switch helped on each. The grid's variants come
in twins that differ in one switch (``periodic`` and ``periodic-blocking``; ``periodic`` and
``periodic-no-preemption``), run on the same traces, so the fair comparison is pair by pair: the
twin with the switch against the twin without it, on the same trace, summed or averaged over
every such pair, with a count of the pairs where the switch lowered plan evictions. That count
is what keeps a total honest: a total can move on a few heavy traces while most pairs go the
other way.

Rows split by the number of priorities (preemption matters only where a pod can outrank
another) and by the other switch (blocking with and without default preemption), because the
two switches interact. A latency column for the highest priority says where a switch's cost
lands: turning preemption off makes the pods that would have preempted wait for a plan instead.
Pods that never ran are those that arrived and left (their trace lifetime ended, or a plan or
preemption deleted them) without ever running; a switch that "keeps usage level" while more
pods never run has moved work, not made it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from opsche_daemon.bench.report import Pair, disruptions_per_placed, plan_evictions
from opsche_daemon.trace.result import ReplayResult

__all__ = ["SWITCHES", "Switch", "TwinRow", "format_twins", "twin_rows"]

_DASH = "\u2013"  # an empty cell


@dataclass(frozen=True)
class Switch:
    """A switch and the label token that says it is flipped (``periodic`` + ``-blocking``)."""

    name: str
    token: str


SWITCHES = (
    Switch("blocking", "-blocking"),
    Switch("default preemption off", "-no-preemption"),
)


@dataclass(frozen=True)
class Side:
    """One side's numbers over a row's pairs (sums, or means where it says so)."""

    share_pct: float  # mean usage / pooled bound
    plan_evictions: int
    deletions: int  # of arriving pods, every cause (the paper's disruptions)
    placed: int  # pending pods plans placed
    never_ran: int
    p50_ms: float | None  # mean
    p95_s: float | None  # mean
    top_p95_s: float | None  # mean p95 of the highest priority


@dataclass(frozen=True)
class TwinRow:
    """The pairs of one switch in one group: without the switch, with it, and the counts."""

    switch: str
    group: str
    pairs: int
    without: Side
    with_: Side
    fewer_evictions: int  # pairs where the switch lowered plan evictions
    lower_ratio: int  # pairs where it lowered disruptions per placed pod
    ratio_pairs: int  # pairs where both ratios exist


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _top_p95_ms(result: ReplayResult) -> float | None:
    levels = result.summary.latency_by_priority
    if not levels:
        return result.summary.latency_p95_ms
    top = max(levels, key=lambda key: int(key) if key.isdigit() else -1)
    value = levels[top].get("p95_ms")
    return None if value is None else float(value)


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _side(runs: Sequence[ReplayResult]) -> Side:
    summaries = [r.summary for r in runs]
    return Side(
        share_pct=statistics.fmean(
            s.effective_usage / s.pooled_usage * 100.0 if s.pooled_usage > 0 else 0.0
            for s in summaries
        ),
        plan_evictions=sum(plan_evictions(r) for r in runs),
        deletions=sum(s.disruptions for s in summaries),
        placed=sum(s.plan_pods_placed or 0 for s in summaries),
        never_ran=sum(s.never_ran for s in summaries),
        p50_ms=_mean([s.latency_p50_ms for s in summaries]),
        p95_s=_s(_mean([s.latency_p95_ms for s in summaries])),
        top_p95_s=_s(_mean([_top_p95_ms(r) for r in runs])),
    )


def _group(pair: Pair, switch: Switch) -> str:
    priorities = "one priority" if pair.setting.priorities == 1 else "more priorities"
    others = [s.name for s in SWITCHES if s != switch and s.token in pair.label]
    return ", ".join([priorities, *others])


def twin_rows(pairs: Sequence[Pair]) -> tuple[TwinRow, ...]:
    """For every switch, the twins paired on the same trace, grouped (see the module docstring).

    A run counts when its label holds the switch's token and the label without it ran on the
    same trace; a switch no pair has gets no rows.
    """
    by_trace: dict[str, dict[str, Pair]] = {}
    for pair in pairs:
        by_trace.setdefault(pair.trace, {})[pair.label] = pair
    rows: list[TwinRow] = []
    for switch in SWITCHES:
        groups: dict[str, list[tuple[Pair, Pair]]] = {}
        for trace in sorted(by_trace):
            runs = by_trace[trace]
            for label in sorted(runs):
                twin = label.replace(switch.token, "", 1)
                if switch.token in label and twin in runs:
                    groups.setdefault(_group(runs[label], switch), []).append(
                        (runs[twin], runs[label])
                    )
        for group in sorted(groups, key=lambda g: (not g.startswith("one"), g)):
            twins = groups[group]
            ratios = [
                (disruptions_per_placed(off.run), disruptions_per_placed(on.run))
                for off, on in twins
            ]
            both = [(a, b) for a, b in ratios if a is not None and b is not None]
            rows.append(
                TwinRow(
                    switch=switch.name,
                    group=group,
                    pairs=len(twins),
                    without=_side([off.run for off, _ in twins]),
                    with_=_side([on.run for _, on in twins]),
                    fewer_evictions=sum(
                        1 for off, on in twins if plan_evictions(on.run) < plan_evictions(off.run)
                    ),
                    lower_ratio=sum(1 for a, b in both if b < a),
                    ratio_pairs=len(both),
                )
            )
    return tuple(rows)


def _num(value: float | None, digits: int) -> str:
    return _DASH if value is None else f"{value:.{digits}f}"


def _change(a: int, b: int) -> str:
    """``a → b`` with the relative change, where ``a`` is not zero."""
    if a == 0:
        return f"{a} → {b}"
    return f"{a} → {b} ({(b - a) / a * 100.0:+.0f} %)"


def format_twins(rows: Sequence[TwinRow]) -> str:
    """The Markdown section (empty without twins)."""
    if not rows:
        return ""
    lines = [
        "",
        "## One switch at a time",
        "",
        "Each configuration against its twin with one switch flipped, run on the same trace "
        "(`periodic` against `periodic-blocking`; `periodic` against `periodic-no-preemption`). "
        "Each cell reads without the switch → with it: usage as a share of the pooled bound and "
        "latencies are means over the pairs, the counts are sums. Plan evictions count every "
        "pod plans evicted; deletions are arriving pods deleted for any cause (preemption "
        "included); pods that never ran arrived and left without running. The counts after "
        "them are the pairs in which the switch lowered plan evictions, and disruptions per "
        "placed pod (of the pairs where both runs have the ratio).",
        "",
        "| switch | where | pairs | usage / pooled % | plan evictions | fewer evictions "
        "| deletions | pods plans placed | lower ratio | p50 ms | p95 s | p95 s, highest "
        "priority | pods that never ran |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r.without, r.with_
        lines.append(
            f"| {r.switch} | {r.group} | {r.pairs} "
            f"| {a.share_pct:.2f} → {b.share_pct:.2f} "
            f"| {_change(a.plan_evictions, b.plan_evictions)} "
            f"| {r.fewer_evictions} of {r.pairs} "
            f"| {_change(a.deletions, b.deletions)} "
            f"| {_change(a.placed, b.placed)} "
            f"| {r.lower_ratio} of {r.ratio_pairs} "
            f"| {_num(a.p50_ms, 0)} → {_num(b.p50_ms, 0)} "
            f"| {_num(a.p95_s, 2)} → {_num(b.p95_s, 2)} "
            f"| {_num(a.top_p95_s, 2)} → {_num(b.top_p95_s, 2)} "
            f"| {_change(a.never_ran, b.never_ran)} |"
        )
    return "\n".join(lines) + "\n"
