"""Means across settings: every opsche configuration side by side, over the same traces.

The paper's tables answer "how does a variant do in this setting". An ablation asks another
question: does blocking disrupt less than non-blocking, does a shorter period buy usage? That
needs one number per variant, over many settings, and a fair one: every row must draw on the same
traces. A grid in progress breaks that by default, because its early variants have run on more
(and other) traces than its late ones; a row over a variant's easy traces would beat a row over
another's hard ones for no reason but the order the grid ran in. So a trace counts only if every
configuration in the tables was paired on it, and the report names the traces that leaves out.
The grid's parts make the opposite case too: the first runs of a new part (``all`` after
``tables``) cover one trace, and demanding them everywhere would shrink every table to that
trace. So the tables keep whichever of the two (fewer traces, or fewer configurations: those
paired on the most traces) keeps more runs, and the report names the configurations it left out.
Where a number is missing on some of a table's traces (a run whose plans placed nothing has no
disruptions per placed pod), its cell says over how many it is, as ``(n=…)``.

The grid's parts differ in kind as well as in time: the paper's Tables 5-14 keep the default
preemption on and Tables 15-24 turn it off. One table over both would re-base every mean of the
first part onto the traces the second has reached, silently, the day the second covers more than
half of them. So configurations with the default preemption off get their own tables
(``across_parts``), as in the paper, and each part keeps its own traces.

Each seed gets its own table (seeds differ: a seed whose pods live longer is harder for every
scheduler), and the seeds together get one more, a mean over all their traces, when more than one
seed has such traces. Disruptions per placed pod are the mean of the per-trace ratios, as the
per-setting tables and the goals table count them, so the numbers agree with the rest of the
report. Their two terms stand beside them, because a ratio can fall for the wrong reason: the
grid's blocking variants evict more than non-blocking ones at equal usage (by how much is in
docs/evaluation.md), yet show the lower ratio, because more of their solves end in an enforced
plan and each places more pending pods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from opsche_daemon.bench.report import (
    Pair,
    Stat,
    disruptions_per_placed,
    mean_std,
    plan_evictions,
)

__all__ = [
    "Across",
    "AcrossRow",
    "AcrossTable",
    "across_parts",
    "across_settings",
    "format_across",
]

_DASH = "\u2013"  # an empty cell
HEADING = "Across settings"


@dataclass(frozen=True)
class AcrossRow:
    """One configuration's means over a table's traces (``None``: no trace had the number)."""

    label: str
    usage_pp: Stat
    share_one_priority_pct: Stat | None
    share_more_priorities_pct: Stat | None
    disruptions_per_placed: Stat | None
    plan_evictions: Stat
    plan_pods_placed: Stat | None
    latency_p50_ms: Stat | None
    latency_p95_s: Stat | None
    solver_runs: Stat | None


@dataclass(frozen=True)
class AcrossTable:
    """The rows of one seed (or of all seeds) and the traces they average."""

    title: str
    traces: tuple[str, ...]
    one_priority: int
    more_priorities: int
    rows: tuple[AcrossRow, ...]


@dataclass(frozen=True)
class Across:
    """The tables, and a line per group of traces left out of them (and why)."""

    labels: tuple[str, ...]
    tables: tuple[AcrossTable, ...]
    left_out: tuple[str, ...]


def _stat(values: Sequence[float | None]) -> Stat | None:
    present = [v for v in values if v is not None]
    return mean_std(present) if present else None


def _count(n: int | None) -> float | None:
    return None if n is None else float(n)


def _minus(a: float | None, b: float | None, scale: float = 1.0) -> float | None:
    return None if a is None or b is None else (a - b) / scale


def _seed_text(seed: object) -> str:
    return "unknown seed" if seed is None else f"seed {seed}"


def _seed_order(seed: object) -> tuple[bool, float, str]:
    """Seeds in numeric order (seed 10 after seed 2), unknown last."""
    number = seed if isinstance(seed, int | float) and not isinstance(seed, bool) else math.inf
    return (seed is None, float(number), str(seed))


def _row(label: str, pairs: Sequence[Pair]) -> AcrossRow:
    shares: dict[bool, list[float | None]] = {True: [], False: []}
    for pair in pairs:
        s = pair.run.summary
        share = s.effective_usage / s.pooled_usage * 100.0 if s.pooled_usage > 0 else None
        shares[pair.setting.priorities == 1].append(share)
    usage = [
        (p.run.summary.effective_usage - p.baseline.summary.effective_usage) * 100.0 for p in pairs
    ]
    return AcrossRow(
        label=label,
        usage_pp=mean_std(usage),
        share_one_priority_pct=_stat(shares[True]),
        share_more_priorities_pct=_stat(shares[False]),
        disruptions_per_placed=_stat([disruptions_per_placed(p.run) for p in pairs]),
        plan_evictions=mean_std([float(plan_evictions(p.run)) for p in pairs]),
        plan_pods_placed=_stat([_count(p.run.summary.plan_pods_placed) for p in pairs]),
        latency_p50_ms=_stat(
            [_minus(p.run.summary.latency_p50_ms, p.baseline.summary.latency_p50_ms) for p in pairs]
        ),
        latency_p95_s=_stat(
            [
                _minus(p.run.summary.latency_p95_ms, p.baseline.summary.latency_p95_ms, 1000.0)
                for p in pairs
            ]
        ),
        solver_runs=_stat([_count(p.run.summary.solver_runs) for p in pairs]),
    )


def _table(
    title: str,
    labels: Sequence[str],
    traces: Sequence[str],
    by_trace: dict[str, dict[str, Pair]],
) -> AcrossTable:
    rows = tuple(_row(label, [by_trace[t][label] for t in traces]) for label in labels)
    one = sum(1 for t in traces if next(iter(by_trace[t].values())).setting.priorities == 1)
    return AcrossTable(title, tuple(traces), one, len(traces) - one, rows)


def _trace_seed(pairs: Sequence[Pair]) -> tuple[object, str | None]:
    """The trace's seed, or a reason to leave it out: its runs disagree on which seed it is."""
    seeds = {
        repr(r.trace.get("seed")): r.trace.get("seed") for p in pairs for r in (p.baseline, p.run)
    }
    if len(seeds) > 1:
        return None, f"its runs disagree on the seed ({', '.join(sorted(seeds))})"
    return next(iter(seeds.values())), None


