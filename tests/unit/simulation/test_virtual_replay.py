"""A whole replay in virtual time: opsche's own code, complete and consistent results, no waiting.

The trace is the sample 4-node, 2-priority one of ``traces/samples`` cut to 5 virtual minutes:
under plans off (the virtual baseline) and under the periodic trigger, whose CP-SAT solves run for
real in a thread while the virtual clock follows the wall clock.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from opsche_daemon.config import SchedulerConfig, Trigger
from opsche_daemon.replay.driver import ReplayOptions
from opsche_daemon.scheduler import Scheduler
from opsche_daemon.simulation.run import replay_virtual_to_file
from opsche_daemon.trace.model import read_trace
from opsche_daemon.trace.result import ReplayResult, SchedulerRun, read_result
from opsche_daemon.trace.summary import check_consistency

TRACE = Path(__file__).parents[3] / "traces" / "samples" / "n4-p4-iat8-15min-seed1.json"
DURATION_S = 300.0


def _replay(tmp_path: Path, trigger: Trigger) -> ReplayResult:
    config = SchedulerConfig()
    config = replace(config, optimiser=replace(config.optimiser, trigger=trigger))
    run = SchedulerRun(label=str(trigger), scheduler_name="opsche", trigger=str(trigger))
    options = ReplayOptions(scheduler=run, duration_s=DURATION_S, progress_every_s=1e9)
    output = tmp_path / f"{trigger}.json"
    result = replay_virtual_to_file(
        read_trace(TRACE), TRACE, options, config, output, out=lambda _: None
    )
    assert read_result(output).summary == result.summary  # the file is the result
    return result


@pytest.mark.parametrize("trigger", [Trigger.NONE, Trigger.PERIODIC])
def test_a_virtual_replay_is_complete_and_consistent(tmp_path: Path, trigger: Trigger) -> None:
    trace = read_trace(TRACE)
    result = _replay(tmp_path, trigger)
    assert check_consistency(trace, result) == []
    assert len(result.samples) == DURATION_S
    assert result.environment["backend"] == "virtual"
    assert result.environment["initial_pods"] == sum(
        w.replicas for w in trace.workloads if w.initial
    )
    # Virtual seconds cost far less than real ones, even with solves on the wall clock.
    assert result.environment["real_s"] < DURATION_S / 3
    summary = result.summary
    assert summary.pods_created > 20
    assert summary.pods_ran > 0
    assert summary.effective_usage > 0.5
    if trigger is Trigger.PERIODIC:
        assert summary.solver_runs is not None and summary.solver_runs > 0
        assert 0 < result.environment["solve_s"] < result.environment["real_s"]
    else:
        assert summary.solver_runs == 0 and summary.plan_activations == 0
        assert result.environment["solve_s"] == 0
        assert summary.disruptions_by_cause["evicted"] == 0  # no plan evicts without plans


def test_a_scheduler_task_that_dies_stops_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: Scheduler) -> None:
        del self
        raise RuntimeError("boom")

    monkeypatch.setattr(Scheduler, "flush_loop", broken)
    with pytest.raises(RuntimeError, match=r"queue-flush task ended.*boom"):
        _replay(tmp_path, Trigger.NONE)
    assert not (tmp_path / "none.json").exists()
