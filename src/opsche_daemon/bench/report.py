"""``opsche bench report``: replay result files in, the paper's tables and Figure 3 out.

Seed 000 reports every metric as a PAIRED difference: opsche's run minus kube-scheduler's run of
the same trace, then mean ± sample std over the five seeds of a setting (nodes x priorities x
mean inter-arrival). Pairing removes most of the trace-to-trace variance (one seed's trace may be
far harder than another's), which is why a difference of a point or two is visible at all; an
unpaired comparison of means would drown it. So the pairing is strict: a run is paired only with
the kube-scheduler run of the trace with the same name, and whatever cannot be paired is listed
in the report, never dropped in silence.

Absolute numbers are reported beside the differences where a difference means nothing (solver
runs and plan activations: kube-scheduler has none) and in the ceilings table: each scheduler's
usage against the trace's capped demand and pooled bound (``opsche_daemon.trace.bounds``), which
says how much of the remaining room a scheduler took, not just who won.

Only result files are read, so a report can be redone or extended without replaying anything.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from opsche_daemon.bench.paper import PaperCell, PaperKey
from opsche_daemon.trace.result import (
    RESULT_FORMAT,
    DeletionCause,
    ReplayResult,
    ResultFileError,
    is_result_name,
    read_result_json,
    result_from_json,
)

__all__ = [
    "BASELINE",
    "CEILING_METRICS",
    "DIFFERENCE_METRICS",
    "Cell",
    "Metric",
    "Pair",
    "Pairing",
    "Report",
    "ReportError",
    "Setting",
    "Stat",
    "build_report",
    "disruptions_per_placed",
    "format_markdown",
    "format_stat",
    "load_results",
    "mean_std",
    "paired_differences",
    "plan_evictions",
    "write_csv",
    "write_figure",
]

BASELINE = "kube-scheduler"
"""The scheduler label of the baseline runs every opsche run is paired with."""

TRACE_FORMAT = "opsche-trace/v1"
TOTAL = "total"
_DASH = "\u2013"  # an empty cell
_MINUS = "\u2212"  # as in "opsche \u2212 kube-scheduler"


class ReportError(ValueError):
    """Results that cannot be reported on; the message names the file or trace."""


@dataclass(frozen=True)
class Metric:
    """How a metric is titled and printed: decimals of the mean and std, and a sign or not."""

    title: str
    mean_digits: int
    std_digits: int
    signed: bool
    per_priority: bool = False


DIFFERENCE_METRICS: dict[str, Metric] = {
    "usage_pp": Metric("Δ effective usage (percentage points)", 1, 1, signed=True),
    "latency_mean_ms": Metric(
        "Δ scheduling latency, mean (ms)", 0, 0, signed=True, per_priority=True
    ),
    "latency_p50_ms": Metric("Δ scheduling latency, p50 (ms)", 0, 0, signed=True),
    "latency_p95_ms": Metric("Δ scheduling latency, p95 (ms)", 0, 0, signed=True),
    "disruptions": Metric("Δ pod deletions (disruptions)", 1, 1, signed=True, per_priority=True),
    "solver_runs": Metric("Solver runs (opsche)", 0, 1, signed=False),
    "plan_activations": Metric("Plan activations (opsche)", 0, 1, signed=False),
    "plan_pods_placed": Metric("Pending pods placed by plans (opsche)", 0, 1, signed=False),
    "disruptions_per_placed": Metric(
        "Plan disruptions per placed pod (opsche; moves and evictions of every pod, "
        "initial ones included, over the pending pods plans placed)",
        2,
        2,
        signed=False,
    ),
}
"""Paired metrics (per run: opsche minus kube-scheduler on the same trace, or opsche's own)."""

CEILING_METRICS: dict[str, Metric] = {
    "effective_usage_pct": Metric("usage %", 1, 1, signed=False),
    "limit_usage_pct": Metric("capped demand %", 1, 1, signed=False),
    "pooled_usage_pct": Metric("pooled bound %", 1, 1, signed=False),
    "share_of_pooled_pct": Metric("usage / pooled %", 1, 1, signed=False),
}
"""Absolute metrics of every run, kube-scheduler included."""


GOAL_SHARE_OF_POOLED_PCT: dict[int, float] = {1: 99.5}
"""opsche's usage goal as a share of the pooled bound, by priority levels (others: the default)."""
GOAL_SHARE_DEFAULT_PCT = 99.0
GOAL_DISRUPTIONS_PER_PLACED = 1.0
"""At most one move or eviction per pending pod a plan places."""


class Setting(NamedTuple):
    """A trace setting: what the five seeds of a cell share."""

    nodes: int
    priorities: int
    mean_interarrival_s: float | None

    @property
    def label(self) -> str:
        """As a column heading: ``16 nodes · 1 prio · 8 s``."""
        gap = "?" if self.mean_interarrival_s is None else f"{self.mean_interarrival_s:g}"
        return f"{self.nodes} nodes · {self.priorities} prio · {gap} s"

    @property
    def order(self) -> tuple[int, int, float]:
        """Sort key: priorities, nodes, inter-arrival (unknown last), as the paper's columns."""
        gap = math.inf if self.mean_interarrival_s is None else self.mean_interarrival_s
        return (self.priorities, self.nodes, gap)


def _trace_name(result: ReplayResult) -> str:
    return str(result.trace["name"])


def backend(result: ReplayResult) -> str:
    """``cluster`` (a real API server) or ``virtual`` (the in-process, virtual-time replay)."""
    return str(result.environment.get("backend") or "cluster")


def _setting(result: ReplayResult) -> Setting:
    header = result.trace
    gap = header.get("mean_interarrival_s")
    return Setting(
        int(header["nodes"]), int(header["priorities"]), None if gap is None else float(gap)
    )


def _header_problem(header: dict[str, Any]) -> str | None:
    name = header.get("name")
    if not isinstance(name, str) or not name:
        return f"trace.name must be a non-empty string, got {name!r}"
    for key in ("nodes", "priorities"):
        value = header.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"trace.{key} must be a positive integer, got {value!r}"
    gap = header.get("mean_interarrival_s")
    if gap is not None and (isinstance(gap, bool) or not isinstance(gap, int | float)):
        return f"trace.mean_interarrival_s must be a number or null, got {gap!r}"
    return None


def load_results(directory: Path) -> list[ReplayResult]:
    """Every replay result under ``directory`` (recursively), in path order.

    ``*.json`` and ``*.json.gz`` files are read; temporary files of a run still writing
    (``*.tmp``) are not, and trace files (which may sit beside their results) are skipped.
    Anything else that is not a well-formed result is a ``ReportError`` naming the file: a report
    that quietly left a run out would shift a mean without saying so.
    """
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    results = []
    for path in sorted(p for p in directory.rglob("*.json*") if is_result_name(p.name)):
        if not path.is_file():
            continue
        try:
            data = read_result_json(path)
        except OSError as exc:
            raise ReportError(f"{path}: cannot read: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ReportError(f"{path}: not JSON: {exc}") from None
        if isinstance(data, dict) and data.get("format") == TRACE_FORMAT:
            continue
        if not isinstance(data, dict) or data.get("format") != RESULT_FORMAT:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ReportError(
                f"{path}: not a replay result (format {RESULT_FORMAT!r}, got {got!r})"
            )
        try:
            result = result_from_json(data, str(path))
        except ResultFileError as exc:
            raise ReportError(str(exc)) from None
        problem = _header_problem(result.trace)
        if problem is not None:
            raise ReportError(f"{path}: {problem}")
        results.append(result)
    return results


@dataclass(frozen=True)
class Pair:
    """One opsche run and the kube-scheduler run of the same trace."""

    trace: str
    setting: Setting
    label: str
    baseline: ReplayResult
    run: ReplayResult

    def values(self) -> dict[tuple[str, str], float | None]:
        """Each paired metric, by ``(metric, priority)`` (priority ``total`` or ``"1"``...)."""
        ks, op = self.baseline.summary, self.run.summary
        out: dict[tuple[str, str], float | None] = {
            ("usage_pp", TOTAL): (op.effective_usage - ks.effective_usage) * 100.0,
            ("latency_mean_ms", TOTAL): _minus(op.latency_mean_ms, ks.latency_mean_ms),
            ("latency_p50_ms", TOTAL): _minus(op.latency_p50_ms, ks.latency_p50_ms),
            ("latency_p95_ms", TOTAL): _minus(op.latency_p95_ms, ks.latency_p95_ms),
            ("disruptions", TOTAL): float(op.disruptions - ks.disruptions),
            ("solver_runs", TOTAL): _float(op.solver_runs),
            ("plan_activations", TOTAL): _float(op.plan_activations),
            ("plan_pods_placed", TOTAL): _float(op.plan_pods_placed),
            ("disruptions_per_placed", TOTAL): disruptions_per_placed(self.run),
        }
        if self.setting.priorities > 1:
            for level in range(1, self.setting.priorities + 1):
                key = str(level)
                out["latency_mean_ms", key] = _minus(
                    _float((op.latency_by_priority.get(key) or {}).get("mean_ms")),
                    _float((ks.latency_by_priority.get(key) or {}).get("mean_ms")),
                )
                out["disruptions", key] = float(
                    op.disruptions_by_priority.get(key, 0) - ks.disruptions_by_priority.get(key, 0)
                )
        return out


def disruptions_per_placed(result: ReplayResult) -> float | None:
    """Plan evictions (every pod's) per pending pod plans placed; None where either is unknown.

    The goal is at most one (``GOAL_DISRUPTIONS_PER_PLACED``). Evictions are plans' only
    Eviction API calls, so the ``evicted`` cause counts their moves and evictions, initial pods
    included (from the pod records where the summary predates ``all_disruptions_by_cause``). A
    run whose plans placed nothing has no ratio (its evictions show in the deletions table).
    """
    placed = result.summary.plan_pods_placed
    if not placed:
        return None
    return plan_evictions(result) / placed


def plan_evictions(result: ReplayResult) -> int:
    """Every pod plans evicted (moves and evictions, initial pods included): the ratio's numerator.

    Read on its own it says what the ratio hides: a variant whose plans place more pods lowers
    its ratio even while it evicts more.
    """
    causes = result.summary.all_disruptions_by_cause
    if causes is not None:
        return causes.get(DeletionCause.EVICTED.value, 0)
    return sum(1 for p in result.pods if p.cause is DeletionCause.EVICTED)


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


@dataclass(frozen=True)
class Pairing:
    """The pairs, and a line for every run that could not be paired (and why)."""

    pairs: tuple[Pair, ...]
    unpaired: tuple[str, ...]


def paired_differences(results: Sequence[ReplayResult]) -> Pairing:
    """Pair each opsche run with the kube-scheduler run of the trace with the same name.

    Unpaired, and listed: opsche runs of a trace with no kube-scheduler run, kube-scheduler runs
    of a trace no opsche run replayed, a second run of the same label on the same trace (the first
    is used; two would weigh one seed twice), and a run whose trace header (nodes, priorities,
    inter-arrival) disagrees with its baseline's, which means two different traces share a name.
    """
    by_trace: dict[str, list[ReplayResult]] = {}
    for result in results:
        by_trace.setdefault(_trace_name(result), []).append(result)
    pairs: list[Pair] = []
    unpaired: list[str] = []
    for name, runs in by_trace.items():
        baselines = [r for r in runs if r.scheduler.label == BASELINE]
        others = [r for r in runs if r.scheduler.label != BASELINE]
        unpaired.extend(
            f"{BASELINE} on trace {name}: another {BASELINE} run of this trace (the first is used)"
            for _ in baselines[1:]
        )
        if not baselines:
            unpaired.extend(
                f"{r.scheduler.label} on trace {name}: no {BASELINE} run of this trace"
                for r in others
            )
            continue
        baseline = baselines[0]
        if not others:
            unpaired.append(f"{BASELINE} on trace {name}: no opsche run of this trace")
        seen: set[str] = set()
        for run in others:
            label = run.scheduler.label
            if label in seen:
                unpaired.append(
                    f"{label} on trace {name}: another {label} run of this trace "
                    "(the first is used)"
                )
            elif backend(run) != backend(baseline):
                unpaired.append(
                    f"{label} on trace {name}: a {backend(run)} run cannot be paired with a "
                    f"{backend(baseline)} {BASELINE} run"
                )
            elif _setting(run) != _setting(baseline):
                unpaired.append(
                    f"{label} on trace {name}: its trace header ({_setting(run).label}) differs "
                    f"from the {BASELINE} run's ({_setting(baseline).label})"
                )
            else:
                seen.add(label)
                pairs.append(Pair(name, _setting(run), label, baseline, run))
    return Pairing(tuple(pairs), tuple(unpaired))


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation (ddof=1; ``None`` with a single value) of ``n`` values."""

    mean: float
    std: float | None
    n: int


def mean_std(values: Sequence[float]) -> Stat:
    """The mean and sample standard deviation of ``values`` (at least one)."""
    if not values:
        raise ValueError("mean_std of no values")
    std = statistics.stdev(values) if len(values) > 1 else None
    return Stat(statistics.fmean(values), std, len(values))


@dataclass(frozen=True)
class Cell:
    """One aggregated number: a metric of a scheduler in a setting (and priority level)."""

    setting: Setting
    scheduler: str
    metric: str
    priority: str
    stat: Stat


@dataclass(frozen=True)
class Report:
    """Everything the Markdown, CSV and figure show."""

    runs: int
    traces: int
    pairs: tuple[Pair, ...]
    unpaired: tuple[str, ...]
    differences: tuple[Cell, ...]
    ceilings: tuple[Cell, ...]
    backends: tuple[str, ...] = ("cluster",)

    def labels(self) -> list[str]:
        """The opsche configurations that were paired, in report order."""
        return sorted({p.label for p in self.pairs})


def _ceiling_values(result: ReplayResult) -> dict[str, float | None]:
    s = result.summary
    share = s.effective_usage / s.pooled_usage * 100.0 if s.pooled_usage > 0 else None
    return {
        "effective_usage_pct": s.effective_usage * 100.0,
        "limit_usage_pct": s.limit_usage * 100.0,
        "pooled_usage_pct": s.pooled_usage * 100.0,
        "share_of_pooled_pct": share,
    }


def _cells(groups: dict[tuple[Setting, str, str, str], list[float | None]]) -> tuple[Cell, ...]:
    cells = []
    for (setting, scheduler, metric, priority), raw in groups.items():
        values = [v for v in raw if v is not None]
        if values:
            cells.append(Cell(setting, scheduler, metric, priority, mean_std(values)))
    cells.sort(key=lambda c: (c.setting.order, _label_order(c.scheduler), c.metric, c.priority))
    return tuple(cells)


def _label_order(label: str) -> tuple[int, str]:
    return (0 if label == BASELINE else 1, label)


def build_report(results: Sequence[ReplayResult]) -> Report:
    """Pair the runs and aggregate every metric per setting and scheduler label."""
    pairing = paired_differences(results)
    differences: dict[tuple[Setting, str, str, str], list[float | None]] = {}
    for pair in pairing.pairs:
        for (metric, priority), value in pair.values().items():
            differences.setdefault((pair.setting, pair.label, metric, priority), []).append(value)
    ceilings: dict[tuple[Setting, str, str, str], list[float | None]] = {}
    for result in results:
        for metric, value in _ceiling_values(result).items():
            key = (_setting(result), result.scheduler.label, metric, TOTAL)
            ceilings.setdefault(key, []).append(value)
    return Report(
        runs=len(results),
        traces=len({_trace_name(r) for r in results}),
        pairs=pairing.pairs,
        unpaired=pairing.unpaired,
        differences=_cells(differences),
        ceilings=_cells(ceilings),
        backends=tuple(sorted({backend(r) for r in results})),
    )


def _number(value: float, digits: int, *, signed: bool) -> str:
    value = round(value, digits)
    if value == 0:
        value = 0.0  # no "-0.0"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_stat(stat: Stat, metric: Metric) -> str:
    """``+1.4 ± 0.3``, or ``+1.4 (n=1)`` when a single trace went in."""
    mean = _number(stat.mean, metric.mean_digits, signed=metric.signed)
    if stat.std is None:
        return f"{mean} (n=1)"
    return f"{mean} ± {_number(stat.std, metric.std_digits, signed=False)}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _priorities(n: int) -> str:
    return "1 priority" if n == 1 else f"{n} priorities"


def _paper_text(cell: PaperCell | None, metric: Metric) -> str:
    if cell is None:
        return ""
    stat = Stat(cell.mean, cell.std, 5)
    return f" (paper {format_stat(stat, metric)})"


def _difference_tables(
    report: Report, paper: Mapping[PaperKey, PaperCell] | None = None
) -> list[str]:
    index = {(c.setting, c.scheduler, c.metric, c.priority): c.stat for c in report.differences}

    def published(setting: Setting, label: str, name: str, level: str) -> PaperCell | None:
        if paper is None or setting.mean_interarrival_s is None:
            return None
        return paper.get(
            PaperKey(
                name,
                setting.nodes,
                setting.priorities,
                setting.mean_interarrival_s,
                label,
                level,
            )
        )

    lines: list[str] = []
    settings = sorted({p.setting for p in report.pairs}, key=lambda s: s.order)
    for name, metric in DIFFERENCE_METRICS.items():
        for priorities in sorted({s.priorities for s in settings}):
            columns = [s for s in settings if s.priorities == priorities]
            labels = sorted({p.label for p in report.pairs if p.setting.priorities == priorities})
            levels = [TOTAL]
            if metric.per_priority and priorities > 1:
                levels += [str(level) for level in range(1, priorities + 1)]
            rows = []
            for label in labels:
                for level in levels:
                    head = label if level == TOTAL else f"{label} · p{level}"
                    cells = [
                        (index.get((s, label, name, level)), published(s, label, name, level))
                        for s in columns
                    ]
                    rows.append(
                        [
                            head,
                            *(
                                (_DASH if c is None else format_stat(c, metric))
                                + _paper_text(p, metric)
                                for c, p in cells
                            ),
                        ]
                    )
            lines += [
                "",
                f"### {metric.title}, {_priorities(priorities)}",
                "",
            ]
            lines += _table(["scheduler", *(s.label for s in columns)], rows)
    return lines


def _ceiling_table(report: Report) -> list[str]:
    index = {(c.setting, c.scheduler, c.metric): c.stat for c in report.ceilings}
    keys = sorted(
        {(c.setting, c.scheduler) for c in report.ceilings},
        key=lambda k: (k[0].order, _label_order(k[1])),
    )
    rows = []
    for setting, scheduler in keys:
        stats = [index.get((setting, scheduler, m)) for m in CEILING_METRICS]
        runs = max((s.n for s in stats if s is not None), default=0)
        rows.append(
            [
                setting.label,
                scheduler,
                str(runs),
                *(
                    _DASH if s is None else format_stat(s, metric)
                    for s, metric in zip(stats, CEILING_METRICS.values(), strict=True)
                ),
            ]
        )
    head = ["setting", "scheduler", "runs", *(m.title for m in CEILING_METRICS.values())]
    return _table(head, rows)


def _goal_cell(
    stat: Stat | None, goal: float, *, at_least: bool, digits: int, inclusive: bool = True
) -> tuple[str, bool | None]:
    """``99.62 ✓`` or ``99.40 ✗ 0.10 short``: the mean against its goal, and whether it met it.

    ``at_least``: the mean must reach the goal; otherwise stay under it (``inclusive``: or equal).
    """
    if stat is None:
        return _DASH, None
    under = stat.mean <= goal if inclusive else stat.mean < goal
    met = stat.mean >= goal if at_least else under
    value = _number(stat.mean, digits, signed=not at_least and goal == 0)
    if met:
        return f"{value} ✓", True
    gap = _number(abs(stat.mean - goal), digits, signed=False)
    if float(gap) == 0:
        # Missed by less than the last digit shown (a latency difference of exactly 0 ms is not
        # "lower"): "0 over" would read as met.
        return (
            f"{value} ✗ {'just short' if at_least else 'not lower' if goal == 0 else 'not below'}",
            False,
        )
    return f"{value} ✗ {gap} {'short' if at_least else 'over'}", False


def _goals_table(report: Report) -> list[str]:
    """Each opsche configuration per setting against the usage, latency and disruption goals."""
    diff = {(c.setting, c.scheduler, c.metric): c.stat for c in report.differences}
    ceiling = {(c.setting, c.scheduler, c.metric): c.stat for c in report.ceilings}
    keys = sorted({(p.setting, p.label) for p in report.pairs}, key=lambda k: (k[0].order, k[1]))
    rows = []
    for setting, label in keys:
        share_goal = GOAL_SHARE_OF_POOLED_PCT.get(setting.priorities, GOAL_SHARE_DEFAULT_PCT)
        cells = [
            _goal_cell(
                ceiling.get((setting, label, "share_of_pooled_pct")),
                share_goal,
                at_least=True,
                digits=2,
            ),
            *(
                _goal_cell(
                    diff.get((setting, label, m)), 0.0, at_least=False, digits=0, inclusive=False
                )  # latency must be lower, not equal
                for m in ("latency_p50_ms", "latency_p95_ms")
            ),
            _goal_cell(
                diff.get((setting, label, "disruptions_per_placed")),
                GOAL_DISRUPTIONS_PER_PLACED,
                at_least=False,
                digits=2,
            ),
        ]
        runs = sum(1 for p in report.pairs if (p.setting, p.label) == (setting, label))
        rows.append(
            [
                setting.label,
                label,
                str(runs),
                f"{share_goal:g}",
                *(text for text, _ in cells),
                f"{sum(met is True for _, met in cells)} of "
                f"{sum(met is not None for _, met in cells)}",
            ]
        )
    head = [
        "setting",
        "scheduler",
        "runs",
        "goal %",
        "usage / pooled %",
        "Δ p50 ms (goal < 0)",
        "Δ p95 ms (goal < 0)",
        f"disruptions per placed pod (goal ≤ {GOAL_DISRUPTIONS_PER_PLACED:g})",
        "met",
    ]
    return _table(head, rows)


def format_markdown(report: Report, paper: Mapping[PaperKey, PaperCell] | None = None) -> str:
    """The report as Markdown: a header, the paired tables (as the paper's Tables 5-14), ceilings.

    One table per metric and priority configuration; rows are scheduler configurations (with a
    row per priority level for latency and deletions when there are several), columns the
    settings. Cells are mean ± sample std over the traces (seeds) of the setting; with ``paper``
    (``bench.paper.load_paper``), the paper's own cell follows in parentheses where it has one.
    """
    lines = [
        "# Replay report",
        "",
        f"{_plural(report.runs, 'result file')} over {_plural(report.traces, 'trace')}: "
        f"{_plural(len(report.pairs), 'paired run')} "
        f"(opsche {_MINUS} {BASELINE} on the same trace), {len(report.unpaired)} unpaired.",
        "",
        "Cells are mean ± sample standard deviation (ddof=1) over the traces (seeds) of each "
        "setting; `(n=1)` marks a single trace. Usage differences are percentage points; "
        "solver runs and plan activations are opsche's own counts. p1 is the lowest priority.",
    ]
    if "virtual" in report.backends:
        lines += [
            "",
            "**Virtual time.** Runs marked virtual replayed opsche's own code on the in-process "
            f"API server and a virtual clock; there the {BASELINE} rows are opsche with plans "
            f"off (`--trigger none`), standing in for {BASELINE}, not {BASELINE} itself. A "
            "virtual run is only ever paired with a virtual baseline.",
        ]
    if report.unpaired:
        lines += ["", "## Unpaired runs (not in the tables)", ""]
        lines += [f"- {line}" for line in report.unpaired]
    if report.pairs:
        counts: dict[tuple[str, Setting], int] = {}
        for pair in report.pairs:
            counts[pair.label, pair.setting] = counts.get((pair.label, pair.setting), 0) + 1
        settings = sorted({p.setting for p in report.pairs}, key=lambda s: s.order)
        lines += ["", "## Paired traces per setting", ""]
        lines += _table(
            ["scheduler", *(s.label for s in settings)],
            [
                [label, *(str(counts.get((label, s), 0)) for s in settings)]
                for label in report.labels()
            ],
        )
        lines += ["", f"## Paired differences (opsche {_MINUS} {BASELINE})"]
        if paper is not None:
            lines += [
                "",
                "In parentheses: the paper's number for the same setting and variant (seed "
                "000, Tables 5-24: five seeds of 2 h traces), where it has one.",
            ]
        lines += _difference_tables(report, paper)
    else:
        lines += ["", "No opsche run could be paired with a kube-scheduler run of its trace."]
    if report.pairs:
        lines += [
            "",
            "## Against the goals",
            "",
            "Means over the paired traces of each setting: usage as a share of the pooled bound "
            "(goal: 99.5 % with one priority, 99 % with more), the paired p50 and p95 latency "
            f"differences (goal: below {BASELINE}'s), and plans' moves and evictions of every "
            "pod per pending pod they placed (goal: at most one). ✗ says by how much a mean "
            "misses.",
            "",
        ]
        lines += _goals_table(report)
    if report.ceilings:
        lines += [
            "",
            "## Ceilings",
            "",
            "Every run's usage (paired or not) against its trace's capped demand (no scheduler "
            "exceeds it) and pooled bound (the trace on one node of the whole cluster's "
            "capacity: what a cluster without fragmentation would run).",
            "",
        ]
        lines += _ceiling_table(report)
    return "\n".join(lines) + "\n"


def write_csv(report: Report, path: Path) -> None:
    """Every aggregated number in long form, one row per setting, scheduler, metric, priority."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "nodes",
                "priorities",
                "mean_interarrival_s",
                "scheduler",
                "metric",
                "priority",
                "mean",
                "std",
                "n",
            ]
        )
        for cell in (*report.differences, *report.ceilings):
            s = cell.setting
            writer.writerow(
                [
                    s.nodes,
                    s.priorities,
                    "" if s.mean_interarrival_s is None else f"{s.mean_interarrival_s:g}",
                    cell.scheduler,
                    cell.metric,
                    cell.priority,
                    repr(cell.stat.mean),
                    "" if cell.stat.std is None else repr(cell.stat.std),
                    cell.stat.n,
                ]
            )


_FIGURE_ROWS = (
    ("usage_pp", "Δ usage (%)"),
    ("latency_mean_ms", "Δ latency (ms)"),
    ("disruptions", "Δ deletions"),
    ("solver_runs", "solver runs"),
    ("plan_activations", "plan activations"),
)


@dataclass(frozen=True)
class _Lanes:
    """Where a point goes: x by inter-arrival, a lane per label and a sub-lane per node count."""

    gaps: list[float | None]
    labels: list[str]
    node_counts: list[int]

    def x(self, label: str, setting: Setting) -> float:
        lane = 0.7 / max(len(self.labels), 1)
        sublane = 0.8 * lane / max(len(self.node_counts), 1)
        centre = self.labels.index(label) - (len(self.labels) - 1) / 2
        offset = self.node_counts.index(setting.nodes) - (len(self.node_counts) - 1) / 2
        return self.gaps.index(setting.mean_interarrival_s) + centre * lane + offset * sublane

    def colour(self, label: str) -> str:
        return f"C{self.labels.index(label) % 10}"

    def marker(self, nodes: int) -> str:
        shapes = ["o", "s", "^", "v", "P", "X"]
        return shapes[self.node_counts.index(nodes) % len(shapes)]


def _panel(ax: Any, pairs: Sequence[Pair], metric: str, lanes: _Lanes) -> None:
    """One metric of one priority configuration: the runs, the setting means, a zero line."""
    ax.axhline(0.0, color="grey", linewidth=0.8, zorder=0)
    runs: dict[tuple[str, Setting], list[float]] = {}
    for pair in pairs:
        value = pair.values()[metric, TOTAL]
        if value is not None:
            runs.setdefault((pair.label, pair.setting), []).append(value)
    for label in lanes.labels:
        colour = lanes.colour(label)
        for nodes in lanes.node_counts:
            groups = [(s, v) for (lb, s), v in runs.items() if (lb, s.nodes) == (label, nodes)]
            if not groups:
                continue
            xs = [lanes.x(label, s) for s, values in groups for _ in values]
            ys = [v for _, values in groups for v in values]
            ax.scatter(xs, ys, marker=lanes.marker(nodes), color=colour, alpha=0.5, s=16)
            ax.scatter(
                [lanes.x(label, s) for s, _ in groups],
                [statistics.fmean(values) for _, values in groups],
                marker="D",
                color=colour,
                edgecolors="black",
                s=40,
                zorder=3,
            )
    ax.set_xticks(range(len(lanes.gaps)))
    ax.set_xticklabels(["?" if g is None else f"{g:g} s" for g in lanes.gaps])
    ax.set_xlim(-0.5, max(len(lanes.gaps), 1) - 0.5)
    ax.grid(axis="y", alpha=0.3)


def write_figure(source: Report | Sequence[ReplayResult], path: Path) -> None:
    """A PNG shaped like the paper's Figure 3.

    Rows: Δ usage, Δ latency, Δ deletions, solver runs, plan activations; columns: one per
    priority configuration; x: mean inter-arrival, a lane per scheduler label and, within it, per
    node count. One point per run (circle: the smallest node count, square: the next), a colour
    per scheduler label, a diamond for each setting's mean, and a zero line.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - heavy
    from matplotlib.figure import Figure  # noqa: PLC0415
    from matplotlib.lines import Line2D  # noqa: PLC0415

    report = source if isinstance(source, Report) else build_report(source)
    priorities = sorted({p.setting.priorities for p in report.pairs}) or [1]
    lanes = _Lanes(
        gaps=sorted(
            {p.setting.mean_interarrival_s for p in report.pairs},
            key=lambda g: math.inf if g is None else g,
        ),
        labels=report.labels(),
        node_counts=sorted({p.setting.nodes for p in report.pairs}),
    )
    # A fixed layout: constrained layout would draw the figure twice, for a second of nothing.
    fig = Figure(figsize=(1.0 + 4.5 * len(priorities), 12.0))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(_FIGURE_ROWS), len(priorities), squeeze=False, sharex=True)
    for col, prio in enumerate(priorities):
        pairs = [p for p in report.pairs if p.setting.priorities == prio]
        for row, (metric, title) in enumerate(_FIGURE_ROWS):
            _panel(axes[row][col], pairs, metric, lanes)
            if col == 0:
                axes[row][col].set_ylabel(title)
        axes[0][col].set_title(_priorities(prio))
        axes[-1][col].set_xlabel("mean inter-arrival")
    if not report.pairs:
        axes[0][0].text(0.5, 0.5, "no paired runs", ha="center", va="center")
    handles = [
        Line2D([], [], color=lanes.colour(lb), marker="o", ls="", label=lb) for lb in lanes.labels
    ]
    handles += [
        Line2D([], [], color="black", marker=lanes.marker(n), ls="", label=f"{n} nodes")
        for n in lanes.node_counts
    ]
    handles.append(Line2D([], [], color="black", marker="D", ls="", label="setting mean"))
    fig.subplots_adjust(left=0.9 / fig.get_figwidth(), right=0.98, top=0.92, bottom=0.05)
    fig.subplots_adjust(hspace=0.15, wspace=0.18)
    fig.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.995),
        ncols=min(len(handles), 8),
        fontsize=8,
        frameon=False,
    )
    fig.savefig(path, format="png", dpi=100)
