"""``opsche bench grid``: seed 000's whole evaluation grid, in virtual time, from one command.

The grid is the product of the settings of ``traces/`` (16 and 32 nodes, 1 and 4 priorities,
mean inter-arrival 4, 8 and 16 s), five seeds, and the scheduler configurations of a *part*:

* ``figure3``: the baseline and the three triggers, non-blocking, 8 s period and window,
  DefaultPreemption on (Figure 3: Section 4.3's ranges are these rows of Tables 5-12);
* ``tables``: the baseline and the paper's 14 variants of Tables 5-14: scheduling-failure,
  and periodic and stable-queue at 4, 8 and 16 s, each blocking and non-blocking;
* ``all``: those 14 again with DefaultPreemption off (Tables 15-24; Table 4 pairs them).

Traces are generated into ``OUT/traces`` the first time (generation is deterministic, so a
second machine or session makes byte-identical files) and then replayed through
``bench.virtual_grid`` into ``OUT``, one result per run, so the grid resumes and shards as any
other. Traces are ordered seed first: a grid stopped half-way has every setting at fewer seeds,
not half the settings at all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opsche_daemon.replay.driver import Printer
from opsche_daemon.trace.config import TraceConfigError, load_trace_config
from opsche_daemon.trace.generate import CalibrationError, generate_trace
from opsche_daemon.trace.model import write_trace

__all__ = [
    "PARTS",
    "SETTINGS",
    "GridSpec",
    "PaperGridError",
    "prepare_traces",
    "schedulers_of",
]

SETTINGS = tuple(f"n{n}-p{p}-iat{i}" for n in (16, 32) for p in (1, 4) for i in (4, 8, 16))
_FIGURE3 = ("periodic", "stable-queue", "scheduling-failure")
_TIMED = tuple(f"{t}-{s}s" for t in ("periodic", "stable-queue") for s in (4, 16))
_VARIANTS = tuple(
    v + b for v in (*_FIGURE3, *_TIMED) for b in ("", "-blocking")
)  # the paper's 14: 8 s is the default period and window, so it carries no suffix
PARTS: dict[str, tuple[str, ...]] = {
    "figure3": ("kube-scheduler", *_FIGURE3),
    "tables": ("kube-scheduler", *_VARIANTS),
    "all": ("kube-scheduler", *_VARIANTS, *(v + "-no-preemption" for v in _VARIANTS)),
}


class PaperGridError(ValueError):
    """A grid that cannot be prepared: an unknown setting, a missing or bad configuration."""


@dataclass(frozen=True)
class GridSpec:
    """Which traces: settings (names of ``configs/<setting>.yaml``), seeds and length."""

    settings: Sequence[str] = SETTINGS
    seeds: Sequence[int] = (1, 2, 3, 4, 5)
    hours: float = 2.0


def schedulers_of(part: str) -> tuple[str, ...]:
    """The configuration labels of ``part`` (``figure3``, ``tables`` or ``all``)."""
    try:
        return PARTS[part]
    except KeyError:
        raise PaperGridError(f"part {part!r}: expected one of {', '.join(PARTS)}") from None


def _trace_name(setting: str, seed: int, hours: float) -> str:
    return f"{setting}-{hours:g}h-s{seed}.json"


def prepare_traces(
    spec: GridSpec, configs: Path, out_dir: Path, out: Printer = print
) -> list[Path]:
    """The grid's trace files, seed first, generating the missing ones into ``out_dir``."""
    missing = [s for s in spec.settings if not (configs / f"{s}.yaml").is_file()]
    if missing:
        raise PaperGridError(
            f"no configuration for {', '.join(missing)} in {configs} (expected <setting>.yaml; "
            f"the paper's are {', '.join(SETTINGS)})"
        )
    if spec.hours <= 0 or not spec.seeds:
        raise PaperGridError("a grid needs a positive length and at least one seed")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    made = 0
    for seed in spec.seeds:
        for setting in spec.settings:
            path = out_dir / _trace_name(setting, seed, spec.hours)
            paths.append(path)
            if path.exists():
                continue
            try:
                config = load_trace_config(configs / f"{setting}.yaml").with_overrides(
                    seed=seed, hours=spec.hours
                )
                trace = generate_trace(config, lambda _line: None)
            except (TraceConfigError, CalibrationError) as exc:
                raise PaperGridError(f"{setting}, seed {seed}: {exc}") from None
            partial = path.with_suffix(".partial")  # a killed run leaves no half a trace
            write_trace(trace, partial)
            partial.replace(path)
            made += 1
    if made:
        out(f"generated {made} of the grid's {len(paths)} traces into {out_dir}")
    return paths
