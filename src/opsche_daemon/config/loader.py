"""Reading the config file into a ``SchedulerConfig``, collecting every problem before failing.

The loader knows no key by heart: it takes each setting's YAML key from its ``Doc`` (see
``settings.py``) and converts the value by the field's type. Sections of the file are the
prefixes of those keys (``optimiser`` for ``optimiser.periodSeconds``), so a key in no setting's
path is unknown, and unknown keys are errors: a typo must not silently fall back to a default on a
production scheduler. A wrong value is reported and its default kept, so that checking goes on
and the user sees every mistake of the file at once.

A section written as ``null`` (``preemption:`` with nothing under it) is empty, as are the
``profile`` lists and mappings; a leaf written as ``null`` is a type error.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from opsche_daemon.config.check import check_config
from opsche_daemon.config.errors import ConfigError
from opsche_daemon.config.extenders import ExtenderSettings, parse_extenders
from opsche_daemon.config.schema import Setting, settings_of, show
from opsche_daemon.config.settings import SchedulerConfig

__all__ = ["load_config", "parse_config", "read_config"]

_SETTINGS = tuple(s for s in settings_of(SchedulerConfig) if s.doc.yaml is not None)
_LEAVES = frozenset(s.doc.yaml for s in _SETTINGS if s.doc.yaml is not None)
_SECTIONS = frozenset(
    key.rsplit(".", depth)[0] for key in _LEAVES for depth in range(1, key.count(".") + 1)
)
_PLUGIN_ENTRY_KEYS = ("name", "args")


class _Invalid:
    """Marks a value that failed conversion (its problem is already recorded)."""


_INVALID = _Invalid()


def _children(prefix: str) -> list[str]:
    """The keys allowed directly under the section ``prefix`` (``""``: the top level)."""
    depth = prefix.count(".")
    return sorted({key.split(".")[depth] for key in _LEAVES | _SECTIONS if key.startswith(prefix)})


def _unknown(path: str, key: str, value: object, prefix: str) -> str:
    message = f"{path}: unknown field, got {show(value)}"
    close = difflib.get_close_matches(str(key), _children(prefix), n=1)
    return message + (f" (did you mean {prefix}{close[0]}?)" if close else "")


def _unknown_keys(data: Mapping[Any, Any], prefix: str = "") -> list[str]:
    problems: list[str] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if path in _LEAVES:
            continue
        if path not in _SECTIONS:
            problems.append(_unknown(path, key, value, prefix))
        elif isinstance(value, Mapping):
            problems += _unknown_keys(value, f"{path}.")
        elif value is not None:
            problems.append(f"{path}: expected a mapping, got {show(value)}")
    return problems


def _lookup(data: Mapping[Any, Any], key: str) -> tuple[bool, Any]:
    """(found, value) of the dotted ``key``; a missing, null or malformed section: not found."""
    *sections, leaf = key.split(".")
    node: Any = data
    for name in sections:
        node = node.get(name)
        if not isinstance(node, Mapping):
            return False, None
    return (leaf in node), node.get(leaf)


def _plugin_config(name: str, raw: Any, problems: list[str]) -> dict[str, Mapping[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.append(f"{name}: expected a list of {{name: ..., args: {{...}}}}, got {show(raw)}")
        return {}
    args: dict[str, Mapping[str, Any]] = {}
    first: dict[str, int] = {}
    for index, entry in enumerate(raw):
        where = f"{name}[{index}]"
        if not isinstance(entry, Mapping) or "name" not in entry:
            problems.append(f"{where}: expected {{name: ..., args: {{...}}}}, got {show(entry)}")
            continue
        problems += [
            f"{where}.{key}: unknown field, got {show(value)}"
            for key, value in entry.items()
            if key not in _PLUGIN_ENTRY_KEYS
        ]
        plugin, entry_args = entry["name"], entry.get("args")
        if not isinstance(plugin, str) or not plugin:
            problems.append(f"{where}.name: expected a plugin name, got {show(plugin)}")
            continue
        if plugin in first:
            problems.append(
                f"{where}.name: {plugin!r} is configured twice (first at {name}[{first[plugin]}])"
            )
            continue
        first[plugin] = index
        if entry_args is not None and not isinstance(entry_args, Mapping):
            problems.append(f"{where}.args: expected a mapping, got {show(entry_args)}")
            continue
        args[plugin] = dict(entry_args or {})
    return args


def _names(name: str, raw: Any, problems: list[str]) -> tuple[str, ...] | _Invalid:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(f"{name}: expected a list of names, got {show(raw)}")
        return _INVALID
    bad = [
        f"{name}[{i}]: expected a name, got {show(v)}"
        for i, v in enumerate(raw)
        if not isinstance(v, str)
    ]
    problems += bad
    return _INVALID if bad else tuple(raw)


def _integers(name: str, raw: Any, problems: list[str]) -> dict[str, int] | _Invalid:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append(f"{name}: expected a mapping of name -> integer, got {show(raw)}")
        return _INVALID
    values: dict[str, int] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            problems.append(f"{name}: expected a name as key, got {show(key)}")
        elif isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{name}.{key}: expected an integer, got {show(value)}")
        else:
            values[key] = value
    return values


def _scalar(item: Setting, raw: Any, problems: list[str]) -> Any:
    hint, name = item.hint, item.name
    if hint is bool:
        if isinstance(raw, bool):
            return raw
        expected = "true or false"
    elif hint is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        expected = "an integer"
    elif hint is float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
        expected = "a number"
    elif hint is str:
        if isinstance(raw, str):
            return raw
        expected = "a string"
    elif isinstance(hint, type) and issubclass(hint, StrEnum):
        values = [member.value for member in hint]
        if isinstance(raw, bool) and str(raw).lower() in values:
            return hint(str(raw).lower())  # leaderElect: true, as kube-scheduler's file has it
        if isinstance(raw, str) and raw in values:
            return hint(raw)
        expected = "one of " + ", ".join(values)
    else:
        raise TypeError(f"no conversion from YAML for {item.path}: {hint!r}")
    problems.append(f"{name}: expected {expected}, got {show(raw)}")
    return _INVALID


def _convert(item: Setting, raw: Any, problems: list[str]) -> Any:
    """``raw`` converted to the field's type, or ``_INVALID`` (the problem is recorded)."""
    origin, args = typing.get_origin(item.hint), typing.get_args(item.hint)
    if origin is tuple and args == (ExtenderSettings, ...):
        return parse_extenders(item.name, raw, problems)
    if origin is tuple and args == (str, ...):
        return _names(item.name, raw, problems)
    if origin is Mapping and args == (str, int):
        return _integers(item.name, raw, problems)
    if origin is Mapping and args and typing.get_origin(args[1]) is Mapping:
        return _plugin_config(item.name, raw, problems)
    return _scalar(item, raw, problems)


