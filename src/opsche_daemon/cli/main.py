"""``opsche`` entry point: parses arguments and dispatches to a subcommand module.

The subcommand modules import only what their flags need at the top; each handler imports its
heavy parts (the Kubernetes client, kopf, aiohttp, the local cluster) when it runs, so ``opsche
solve`` on a file, ``opsche config check`` or ``--help`` load none of them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from opsche_daemon import __version__
from opsche_daemon.cli import (
    bench_cmd,
    cluster_cmd,
    config_cmd,
    demo_cmd,
    image_cmd,
    replay_cmd,
    run_cmd,
    score_cmd,
    solve_cmd,
    trace_cmd,
)
from opsche_daemon.cli.errors import UserError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used by tests and the docs)."""
    parser = argparse.ArgumentParser(
        prog="opsche",
        description="A Kubernetes scheduler with a cluster-wide constraint-solver optimiser.",
    )
    parser.add_argument("--version", action="version", version=f"opsche {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    cluster_cmd.register(commands)
    demo_cmd.register(commands)
    run_cmd.register(commands)
    config_cmd.register(commands)
    solve_cmd.register(commands)
    bench_cmd.register(commands)
    image_cmd.register(commands)
    score_cmd.register(commands)
    replay_cmd.add_trace_replay_parser(trace_cmd.register(commands))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``opsche``; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except UserError as exc:
        for line in str(exc).splitlines() or [""]:
            print(f"opsche: error: {line}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("opsche: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
