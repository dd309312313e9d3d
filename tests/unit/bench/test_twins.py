"""``bench.twins``: each configuration beside its twin with one switch flipped, checked by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from opsche_daemon.bench.report import paired_differences
from opsche_daemon.bench.twins import TwinRow, format_twins, twin_rows
from opsche_daemon.cli.main import main
from opsche_daemon.trace.result import ReplayResult
from tests.unit.bench.test_report import BIG, KS, run, write_all

TOP = {"1": (9000.0, 0), "2": (500.0, 0), "3": (400.0, 0), "4": (300.0, 0)}


def with_(result: ReplayResult, evicted: int, placed: int, never_ran: int = 0) -> ReplayResult:
    """``result`` whose plans evicted ``evicted`` pods and placed ``placed``."""
    return replace(
        result,
        summary=replace(
            result.summary,
            plan_pods_placed=placed,
            all_disruptions_by_cause={"preempted": 0, "evicted": evicted, "deleted": 0},
            never_ran=never_ran,
        ),
    )


def grid() -> list[ReplayResult]:
    """Two one-priority traces with four twins each, one four-priority trace without blocking."""
    out: list[ReplayResult] = []
    for trace, base in (("a", 0), ("b", 10)):
        out += [
            run(trace, KS, usage=0.80, pooled=0.90),
            with_(run(trace, "periodic", usage=0.81, pooled=0.90, disruptions=4), 10 + base, 5),
            with_(run(trace, "periodic-blocking", usage=0.82, pooled=0.90), 12 + base, 8),
            with_(run(trace, "periodic-no-preemption", usage=0.81, pooled=0.90), 9 + base, 5),
            with_(run(trace, "periodic-blocking-no-preemption", usage=0.80, pooled=0.90), 14, 7),
        ]
    slow = {**TOP, "4": (6000.0, 0)}
    kw: dict[str, Any] = {"pooled": 0.90, **BIG}
    out += [
        run("c", KS, usage=0.80, **kw),
        with_(run("c", "periodic", usage=0.85, by_priority=TOP, **kw), 40, 20, never_ran=3),
        with_(run("c", "periodic-no-preemption", usage=0.85, by_priority=slow, **kw), 20, 10, 12),
        # a switched run whose twin never ran on this trace is no pair
        with_(run("c", "stable-queue-blocking", usage=0.85, **kw), 1, 1),
    ]
    return out


def rows() -> dict[tuple[str, str], TwinRow]:
    return {(r.switch, r.group): r for r in twin_rows(paired_differences(grid()).pairs)}


def test_twins_pair_on_the_same_trace_and_split_by_priorities_and_the_other_switch() -> None:
    got = rows()
    assert list(got) == [
        ("blocking", "one priority"),
        ("blocking", "one priority, default preemption off"),
        ("default preemption off", "one priority"),
        ("default preemption off", "one priority, blocking"),
        ("default preemption off", "more priorities"),
    ]
    blocking = got["blocking", "one priority"]
    assert blocking.pairs == 2
    assert (blocking.without.plan_evictions, blocking.with_.plan_evictions) == (30, 34)
    assert blocking.fewer_evictions == 0
    # ratios 10/5 -> 12/8 and 20/5 -> 22/8: lower in both pairs though evictions rose
    assert (blocking.lower_ratio, blocking.ratio_pairs) == (2, 2)
    assert (blocking.without.placed, blocking.with_.placed) == (10, 16)
    assert blocking.without.share_pct == pytest.approx(90.0)
    assert blocking.with_.share_pct == pytest.approx(0.82 / 0.90 * 100)
    assert blocking.without.deletions == 8
    # with preemption off, blocking evicts 14 against 9 on trace a and 14 against 19 on b
    assert got["blocking", "one priority, default preemption off"].fewer_evictions == 1


def test_the_highest_priority_latency_and_pods_that_never_ran_show_where_a_switch_costs() -> None:
    off = rows()["default preemption off", "more priorities"]
    assert off.pairs == 1
    assert (off.without.plan_evictions, off.with_.plan_evictions) == (40, 20)
    assert off.fewer_evictions == 1
    assert off.without.top_p95_s == pytest.approx(0.3)
    assert off.with_.top_p95_s == pytest.approx(6.0)
    assert (off.without.never_ran, off.with_.never_ran) == (3, 12)


def test_the_section_reads_without_then_with_and_is_empty_without_twins() -> None:
    text = format_twins(twin_rows(paired_differences(grid()).pairs))
    assert "## One switch at a time" in text
    assert "| blocking | one priority | 2 | 90.00 → 91.11 | 30 → 34 (+13 %) | 0 of 2 " in text
    assert "| 0.30 → 6.00 | 3 → 12 (+300 %) |" in text
    only_one = [r for r in grid() if r.scheduler.label in (KS, "periodic")]
    assert format_twins(twin_rows(paired_differences(only_one).pairs)) == ""


def test_bench_report_writes_the_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_all(tmp_path / "runs", grid())
    assert main(["bench", "report", str(tmp_path / "runs"), "-o", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## One switch at a time" in report
    assert report.index("## Across settings") < report.index("## One switch at a time")
    capsys.readouterr()
