"""The generator of Section 4.1: calibration, the length-biased initial state, the attributes.

The statistical checks use five standard errors from the analytical distributions, on traces
large enough for them to be sharp (a 64-node 4 h trace has about 14 000 arrivals).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from opsche_daemon.trace.config import TraceConfig, TraceConfigError, load_trace_config
from opsche_daemon.trace.demand import demand_steps, time_averaged_demand
from opsche_daemon.trace.distributions import TruncatedGeometric, TruncatedPareto
from opsche_daemon.trace.generate import (
    CalibrationError,
    effective_load,
    generate_trace,
    initial_lifetime,
    little_mean_lifetime,
)
from opsche_daemon.trace.model import Trace, read_trace, write_trace

SIGMAS = 5.0
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture(scope="module")
def paper() -> Trace:
    """Table 1's 16-node, 8 s, 1-priority, 2 h setting with seed 1."""
    return generate_trace(TraceConfig())


@pytest.fixture(scope="module")
def big() -> Trace:
    """Many arrivals (64 nodes, 1 s, 4 h, 4 priorities) for sharp statistics of the draws."""
    config = TraceConfig(
        nodes=64, hours=4, interarrival_mean_s=1, priority_levels=4, calibration_tolerance=0.05
    )
    return generate_trace(config)


@pytest.fixture(scope="module")
def crowded() -> Trace:
    """About a thousand initial workloads (256 nodes) over a short horizon."""
    return generate_trace(TraceConfig(nodes=256, hours=0.05, interarrival_mean_s=0.5))


def _within(values: list[float], mean: float, variance: float) -> bool:
    return abs(sum(values) / len(values) - mean) <= SIGMAS * math.sqrt(variance / len(values))


def test_calibration_stops_within_one_percent(paper: Trace) -> None:
    config = TraceConfig()
    assert paper.target_usage == 0.9
    assert paper.achieved_usage is not None
    assert abs(paper.achieved_usage - 0.9) / 0.9 <= config.calibration_tolerance
    # The recorded usage is the exact time-averaged demand of the workloads in the file.
    steps = demand_steps(paper.workloads, paper.nodes, paper.node)
    assert time_averaged_demand(steps, paper.horizon_s) == pytest.approx(paper.achieved_usage)
    history = paper.calibration
    assert history[-1] == {"mean_lifetime_s": paper.mean_lifetime_s, "usage": paper.achieved_usage}
    # It stops at the first iteration within the tolerance, not before, not after.
    errors = [abs(it["usage"] - 0.9) / 0.9 for it in history]
    assert all(e > 0.01 for e in errors[:-1])
    assert errors[-1] <= 0.01


def test_calibration_starts_from_littles_law_and_scales_proportionally(paper: Trace) -> None:
    config = TraceConfig()
    replicas = TruncatedGeometric(3, 0.8).mean
    # 0.9 x 16 nodes = (1 / 8 s) x E[replicas] x 0.125 x W
    expected = 0.9 * 16 * 8 / (replicas * 0.125)
    assert little_mean_lifetime(config) == pytest.approx(expected, rel=1e-9)
    history = paper.calibration
    assert history[0]["mean_lifetime_s"] == pytest.approx(expected, rel=1e-9)
    for before, after in itertools.pairwise(history):
        scaled = before["mean_lifetime_s"] * 0.9 / before["usage"]
        assert after["mean_lifetime_s"] == pytest.approx(scaled, rel=1e-12)
    assert len(history) > 1  # the Little's-law estimate alone does not meet the 1 % rule


def test_a_looser_tolerance_stops_sooner(paper: Trace) -> None:
    loose = generate_trace(TraceConfig(calibration_tolerance=0.05))
    assert len(loose.calibration) < len(paper.calibration)
    assert loose.achieved_usage is not None
    assert abs(loose.achieved_usage - 0.9) / 0.9 <= 0.05
    # Same random streams: the iterations the two share are identical.
    shared = len(loose.calibration)
    assert loose.calibration == paper.calibration[:shared]


def test_an_initial_mean_override_replaces_littles_law() -> None:
    config = TraceConfig(nodes=4, hours=0.25, lifetime_initial_mean_s=60.0)
    assert generate_trace(config).calibration[0]["mean_lifetime_s"] == 60.0


def test_progress_reports_every_iteration() -> None:
    lines: list[str] = []
    trace = generate_trace(TraceConfig(nodes=4, hours=0.25), lines.append)
    assert len(lines) == len(trace.calibration)
    assert lines[0].startswith("calibration 1/40: mean lifetime ")
    assert "target 90.00%" in lines[-1]


