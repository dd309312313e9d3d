"""``bench.across``: per-seed means over the traces every configuration ran, checked by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from opsche_daemon.bench.across import across_parts, across_settings, format_across
from opsche_daemon.bench.report import Stat, paired_differences
from opsche_daemon.cli.main import main
from opsche_daemon.trace.result import ReplayResult
from tests.unit.bench.test_report import BIG, KS, run, write_all

DASH = "\u2013"  # an empty cell


def seeded(result: ReplayResult, seed: int, **summary: Any) -> ReplayResult:
    """``result`` with trace header ``seed`` and the summary fields given."""
    return replace(
        result,
        trace={**result.trace, "seed": seed},
        summary=replace(result.summary, **summary),
    )


def mean_of(stat: Stat | None) -> float:
    assert stat is not None
    return stat.mean


def placed(evicted: int, pods: int) -> dict[str, Any]:
    return {
        "plan_pods_placed": pods,
        "all_disruptions_by_cause": {"preempted": 0, "evicted": evicted, "deleted": 0},
    }


def grid() -> list[ReplayResult]:
    """Seed 1: a one-priority and a four-priority trace, both with periodic and blocking.

    Seed 2: one complete trace, and one on which ``blocking`` never ran.
    """
    return [
        # seed 1, 16 nodes, one priority
        seeded(run("a-s1", KS, usage=0.90, latency=100.0, pooled=0.95), 1),
        seeded(
            run("a-s1", "periodic", usage=0.93, latency=120.0, pooled=0.95, solver_runs=10),
            1,
            **placed(3, 2),
        ),
        seeded(
            run("a-s1", "blocking", usage=0.94, latency=130.0, pooled=0.95, solver_runs=8),
            1,
            **placed(2, 2),
        ),
        # seed 1, 32 nodes, four priorities
        seeded(run("b-s1", KS, usage=0.80, latency=1000.0, pooled=0.90, **BIG), 1),
        seeded(
            run("b-s1", "periodic", usage=0.85, latency=900.0, pooled=0.90, solver_runs=30, **BIG),
            1,
            **placed(8, 4),
        ),
        seeded(
            run("b-s1", "blocking", usage=0.86, latency=1020.0, pooled=0.90, solver_runs=20, **BIG),
            1,
            **placed(4, 4),
        ),
        # seed 2: one complete trace, one without "blocking"
        seeded(run("a-s2", KS, usage=0.50, latency=100.0, pooled=0.60), 2),
        seeded(run("a-s2", "periodic", usage=0.55, latency=100.0, pooled=0.60), 2, **placed(1, 1)),
        seeded(run("a-s2", "blocking", usage=0.56, latency=90.0, pooled=0.60), 2, **placed(0, 1)),
        seeded(run("c-s2", KS, usage=0.70, latency=100.0, pooled=0.80), 2),
        seeded(run("c-s2", "periodic", usage=0.99, latency=1.0, pooled=0.80), 2, **placed(9, 1)),
    ]


def test_each_seed_averages_only_the_traces_every_configuration_ran() -> None:
    across = across_settings(paired_differences(grid()).pairs)
    assert across.labels == ("blocking", "periodic")
    assert [(t.title, t.traces) for t in across.tables] == [
        ("seed 1", ("a-s1", "b-s1")),
        ("seed 2", ("a-s2",)),
        ("all seeds", ("a-s1", "b-s1", "a-s2")),
    ]
    # c-s2 would flatter periodic (+29 points) if it were averaged in: it is named instead.
    assert across.left_out == (
        "seed 2, 1 trace: 1 of 2 configurations not paired (blocking): c-s2",
    )

    seed1 = {r.label: r for r in across.tables[0].rows}
    assert (across.tables[0].one_priority, across.tables[0].more_priorities) == (1, 1)
    periodic = seed1["periodic"]
    assert mean_of(periodic.usage_pp) == pytest.approx((3.0 + 5.0) / 2)
    assert mean_of(periodic.share_one_priority_pct) == pytest.approx(93 / 95 * 100)
    assert mean_of(periodic.share_more_priorities_pct) == pytest.approx(85 / 90 * 100)
    assert mean_of(periodic.disruptions_per_placed) == pytest.approx(  # ratios' mean
        (3 / 2 + 8 / 4) / 2
    )
    assert mean_of(periodic.latency_p50_ms) == pytest.approx((20.0 - 100.0) / 2)
    assert mean_of(periodic.latency_p95_s) == pytest.approx((0.020 - 0.100) / 2)
    assert mean_of(periodic.solver_runs) == pytest.approx(20.0)
    assert mean_of(seed1["blocking"].disruptions_per_placed) == pytest.approx((1.0 + 1.0) / 2)
    assert mean_of(seed1["blocking"].latency_p50_ms) == pytest.approx((30.0 + 20.0) / 2)

    seed2 = {r.label: r for r in across.tables[1].rows}
    assert mean_of(seed2["periodic"].usage_pp) == pytest.approx(5.0)
    assert seed2["periodic"].share_more_priorities_pct is None  # no four-priority trace there
    assert seed2["blocking"].solver_runs is None  # no count recorded

    every = {r.label: r for r in across.tables[2].rows}
    assert mean_of(every["periodic"].usage_pp) == pytest.approx((3.0 + 5.0 + 5.0) / 3)
    assert mean_of(every["blocking"].disruptions_per_placed) == pytest.approx((1.0 + 1.0 + 0.0) / 3)


def test_one_seed_has_no_all_seeds_table_and_no_complete_trace_says_so() -> None:
    one_seed = [r for r in grid() if r.trace["seed"] == 1]
    assert [t.title for t in across_settings(paired_differences(one_seed).pairs).tables] == [
        "seed 1"
    ]

    incomplete = [
        r
        for r in grid()
        if r.trace["name"] == "c-s2"
        or (r.trace["name"] == "b-s1" and r.scheduler.label != "periodic")
    ]
    across = across_settings(paired_differences(incomplete).pairs)
    assert across.tables == ()
    assert "No trace has a pair for every configuration yet." in format_across(across)


def test_markdown_rows_are_signed_and_dashed_where_unknown() -> None:
    text = format_across(across_settings(paired_differences(grid()).pairs))
    assert "### Seed 1: 2 traces (1 with one priority, 1 with more)" in text
    assert "| periodic | +4.00 | 97.89 | 94.44 | 1.75 | 6 | 3 | -40 | -0.04 | 20 |" in text
    assert f"| blocking | +6.00 | 93.33 | {DASH} | 0.00 | 0 | 1 | -10 | -0.01 | {DASH} |" in text
    assert "- seed 2, 1 trace: 1 of 2 configurations not paired (blocking): c-s2" in text


def test_a_lower_ratio_from_more_placed_pods_shows_its_larger_evictions() -> None:
    results = [
        seeded(run("a-s1", KS, usage=0.90, latency=100.0, pooled=0.95), 1),
        seeded(run("a-s1", "periodic", usage=0.93, latency=100.0), 1, **placed(10, 5)),
        seeded(run("a-s1", "blocking", usage=0.93, latency=100.0), 1, **placed(15, 10)),
    ]
    text = format_across(across_settings(paired_differences(results).pairs))
    assert "| blocking | +3.00 | 97.89 | " + DASH + " | 1.50 | 15 | 10 |" in text
    assert "| periodic | +3.00 | 97.89 | " + DASH + " | 2.00 | 10 | 5 |" in text


def test_the_cli_report_ends_with_the_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_all(tmp_path / "results", grid())
    assert main(["bench", "report", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert out.index("## Against the goals") < out.index("## Across settings")
    assert "### All seeds: 3 traces (2 with one priority, 1 with more)" in out
    assert (tmp_path / "results" / "report.md").read_text() == out


def test_seeds_sort_as_numbers_and_a_trace_whose_runs_disagree_on_its_seed_is_left_out() -> None:
    results = [
        seeded(run("t10", KS, usage=0.5), 10),
        seeded(run("t10", "periodic", usage=0.6), 10),
        seeded(run("t2", KS, usage=0.5), 2),
        seeded(run("t2", "periodic", usage=0.6), 2),
        seeded(run("odd", KS, usage=0.5), 3),
        seeded(run("odd", "periodic", usage=0.9), 4),  # same name, another trace
    ]
    across = across_settings(paired_differences(results).pairs)
    assert [t.title for t in across.tables] == ["seed 2", "seed 10", "all seeds"]
    assert across.left_out == ("1 trace: its runs disagree on the seed (3, 4): odd",)


def test_a_number_missing_on_some_traces_says_over_how_many_it_is() -> None:
    results = [
        seeded(run("x", KS, usage=0.5, pooled=0.0), 1),
        seeded(run("x", "periodic", usage=0.6, pooled=0.0), 1, **placed(0, 0)),  # placed none
        seeded(run("y", KS, usage=0.5), 1),
        seeded(run("y", "periodic", usage=0.6), 1, **placed(3, 2)),
    ]
    across = across_settings(paired_differences(results).pairs)
    (row,) = across.tables[0].rows
    assert row.disruptions_per_placed == Stat(1.5, None, 1)
    assert row.share_one_priority_pct == Stat(0.6 / 0.95 * 100, None, 1)
    row_text = (
        f"| periodic | +10.00 | 63.16 (n=1) | {DASH} | 1.50 (n=1) | 2 | 1 | +0 | +0.00 | {DASH} |"
    )
    assert row_text in format_across(across)


def test_no_pairs_no_section() -> None:
    assert format_across(across_settings([])) == ""


def test_a_configuration_just_begun_is_left_out_instead_of_the_traces() -> None:
    # "late" ran on one trace of three: demanding it would leave one trace (2 x 1 runs);
    # leaving it out keeps three traces of "periodic" (1 x 3 runs).
    results = [seeded(run(name, KS, usage=0.5), 1) for name in ("t1", "t2", "t3")] + [
        seeded(run(name, "periodic", usage=0.6), 1) for name in ("t1", "t2", "t3")
    ]
    results.append(seeded(run("t1", "late", usage=0.7), 1))
    across = across_settings(paired_differences(results).pairs)
    assert across.labels == ("periodic",)
    (table,) = across.tables
    assert table.traces == ("t1", "t2", "t3")
    assert [r.label for r in table.rows] == ["periodic"]
    assert across.left_out == (
        "1 configuration, paired on too few of the traces to share them (traces paired): "
        "late (1 of 3)",
    )
    assert "late (1 of 3)" in format_across(across)

    # Once "late" has run on two of the three, both configurations on two traces (4 runs) beat
    # one on three: the third trace is left out, as before.
    results.append(seeded(run("t2", "late", usage=0.7), 1))
    across = across_settings(paired_differences(results).pairs)
    assert across.labels == ("late", "periodic")
    assert across.tables[0].traces == ("t1", "t2")
    assert across.left_out == ("seed 1, 1 trace: 1 of 2 configurations not paired (late): t3",)


def test_configurations_without_default_preemption_get_their_own_tables() -> None:
    # "periodic-no-preemption" ran on two of three traces: in one shared table it would have
    # taken the third trace out of periodic's means (2 x 2 runs beat 1 x 3). Kept apart, the
    # preemption-on tables keep all three traces and the preemption-off ones have their two.
    names = ("t1", "t2", "t3")
    results = [seeded(run(name, KS, usage=0.5), 1) for name in names] + [
        seeded(run(name, "periodic", usage=0.6), 1) for name in names
    ]
    no_preemption = [
        seeded(run(name, "periodic-no-preemption", usage=0.7), 1) for name in names[:2]
    ]
    results += [replace(r, scheduler=replace(r.scheduler, preemption=False)) for r in no_preemption]
    pairs = paired_differences(results).pairs
    shared = across_settings(pairs)
    assert shared.tables[0].traces == ("t1", "t2")

    (on_heading, on), (off_heading, off) = across_parts(pairs)
    assert (on_heading, on.labels, on.tables[0].traces) == (
        "Across settings",
        ("periodic",),
        names,
    )
    assert (off_heading, off.labels, off.tables[0].traces) == (
        "Across settings, default preemption off",
        ("periodic-no-preemption",),
        ("t1", "t2"),
    )
    assert on.left_out == off.left_out == ()
    assert format_across(off, off_heading).startswith(
        "\n## Across settings, default preemption off\n"
    )
    # Without such configurations there is one part.
    assert [h for h, _ in across_parts([p for p in pairs if p.label == "periodic"])] == [
        "Across settings"
    ]
