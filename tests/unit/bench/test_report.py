"""``opsche bench report``: pairing, the statistics by hand, the Markdown, CSV, figure and CLI."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from opsche_daemon.bench.report import (
    ReportError,
    Setting,
    Stat,
    build_report,
    disruptions_per_placed,
    format_markdown,
    load_results,
    mean_std,
    paired_differences,
    write_csv,
    write_figure,
)
from opsche_daemon.cli.main import main
from opsche_daemon.trace.result import (
    DeletionCause,
    PodRecord,
    ReplayResult,
    SchedulerRun,
    Summary,
    read_result,
    write_result,
)

KS = "kube-scheduler"
BIG: dict[str, Any] = {"nodes": 32, "priorities": 4, "gap": 16.0}
PNG = b"\x89PNG\r\n\x1a\n"


def run(
    trace: str,
    label: str,
    *,
    usage: float,
    latency: float | None = 1000.0,
    disruptions: int = 0,
    nodes: int = 16,
    priorities: int = 1,
    gap: float = 8.0,
    solver_runs: int | None = None,
    plan_activations: int | None = None,
    by_priority: Mapping[str, tuple[float | None, int]] | None = None,
    pooled: float = 0.95,
) -> ReplayResult:
    """A result whose summary says exactly what the test needs (no samples or pods)."""
    levels = by_priority or {str(p): (latency, 0) for p in range(1, priorities + 1)}
    summary = Summary(
        effective_usage=usage,
        limit_usage=0.97,
        pooled_usage=pooled,
        latency_p50_ms=latency,
        latency_p95_ms=latency,
        latency_mean_ms=latency,
        latency_by_priority={
            p: {"p50_ms": ms, "p95_ms": ms, "mean_ms": ms, "pods": 1}
            for p, (ms, _) in levels.items()
        },
        disruptions=disruptions,
        disruptions_by_priority={p: d for p, (_, d) in levels.items()},
        disruptions_by_cause={"preempted": disruptions, "evicted": 0, "deleted": 0},
        pods_created=10,
        pods_ran=10,
        never_ran=0,
        pending_at_end=0,
        solver_runs=solver_runs,
        plan_activations=plan_activations,
    )
    return ReplayResult(
        trace={
            "name": trace,
            "path": f"traces/{trace}.json",
            "nodes": nodes,
            "priorities": priorities,
            "mean_interarrival_s": gap,
            "seed": 0,
            "horizon_s": 7200.0,
            "pods": 10,
            "workloads": 8,
        },
        scheduler=SchedulerRun(label, "default-scheduler" if label == KS else "opsche"),
        time_scale=1.0,
        duration_s=7200.0,
        wall_s=7300.0,
        samples=(),
        pods=(),
        summary=summary,
    )


def three_seeds() -> list[ReplayResult]:
    """16 nodes, 1 priority, 8 s: three traces, kube-scheduler and periodic on each."""
    ks = [(0.90, 1000.0, 5), (0.91, 1200.0, 7), (0.92, 1100.0, 6)]
    op = [(0.91, 900.0, 8), (0.93, 1000.0, 7), (0.935, 1300.0, 12)]
    out = []
    for seed, ((ku, kl, kd), (ou, ol, od)) in enumerate(zip(ks, op, strict=True)):
        name = f"n16-p1-g8-s{seed}"
        out.append(run(name, KS, usage=ku, latency=kl, disruptions=kd))
        out.append(
            run(
                name,
                "periodic",
                usage=ou,
                latency=ol,
                disruptions=od,
                solver_runs=40 + seed,
                plan_activations=20 + 2 * seed,
            )
        )
    return out


def four_priorities() -> list[ReplayResult]:
    """32 nodes, 4 priorities, 16 s: one trace (n=1), per-priority latency and deletions."""
    ks = {"1": (3000.0, 9), "2": (200.0, 1), "3": (100.0, 0), "4": (50.0, 0)}
    op = {"1": (2000.0, 4), "2": (250.0, 1), "3": (100.0, 0), "4": (40.0, 0)}
    name = "n32-p4-g16-s0"
    return [
        run(name, KS, usage=0.88, latency=800.0, disruptions=10, by_priority=ks, **BIG),
        run(
            name,
            "stable-queue",
            usage=0.9,
            latency=600.0,
            disruptions=5,
            by_priority=op,
            solver_runs=60,
            plan_activations=25,
            **BIG,
        ),
    ]


def write_all(directory: Path, results: list[ReplayResult]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(results):
        write_result(r, directory / f"{i:02d}-{r.trace['name']}-{r.scheduler.label}.json")


# --- statistics ------------------------------------------------------------------------------


def test_mean_and_sample_std() -> None:
    assert mean_std([1.0, 2.0, 1.5]) == Stat(1.5, pytest.approx(0.5), 3)  # type: ignore[arg-type]
    assert mean_std([4.0]) == Stat(4.0, None, 1)
    with pytest.raises(ValueError, match="no values"):
        mean_std([])


def test_paired_differences_by_hand() -> None:
    pairing = paired_differences(three_seeds())
    assert pairing.unpaired == ()
    assert [p.trace for p in pairing.pairs] == [f"n16-p1-g8-s{i}" for i in range(3)]
    values = [p.values() for p in pairing.pairs]
    assert [v["usage_pp", "total"] for v in values] == pytest.approx([1.0, 2.0, 1.5])
    assert [v["latency_mean_ms", "total"] for v in values] == pytest.approx([-100, -200, 200])
    assert [v["disruptions", "total"] for v in values] == [3, 0, 6]
    assert [v["solver_runs", "total"] for v in values] == [40, 41, 42]

    report = build_report(three_seeds())
    cells = {(c.scheduler, c.metric, c.priority): c.stat for c in report.differences}
    assert cells["periodic", "usage_pp", "total"].mean == pytest.approx(1.5)
    assert cells["periodic", "usage_pp", "total"].std == pytest.approx(0.5)
    latency = cells["periodic", "latency_mean_ms", "total"]
    # deviations from -33.3: -66.7, -166.7, +233.3; squares / (n - 1) = 43333.3
    assert latency.mean == pytest.approx(-100 / 3)
    assert latency.std == pytest.approx(math.sqrt(130000 / 3))
    assert cells["periodic", "disruptions", "total"] == Stat(3.0, 3.0, 3)
    assert cells["periodic", "plan_activations", "total"] == Stat(22.0, 2.0, 3)
    assert {c.setting for c in report.differences} == {Setting(16, 1, 8.0)}


def test_per_priority_differences_with_four_levels() -> None:
    (pair,) = paired_differences(four_priorities()).pairs
    values = pair.values()
    assert values["latency_mean_ms", "1"] == pytest.approx(-1000)
    assert values["latency_mean_ms", "2"] == pytest.approx(50)
    assert values["latency_mean_ms", "4"] == pytest.approx(-10)
    assert values["disruptions", "1"] == -5
    assert values["disruptions", "total"] == -5


def test_a_latency_missing_on_either_side_is_left_out_not_zero() -> None:
    results = three_seeds()
    results[1] = run("n16-p1-g8-s0", "periodic", usage=0.9, latency=None)
    report = build_report(results)
    cells = {(c.scheduler, c.metric): c.stat for c in report.differences}
    assert cells["periodic", "latency_mean_ms"].n == 2
    assert cells["periodic", "usage_pp"].n == 3


def test_unpaired_runs_are_listed() -> None:
    results = [
        *three_seeds(),
        run("orphan", "periodic", usage=0.9),  # no baseline
        run("lonely", KS, usage=0.9),  # no opsche run
        run("n16-p1-g8-s0", "periodic", usage=0.99),  # a second periodic run of one trace
        run("n16-p1-g8-s1", KS, usage=0.5),  # a second baseline
        run("n16-p1-g8-s2", "stable-queue", usage=0.9, nodes=32),  # same name, another trace
    ]
    pairing = paired_differences(results)
    assert len(pairing.pairs) == 3
    assert sorted(pairing.unpaired) == sorted(
        [
            "periodic on trace orphan: no kube-scheduler run of this trace",
            "kube-scheduler on trace lonely: no opsche run of this trace",
            "periodic on trace n16-p1-g8-s0: another periodic run of this trace "
            "(the first is used)",
            "kube-scheduler on trace n16-p1-g8-s1: another kube-scheduler run of this trace "
            "(the first is used)",
            "stable-queue on trace n16-p1-g8-s2: its trace header (32 nodes · 1 prio · 8 s) "
            "differs from the kube-scheduler run's (16 nodes · 1 prio · 8 s)",
        ]
    )
    # The duplicates did not change the numbers.
    report = build_report(results)
    cells = {(c.scheduler, c.metric): c.stat for c in report.differences}
    assert cells["periodic", "usage_pp"].mean == pytest.approx(1.5)
    assert "- periodic on trace orphan: no kube-scheduler run of this trace" in format_markdown(
        report
    )


# --- Markdown, CSV, figure -------------------------------------------------------------------


def test_markdown_has_the_papers_table_shape() -> None:
    text = format_markdown(build_report(three_seeds() + four_priorities()))
    assert (
        "### Δ effective usage (percentage points), 1 priority\n\n"
        "| scheduler | 16 nodes · 1 prio · 8 s |\n|---|---|\n| periodic | +1.5 ± 0.5 |\n"
    ) in text
    assert "| periodic | -33 ± 208 |" in text
    assert "| periodic | +3.0 ± 3.0 |" in text  # deletions
    assert "| periodic | 41 ± 1.0 |" in text  # solver runs: absolute, unsigned
    # four priorities, a single trace: the mean and n=1, with a row per level
    assert "| scheduler | 32 nodes · 4 prio · 16 s |" in text
    assert "| stable-queue | +2.0 (n=1) |" in text
    assert "| stable-queue · p1 | -1000 (n=1) |" in text
    assert "| stable-queue · p4 | -10 (n=1) |" in text
    assert "| stable-queue · p1 | -5.0 (n=1) |" in text
    # ceilings, kube-scheduler included, first
    assert "| 16 nodes · 1 prio · 8 s | kube-scheduler | 3 | 91.0 ± 1.0 | 97.0 ± 0.0 |" in text
    assert "| 16 nodes · 1 prio · 8 s | periodic | 3 | 92.5 ± 1.3 |" in text


def test_markdown_header_counts_every_file() -> None:
    text = format_markdown(build_report(three_seeds() + four_priorities()))
    assert text.startswith("# Replay report\n\n8 result files over 4 traces: 4 paired runs")
    assert "0 unpaired" in text


def test_csv_is_long_form(tmp_path: Path) -> None:
    report = build_report(three_seeds() + four_priorities())
    path = tmp_path / "report.csv"
    write_csv(report, path)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
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
    usage = next(r for r in rows if r["scheduler"] == "periodic" and r["metric"] == "usage_pp")
    assert (usage["nodes"], usage["priorities"], usage["mean_interarrival_s"]) == ("16", "1", "8")
    assert float(usage["mean"]) == pytest.approx(1.5)
    assert float(usage["std"]) == pytest.approx(0.5)
    assert usage["n"] == "3"
    p1 = next(
        r
        for r in rows
        if r["scheduler"] == "stable-queue"
        and r["metric"] == "latency_mean_ms"
        and r["priority"] == "1"
    )
    assert (float(p1["mean"]), p1["std"], p1["n"]) == (-1000.0, "", "1")
    share = next(r for r in rows if r["scheduler"] == KS and r["metric"] == "share_of_pooled_pct")
    assert float(share["mean"]) == pytest.approx(0.91 / 0.95 * 100)


def test_figure_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "figure.png"
    write_figure(three_seeds() + four_priorities(), path)
    assert path.read_bytes().startswith(PNG)
    empty = tmp_path / "empty.png"
    write_figure(build_report([run("lonely", KS, usage=0.9)]), empty)
    assert empty.read_bytes().startswith(PNG)


# --- files and the CLI -----------------------------------------------------------------------


def test_load_results_reads_results_skips_tmp_and_traces(tmp_path: Path) -> None:
    write_all(tmp_path / "a", three_seeds())
    (tmp_path / "a" / "partial.json.tmp").write_text("{")
    (tmp_path / "trace.json").write_text(json.dumps({"format": "opsche-trace/v1"}))
    results = load_results(tmp_path)
    assert len(results) == 6
    assert {r.scheduler.label for r in results} == {KS, "periodic"}


def test_load_results_reads_compressed_and_plain_results_alike(tmp_path: Path) -> None:
    plain, packed = three_seeds()[:2], three_seeds()[2:]
    write_all(tmp_path / "plain", plain)
    (tmp_path / "packed").mkdir()
    for i, r in enumerate(packed):
        write_result(r, tmp_path / "packed" / f"{i:02d}.json.gz")
    (tmp_path / "packed" / "half.json.gz.tmp").write_bytes(b"\x1f")  # a run still writing
    results = load_results(tmp_path)
    assert [r.summary for r in results] == [r.summary for r in packed + plain]


def test_a_compressed_result_is_the_same_bytes_each_time_and_reads_back(tmp_path: Path) -> None:
    """No time stamp in the gzip header: re-writing an unchanged result shows no diff."""
    result = three_seeds()[0]
    first, second = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    write_result(result, first)
    write_result(result, second)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert first.read_bytes()[4:8] == bytes(4)  # and no modification time
    assert read_result(first).to_json() == json.loads(json.dumps(result.to_json()))


def test_a_corrupt_compressed_result_is_named(tmp_path: Path) -> None:
    write_all(tmp_path, three_seeds())
    bad = tmp_path / "zz-bad.json.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(ReportError, match="not JSON: not gzip-compressed JSON") as info:
        load_results(tmp_path)
    assert str(bad) in str(info.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ('{"format": "something-else"}', "not a replay result"),
        ('{"format": "opsche-replay/v1", "trace": {}}', "malformed result file"),
    ],
)
def test_a_malformed_file_is_named(tmp_path: Path, content: str, message: str) -> None:
    write_all(tmp_path, three_seeds())
    bad = tmp_path / "zz-bad.json"
    bad.write_text(content)
    with pytest.raises(ReportError, match=message) as info:
        load_results(tmp_path)
    assert str(bad) in str(info.value)


def test_a_result_without_a_trace_name_is_named(tmp_path: Path) -> None:
    r = run("x", KS, usage=0.9)
    r.trace.pop("name")
    write_result(r, tmp_path / "noname.json")
    with pytest.raises(ReportError, match=r"noname.json: trace.name must be a non-empty string"):
        load_results(tmp_path)


def test_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    write_all(results, [*three_seeds(), *four_priorities(), run("orphan", "periodic", usage=0.9)])
    assert main(["bench", "report", str(results)]) == 0
    out, err = capsys.readouterr()
    assert "| periodic | +1.5 ± 0.5 |" in out
    assert "unpaired: periodic on trace orphan" in err
    assert (results / "report.md").read_text() == out
    assert (results / "report.csv").read_text().startswith("nodes,priorities,")
    assert (results / "figure.png").read_bytes().startswith(PNG)

    elsewhere = tmp_path / "out" / "here"
    assert main(["bench", "report", str(results), "-o", str(elsewhere)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["figure.png", "report.csv", "report.md"]

    assert main(["bench", "report", str(results), "-o", str(elsewhere), "--paper"]) == 0
    assert "| periodic | +1.5 ± 0.5 (paper +2.1 ± 1.1) |" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["empty", "missing", "malformed"])
def test_cli_errors_are_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    directory = tmp_path / "results"
    if kind != "missing":
        directory.mkdir()
    if kind == "malformed":
        (directory / "broken.json").write_text("[1, 2")
    code = main(["bench", "report", str(directory)])
    out, err = capsys.readouterr()
    assert code != 0
    assert out == ""
    assert err.startswith("opsche: error: ")
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err
    expected = {
        "empty": "no replay result files",
        "missing": "no such directory",
        "malformed": "broken.json: not JSON",
    }[kind]
    assert expected in err


def test_virtual_runs_pair_only_with_a_virtual_baseline_and_the_report_says_so() -> None:
    def virtual(result: ReplayResult) -> ReplayResult:
        return replace(result, environment={**result.environment, "backend": "virtual"})

    results = [
        virtual(run("v0", KS, usage=0.90)),
        virtual(run("v0", "periodic", usage=0.92)),
        run("mixed", KS, usage=0.90),  # a real kube-scheduler run...
        virtual(run("mixed", "periodic", usage=0.95)),  # ...and a virtual opsche run
    ]
    pairing = paired_differences(results)
    assert [(p.trace, p.label) for p in pairing.pairs] == [("v0", "periodic")]
    assert pairing.unpaired == (
        "periodic on trace mixed: a virtual run cannot be paired with a cluster kube-scheduler run",
    )
    report = build_report(results)
    assert report.backends == ("cluster", "virtual")
    assert "opsche with plans off (`--trigger none`)" in format_markdown(report)
    assert "Virtual time" not in format_markdown(build_report(three_seeds()))


def test_the_papers_numbers_follow_ours_where_it_has_the_setting_and_variant() -> None:
    from opsche_daemon.bench.paper import PaperKey, load_paper

    paper = load_paper()
    assert len(paper) == 3024  # Tables 5-24, every cell
    # Spot checks against the paper's text (Table 5; Table 8's per-priority rows).
    assert paper[PaperKey("usage_pp", 16, 1, 8.0, "periodic", "total")].mean == 2.1
    cell = paper[PaperKey("latency_mean_ms", 32, 4, 16.0, "stable-queue", "1")]
    assert (cell.mean, cell.std, cell.table) == (-1216.0, 2585.0, 8)
    text = format_markdown(build_report(three_seeds() + four_priorities()), paper)
    assert "| periodic | +1.5 ± 0.5 (paper +2.1 ± 1.1) |" in text
    assert "| periodic | 41 ± 1.0 (paper 46 ± 9.7) |" in text  # solver runs
    assert "| stable-queue · p1 | -1000 (n=1) (paper -1216 ± 2585) |" in text
    assert "(paper" not in format_markdown(build_report(three_seeds()))  # only when asked


# --- goals -----------------------------------------------------------------------------------


def _with(result: ReplayResult, **changes: Any) -> ReplayResult:
    return replace(result, summary=replace(result.summary, **changes))


def test_disruptions_per_placed_counts_every_pods_evictions() -> None:
    base = run("t", "periodic", usage=0.9)
    record = PodRecord(
        name="p", workload="init-1", priority=1, initial=True, created_s=0.0,
        running_s=0.1, deleted_s=5.0, node="n1", cause=DeletionCause.EVICTED,
    )  # fmt: skip
    assert disruptions_per_placed(base) is None  # plans placed nothing (or unknown)
    counted = _with(
        base,
        plan_pods_placed=4,
        all_disruptions_by_cause={"preempted": 9, "evicted": 6, "deleted": 0},
    )
    assert disruptions_per_placed(counted) == pytest.approx(1.5)  # preemptions are not plans'
    # A summary from before all_disruptions_by_cause: the pod records say it.
    old = replace(_with(base, plan_pods_placed=2), pods=(record, replace(record, name="q")))
    assert disruptions_per_placed(old) == pytest.approx(1.0)


def test_goals_table_says_what_is_met_and_by_how_much() -> None:
    ks = run("t1", KS, usage=0.90, latency=100.0, pooled=0.95)
    good = _with(
        run("t1", "periodic", usage=0.9456, latency=90.0, pooled=0.95),
        plan_pods_placed=10,
        all_disruptions_by_cause={"preempted": 0, "evicted": 10, "deleted": 0},
    )
    bad = _with(
        run("t1", "stable-queue", usage=0.9405, latency=150.0, pooled=0.95),
        plan_pods_placed=10,
        all_disruptions_by_cause={"preempted": 0, "evicted": 15, "deleted": 0},
    )
    text = format_markdown(build_report([ks, good, bad]))
    goals = text.split("## Against the goals")[1].split("## Ceilings")[0]
    rows = {line.split(" | ")[1]: line for line in goals.splitlines() if line.startswith("| 16")}
    # 0.9456 / 0.95 = 99.54 % >= 99.5; latencies 10 ms below; exactly one eviction per placed pod.
    assert "99.54 ✓" in rows["periodic"] and "-10 ✓" in rows["periodic"]
    assert "1.00 ✓" in rows["periodic"] and rows["periodic"].endswith("| 4 of 4 |")
    # 0.9405 / 0.95 = 99.00 %: 0.50 short; 50 ms slower at p50 and p95; 1.5 per placed pod.
    assert "99.00 ✗ 0.50 short" in rows["stable-queue"]
    assert "+50 ✗ 50 over" in rows["stable-queue"]
    assert "1.50 ✗ 0.50 over" in rows["stable-queue"]
    assert rows["stable-queue"].endswith("| 0 of 4 |")


def test_a_latency_equal_to_the_baselines_is_not_lower() -> None:
    ks = run("t1", KS, usage=0.90, latency=100.0, pooled=0.95)
    same = run("t1", "periodic", usage=0.9456, latency=100.0, pooled=0.95)
    text = format_markdown(build_report([ks, same]))
    goals = text.split("## Against the goals")[1].split("## Ceilings")[0]
    (row,) = [line for line in goals.splitlines() if line.startswith("| 16")]
    assert "+0 ✗ not lower" in row and "0 over" not in row


def test_four_priorities_have_the_lower_usage_goal() -> None:
    ks = run("t4", KS, usage=0.90, pooled=0.95, **BIG)
    op = run("t4", "periodic", usage=0.9425, pooled=0.95, **BIG)  # 99.21 %
    text = format_markdown(build_report([ks, op]))
    goals = text.split("## Against the goals")[1].split("## Ceilings")[0]
    (row,) = [line for line in goals.splitlines() if line.startswith("| 32")]
    assert "| 99 | 99.21 ✓ |" in row
    assert row.endswith("| 1 of 3 |")  # latency equal (not lower), no plan placements known
