"""The demo's pure parts: its argument checks, its counting and its table."""

from __future__ import annotations

from typing import Any

import pytest

from opsche_daemon.bench.demo import (
    Outcome,
    _count,
    format_side_by_side,
    plans_settled,
    summarise_plans,
    workload_summary,
)
from opsche_daemon.cli.main import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--nodes", "1"], "--nodes 1: the demo needs between 2 and 500 nodes"),
        (["demo", "--observe", "-3"], "--observe -3.0: must not be negative"),
    ],
)
def test_bad_arguments_are_one_plain_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def pod(name: str, node: str = "", phase: str = "Pending", deleting: bool = False) -> Any:
    metadata = {"name": name, **({"deletionTimestamp": "now"} if deleting else {})}
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": phase}}


def test_counts_running_pending_and_replaced_replicas() -> None:
    pods = [
        pod("small-a", "n1", "Running"),
        pod("small-x", "n2", "Running"),  # the replacement of small-b
        pod("big-1", "n3", "Running"),
        pod("big-2"),
        pod("small-c", "n4", "Running", deleting=True),  # terminating: neither
    ]
    replicas = {"small-a": "u1", "small-b": "u2", "small-c": "u3"}
    assert _count(pods, replicas) == (3, 1, 1)


def test_the_table_puts_both_schedulers_side_by_side() -> None:
    table = format_side_by_side(
        [
            Outcome("kube-scheduler", 8, 4, 0, 15.6, False, "0/8 nodes are available"),
            Outcome("opsche", 12, 0, 4, 7.7, True, "1 plan(s) converged"),
        ]
    )
    lines = table.splitlines()
    assert lines[0].split() == ["kube-scheduler", "opsche"]
    assert lines[1].split() == ["pods", "running", "8", "12"]
    assert lines[2].split() == ["pods", "pending", "4", "0"]
    assert lines[3].split() == ["running", "pods", "moved", "0", "4"]
    assert lines[4].split() == ["all", "placed", "after", "never", "7.7", "s"]
    assert "kube-scheduler: 0/8 nodes are available" in table
    assert workload_summary(8).endswith("then 4 pods of 4 cpu")


def test_the_plans_note_counts_runs_by_result_and_plans_by_outcome() -> None:
    scrape = "\n".join(
        [
            "# HELP opsche_solver_runs_total Optimiser runs.",
            'opsche_solver_runs_total{result="plan",trigger="scheduling-failure"} 1.0',
            'opsche_solver_runs_total{result="nothing_pending",trigger="scheduling-failure"} 1.0',
            'opsche_solver_runs_total{result="empty",trigger="periodic"} 0.0',
            'opsche_plan_outcomes_total{outcome="converged"} 1.0',
            "opsche_plan_activations_total 1.0",
        ]
    )
    assert summarise_plans(scrape, 4) == (
        "solver runs: 1 nothing_pending, 1 plan; plans: 1 converged; 4 OpscheMoved event(s) "
        "name the plan that moved each replica"
    )
    assert summarise_plans("", 0).startswith("solver runs: none; plans: none;")


def test_the_summary_waits_until_every_installed_plan_has_an_outcome() -> None:
    converging = "\n".join(
        [
            "opsche_plan_activations_total 2.0",
            'opsche_plan_outcomes_total{outcome="converged"} 1.0',
            'opsche_plan_outcomes_total{outcome="timed_out"} 0.0',
        ]
    )
    assert not plans_settled(converging)  # the second plan is still being enforced
    assert plans_settled(converging.replace('"converged"} 1.0', '"converged"} 2.0'))
    assert plans_settled("")  # no plan at all