def test_an_unreachable_target_is_a_calibration_error() -> None:
    # Lifetimes of at most 10 s cannot keep a 2 h trace 90 % busy.
    with pytest.raises(CalibrationError, match=r"above lifetime\.maxSeconds") as caught:
        generate_trace(TraceConfig(lifetime_max_s=10.0))
    assert caught.value.best_usage < 0.1
    assert "best achieved" in str(caught.value)
    with pytest.raises(CalibrationError, match="in 2 iterations") as exhausted:
        generate_trace(TraceConfig(calibration_max_iterations=2))
    assert abs(exhausted.value.best_usage - 0.9) / 0.9 > 0.01


def test_an_invalid_config_is_refused() -> None:
    with pytest.raises(TraceConfigError, match="nodes: must be at least 1"):
        generate_trace(TraceConfig(nodes=0))


def test_initial_load_matches_the_target(paper: Trace, crowded: Trace) -> None:
    for trace in (paper, crowded, generate_trace(TraceConfig(nodes=32, seed=4, hours=0.1))):
        initial = [w for w in trace.workloads if w.initial]
        load = effective_load(initial, trace.nodes, trace.node)
        # Stopped as close as one more workload gets: within half the largest workload's share.
        largest = max(
            effective_load([w], trace.nodes, trace.node) for w in trace.workloads if w.initial
        )
        assert abs(load - 0.9) <= largest / 2
        assert effective_load(initial[:-1], trace.nodes, trace.node) < 0.9
    crowded_initial = [w for w in crowded.workloads if w.initial]
    assert effective_load(crowded_initial, crowded.nodes, crowded.node) == pytest.approx(
        0.9, abs=0.002
    )


def test_the_initial_state_stops_as_close_to_the_target_as_it_gets() -> None:
    """The workload that crosses the target is kept only if it lands closer than stopping short."""
    stopped_short = 0
    for seed in range(1, 13):
        config = TraceConfig(nodes=16, hours=0.05, seed=seed, calibration_tolerance=0.2)
        trace = generate_trace(config)
        initial = [w for w in trace.workloads if w.initial]
        load = effective_load(initial, trace.nodes, trace.node)
        before = effective_load(initial[:-1], trace.nodes, trace.node)
        assert before < 0.9
        assert abs(load - 0.9) <= abs(before - 0.9)
        stopped_short += load < 0.9
    assert 0 < stopped_short < 12  # both cases happen among these seeds


def test_initial_lifetimes_are_length_biased_draws() -> None:
    lifetime = TruncatedPareto.from_mean(350.0, 2.0, 86400.0)
    biased = lifetime.length_biased()
    rng = random.Random(2)
    pairs = [initial_lifetime(lifetime, rng.random(), rng.random()) for _ in range(200_000)]
    totals = [total for total, _ in pairs]
    assert all(0 <= remaining <= total for total, remaining in pairs)
    assert _within(totals, biased.mean, biased.variance)
    assert sum(totals) / len(totals) > 10 * lifetime.mean  # what the naive approach misses
    shares = [remaining / total for total, remaining in pairs]
    assert _within(shares, 0.5, 1 / 12)  # remaining ~ Uniform(0, X*)


def test_initial_workloads_of_a_trace_have_length_biased_remaining_lives(crowded: Trace) -> None:
    initial = [w for w in crowded.workloads if w.initial]
    assert len(initial) > 900
    assert all(w.start_s == 0 and w.end_s > 0 for w in initial)
    assert crowded.mean_lifetime_s is not None
    lifetime = TruncatedPareto.from_mean(crowded.mean_lifetime_s, 2.0, 86400.0)
    biased = lifetime.length_biased()
    # remaining = U X*: mean E[X*]/2, second moment E[X*^2]/3.
    mean = biased.mean / 2
    variance = biased.moment(2) / 3 - mean**2
    remaining = [w.end_s for w in initial]
    assert _within(remaining, mean, variance)
    naive = lifetime.mean / 2  # remaining lives of plain (not length-biased) draws
    assert sum(remaining) / len(remaining) > 10 * naive


def test_arrival_attributes_follow_their_distributions(big: Trace) -> None:
    config = TraceConfig(nodes=64, hours=4, interarrival_mean_s=1, priority_levels=4)
    arrivals = [w for w in big.workloads if not w.initial]
    assert len(arrivals) > 12_000
    starts = [w.start_s for w in arrivals]
    assert starts == sorted(starts)
    assert starts[0] > 0
    assert starts[-1] <= config.horizon_s
    gaps = [b - a for a, b in zip([0.0, *starts], starts, strict=False)]
    iat = TruncatedPareto.from_mean(1.0, 0.0001, 16.0)
    assert max(gaps) <= 16.0 + 1e-4
    assert _within(gaps, iat.mean, iat.variance)
    request = TruncatedPareto.from_mean(0.125, 0.05, 0.5)
    for values in ([w.cpu_fraction for w in arrivals], [w.memory_fraction for w in arrivals]):
        assert min(values) >= 0.05
        assert max(values) <= 0.5
        assert _within(values, request.mean, request.variance)
    # cpu and memory are independent draws.
    cpu = [w.cpu_fraction for w in arrivals]
    memory = [w.memory_fraction for w in arrivals]
    n = len(arrivals)
    covariance = sum(c * m for c, m in zip(cpu, memory, strict=True)) / n - (
        sum(cpu) / n * sum(memory) / n
    )
    assert abs(covariance / request.variance) <= SIGMAS / math.sqrt(n)
    assert big.mean_lifetime_s is not None
    lifetime = TruncatedPareto.from_mean(big.mean_lifetime_s, 2.0, 86400.0)
    lives = [w.end_s - w.start_s for w in arrivals]
    assert min(lives) >= 2.0 - 1e-4
    assert max(lives) <= 86400.0 + 1e-4
    assert _within(lives, lifetime.mean, lifetime.variance)


