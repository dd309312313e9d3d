"""The benchmark grid's plan and the replayer's manifests and node check, without a cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from opsche_daemon.bench.replay import (
    GridError,
    _cpu_used,
    _opsche_args,
    parse_scheduler,
    plan_grid,
    result_path,
)
from opsche_daemon.replay.replayer import (
    node_problems,
    parse_counters,
    priority_class_name,
    replicaset_manifest,
)
from opsche_daemon.trace.model import NodeShape, Trace, Workload

NODE = NodeShape(cpu_millis=8000, memory_mib=32768)


def test_scheduler_labels_parse_into_opsche_flags() -> None:
    base = parse_scheduler("kube-scheduler")
    assert (base.scheduler_name, base.trigger) == ("default-scheduler", None)
    run = parse_scheduler("stable-queue-blocking-no-preemption")
    assert (run.scheduler_name, run.trigger, run.blocking, run.preemption) == (
        "opsche",
        "stable-queue",
        True,
        False,
    )
    assert parse_scheduler("periodic").blocking is False
    assert parse_scheduler("periodic").preemption is True
    with pytest.raises(GridError, match="periodical"):
        parse_scheduler("periodical")


def test_periods_and_windows_of_the_ablations_are_part_of_the_label() -> None:
    run = parse_scheduler("periodic-4s")
    assert (run.trigger, run.settings) == ("periodic", {"period_s": 4.0})
    assert _opsche_args(run, None)[-2:] == ["--period", "4"]
    run = parse_scheduler("stable-queue-16s-blocking")
    assert (run.trigger, run.blocking, run.settings) == (
        "stable-queue",
        True,
        {"stable_window_s": 16.0},
    )
    assert _opsche_args(run, None)[-2:] == ["--stable-window", "16"]
    assert parse_scheduler("periodic-2.5s").settings == {"period_s": 2.5}
    assert "--period" not in _opsche_args(parse_scheduler("periodic"), None)
    with pytest.raises(GridError, match="scheduling-failure-4s"):
        parse_scheduler("scheduling-failure-4s")  # it has no period or window
    with pytest.raises(GridError, match="must be positive"):
        parse_scheduler("periodic-0s")


def test_shards_partition_the_grid() -> None:
    traces = [Path(f"/t/trace-{i}.json") for i in range(3)]
    labels = ["kube-scheduler", "periodic", "scheduling-failure"]
    whole = plan_grid(traces, labels)
    assert len(whole) == 9
    shards = [plan_grid(traces, labels, (i, 4)) for i in range(1, 5)]
    indices = sorted(run.index for shard in shards for run in shard)
    assert indices == list(range(9))
    assert result_path(Path("/out"), traces[0], "periodic") == Path(
        "/out/trace-0__periodic.json.gz"
    )
    with pytest.raises(GridError, match="shard"):
        plan_grid(traces, labels, (5, 4))
    with pytest.raises(GridError, match="same file name"):
        plan_grid([Path("/a/x.json"), Path("/b/x.json")], labels)


def test_replicaset_carries_rounded_requests_priority_and_scheduler() -> None:
    workload = Workload("wl-00007", 3.0, 9.0, 3, 2, 0.1234, 0.5)
    trace = Trace(nodes=2, node=NODE, horizon_s=10.0, priorities=2, workloads=(workload,))
    body = replicaset_manifest(workload, trace, "opsche")
    spec = body["spec"]["template"]["spec"]
    assert body["spec"]["replicas"] == 3
    assert spec["schedulerName"] == "opsche"
    assert spec["priorityClassName"] == priority_class_name(2)
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "987m", "memory": "16384Mi"}
    labels = body["spec"]["template"]["metadata"]["labels"]
    assert body["spec"]["selector"]["matchLabels"].items() <= labels.items()


def _node(name: str, cpu: str = "8", memory: str = "32Gi", ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_node_check_names_what_does_not_match() -> None:
    trace = Trace(nodes=2, node=NODE, horizon_s=10.0, priorities=1, workloads=())
    assert node_problems([_node("a"), _node("b")], trace) == []
    (problem,) = node_problems([_node("a"), _node("b", ready=False)], trace)
    assert "needs 2 schedulable nodes, the cluster has 1" in problem
    (problem,) = node_problems([_node("a"), _node("b", cpu="4")], trace)
    assert "node b has 4000m cpu" in problem


def test_counters_leave_out_runs_that_solved_nothing() -> None:
    text = "\n".join(
        [
            "# TYPE opsche_solver_runs_total counter",
            'opsche_solver_runs_total{result="plan",trigger="periodic"} 3.0',
            'opsche_solver_runs_total{result="empty",trigger="periodic"} 2.0',
            'opsche_solver_runs_total{result="nothing_pending",trigger="periodic"} 40.0',
            "# TYPE opsche_plan_activations_total counter",
            "opsche_plan_activations_total 3.0",
            "# TYPE opsche_plan_pods_moved_total counter",
            "opsche_plan_pods_moved_total 5.0",
        ]
    )
    counters = parse_counters(text + "\n")
    assert counters["solver_runs"] == 5
    assert counters["plan_activations"] == 3
    assert counters["plan_pods_moved"] == 5
    assert counters["preemption_attempts"] == 0


def test_resuming_into_results_of_another_time_scale_is_refused(tmp_path: Path) -> None:
    from opsche_daemon.bench.replay import run_grid
    from opsche_daemon.replay.replayer import ReplayOptions
    from opsche_daemon.trace.model import write_trace
    from opsche_daemon.trace.result import ReplayResult, Summary, write_result

    trace = Trace(nodes=1, node=NODE, horizon_s=100.0, priorities=1, workloads=())
    trace_path = tmp_path / "t.json"
    write_trace(trace, trace_path)
    (run,) = plan_grid([trace_path], ["kube-scheduler"])
    summary = Summary(0.5, 0.5, 0.5, None, None, None, {}, 0, {}, {}, 0, 0, 0, 0)
    quick = ReplayResult({}, run.scheduler, 10.0, 10.0, 12.0, (), (), summary)
    (tmp_path / "out").mkdir()
    write_result(quick, result_path(tmp_path / "out", trace_path, "kube-scheduler"))
    real = ReplayOptions(scheduler=run.scheduler)
    with pytest.raises(GridError, match="time scale 10 and 10 s; this grid asks for 1 and 100 s"):
        run_grid([run], tmp_path / "out", real, out=lambda _line: None)
    # The same scale and duration: the run counts as done and nothing is started.
    same = ReplayOptions(scheduler=run.scheduler, time_scale=10.0)
    assert run_grid([run], tmp_path / "out", same, out=lambda _line: None) == (0, 1)


def test_a_runs_cpu_seconds_per_process_are_those_seen_at_both_ends() -> None:
    before = {"opsche": 1.0, "etcd": None, "replayer": 2.0}
    after = {"opsche": 3.5, "etcd": 4.0, "replayer": 2.25}
    assert _cpu_used(before, after) == {"opsche": 2.5, "replayer": 0.25}
