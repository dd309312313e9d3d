"""opsche's configuration file: a YAML document that reads like KubeSchedulerConfiguration.

Example (every field optional; the defaults are kube-scheduler's)::

    schedulerName: opsche
    clientConnection: {qps: 50, burst: 100}
    bindWorkers: 16
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    percentageOfNodesToScore: 0      # 0: adaptive, as upstream
    preemption: {enabled: true, respectPodDisruptionBudgets: false}
    profile:
      disabled: [ImageLocality]      # plugin names to turn off
      weights: {NodeResourcesFit: 1} # Score weights to override
      pluginConfig:
        - name: NodeResourcesFit
          args: {scoringStrategy: {type: MostAllocated}}

Unknown keys and wrong types are errors naming the field: a typo must not silently fall back to a
default on a production scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "SchedulerConfig", "load_config"]


class ConfigError(ValueError):
    """The config file is unreadable or invalid; the message names the field."""


@dataclass(frozen=True)
class SchedulerConfig:
    """Validated settings of one opsche daemon."""

    scheduler_name: str = "opsche"
    qps: float = 50.0
    burst: int = 100
    bind_workers: int = 16
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 10.0
    percentage_of_nodes_to_score: int = 0
    preemption_enabled: bool = True
    preemption_respect_pdb: bool = False
    disabled_plugins: tuple[str, ...] = ()
    weights: Mapping[str, int] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics_port: int = 10351
    trigger: str = "scheduling-failure"
    blocking: bool = False
    solver: str = "cpsat"
    solve_time_limit_s: float = 2.0
    period_s: float = 8.0
    stable_window_s: float = 8.0
    plan_timeout_s: float = 4.0
    failure_cooldown_s: float = 10.0


_TOP_KEYS = {
    "schedulerName",
    "clientConnection",
    "bindWorkers",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "percentageOfNodesToScore",
    "preemption",
    "profile",
    "metricsPort",
    "optimiser",
}


def _number(data: Mapping[str, Any], key: str, where: str, *, integer: bool) -> Any:
    value: Any = data[key]
    wrong_kind = not isinstance(value, (int, float)) or (integer and not isinstance(value, int))
    if isinstance(value, bool) or wrong_kind:
        expected = "an integer" if integer else "a number"
        raise ConfigError(f"{where}{key}: expected {expected}, got {value!r}")
    return value if integer else float(value)


def _section(data: Mapping[str, Any], key: str, allowed: set[str]) -> Mapping[str, Any]:
    section = data.get(key) or {}
    if not isinstance(section, Mapping) or set(section) - allowed:
        raise ConfigError(f"{key}: only {', '.join(sorted(allowed))} may be set")
    return section


def _flag(section: Mapping[str, Any], key: str, where: str) -> bool:
    value = section[key]
    if not isinstance(value, bool):
        raise ConfigError(f"{where}{key}: expected true or false, got {value!r}")
    return value


_INTEGERS = {
    "bindWorkers": "bind_workers",
    "percentageOfNodesToScore": "percentage_of_nodes_to_score",
    "metricsPort": "metrics_port",
}
_SECONDS = {
    "podInitialBackoffSeconds": "initial_backoff_s",
    "podMaxBackoffSeconds": "max_backoff_s",
}


def _profile(data: Mapping[str, Any]) -> dict[str, Any]:
    profile = _section(data, "profile", {"disabled", "weights", "pluginConfig"})
    disabled = profile.get("disabled") or []
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        raise ConfigError("profile.disabled: expected a list of plugin names")
    weights = profile.get("weights") or {}
    if not isinstance(weights, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in weights.values()
    ):
        raise ConfigError("profile.weights: expected plugin name -> non-negative integer")
    args: dict[str, Mapping[str, Any]] = {}
    for index, entry in enumerate(profile.get("pluginConfig") or []):
        if not isinstance(entry, Mapping) or "name" not in entry:
            raise ConfigError(f"profile.pluginConfig[{index}]: expected {{name: ..., args: {{}}}}")
        entry_args = entry.get("args") or {}
        if not isinstance(entry_args, Mapping):
            raise ConfigError(f"profile.pluginConfig[{index}].args: expected a mapping")
        args[str(entry["name"])] = entry_args
    return {"disabled_plugins": tuple(disabled), "weights": dict(weights), "plugin_args": args}


def _optimiser(data: Mapping[str, Any]) -> dict[str, Any]:
    section = _section(
        data,
        "optimiser",
        {"trigger", "blocking", "solver", "solveTimeLimitSeconds", "periodSeconds",
         "stableWindowSeconds", "planTimeoutSeconds", "failureCooldownSeconds"},
    )  # fmt: skip
    values: dict[str, Any] = {}
    if "trigger" in section:
        trigger = section["trigger"]
        if trigger not in ("scheduling-failure", "periodic", "stable-queue", "none"):
            raise ConfigError(
                f"optimiser.trigger: {trigger!r} is not scheduling-failure, periodic, "
                "stable-queue or none"
            )
        values["trigger"] = trigger
    if "blocking" in section:
        values["blocking"] = _flag(section, "blocking", "optimiser.")
    if "solver" in section:
        if section["solver"] not in ("cpsat", "heuristic"):
            raise ConfigError("optimiser.solver: expected cpsat or heuristic")
        values["solver"] = section["solver"]
    for key, attr in (
        ("solveTimeLimitSeconds", "solve_time_limit_s"),
        ("periodSeconds", "period_s"),
        ("stableWindowSeconds", "stable_window_s"),
        ("planTimeoutSeconds", "plan_timeout_s"),
        ("failureCooldownSeconds", "failure_cooldown_s"),
    ):
        if key in section:
            value = _number(section, key, "optimiser.", integer=False)
            if value <= 0:
                raise ConfigError(f"optimiser.{key}: must be positive")
            values[attr] = value
    return values


def _check(config: SchedulerConfig) -> SchedulerConfig:
    if config.qps < 0 or config.burst < 1:
        raise ConfigError("clientConnection: qps must be >= 0 and burst >= 1")
    if config.bind_workers < 1:
        raise ConfigError("bindWorkers: must be at least 1")
    if not 0 <= config.percentage_of_nodes_to_score <= 100:
        raise ConfigError("percentageOfNodesToScore: must be between 0 and 100")
    if config.initial_backoff_s <= 0 or config.max_backoff_s < config.initial_backoff_s:
        raise ConfigError("podMaxBackoffSeconds must be >= podInitialBackoffSeconds > 0")
    if not 0 <= config.metrics_port <= 65535:
        raise ConfigError("metricsPort: must be between 0 and 65535")
    return config


def parse_config(data: Mapping[str, Any]) -> SchedulerConfig:
    """Validate a parsed YAML mapping."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"unknown field(s): {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    if "schedulerName" in data:
        name = data["schedulerName"]
        if not isinstance(name, str) or not name:
            raise ConfigError(f"schedulerName: expected a non-empty string, got {name!r}")
        values["scheduler_name"] = name
    client = _section(data, "clientConnection", {"qps", "burst"})
    if "qps" in client:
        values["qps"] = _number(client, "qps", "clientConnection.", integer=False)
    if "burst" in client:
        values["burst"] = _number(client, "burst", "clientConnection.", integer=True)
    for key, attr in _INTEGERS.items():
        if key in data:
            values[attr] = _number(data, key, "", integer=True)
    for key, attr in _SECONDS.items():
        if key in data:
            values[attr] = _number(data, key, "", integer=False)
    preemption = _section(data, "preemption", {"enabled", "respectPodDisruptionBudgets"})
    if "enabled" in preemption:
        values["preemption_enabled"] = _flag(preemption, "enabled", "preemption.")
    if "respectPodDisruptionBudgets" in preemption:
        values["preemption_respect_pdb"] = _flag(
            preemption, "respectPodDisruptionBudgets", "preemption."
        )
    values.update(_profile(data))
    values.update(_optimiser(data))
    return _check(SchedulerConfig(**values))


def load_config(path: Path | None) -> SchedulerConfig:
    """Read and validate ``path`` (None: all defaults)."""
    if path is None:
        return SchedulerConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return parse_config(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