def _build(cls: type[Any], values: Mapping[str, Any], prefix: str = "") -> Any:
    """An instance of the settings dataclass ``cls`` with ``values`` (by attribute path) set."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hints[f.name]):
            kwargs[f.name] = _build(hints[f.name], values, f"{path}.")
        elif path in values:
            kwargs[f.name] = values[path]
    return cls(**kwargs)


def _parse(data: object) -> tuple[SchedulerConfig, list[str]]:
    """The tree (defaults where a value is wrong) and every problem of ``data``."""
    if not isinstance(data, Mapping):
        return SchedulerConfig(), [f"expected a mapping at the top level, got {show(data)}"]
    problems = _unknown_keys(data)
    values: dict[str, Any] = {}
    for item in _SETTINGS:
        found, raw = _lookup(data, item.name)
        if found:
            value = _convert(item, raw, problems)
            if value is not _INVALID:
                values[item.path] = value
    config: SchedulerConfig = _build(SchedulerConfig, values)
    return config, problems + check_config(config)


def parse_config(data: Mapping[str, Any]) -> SchedulerConfig:
    """Validate a parsed YAML mapping; raises ``ConfigError`` listing every problem."""
    config, problems = _parse(data)
    if problems:
        raise ConfigError(problems)
    return config


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"not valid YAML: {problem} (line {mark.line + 1}, column {mark.column + 1})"
    return "not valid YAML: " + " ".join(str(exc).split())


def read_config(path: Path | None) -> tuple[SchedulerConfig, list[str]]:
    """The tree ``path`` describes, and its problems, without raising (None: all defaults).

    Where a value is wrong its default is kept, so that callers can go on checking the rest (the
    CLI checks the profile's plugins too) and report every problem at once. Problems do not name
    the file; ``ConfigError(problems, path)`` adds it.
    """
    if path is None:
        return SchedulerConfig(), []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return SchedulerConfig(), [f"cannot read config file: {exc.strerror or exc}"]
    except UnicodeDecodeError as exc:
        return SchedulerConfig(), [f"cannot read config file: not UTF-8 text ({exc.reason})"]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return SchedulerConfig(), [_yaml_problem(exc)]
    return _parse({} if data is None else data)


def load_config(path: Path | None) -> SchedulerConfig:
    """Read and validate ``path`` (None: all defaults); ``ConfigError`` names the file."""
    config, problems = read_config(path)
    if problems:
        raise ConfigError(problems, path)
    return config