@pytest.mark.parametrize(("attribute", "levels"), [("priority", 4), ("replicas", 3)])
def test_priorities_and_replicas_are_geometric(big: Trace, attribute: str, levels: int) -> None:
    counts = Counter(getattr(w, attribute) for w in big.workloads)
    assert sorted(counts) == list(range(1, levels + 1))
    for k in range(1, levels):
        spread = math.sqrt(1 / counts[k] + 1 / counts[k + 1])
        assert abs(math.log(counts[k + 1] / counts[k]) - math.log(0.8)) <= SIGMAS * spread


def test_names_and_fields(paper: Trace) -> None:
    names = [w.name for w in paper.workloads]
    assert all(DNS_1123.match(n) for n in names)
    assert len(set(names)) == len(names)
    initial = [w for w in paper.workloads if w.initial]
    arriving = [w for w in paper.workloads if not w.initial]
    assert [w.name for w in initial] == [f"init-{i:04d}" for i in range(1, len(initial) + 1)]
    assert [w.name for w in arriving] == [f"wl-{i:05d}" for i in range(1, len(arriving) + 1)]
    assert paper.workloads[: len(initial)] == tuple(initial)
    assert (paper.nodes, paper.horizon_s, paper.priorities, paper.seed) == (16, 7200.0, 1, 1)
    assert paper.mean_interarrival_s == 8.0
    assert paper.config == TraceConfig().to_mapping()
    assert {w.priority for w in paper.workloads} == {1}
    assert any(w.end_s > paper.horizon_s for w in arriving)  # lifetimes may outlive the horizon


def test_same_seed_same_trace_other_seed_other_trace(paper: Trace) -> None:
    again = generate_trace(TraceConfig())
    assert json.dumps(again.to_json()) == json.dumps(paper.to_json())
    other = generate_trace(TraceConfig(seed=2))
    assert other.workloads != paper.workloads
    starts = [w.start_s for w in paper.workloads if not w.initial]
    assert [w.start_s for w in other.workloads if not w.initial][:50] != starts[:50]


def test_each_attribute_has_its_own_stream(paper: Trace) -> None:
    """Four priorities instead of one change the priorities and nothing else."""
    four = generate_trace(TraceConfig(priority_levels=4))
    assert [(w.start_s, w.end_s, w.replicas, w.cpu_fraction) for w in four.workloads] == [
        (w.start_s, w.end_s, w.replicas, w.cpu_fraction) for w in paper.workloads
    ]
    assert {w.priority for w in four.workloads} == {1, 2, 3, 4}


def test_trace_file_round_trip(paper: Trace, tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    write_trace(paper, path)
    again = read_trace(path)
    assert again == paper
    assert json.dumps(again.to_json()) == json.dumps(paper.to_json())


def test_a_traces_own_config_regenerates_it(tmp_path: Path) -> None:
    trace = generate_trace(TraceConfig(nodes=4, hours=0.25, priority_levels=4, seed=3))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(trace.config))  # JSON is YAML
    assert generate_trace(load_trace_config(path)) == trace


SAMPLES = Path(__file__).resolve().parents[3] / "traces" / "samples"


@pytest.mark.parametrize(
    ("name", "base", "overrides"),
    [
        ("n4-p1-iat8-15min-seed1.json", "n16-p1-iat8.yaml", {"nodes": 4, "hours": 0.25}),
        ("n4-p4-iat8-15min-seed1.json", "n16-p4-iat8.yaml", {"nodes": 4, "hours": 0.25}),
        ("n16-p1-iat8-15min-seed1.json", "n16-p1-iat8.yaml", {"hours": 0.25}),
        ("n16-p1-iat8-seed1.json", "n16-p1-iat8.yaml", {}),
    ],
)
def test_the_sample_traces_are_what_the_generator_makes(
    tmp_path: Path, name: str, base: str, overrides: dict[str, float]
) -> None:
    config = load_trace_config(SAMPLES.parent / base).with_overrides(seed=1, **overrides)
    path = tmp_path / name
    write_trace(generate_trace(config), path)
    assert path.read_bytes() == (SAMPLES / name).read_bytes()
    assert (SAMPLES / name).stat().st_size < 200_000
