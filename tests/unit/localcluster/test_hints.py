"""Hints a user copies name the cluster they are about."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsche_daemon.localcluster.cluster import default_state_dir, down_command


def test_the_default_cluster_needs_no_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPSCHE_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert down_command(default_state_dir()) == ".venv/bin/opsche cluster down"


def test_another_state_dir_is_spelt_out_even_when_it_came_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPSCHE_STATE_DIR", str(tmp_path / "mine"))
    assert down_command(default_state_dir()) == (
        f".venv/bin/opsche cluster down --state-dir {tmp_path / 'mine'}"
    )
