"""The paper's grid: its settings and parts, and traces generated once, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsche_daemon.bench.paper_grid import (
    PARTS,
    SETTINGS,
    GridSpec,
    PaperGridError,
    prepare_traces,
    schedulers_of,
)
from opsche_daemon.bench.replay import parse_scheduler
from opsche_daemon.cli.main import main
from opsche_daemon.trace.model import read_trace

CONFIGS = Path(__file__).parents[3] / "traces"


def test_the_settings_are_traces_configurations_and_every_label_parses() -> None:
    assert len(SETTINGS) == 12
    assert all((CONFIGS / f"{s}.yaml").is_file() for s in SETTINGS)
    for labels in PARTS.values():
        assert len(set(labels)) == len(labels)
        for label in labels:
            parse_scheduler(label)
    assert len(schedulers_of("figure3")) == 4  # the baseline and three triggers
    assert len(schedulers_of("tables")) == 15  # the baseline and the paper's 14 variants
    assert len(schedulers_of("all")) == 29
    assert set(schedulers_of("figure3")) < set(schedulers_of("tables")) < set(schedulers_of("all"))
    assert "stable-queue-16s-blocking" in schedulers_of("tables")
    with pytest.raises(PaperGridError, match="part 'most'"):
        schedulers_of("most")


def test_traces_are_generated_seed_first_once_and_identically(tmp_path: Path) -> None:
    spec = GridSpec(settings=("n16-p1-iat8", "n16-p4-iat8"), seeds=(1, 2), hours=0.25)
    lines: list[str] = []
    paths = prepare_traces(spec, CONFIGS, tmp_path / "a", lines.append)
    assert [p.name for p in paths] == [
        "n16-p1-iat8-0.25h-s1.json",
        "n16-p4-iat8-0.25h-s1.json",
        "n16-p1-iat8-0.25h-s2.json",
        "n16-p4-iat8-0.25h-s2.json",
    ]
    assert lines == [f"generated 4 of the grid's 4 traces into {tmp_path / 'a'}"]
    first = read_trace(paths[2])
    assert (first.nodes, first.priorities, first.horizon_s) == (16, 1, 900.0)
    # Again: nothing to generate. Elsewhere: the same bytes.
    assert prepare_traces(spec, CONFIGS, tmp_path / "a", lines.append) == paths
    assert len(lines) == 1
    again = prepare_traces(spec, CONFIGS, tmp_path / "b", lines.append)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in paths]


def test_an_unknown_setting_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(PaperGridError, match=r"no configuration for n8-p1-iat8 .*n16-p1-iat4"):
        prepare_traces(GridSpec(settings=("n8-p1-iat8",)), CONFIGS, tmp_path)


def test_the_command_lists_its_size_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["bench", "grid", "--out", str(tmp_path), "--configs", str(CONFIGS)]
    assert main([*out, "--list", "--seeds", "1,2"]) == 0
    assert (
        "12 settings x 2 seeds x 4 configurations = 96 virtual replays" in capsys.readouterr().out
    )
    assert main([*out, "--seeds", "one"]) == 1
    assert "--seeds one: expected whole numbers" in capsys.readouterr().err
    assert main([*out, "--seeds", "1,2,1"]) == 1
    assert "--seeds: 1 given twice" in capsys.readouterr().err
    assert main([*out, "--settings", "n8-p1-iat8"]) == 1
    assert "no configuration for n8-p1-iat8" in capsys.readouterr().err
    assert not (tmp_path / "traces").exists()
