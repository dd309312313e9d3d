"""The config file: today's format, read into the nested settings tree, every problem at once."""

from pathlib import Path

import pytest

from opsche_daemon.config import (
    ClientConnection,
    ConfigError,
    LeaderElect,
    LeaderElectionSettings,
    OptimiserSettings,
    PreemptionSettings,
    ProfileSettings,
    QueueSettings,
    SchedulerConfig,
    SolverKind,
    Trigger,
    check_config,
    load_config,
    parse_config,
    read_config,
)

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_config_block() -> str:
    """The YAML block under "The config file reads like KubeSchedulerConfiguration" in README.md."""
    text = README.read_text(encoding="utf-8")
    intro = text.index("The config file reads like KubeSchedulerConfiguration")
    start = text.index("```yaml\n", intro) + len("```yaml\n")
    return text[start : text.index("```", start)]


def test_defaults_are_kube_schedulers_and_the_old_ones() -> None:
    config = load_config(None)
    assert config == SchedulerConfig()
    assert (config.client.qps, config.client.burst) == (50.0, 100)
    assert config.queue == QueueSettings(1.0, 10.0, 300.0)
    assert config.preemption == PreemptionSettings(enabled=True, respect_pdbs=False)
    assert config.scheduler_name == "opsche"
    assert (config.bind_workers, config.percentage_of_nodes_to_score) == (16, 0)
    assert config.metrics_port == 10351
    assert config.profile == ProfileSettings((), {}, {})
    assert config.optimiser == OptimiserSettings(
        trigger=Trigger.SCHEDULING_FAILURE,
        blocking=False,
        solver=SolverKind.CPSAT,
        solve_time_limit_s=2.0,
        solve_stall_s=0.1,
        period_s=8.0,
        stable_window_s=8.0,
        poll_s=0.25,
        convergence_interval_s=0.25,
        plan_timeout_s=4.0,
        failure_cooldown_s=10.0,
        max_failure_cooldown_s=300.0,
    )


def test_enum_values_are_the_file_and_metric_strings() -> None:
    assert [t.value for t in Trigger] == ["scheduling-failure", "periodic", "stable-queue", "none"]
    assert [s.value for s in SolverKind] == ["cpsat", "heuristic"]
    assert str.__eq__(Trigger.PERIODIC, "periodic")
    assert Trigger("periodic") is Trigger.PERIODIC
    assert f"{Trigger.STABLE_QUEUE}" == "stable-queue"


