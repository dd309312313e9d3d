"""The trace configuration: Table 1's defaults, the YAML form, and every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from opsche_daemon.trace.config import (
    TraceConfig,
    TraceConfigError,
    load_trace_config,
    trace_config_from_mapping,
)
from opsche_daemon.trace.model import NodeShape

TRACES = Path(__file__).resolve().parents[3] / "traces"

EXAMPLE = """\
nodes: 16
node: {cpu: "8", memory: 32Gi}
hours: 2
targetUsage: 0.9
interArrival: {meanSeconds: 8, minSeconds: 0.0001, maxSeconds: 128}
lifetime: {minSeconds: 2, maxSeconds: 86400}
priorities: {levels: 1, ratio: 0.8}
replicas: {max: 3, ratio: 0.8}
cpu: {mean: 0.125, min: 0.05, max: 0.5}
memory: {mean: 0.125, min: 0.05, max: 0.5}
calibration: {tolerance: 0.01, maxIterations: 40}
seed: 1
"""


def _problems(data: object) -> list[str]:
    with pytest.raises(TraceConfigError) as caught:
        trace_config_from_mapping(data)
    return list(caught.value.problems)


def test_defaults_are_table_1() -> None:
    c = TraceConfig()
    assert (c.nodes, c.hours, c.horizon_s, c.target_usage) == (16, 2.0, 7200.0, 0.9)
    assert (c.interarrival_mean_s, c.interarrival_min_s, c.interarrival_max) == (8, 0.0001, 128)
    assert (c.lifetime_min_s, c.lifetime_max_s, c.lifetime_initial_mean_s) == (2, 86400, None)
    assert (c.priority_levels, c.priority_ratio, c.replicas_max, c.replicas_ratio) == (
        1,
        0.8,
        3,
        0.8,
    )
    assert (c.cpu_mean, c.cpu_min, c.cpu_max) == (0.125, 0.05, 0.5)
    assert (c.memory_mean, c.memory_min, c.memory_max) == (0.125, 0.05, 0.5)
    assert (c.calibration_tolerance, c.seed) == (0.01, 1)
    assert c.node_shape == NodeShape(8000, 32768)
    assert c.problems() == []


def test_the_documented_example_is_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(EXAMPLE)
    loaded = load_trace_config(path)
    assert loaded.to_mapping() == TraceConfig().to_mapping()
    assert yaml.safe_load(EXAMPLE) == TraceConfig().to_mapping()
    assert load_trace_config(_write(tmp_path, "")) == TraceConfig()  # every key is optional


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_to_mapping_round_trips_through_yaml() -> None:
    config = TraceConfig(
        nodes=32,
        node_memory="64Gi",
        interarrival_mean_s=4,
        priority_levels=4,
        lifetime_initial_mean_s=300.0,
        seed=5,
    )
    text = yaml.safe_dump(config.to_mapping())
    again = trace_config_from_mapping(yaml.safe_load(text))
    assert again.to_mapping() == config.to_mapping()
    assert again.interarrival_max == 64.0
    assert again.lifetime_initial_mean_s == 300.0


def test_the_default_max_inter_arrival_follows_an_overridden_mean() -> None:
    assert TraceConfig().with_overrides(interarrival_mean_s=4).interarrival_max == 64
    assert TraceConfig().with_overrides(interarrival_mean_s=16).interarrival_max == 256
    explicit = trace_config_from_mapping({"interArrival": {"maxSeconds": 300}})
    assert explicit.with_overrides(interarrival_mean_s=16).interarrival_max == 300


def test_overrides_are_checked() -> None:
    with pytest.raises(TraceConfigError) as caught:
        TraceConfig().with_overrides(nodes=0, interarrival_mean_s=-3)
    assert caught.value.problems == (
        "nodes: must be at least 1, got 0",
        "interArrival.meanSeconds: must be positive, got -3",
    )
    with pytest.raises(TypeError, match="no field"):
        TraceConfig().with_overrides(node_count=3)


def test_unknown_keys_suggest_the_known_one() -> None:
    problems = _problems(
        {"targetUsge": 0.9, "interArrival": {"meanSecond": 3}, "priorites": {}, "zzz": 1}
    )
    assert problems == [
        "targetUsge: unknown key, got 0.9 (did you mean targetUsage?)",
        "interArrival.meanSecond: unknown key, got 3 (did you mean interArrival.meanSeconds?)",
        "priorites: unknown key, got {} (did you mean priorities?)",
        "zzz: unknown key, got 1",
    ]


def test_wrong_types_are_reported() -> None:
    problems = _problems(
        {
            "nodes": 2.5,
            "seed": True,
            "hours": "two",
            "node": 5,
            "cpu": {"mean": None},
            "memory": {"max": float("inf")},
            "lifetime": {"minSeconds": [1]},
        }
    )
    assert problems == [
        "nodes: expected an integer, got 2.5",
        "seed: expected an integer, got True",
        "hours: expected a number, got 'two'",
        "node: expected a mapping, got 5",
        "cpu.mean: expected a number, got null",
        "memory.max: expected a finite number, got inf",
        "lifetime.minSeconds: expected a number, got [1]",
    ]


def test_every_bad_value_is_listed_with_its_key_and_value() -> None:
    problems = _problems(
        {
            "nodes": 0,
            "node": {"cpu": "lots", "memory": "1Ki"},
            "hours": -1,
            "targetUsage": 1.5,
            "interArrival": {"meanSeconds": -3},
            "lifetime": {"minSeconds": 10, "maxSeconds": 5},
            "priorities": {"levels": 0, "ratio": 0},
            "replicas": {"max": 0},
            "cpu": {"max": 1.5},
            "memory": {"mean": 0.6},
            "calibration": {"tolerance": 0, "maxIterations": 0},
        }
    )
    assert problems == [
        "nodes: must be at least 1, got 0",
        "node.cpu: 'lots' is not a Kubernetes quantity (examples: 4, 500m, 16Gi, 1.5G, 1e3)",
        "node.memory: must be at least 1Mi, got '1Ki'",
        "hours: must be positive, got -1",
        "targetUsage: must be in (0, 1], got 1.5",
        "interArrival.meanSeconds: must be positive, got -3",
        "lifetime.maxSeconds: must be above minSeconds 10, got 5",
        "priorities.levels: must be at least 1, got 0",
        "priorities.ratio: must be positive, got 0",
        "replicas.max: must be at least 1, got 0",
        "cpu.max: must be a fraction of a node in (0, 1], got 1.5",
        "memory.mean: must be between min 0.05 and max 0.5, got 0.6",
        "calibration.tolerance: must be in (0, 1), got 0",
        "calibration.maxIterations: must be at least 1, got 0",
    ]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"interArrival": {"meanSeconds": 0.00001}}, "interArrival.meanSeconds: must be above"),
        ({"interArrival": {"maxSeconds": 5}}, "interArrival.maxSeconds: must be above mean"),
        ({"lifetime": {"initialMeanSeconds": 1}}, "lifetime.initialMeanSeconds: must be between"),
        ({"cpu": {"min": 0.2, "mean": 0.1}}, "cpu.mean: must be between min 0.2"),
        ({"cpu": {"min": 0}}, "cpu.min: must be a fraction of a node in (0, 1], got 0"),
    ],
)
def test_ranges_min_mean_max(data: dict[str, object], problem: str) -> None:
    problems = _problems(data)
    assert len(problems) == 1
    assert problems[0].startswith(problem)


def test_file_errors_name_the_file_on_every_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "nodes: 0\nhours: 0\n")
    with pytest.raises(TraceConfigError) as caught:
        load_trace_config(path)
    assert str(caught.value).splitlines() == [
        f"{path}: nodes: must be at least 1, got 0",
        f"{path}: hours: must be positive, got 0",
    ]
    with pytest.raises(TraceConfigError, match="not YAML"):
        load_trace_config(_write(tmp_path, "nodes: [1,\n"))
    with pytest.raises(TraceConfigError, match="expected a mapping of settings, got"):
        load_trace_config(_write(tmp_path, "- 1\n"))
    with pytest.raises(TraceConfigError, match="cannot read"):
        load_trace_config(tmp_path / "missing.yaml")


def test_invalid_config_built_in_code_fails_validate() -> None:
    with pytest.raises(TraceConfigError, match="hours: must be positive, got 0"):
        TraceConfig(hours=0).validate()


@pytest.mark.parametrize("nodes", [16, 32])
@pytest.mark.parametrize("priorities", [1, 4])
@pytest.mark.parametrize("iat", [4, 8, 16])
def test_the_paper_grid_files(nodes: int, priorities: int, iat: int) -> None:
    config = load_trace_config(TRACES / f"n{nodes}-p{priorities}-iat{iat}.yaml")
    expected = TraceConfig(nodes=nodes, priority_levels=priorities, interarrival_mean_s=iat)
    assert config.to_mapping() == expected.to_mapping()
    assert config.interarrival_max == 16 * iat


def test_the_grid_has_exactly_twelve_files() -> None:
    assert len(list(TRACES.glob("*.yaml"))) == 12
