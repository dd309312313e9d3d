from pathlib import Path

import pytest

from opsche_daemon.config import ConfigError, SchedulerConfig, load_config, parse_config


def test_defaults_are_kube_schedulers() -> None:
    config = load_config(None)
    assert (config.qps, config.burst) == (50.0, 100)
    assert (config.initial_backoff_s, config.max_backoff_s) == (1.0, 10.0)
    assert config.preemption_enabled and not config.preemption_respect_pdb
    assert config.scheduler_name == "opsche"


def test_full_file_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "schedulerName: mine\n"
        "clientConnection: {qps: 200, burst: 400}\n"
        "preemption: {enabled: false, respectPodDisruptionBudgets: true}\n"
        "profile:\n"
        "  disabled: [ImageLocality]\n"
        "  weights: {NodeResourcesFit: 5}\n"
        "  pluginConfig:\n"
        "    - name: NodeResourcesFit\n"
        "      args: {scoringStrategy: {type: MostAllocated}}\n"
    )
    config = load_config(path)
    assert config == SchedulerConfig(
        scheduler_name="mine",
        qps=200.0,
        burst=400,
        preemption_enabled=False,
        preemption_respect_pdb=True,
        disabled_plugins=("ImageLocality",),
        weights={"NodeResourcesFit": 5},
        plugin_args={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"schedulerNmae": "x"}, "unknown field"),
        ({"clientConnection": {"qps": "fast"}}, "clientConnection.qps: expected a number"),
        ({"clientConnection": {"burst": 0}}, "burst >= 1"),
        ({"bindWorkers": True}, "bindWorkers: expected an integer"),
        ({"preemption": {"enabled": "yes"}}, "preemption.enabled: expected true or false"),
        ({"profile": {"weights": {"X": -1}}}, "profile.weights"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 1}, "podMaxBackoffSeconds"),
        ({"percentageOfNodesToScore": 101}, "between 0 and 100"),
    ],
)
def test_mistakes_name_the_field(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
