"""Each setting is documented once; the loader and ``opsche config defaults`` read that record."""

from dataclasses import replace

import pytest
import yaml

from opsche_daemon.config import (
    Doc,
    SchedulerConfig,
    defaults_yaml,
    parse_config,
    settings_of,
    yaml_key,
)
from opsche_daemon.config.settings import ClientConnection, QueueSettings

SETTINGS = list(settings_of(SchedulerConfig))


def test_every_leaf_is_documented_with_a_reason_and_a_unique_key() -> None:
    assert len(SETTINGS) == 40
    for item in SETTINGS:
        assert item.doc.reason, item.path
        assert item.value_in(SchedulerConfig()) == item.default, item.path
    keys = [s.doc.yaml for s in SETTINGS if s.doc.yaml is not None]
    assert len(keys) == len(set(keys)) == 36


def test_the_settings_the_file_cannot_set() -> None:
    assert [s.path for s in SETTINGS if s.doc.yaml is None] == [
        "queue.max_in_unschedulable_s",
        "optimiser.poll_s",
        "optimiser.convergence_interval_s",
        "optimiser.max_failure_cooldown_s",
    ]
    assert parse_config({}).optimiser.poll_s == 0.25


def test_qps_zero_is_documented_as_no_rate_limit() -> None:
    [qps] = [s for s in SETTINGS if s.path == "client.qps"]
    assert "0 turns the client-side rate limit off" in qps.doc.reason
    assert parse_config({"clientConnection": {"qps": 0}}).client == ClientConnection(0.0, 100)


def test_messages_use_the_yaml_key() -> None:
    assert yaml_key(QueueSettings, "max_backoff_s") == "podMaxBackoffSeconds"
    assert yaml_key(QueueSettings, "max_in_unschedulable_s") == "max_in_unschedulable_s"
    with pytest.raises(KeyError):
        yaml_key(QueueSettings, "nope")


@pytest.mark.parametrize(
    ("doc", "value", "bounds", "violation"),
    [
        (Doc(None, "", "r", above=0), 0, "> 0", "must be positive"),
        (Doc(None, "", "r", low=1), 0, ">= 1", "must be at least 1"),
        (Doc(None, "", "r", low=0, high=100), 100.5, "0 to 100", "must be between 0 and 100"),
        (Doc(None, "", "r", high=3), 2, "<= 3", None),
        (Doc(None, "", "r"), -5, "", None),
    ],
)
def test_bounds(doc: Doc, value: float, bounds: str, violation: str | None) -> None:
    assert doc.bounds == bounds
    assert doc.violation(value) == violation


def test_the_defaults_file_loads_back_to_the_defaults() -> None:
    text = defaults_yaml()
    assert parse_config(yaml.safe_load(text)) == SchedulerConfig()
    for item in SETTINGS:
        key = (item.doc.yaml or item.path).rsplit(".", 1)[-1]
        assert f"{key}: " in text, item.path
    assert "# optimiser.poll_s: 0.25 (not settable here)  # seconds, > 0" in text
    assert "  periodSeconds: 8  # seconds, > 0" in text


def test_the_defaults_file_follows_a_changed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # Generated from the records, not written by hand: a different default shows up in it.
    from opsche_daemon.config import describe

    changed = [
        replace(s, default=12) if s.path == "bind_workers" else s
        for s in settings_of(SchedulerConfig)
    ]
    monkeypatch.setattr(describe, "settings_of", lambda cls: iter(changed))
    assert "\nbindWorkers: 12  # bindings, >= 1\n" in describe.defaults_yaml()
