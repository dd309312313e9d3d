"""``opsche trace generate`` and ``opsche trace show``: make a workload trace, look at one.

``generate`` takes a YAML configuration (``traces/*.yaml``; every key is optional, defaults are
seed 000's Table 1) and the flags that vary between the paper's trace settings, calibrates the
lifetime (one progress line per iteration on stderr) and writes the trace file, with one
summary line on stdout. A bad file or flag is one ``opsche: error:`` line per problem and exit
code 2, like ``opsche config check``; a target the lifetime bounds cannot reach is exit code 1.

The generator is imported when a handler runs, not when the parser is built, as for every other
command. ``register`` returns the ``trace`` subparsers so that ``replay`` can be added to it by
its own module.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import CONFIG_EXIT_CODE, UserError

__all__ = ["register"]

# Flag -> TraceConfig field it overrides.
_FLAGS = {
    "nodes": "nodes",
    "iat": "interarrival_mean_s",
    "priorities": "priority_levels",
    "hours": "hours",
    "seed": "seed",
    "target_usage": "target_usage",
    "node_cpu": "node_cpu",
    "node_memory": "node_memory",
}


def register(commands: Any) -> Any:
    """Add the ``trace`` command group; return its subparsers (``replay`` is added there)."""
    trace = commands.add_parser("trace", help="generate a workload trace; summarise one")
    sub = trace.add_subparsers(dest="trace_command", metavar="ACTION", required=True)
    generate = sub.add_parser(
        "generate",
        help="generate a calibrated trace (seed 000, Section 4.1)",
        description="Generate a trace: arrivals, an initial state and a lifetime calibrated to "
        "the target time-averaged effective demand. Flags override the --config file.",
    )
    generate.add_argument(
        "--config", type=Path, default=None, metavar="FILE", help="YAML trace configuration"
    )
    generate.add_argument("--nodes", type=int, help="nodes in the cluster (default 16)")
    generate.add_argument(
        "--iat",
        type=float,
        metavar="SECONDS",
        help="mean inter-arrival time (default 8; its max follows at 16 x unless the file sets it)",
    )
    generate.add_argument("--priorities", type=int, help="priority levels (default 1)")
    generate.add_argument("--hours", type=float, help="simulation horizon (default 2)")
    generate.add_argument("--seed", type=int, help="random seed (default 1)")
    generate.add_argument(
        "--target-usage",
        type=float,
        metavar="SHARE",
        help="time-averaged effective demand to calibrate to (default 0.9)",
    )
    generate.add_argument("--node-cpu", metavar="QUANTITY", help="each node's cpu (default 8)")
    generate.add_argument(
        "--node-memory", metavar="QUANTITY", help="each node's memory (default 32Gi)"
    )
    generate.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="trace file to write"
    )
    generate.set_defaults(handler=_generate)
    show = sub.add_parser("show", help="summarise a trace file, with a demand chart")
    show.add_argument("file", type=Path, help="a trace file of opsche trace generate")
    show.set_defaults(handler=_show)
    # ``opsche trace replay`` is registered on ``sub`` by the replay command's own module.
    return sub


def _generate(args: argparse.Namespace) -> int:
    from opsche_daemon.trace.config import (  # noqa: PLC0415 - imported when the command runs
        KEY_OF_FIELD,
        TraceConfig,
        TraceConfigError,
        load_trace_config,
    )
    from opsche_daemon.trace.generate import CalibrationError, generate_trace  # noqa: PLC0415
    from opsche_daemon.trace.model import write_trace  # noqa: PLC0415

    output: Path = args.output
    if output.is_dir():
        raise UserError(f"-o {output}: is a directory, expected a file name", CONFIG_EXIT_CODE)
    if not output.parent.is_dir():
        raise UserError(f"-o {output}: directory {output.parent} does not exist", CONFIG_EXIT_CODE)
    try:
        config = TraceConfig() if args.config is None else load_trace_config(args.config)
    except TraceConfigError as exc:
        raise UserError(str(exc), CONFIG_EXIT_CODE) from None
    given = {flag: getattr(args, flag) for flag in _FLAGS if getattr(args, flag) is not None}
    try:
        config = config.with_overrides(**{_FLAGS[flag]: value for flag, value in given.items()})
    except TraceConfigError as exc:
        flag_of = {KEY_OF_FIELD[_FLAGS[f]]: "--" + f.replace("_", "-") for f in given}
        where = "" if args.config is None else f"{args.config}: "
        lines = []
        for problem in exc.problems:
            key, rest = problem.split(":", 1)
            lines.append(f"{flag_of[key]} ({key}):{rest}" if key in flag_of else where + problem)
        raise UserError("\n".join(lines), CONFIG_EXIT_CODE) from None

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        trace = generate_trace(config, say)
    except CalibrationError as exc:
        raise UserError(str(exc)) from None
    try:
        write_trace(trace, output)
    except OSError as exc:
        raise UserError(f"-o {output}: cannot write: {exc.strerror or exc}") from None
    print(
        f"{output}: {len(trace.workloads)} workloads ({trace.pods()} pods, "
        f"{trace.pods(initial=True)} initial) on {trace.nodes} nodes over {config.hours:g} h; "
        f"demand {trace.achieved_usage:.2%} (target {config.target_usage:.2%}) with mean "
        f"lifetime {trace.mean_lifetime_s:.1f} s after {len(trace.calibration)} iterations"
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    import shutil  # noqa: PLC0415

    from opsche_daemon.trace.model import TraceFileError, read_trace  # noqa: PLC0415
    from opsche_daemon.trace.show import format_trace_summary  # noqa: PLC0415

    try:
        trace = read_trace(args.file)
    except TraceFileError as exc:
        raise UserError(str(exc), CONFIG_EXIT_CODE) from None
    width = shutil.get_terminal_size((72, 24)).columns
    print(format_trace_summary(trace, width=min(width, 72)))
    return 0
