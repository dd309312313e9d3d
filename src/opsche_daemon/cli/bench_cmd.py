"""``opsche bench``: throughput, solver, extender, replay and report benchmarks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from opsche_daemon.cli import bench_report_cmd, replay_cmd
from opsche_daemon.cli.errors import UserError
from opsche_daemon.config import OptimiserSettings, SolverKind

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``bench`` to the top-level parser."""
    bench = commands.add_parser("bench", help="benchmarks against kube-scheduler")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK", required=True)
    throughput = sub.add_parser(
        "throughput", help="schedule a burst of pods with kube-scheduler and with opsche"
    )
    throughput.add_argument("--nodes", type=int, default=100, help="KWOK nodes (default 100)")
    throughput.add_argument(
        "--pods", type=int, default=2000, help="pods in the burst (default 2000)"
    )
    throughput.add_argument("--config", type=Path, default=None, help="opsche config file")
    throughput.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per run (default 600)"
    )
    throughput.add_argument("--json", action="store_true", help="print results as JSON")
    throughput.set_defaults(handler=_throughput)
    extender = sub.add_parser(
        "extender",
        help="opsche with opsche score serve as an extender at injected delays (seed 002)",
    )
    extender.add_argument(
        "--delays", default="0,50,100,200", help="injected delays, ms (default 0,50,100,200)"
    )
    extender.add_argument("--pods", type=int, default=40, help="pods per run (default 40)")
    extender.add_argument("--nodes", type=int, default=3, help="KWOK nodes (default 3)")
    extender.add_argument("--json", action="store_true", help="print results as JSON")
    extender.set_defaults(handler=_extender)
    solver = sub.add_parser("solver", help="CP-SAT and the heuristic on generated clusters")
    solver.add_argument(
        "--sizes", default="16,32,100,500,2000", help="node counts (default 16,32,100,500,2000)"
    )
    time_limit = OptimiserSettings().solve_time_limit_s
    solver.add_argument(
        "--time-limit",
        type=float,
        default=time_limit,
        help=f"seconds per solve (default {time_limit:g}, the daemon's)",
    )
    solver.add_argument(
        "--solvers", default=",".join(SolverKind), help="comma-separated (default all)"
    )
    solver.add_argument(
        "--pod-scale",
        type=float,
        default=1.0,
        help="make every pod this much bigger: 2.5 gives about 10 pods per node (default 1)",
    )
    solver.set_defaults(handler=_solver)
    replay_cmd.add_bench_replay_parser(sub)
    replay_cmd.add_bench_grid_parser(sub)
    bench_report_cmd.add_report_parser(sub)
    bench_report_cmd.add_fidelity_parser(sub)


def _solver(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.solver import format_rows, run_solver_bench  # noqa: PLC0415

    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        raise UserError(f"--sizes {args.sizes!r}: expected comma-separated node counts") from None
    solvers = [s for s in args.solvers.split(",") if s]
    unknown = set(solvers) - set(SolverKind)
    if unknown or not solvers or not sizes or min(sizes) < 1:
        raise UserError(
            f"--solvers {args.solvers!r}, --sizes {args.sizes!r}: --solvers takes "
            f"{' and/or '.join(SolverKind)}; --sizes positive node counts"
        )
    if args.time_limit <= 0:
        raise UserError(f"--time-limit {args.time_limit:g}: must be positive")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.pod_scale <= 0:
        raise UserError(f"--pod-scale {args.pod_scale:g}: must be positive")
    rows = run_solver_bench(sizes, solvers, args.time_limit, say, args.pod_scale)
    print(format_rows(rows))
    return 0


def _extender(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.extender import (  # noqa: PLC0415 - heavy imports on demand
        format_results,
        results_json,
        run_extender_bench,
    )
    from opsche_daemon.localcluster.cluster import ClusterError  # noqa: PLC0415

    try:
        delays = [float(d) for d in args.delays.split(",") if d.strip()]
    except ValueError:
        raise UserError(
            f"--delays: expected comma-separated milliseconds, got {args.delays!r}"
        ) from None
    if any(d < 0 for d in delays) or args.pods < 1 or args.nodes < 1:
        raise UserError("--delays must not be negative; --pods and --nodes at least 1")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        results = run_extender_bench(delays, args.pods, args.nodes, say)
    except (ClusterError, RuntimeError) as exc:
        raise UserError(str(exc)) from None
    print(results_json(results) if args.json else format_results(results))
    return 0


def _throughput(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.throughput import (  # noqa: PLC0415 - heavy imports on demand
        BenchOptions,
        environment,
        format_results,
        results_json,
        run_throughput,
    )
    from opsche_daemon.localcluster.cluster import ClusterError  # noqa: PLC0415

    if args.nodes < 1 or args.pods < 1:
        raise UserError(f"--nodes {args.nodes}, --pods {args.pods}: both must be at least 1")
    if args.pods > args.nodes * 110:
        raise UserError(f"{args.pods} pods cannot fit on {args.nodes} nodes of 110 pods each")
    options = BenchOptions(
        nodes=args.nodes, pods=args.pods, timeout_s=args.timeout, config=args.config
    )

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        results = run_throughput(options, say)
    except (ClusterError, RuntimeError) as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(results_json(results))
    else:
        env = environment()
        print(
            f"burst of {args.pods} pods on {args.nodes} KWOK nodes "
            f"({env['cpus']} cpus, Python {env['python']})"
        )
        print(format_results(results))
    return 0 if all(r.bound == r.pods for r in results) else 1
