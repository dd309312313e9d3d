"""The trace generator's configuration: every parameter of seed 000's Table 1, with its defaults.

Defaults are the paper's values, with two it leaves open: the node shape (``8`` cpu and
``32Gi``, a common 1:4 cloud shape; every request is a fraction of a node, so the shape only
decides how requests round to millicores and MiB) and the calibration's iteration budget (40; the
paper only says it stops within 1 %). ``interArrival.maxSeconds`` defaults to 16 x the mean
(Table 1) and is stored as "not given" (``None``), so overriding the mean (``--iat``) moves the
default max with it; an explicit max stays put.

The YAML form uses camelCase keys, as the scheduler's config file does, and errors are collected,
not raised one by one: a ``TraceConfigError`` lists every problem of a file, one per line, each
naming the key path and the value, and an unknown key says which known key it resembles. A
``TraceConfig`` built in code is checked by ``validate`` (the generator calls it), with the same
messages.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from opsche_daemon.model.quantity import QuantityError, parse_quantity
from opsche_daemon.trace.model import NodeShape

__all__ = [
    "KEY_OF_FIELD",
    "TraceConfig",
    "TraceConfigError",
    "load_trace_config",
    "trace_config_from_mapping",
]

_MIB = 2**20


class TraceConfigError(ValueError):
    """Every problem of a trace configuration, one per line (``problems`` keeps them apart)."""

    def __init__(self, problems: list[str], where: str | None = None) -> None:
        self.problems = tuple(problems)
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__("\n".join(prefix + p for p in problems))


@dataclass(frozen=True)
class TraceConfig:
    """A trace generator configuration (Table 1 of seed 000; defaults are the paper's).

    Requests (``cpu_*``, ``memory_*``) are fractions of one node. ``lifetime_initial_mean_s``
    replaces Little's-law estimate as the calibration's first mean lifetime (``None``: the
    estimate). ``interarrival_max_s`` ``None`` means 16 x the mean (see ``interarrival_max``).
    """

    nodes: int = 16
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    hours: float = 2.0
    target_usage: float = 0.9
    interarrival_mean_s: float = 8.0
    interarrival_min_s: float = 0.0001
    interarrival_max_s: float | None = None
    lifetime_min_s: float = 2.0
    lifetime_max_s: float = 86400.0
    lifetime_initial_mean_s: float | None = None
    priority_levels: int = 1
    priority_ratio: float = 0.8
    replicas_max: int = 3
    replicas_ratio: float = 0.8
    cpu_mean: float = 0.125
    cpu_min: float = 0.05
    cpu_max: float = 0.5
    memory_mean: float = 0.125
    memory_min: float = 0.05
    memory_max: float = 0.5
    calibration_tolerance: float = 0.01
    calibration_max_iterations: int = 40
    seed: int = 1

    @property
    def horizon_s(self) -> float:
        """The simulation horizon in seconds."""
        return self.hours * 3600.0

    @property
    def interarrival_max(self) -> float:
        """The inter-arrival time's max: as given, else 16 x the mean (Table 1)."""
        if self.interarrival_max_s is None:
            return 16.0 * self.interarrival_mean_s
        return self.interarrival_max_s

    @property
    def node_shape(self) -> NodeShape:
        """Each node's allocatable cpu (millicores) and memory (MiB), rounded down."""
        cpu = parse_quantity(self.node_cpu)
        memory = parse_quantity(self.node_memory)
        return NodeShape(math.floor(cpu * 1000), math.floor(memory / _MIB))

    def problems(self) -> list[str]:
        """Every invalid value, as ``key.path: what is wrong, got value`` lines."""
        return _value_problems(self)

    def validate(self) -> None:
        """Raise ``TraceConfigError`` listing every problem (nothing if the config is valid)."""
        problems = self.problems()
        if problems:
            raise TraceConfigError(problems)

    def with_overrides(self, **changes: Any) -> TraceConfig:
        """A copy with fields replaced (command-line flags), checked.

        An override of ``interarrival_mean_s`` keeps a defaulted max at 16 x the new mean.
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"TraceConfig has no field(s) {', '.join(unknown)}")
        config = dataclasses.replace(self, **changes)
        config.validate()
        return config

    def to_mapping(self) -> dict[str, Any]:
        """The YAML shape of ``load_trace_config``, with the max inter-arrival time resolved.

        The trace file stores this as its ``config``, so it names every value that was used;
        loading it back generates the same trace.
        """
        lifetime: dict[str, Any] = {"minSeconds": self.lifetime_min_s}
        lifetime["maxSeconds"] = self.lifetime_max_s
        if self.lifetime_initial_mean_s is not None:
            lifetime["initialMeanSeconds"] = self.lifetime_initial_mean_s
        return {
            "nodes": self.nodes,
            "node": {"cpu": self.node_cpu, "memory": self.node_memory},
            "hours": self.hours,
            "targetUsage": self.target_usage,
            "interArrival": {
                "meanSeconds": self.interarrival_mean_s,
                "minSeconds": self.interarrival_min_s,
                "maxSeconds": self.interarrival_max,
            },
            "lifetime": lifetime,
            "priorities": {"levels": self.priority_levels, "ratio": self.priority_ratio},
            "replicas": {"max": self.replicas_max, "ratio": self.replicas_ratio},
            "cpu": {"mean": self.cpu_mean, "min": self.cpu_min, "max": self.cpu_max},
            "memory": {"mean": self.memory_mean, "min": self.memory_min, "max": self.memory_max},
            "calibration": {
                "tolerance": self.calibration_tolerance,
                "maxIterations": self.calibration_max_iterations,
            },
            "seed": self.seed,
        }


# YAML key path -> (field, kind). Kinds: "int", "number", "quantity" (string or number).
_KEYS: dict[str, tuple[str, str]] = {
    "nodes": ("nodes", "int"),
    "node.cpu": ("node_cpu", "quantity"),
    "node.memory": ("node_memory", "quantity"),
    "hours": ("hours", "number"),
    "targetUsage": ("target_usage", "number"),
    "interArrival.meanSeconds": ("interarrival_mean_s", "number"),
    "interArrival.minSeconds": ("interarrival_min_s", "number"),
    "interArrival.maxSeconds": ("interarrival_max_s", "number"),
    "lifetime.minSeconds": ("lifetime_min_s", "number"),
    "lifetime.maxSeconds": ("lifetime_max_s", "number"),
    "lifetime.initialMeanSeconds": ("lifetime_initial_mean_s", "number"),
    "priorities.levels": ("priority_levels", "int"),
    "priorities.ratio": ("priority_ratio", "number"),
    "replicas.max": ("replicas_max", "int"),
    "replicas.ratio": ("replicas_ratio", "number"),
    "cpu.mean": ("cpu_mean", "number"),
    "cpu.min": ("cpu_min", "number"),
    "cpu.max": ("cpu_max", "number"),
    "memory.mean": ("memory_mean", "number"),
    "memory.min": ("memory_min", "number"),
    "memory.max": ("memory_max", "number"),
    "calibration.tolerance": ("calibration_tolerance", "number"),
    "calibration.maxIterations": ("calibration_max_iterations", "int"),
    "seed": ("seed", "int"),
}
KEY_OF_FIELD = {field: key for key, (field, _) in _KEYS.items()}
"""The YAML key path of each ``TraceConfig`` field (the CLI maps its flags' errors with it)."""

_SECTIONS = sorted({key.split(".")[0] for key in _KEYS if "." in key})
_SCALARS = sorted(key for key in _KEYS if "." not in key)


def _show(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float):
        return f"{value:g}"
    if value is None:
        return "null"
    return str(value)


def _unknown(path: str, key: object, value: object, known: list[str], prefix: str) -> str:
    message = f"{path}: unknown key, got {_show(value)}"
    close = difflib.get_close_matches(str(key), known, n=1)
    return message + (f" (did you mean {prefix}{close[0]}?)" if close else "")


def _convert(path: str, kind: str, raw: Any, problems: list[str]) -> tuple[bool, Any]:
    """(ok, value) of one leaf; a wrong type is recorded in ``problems``."""
    if kind == "int":
        if isinstance(raw, int) and not isinstance(raw, bool):
            return True, raw
        problems.append(f"{path}: expected an integer, got {_show(raw)}")
    elif kind == "number":
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            if math.isfinite(raw):
                return True, float(raw)
            problems.append(f"{path}: expected a finite number, got {_show(raw)}")
        else:
            problems.append(f"{path}: expected a number, got {_show(raw)}")
    elif isinstance(raw, str) or (isinstance(raw, int | float) and not isinstance(raw, bool)):
        return True, str(raw)
    else:
        problems.append(f"{path}: expected a quantity such as 8 or 32Gi, got {_show(raw)}")
    return False, None


def _leaves(data: Mapping[Any, Any]) -> list[tuple[str, Any] | str]:
    """In file order: the known (key path, value) pairs of ``data`` and the structure's problems."""
    leaves: list[tuple[str, Any] | str] = []
    for key, value in data.items():
        if key in _SECTIONS:
            if value is None:
                continue
            if not isinstance(value, Mapping):
                leaves.append(f"{key}: expected a mapping, got {_show(value)}")
                continue
            children = sorted(k.split(".", 1)[1] for k in _KEYS if k.startswith(f"{key}."))
            for child, leaf in value.items():
                path = f"{key}.{child}"
                if path in _KEYS:
                    leaves.append((path, leaf))
                else:
                    leaves.append(_unknown(path, child, leaf, children, f"{key}."))
        elif key in _KEYS:
            leaves.append((str(key), value))
        else:
            # A mapping is probably a misspelt section, anything else a misspelt setting.
            known = _SECTIONS if isinstance(value, Mapping) else _SCALARS
            leaves.append(_unknown(str(key), key, value, known, ""))
    return leaves


def trace_config_from_mapping(data: Any, where: str | None = None) -> TraceConfig:
    """The configuration of a parsed YAML mapping; ``TraceConfigError`` lists every problem.

    ``where`` (a file name) prefixes every line. Missing keys keep their defaults; a section
    written as ``null`` is empty.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise TraceConfigError([f"expected a mapping of settings, got {_show(data)}"], where)
    problems: list[str] = []
    values: dict[str, Any] = {}
    for leaf in _leaves(data):
        if isinstance(leaf, str):
            problems.append(leaf)
            continue
        path, raw = leaf
        field, kind = _KEYS[path]
        ok, converted = _convert(path, kind, raw, problems)
        if ok:
            values[field] = converted
    config = TraceConfig(**values)
    problems += config.problems()  # a key with a wrong type kept its (valid) default
    if problems:
        raise TraceConfigError(problems, where)
    return config


def load_trace_config(path: Path) -> TraceConfig:
    """Read a YAML trace configuration file; ``TraceConfigError`` names the file in every line."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise TraceConfigError([f"cannot read: {exc.strerror or exc}"], str(path)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TraceConfigError([f"not YAML: {exc}".replace("\n", " ")], str(path)) from None
    return trace_config_from_mapping(data, str(path))


def _positive_quantity(path: str, text: str, unit: Fraction, problems: list[str]) -> None:
    try:
        value = parse_quantity(text)
    except QuantityError as exc:
        problems.append(f"{path}: {exc}")
        return
    if value < unit:
        problems.append(f"{path}: must be at least {'1m' if unit < 1 else '1Mi'}, got {text!r}")


def _value_problems(c: TraceConfig) -> list[str]:
    problems: list[str] = []

    def need(ok: bool, key: str, message: str, value: object) -> None:
        if not ok:
            problems.append(f"{key}: {message}, got {_show(value)}")

    def finite(value: object) -> bool:
        return isinstance(value, int | float) and math.isfinite(value)

    def integer(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    need(integer(c.nodes) and c.nodes >= 1, "nodes", "must be at least 1", c.nodes)
    _positive_quantity("node.cpu", c.node_cpu, Fraction(1, 1000), problems)
    _positive_quantity("node.memory", c.node_memory, Fraction(_MIB), problems)
    need(finite(c.hours) and c.hours > 0, "hours", "must be positive", c.hours)
    need(
        finite(c.target_usage) and 0 < c.target_usage <= 1,
        "targetUsage",
        "must be in (0, 1]",
        c.target_usage,
    )
    _range(
        problems,
        "interArrival",
        "Seconds",
        c.interarrival_min_s,
        c.interarrival_mean_s,
        c.interarrival_max_s,
        c.interarrival_max if finite(c.interarrival_mean_s) else None,
    )
    lt_min, lt_max = c.lifetime_min_s, c.lifetime_max_s
    need(finite(lt_min) and lt_min > 0, "lifetime.minSeconds", "must be positive", lt_min)
    if finite(lt_min) and lt_min > 0:
        need(
            finite(lt_max) and lt_max > lt_min,
            "lifetime.maxSeconds",
            f"must be above minSeconds {lt_min:g}",
            lt_max,
        )
    if c.lifetime_initial_mean_s is not None and finite(lt_min) and finite(lt_max):
        first = c.lifetime_initial_mean_s
        need(
            finite(first) and lt_min < first < lt_max,
            "lifetime.initialMeanSeconds",
            f"must be between minSeconds {lt_min:g} and maxSeconds {lt_max:g}",
            first,
        )
    for name, levels, ratio, what in (
        ("priorities", c.priority_levels, c.priority_ratio, "levels"),
        ("replicas", c.replicas_max, c.replicas_ratio, "max"),
    ):
        need(integer(levels) and levels >= 1, f"{name}.{what}", "must be at least 1", levels)
        need(finite(ratio) and ratio > 0, f"{name}.ratio", "must be positive", ratio)
    for name, lo, mean, hi in (
        ("cpu", c.cpu_min, c.cpu_mean, c.cpu_max),
        ("memory", c.memory_min, c.memory_mean, c.memory_max),
    ):
        bad = False
        for key, value in (("min", lo), ("mean", mean), ("max", hi)):
            if not (finite(value) and 0 < value <= 1):
                problems.append(
                    f"{name}.{key}: must be a fraction of a node in (0, 1], got {_show(value)}"
                )
                bad = True
        if not bad:
            need(lo < mean < hi, f"{name}.mean", f"must be between min {lo:g} and max {hi:g}", mean)
    tol = c.calibration_tolerance
    need(finite(tol) and 0 < tol < 1, "calibration.tolerance", "must be in (0, 1)", tol)
    iterations = c.calibration_max_iterations
    need(
        integer(iterations) and iterations >= 1,
        "calibration.maxIterations",
        "must be at least 1",
        iterations,
    )
    need(integer(c.seed), "seed", "must be an integer", c.seed)
    return problems


def _range(
    problems: list[str],
    section: str,
    unit: str,
    lo: float,
    mean: float,
    given_hi: float | None,
    hi: float | None,
) -> None:
    """Problems of a ``min < mean < max`` triple (``given_hi`` None: the max is derived)."""

    def ok(value: object) -> bool:
        return isinstance(value, int | float) and math.isfinite(value) and value > 0

    keys = {k: f"{section}.{k}{unit}" for k in ("min", "mean", "max")}
    bad = False
    for key, value in (("min", lo), ("mean", mean), ("max", given_hi)):
        if key == "max" and value is None:
            continue
        if not ok(value):
            problems.append(f"{keys[key]}: must be positive, got {_show(value)}")
            bad = True
    if bad or hi is None:
        return
    if not lo < mean:
        problems.append(f"{keys['mean']}: must be above min{unit} {lo:g}, got {_show(mean)}")
    elif not mean < hi:
        source = "" if given_hi is not None else " (16 x the mean)"
        problems.append(f"{keys['max']}: must be above mean{unit} {mean:g}{source}, got {hi:g}")