def _widest(coverage: dict[str, int], ran: Sequence[set[str]]) -> tuple[str, ...]:
    """The configurations whose common traces hold the most runs (configurations x traces).

    The candidates are nested: the configurations paired on at least ``c`` of the traces in
    ``ran`` (each trace's set of configurations; ``coverage`` counts them per configuration),
    for every ``c`` some configuration has. A tie goes to the candidate with more traces, the
    broader base for a mean.
    """
    labels = tuple(coverage)
    best: tuple[int, int, tuple[str, ...]] = (-1, -1, tuple(labels))
    for c in sorted(set(coverage.values()), reverse=True):
        chosen = tuple(label for label in labels if coverage[label] >= c)
        traces = sum(1 for r in ran if r.issuperset(chosen))
        best = max(best, (len(chosen) * traces, traces, chosen), key=lambda b: (b[0], b[1]))
    return best[2]


def across_settings(pairs: Sequence[Pair]) -> Across:
    """Per seed (trace header ``seed``), the means over the traces every configuration ran.

    The configurations are those whose common traces hold the most runs (``_widest``); the rest
    are named in ``left_out`` with the number of traces they were paired on. A paired trace on
    which some of the chosen configurations has no pair is left out of every table, as is one
    whose runs disagree on the seed; ``left_out`` says which and why, one line per seed and
    reason. (Traces with no pair at all are the report's unpaired runs.)
    """
    every_label = tuple(sorted({p.label for p in pairs}))
    by_trace: dict[str, dict[str, Pair]] = {}
    for pair in pairs:
        by_trace.setdefault(pair.trace, {})[pair.label] = pair
    seeded = {trace: _trace_seed(list(runs.values())) for trace, runs in by_trace.items()}
    ran = [set(by_trace[t]) for t, (_, problem) in seeded.items() if problem is None]
    coverage = {label: sum(1 for r in ran if label in r) for label in every_label}
    labels = _widest(coverage, ran)
    dropped = [label for label in every_label if label not in labels]
    seeds: dict[object, list[str]] = {}
    left: dict[tuple[str, str], list[str]] = {}
    for trace in sorted(by_trace):
        runs = by_trace[trace]
        seed, problem = seeded[trace]
        where = "" if problem is not None else _seed_text(seed)
        missing = [label for label in labels if label not in runs]
        if problem is None and missing:
            problem = (
                f"{len(missing)} of {_plural(len(labels), 'configuration')} not paired "
                f"({', '.join(missing)})"
            )
        if problem is None:
            seeds.setdefault(seed, []).append(trace)
        else:
            left.setdefault((where, problem), []).append(trace)
    order = sorted(seeds, key=_seed_order)
    tables = [_table(_seed_text(seed), labels, seeds[seed], by_trace) for seed in order]
    if len(tables) > 1:
        tables.append(
            _table("all seeds", labels, [t for seed in order for t in seeds[seed]], by_trace)
        )
    left_out = tuple(
        f"{where + ', ' if where else ''}{_plural(len(traces), 'trace')}: {problem}: "
        f"{', '.join(traces)}"
        for (where, problem), traces in left.items()
    )
    if dropped:
        counts = ", ".join(f"{label} ({coverage[label]} of {len(ran)})" for label in dropped)
        left_out += (
            f"{_plural(len(dropped), 'configuration')}, paired on too few of the traces to share "
            f"them (traces paired): {counts}",
        )
    return Across(labels, tuple(tables), left_out)