def test_the_readme_block_is_accepted_with_its_meaning(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(readme_config_block())
    config = load_config(path)
    assert config == SchedulerConfig(
        profile=ProfileSettings(
            disabled=("ImageLocality",),
            weights={"NodeResourcesFit": 1},
            plugin_args={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
        )
    )
    assert isinstance(config.optimiser.trigger, Trigger)
    assert isinstance(config.optimiser.period_s, float)


def test_every_settable_field_lands_in_the_tree() -> None:
    config = parse_config(
        {
            "schedulerName": "mine",
            "clientConnection": {"qps": 0, "burst": 400},
            "bindWorkers": 4,
            "podInitialBackoffSeconds": 2,
            "podMaxBackoffSeconds": 20.5,
            "percentageOfNodesToScore": 30,
            "preemption": {"enabled": False, "respectPodDisruptionBudgets": True},
            "profile": {"disabled": ["ImageLocality"], "weights": {"NodeAffinity": 0}},
            "metricsPort": 0,
            "optimiser": {
                "trigger": "stable-queue",
                "blocking": True,
                "solver": "heuristic",
                "solveTimeLimitSeconds": 1,
                "maxDisruptionsPerPlacement": 0,
                "periodSeconds": 3,
                "stableWindowSeconds": 4,
                "planTimeoutSeconds": 5,
                "failureCooldownSeconds": 6,
                "solveStallSeconds": 0,
            },
            "leaderElection": {
                "leaderElect": True,
                "leaseDurationSeconds": 30,
                "renewDeadlineSeconds": 20,
                "retryPeriodSeconds": 4,
                "resourceName": "opsche-gpu",
                "resourceNamespace": "opsche",
            },
        }
    )
    assert config == SchedulerConfig(
        scheduler_name="mine",
        client=ClientConnection(qps=0.0, burst=400),
        bind_workers=4,
        queue=QueueSettings(initial_backoff_s=2.0, max_backoff_s=20.5),
        percentage_of_nodes_to_score=30,
        preemption=PreemptionSettings(enabled=False, respect_pdbs=True),
        profile=ProfileSettings(disabled=("ImageLocality",), weights={"NodeAffinity": 0}),
        metrics_port=0,
        optimiser=OptimiserSettings(
            trigger=Trigger.STABLE_QUEUE,
            blocking=True,
            solver=SolverKind.HEURISTIC,
            solve_time_limit_s=1.0,
            period_s=3.0,
            stable_window_s=4.0,
            plan_timeout_s=5.0,
            failure_cooldown_s=6.0,
            solve_stall_s=0.0,
        ),
        leader_election=LeaderElectionSettings(
            leader_elect=LeaderElect.TRUE,
            lease_duration_s=30.0,
            renew_deadline_s=20.0,
            retry_period_s=4.0,
            resource_name="opsche-gpu",
            resource_namespace="opsche",
        ),
    )


def test_null_sections_and_profile_lists_are_empty() -> None:
    config = parse_config(
        {
            "clientConnection": None,
            "preemption": None,
            "optimiser": None,
            "profile": {"disabled": None, "weights": None, "pluginConfig": [{"name": "X"}]},
        }
    )
    assert config.profile == ProfileSettings(plugin_args={"X": {}})


TRIGGERS = "scheduling-failure, periodic, stable-queue, none"
MISTAKES: list[tuple[dict[str, object], str]] = [
    ({"schedulerNmae": "x"}, "schedulerNmae: unknown field, got 'x' (did you mean schedulerName?)"),
    ({"optimiser": {"perodSeconds": 3}}, "optimiser.perodSeconds: unknown field, got 3"),
    ({"schedulerName": ""}, "schedulerName: must not be empty, got ''"),
    ({"clientConnection": {"qps": "x"}}, "clientConnection.qps: expected a number, got 'x'"),
    ({"clientConnection": {"qps": -1}}, "clientConnection.qps: must be at least 0, got -1"),
    ({"clientConnection": {"burst": 0}}, "clientConnection.burst: must be at least 1, got 0"),
    ({"clientConnection": 5}, "clientConnection: expected a mapping, got 5"),
    ({"bindWorkers": True}, "bindWorkers: expected an integer, got true"),
    ({"bindWorkers": 16.0}, "bindWorkers: expected an integer, got 16.0"),
    ({"bindWorkers": 0}, "bindWorkers: must be at least 1, got 0"),
    ({"preemption": {"enabled": "on"}}, "preemption.enabled: expected true or false, got 'on'"),
    ({"profile": {"weights": {"X": -1}}}, "profile.weights.X: must be at least 0, got -1"),
    ({"profile": {"weights": {"X": "hi"}}}, "profile.weights.X: expected an integer, got 'hi'"),
    ({"profile": {"disabled": "X"}}, "profile.disabled: expected a list of names, got 'X'"),
    ({"profile": {"disabled": [3]}}, "profile.disabled[0]: expected a name, got 3"),
    ({"profile": {"pluginConfig": {"name": "X"}}}, "profile.pluginConfig: expected a list"),
    (
        {"profile": {"pluginConfig": [{"args": {}}]}},
        "profile.pluginConfig[0]: expected {name: ..., args: {...}}, got {'args': {}}",
    ),
    (
        {"profile": {"pluginConfig": [{"name": "X", "arg": {}}]}},
        "profile.pluginConfig[0].arg: unknown field, got {}",
    ),
    (
        {"profile": {"pluginConfig": [{"name": "X", "args": [1]}]}},
        "profile.pluginConfig[0].args: expected a mapping, got [1]",
    ),
    (
        {"profile": {"pluginConfig": [{"name": "X"}, {"name": "X"}]}},
        "profile.pluginConfig[1].name: 'X' is configured twice (first at profile.pluginConfig[0])",
    ),
    ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be positive, got 0"),
    (
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 1},
        "podMaxBackoffSeconds: must be at least podInitialBackoffSeconds (5), got 1",
    ),
    (
        {"percentageOfNodesToScore": 101},
        "percentageOfNodesToScore: must be between 0 and 100, got 101",
    ),
    ({"metricsPort": 70000}, "metricsPort: must be between 0 and 65535, got 70000"),
    ({"optimiser": {"trigger": "x"}}, f"optimiser.trigger: expected one of {TRIGGERS}, got 'x'"),
    ({"optimiser": {"trigger": None}}, f"optimiser.trigger: expected one of {TRIGGERS}, got null"),
    (
        {"optimiser": {"solver": "gurobi"}},
        "optimiser.solver: expected one of cpsat, heuristic, got 'gurobi'",
    ),
    ({"optimiser": {"periodSeconds": -1}}, "optimiser.periodSeconds: must be positive, got -1"),
    (
        {"optimiser": {"planTimeoutSeconds": -0.5}},
        "optimiser.planTimeoutSeconds: must be positive, got -0.5",
    ),
    (
        {"optimiser": {"maxDisruptionsPerPlacement": -1}},
        "optimiser.maxDisruptionsPerPlacement: must be between 0 and 100, got -1",
    ),
    (
        {"optimiser": {"solver": "heuristic", "maxDisruptionsPerPlacement": 1}},
        "optimiser.maxDisruptionsPerPlacement: applies to the cpsat solver only, and "
        "optimiser.solver is heuristic",
    ),
    (
        {"optimiser": {"placementWorthMoves": 101}},
        "optimiser.placementWorthMoves: must be between 0 and 100, got 101",
    ),
    (
        {"optimiser": {"solver": "heuristic", "placementWorthMoves": 2}},
        "optimiser.placementWorthMoves: applies to the cpsat solver only, and "
        "optimiser.solver is heuristic",
    ),
    (
        {"optimiser": {"budgetAcrossPlans": True}},
        "optimiser.budgetAcrossPlans: needs a budget, and optimiser.maxDisruptionsPerPlacement "
        "is 0 (no limit)",
    ),
    (
        {"leaderElection": {"leaderElect": "yes"}},
        "leaderElection.leaderElect: expected one of auto, true, false, got 'yes'",
    ),
    (
        {"leaderElection": {"renewDeadlineSeconds": 15}},
        "leaderElection.renewDeadlineSeconds: must be less than "
        "leaderElection.leaseDurationSeconds (15), got 15",
    ),
    (
        {"leaderElection": {"retryPeriodSeconds": 9}},
        "leaderElection.retryPeriodSeconds: must be less than "
        "leaderElection.renewDeadlineSeconds / 1.2 (8.33), got 9",
    ),
    (
        {"leaderElection": {"retryPeriodSeconds": 0.5}},
        "leaderElection.retryPeriodSeconds: must be at least 1, got 0.5",
    ),
]


@pytest.mark.parametrize(("data", "message"), MISTAKES)
def test_each_mistake_names_the_field_and_the_value(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    [problem] = info.value.problems
    assert problem.startswith(message), problem


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(
            {
                "bindWorkers": 0,
                "typo": 1,
                "clientConnection": {"qps": "x", "burst": 0},
                "optimiser": {"periodSeconds": -1, "solver": "x"},
            }
        )
    problems = info.value.problems
    assert str(info.value).splitlines() == problems
    assert sorted(p.split(":")[0] for p in problems) == [
        "bindWorkers",
        "clientConnection.burst",
        "clientConnection.qps",
        "optimiser.periodSeconds",
        "optimiser.solver",
        "typo",
    ]


def test_a_bad_value_keeps_its_default_and_the_rest_is_read(tmp_path: Path) -> None:
    assert read_config(None) == (SchedulerConfig(), [])
    path = tmp_path / "c.yaml"
    path.write_text("bindWorkers: many\nschedulerName: mine\n")
    config, problems = read_config(path)
    assert config.bind_workers == 16
    assert config.scheduler_name == "mine"
    assert problems == ["bindWorkers: expected an integer, got 'many'"]


def test_file_problems_are_prefixed_with_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("optimiser:\n  periodSeconds: -1\nbindWorkers: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == path
    assert str(info.value).splitlines() == [
        f"{path}: bindWorkers: must be at least 1, got 0",
        f"{path}: optimiser.periodSeconds: must be positive, got -1",
    ]


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        load_config(tmp_path / "missing.yaml")
    assert str(missing.value) == (
        f"{tmp_path / 'missing.yaml'}: cannot read config file: No such file or directory"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    with pytest.raises(
        ConfigError, match=r"bad.yaml: not valid YAML: .*\(line 2, column 1\)"
    ) as info:
        load_config(bad)
    assert len(str(info.value).splitlines()) == 1
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(
        ConfigError, match="expected a mapping at the top level, got \\['a', 'b'\\]"
    ):
        load_config(listed)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    assert load_config(empty) == SchedulerConfig()


def test_check_config_applies_the_same_rules_to_a_tree_built_in_code() -> None:
    assert check_config(SchedulerConfig()) == []
    config = SchedulerConfig(
        client=ClientConnection(qps=-2.5),
        queue=QueueSettings(max_in_unschedulable_s=0),
        optimiser=OptimiserSettings(poll_s=-1, trigger="sometimes"),  # type: ignore[arg-type]
    )
    assert check_config(config) == [
        "clientConnection.qps: must be at least 0, got -2.5",
        "queue.max_in_unschedulable_s: must be positive, got 0",
        "optimiser.trigger: expected one of scheduling-failure, periodic, stable-queue, none, "
        "got 'sometimes'",
        "optimiser.poll_s: must be positive, got -1",
    ]
