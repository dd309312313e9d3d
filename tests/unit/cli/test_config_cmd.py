"""``opsche config check|defaults``, and how ``opsche run`` handles the config, with no cluster."""

import argparse
from pathlib import Path

import pytest
import yaml

from opsche_daemon.cli.main import build_parser, main
from opsche_daemon.cli.run_cmd import apply_flags
from opsche_daemon.config import (
    OptimiserSettings,
    PreemptionSettings,
    SchedulerConfig,
    SolverKind,
    Trigger,
    parse_config,
)

BAD = """\
bindWorkers: 0
optimiser: {periodSeconds: -1, trigger: sometimes}
profile:
  disabled: [ImageLocalty]
  pluginConfig:
    - name: DefaultPreemption
      args: {minCandidateNodesPercentage: 200}
"""


def _file(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_accepts_a_good_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, "profile: {disabled: [ImageLocality]}\noptimiser: {trigger: periodic}\n")
    assert main(["config", "check", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: OK: schedulerName opsche, 11 of 12 default plugins, preemption on, "
        "trigger periodic (solver cpsat)\n"
    )


def test_check_prints_every_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, BAD, "bad.yaml")
    assert main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # Unknown keys first, then wrong types, values out of range, and the profile's plugins.
    assert err.splitlines() == [
        f"opsche: error: {path}: optimiser.trigger: expected one of scheduling-failure, "
        "periodic, stable-queue, none, got 'sometimes'",
        f"opsche: error: {path}: bindWorkers: must be at least 1, got 0",
        f"opsche: error: {path}: optimiser.periodSeconds: must be positive, got -1",
        f"opsche: error: {path}: profile.disabled: unknown plugin 'ImageLocalty' "
        "(did you mean ImageLocality?)",
        f"opsche: error: {path}: profile.pluginConfig: DefaultPreemption args: "
        "minCandidateNodesPercentage: Invalid value: 200: not in valid range [0, 100]",
    ]


def test_check_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: cannot read config file: No such file" in capsys.readouterr().err


def test_run_reports_the_config_before_the_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, BAD, "bad.yaml")
    code = main(["run", "--config", str(path), "--kubeconfig", str(tmp_path / "no-kubeconfig")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 5
    assert "kubeconfig" not in err


def test_run_with_a_good_config_then_checks_the_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "bindWorkers: 4\n")
    missing = tmp_path / "no-kubeconfig"
    assert main(["run", "--config", str(path), "--kubeconfig", str(missing)]) == 1
    assert capsys.readouterr().err == f"opsche: error: kubeconfig {missing} does not exist\n"


def test_no_preemption_takes_default_preemption_out_of_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "profile: {weights: {DefaultPreemption: 1}}\n")
    missing = str(tmp_path / "no-kubeconfig")
    assert main(["config", "check", str(path)]) == 0
    capsys.readouterr()
    assert main(["run", "--config", str(path), "--no-preemption", "--kubeconfig", missing]) == 2
    assert capsys.readouterr().err == (
        f"opsche: error: {path}: profile.weights: unknown plugin 'DefaultPreemption' "
        "(it is in the profile only while preemption.enabled is true)\n"
    )


def _run_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", *argv])


def test_flags_override_the_nested_settings() -> None:
    loaded = parse_config({"schedulerName": "file", "optimiser": {"solver": "heuristic"}})
    flags = ("--scheduler-name", "cli", "--no-preemption", "--trigger", "none", "--blocking")
    config = apply_flags(loaded, _run_args(*flags))
    assert config == SchedulerConfig(
        scheduler_name="cli",
        preemption=PreemptionSettings(enabled=False),
        optimiser=OptimiserSettings(
            trigger=Trigger.NONE, blocking=True, solver=SolverKind.HEURISTIC
        ),
    )
    assert config.optimiser.trigger is Trigger.NONE
    assert apply_flags(loaded, _run_args()) == loaded


def test_trigger_choices_are_the_enum(capsys: pytest.CaptureFixture[str]) -> None:
    for trigger in Trigger:
        assert _run_args("--trigger", trigger.value).trigger == trigger
    with pytest.raises(SystemExit) as info:
        _run_args("--trigger", "sometimes")
    assert info.value.code == 2
    assert "'scheduling-failure', 'periodic', 'stable-queue', 'none'" in capsys.readouterr().err


def test_defaults_prints_a_file_that_loads_to_the_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "defaults"]) == 0
    out = capsys.readouterr().out
    assert parse_config(yaml.safe_load(out)) == SchedulerConfig()
    assert "\n  qps: 50  # requests/s, >= 0\n" in out