def across_parts(pairs: Sequence[Pair]) -> tuple[tuple[str, Across], ...]:
    """``across_settings`` per grid part: a heading and its tables, preemption off last if any."""
    off = [p for p in pairs if p.run.scheduler.preemption is False]  # as the run recorded it
    on = [p for p in pairs if p.run.scheduler.preemption is not False]
    parts = [(HEADING, across_settings(on))]
    if off:
        parts.append((f"{HEADING}, default preemption off", across_settings(off)))
    return tuple(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cell(stat: Stat | None, digits: int, of: int, *, signed: bool) -> str:
    """The mean, with ``(n=…)`` when it is over fewer than the table's ``of`` traces."""
    if stat is None:
        return _DASH
    value = round(stat.mean, digits)
    value = 0.0 if value == 0 else value  # no "-0.00"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text if stat.n == of else f"{text} (n={stat.n})"


def format_across(across: Across, heading: str = HEADING) -> str:
    """The Markdown section (empty without pairs): a table per seed, one over all, what is left."""
    if not across.labels:
        return ""
    lines = [
        "",
        f"## {heading}",
        "",
        "Each configuration's mean over every trace on which all "
        f"{_plural(len(across.labels), 'configuration')} were paired, so every row of a table "
        "draws on the same traces: Δ usage (percentage points) and Δ latency against the "
        "baseline run of the same trace, usage as a share of the pooled bound (with one "
        "priority and with more), plans' disruptions per placed pod (the mean of the per-trace "
        "ratios), and its two terms as means per trace (every pod plans evicted; pending pods "
        "plans placed: a lower ratio from more placed pods is not fewer evictions), and solver "
        "runs. `(n=…)` marks a mean over fewer traces, where the others lack "
        "the number. The last table, where there are several seeds, is the mean over all their "
        "traces (each seed weighs as many traces as it has). A configuration paired on too few "
        "traces (a grid part just begun) is left out instead of the traces, where that keeps "
        "more runs in the tables; the list at the end names it.",
    ]
    if not across.tables:
        lines += ["", "No trace has a pair for every configuration yet."]
    for table in across.tables:
        n = len(table.traces)
        lines += [
            "",
            f"### {table.title[0].upper()}{table.title[1:]}: {_plural(n, 'trace')} "
            f"({table.one_priority} with one priority, {table.more_priorities} with more)",
            "",
            "| scheduler | Δ usage, points | usage / pooled %, one priority | "
            "usage / pooled %, more priorities | disruptions per placed pod | plan evictions | "
            "pods plans placed | Δ p50 ms | Δ p95 s | solver runs |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.label} | {_cell(r.usage_pp, 2, n, signed=True)} "
            f"| {_cell(r.share_one_priority_pct, 2, table.one_priority, signed=False)} "
            f"| {_cell(r.share_more_priorities_pct, 2, table.more_priorities, signed=False)} "
            f"| {_cell(r.disruptions_per_placed, 2, n, signed=False)} "
            f"| {_cell(r.plan_evictions, 0, n, signed=False)} "
            f"| {_cell(r.plan_pods_placed, 0, n, signed=False)} "
            f"| {_cell(r.latency_p50_ms, 0, n, signed=True)} "
            f"| {_cell(r.latency_p95_s, 2, n, signed=True)} "
            f"| {_cell(r.solver_runs, 0, n, signed=False)} |"
            for r in table.rows
        ]
    if across.left_out:
        lines += ["", "Left out of these tables:", ""]
        lines += [f"- {line}" for line in across.left_out]
    return "\n".join(lines) + "\n"
