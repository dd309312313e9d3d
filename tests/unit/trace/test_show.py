"""``format_trace_summary``: the numbers it prints are the trace's, and the chart is exact."""

from __future__ import annotations

import pytest

from opsche_daemon.trace.config import TraceConfig
from opsche_daemon.trace.demand import demand_steps, time_averaged_demand
from opsche_daemon.trace.generate import generate_trace
from opsche_daemon.trace.model import NodeShape, Trace, Workload
from opsche_daemon.trace.show import bucket_demand, format_trace_summary

NODE = NodeShape(1000, 1024)


def _chart(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("effective demand over"))
    return lines[start + 1 :]


def test_summary_of_a_generated_trace() -> None:
    trace = generate_trace(TraceConfig(nodes=4, hours=0.25, priority_levels=4))
    text = format_trace_summary(trace)
    initial = sum(w.initial for w in trace.workloads)
    assert "4 nodes of 8000m cpu, 32768Mi memory" in text
    assert "900 s (0.25 h)" in text
    assert f"{len(trace.workloads)} ({initial} initial, {len(trace.workloads) - initial} " in text
    assert f"pods:        {trace.pods()} ({trace.pods(initial=True)} initial" in text
    assert "priorities:  1: " in text
    assert "4: " in text.split("priorities:")[1].splitlines()[0]
    assert f"calibrated mean {trace.mean_lifetime_s:.1f} s" in text
    assert f"achieved {trace.achieved_usage:.1%}, target 90.0% (time-averaged" in text
    assert f"calibration: {len(trace.calibration)} iterations" in text
    chart = _chart(text)
    assert 8 <= len(chart) - 2 <= 10  # rows, then the axis and its labels
    assert any(line.strip().startswith("100%+") for line in chart)
    assert all(len(line) <= 72 for line in text.splitlines())


def test_bucket_means_are_exact() -> None:
    # One node; 50 % cpu for the first half, then 100 % memory for the last quarter.
    workloads = (
        Workload("a", 0.0, 50.0, 1, 1, 0.5, 0.1),
        Workload("b", 75.0, 100.0, 1, 1, 0.1, 1.0),
    )
    steps = demand_steps(workloads, 1, NODE)
    assert bucket_demand(steps, 100.0, 4) == pytest.approx([0.5, 0.5, 0.0, 1.0])
    buckets = bucket_demand(steps, 100.0, 7)  # bucket edges that cut the steps
    assert sum(buckets) / 7 == pytest.approx(time_averaged_demand(steps, 100.0))


def test_chart_of_a_hand_written_trace() -> None:
    workloads = (Workload("a", 0.0, 50.0, 1, 1, 0.5, 0.5), Workload("b", 50.0, 200.0, 1, 1, 1, 1))
    trace = Trace(nodes=1, node=NODE, horizon_s=100.0, priorities=1, workloads=workloads)
    text = format_trace_summary(trace, width=28)
    assert "calibration" not in text  # nothing to say about a trace that was not generated
    assert "demand:      achieved 75.0% (time-averaged effective)\n" in text
    chart = _chart(text)
    rows = {line[:5].strip(): line[6:] for line in chart[:-2]}
    assert rows["100%"] == "-" * 10 + "#" * 10  # the 100 % line, reached in the second half
    assert rows["50%"] == "#" * 20
    assert rows["60%"] == " " * 10 + "#" * 10
