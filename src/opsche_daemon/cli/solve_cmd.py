"""``opsche snapshot`` and ``opsche solve``: the optimiser as a dry run (nothing is changed).

``opsche solve`` is a pure computation on a file: it loads no Kubernetes client, no kopf and no
aiohttp (a test checks ``sys.modules``), so it runs anywhere a snapshot was copied to. It applies
the daemon's safety rules from ``opsche_daemon.safety``, not from the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import CONFIG_EXIT_CODE, UserError
from opsche_daemon.config import OptimiserSettings, SchedulerConfig, SolverKind

__all__ = ["format_plan", "register"]


def register(commands: Any) -> None:
    """Add ``snapshot`` and ``solve`` to the top-level parser."""
    snapshot = commands.add_parser("snapshot", help="write the live cluster's state to a file")
    snapshot.add_argument("--kubeconfig", type=Path, default=None, help="cluster credentials")
    snapshot.add_argument("-o", "--output", type=Path, required=True, help="snapshot file to write")
    snapshot.set_defaults(handler=_snapshot)

    solve = commands.add_parser("solve", help="compute a plan for a snapshot file (dry run)")
    solve.add_argument("file", type=Path, help="a snapshot file (see docs/optimiser.md)")
    optimiser, scheduler_name = OptimiserSettings(), SchedulerConfig().scheduler_name
    solve.add_argument(
        "--solver", choices=[kind.value for kind in SolverKind], default=optimiser.solver.value
    )
    solve.add_argument(
        "--time-limit",
        type=float,
        default=optimiser.solve_time_limit_s,
        help=f"seconds (default {optimiser.solve_time_limit_s:g}, the daemon's)",
    )
    solve.add_argument(
        "--stall",
        type=float,
        default=optimiser.solve_stall_s,
        metavar="S",
        help="cpsat: end a phase that found nothing better for S seconds; 0: search to the "
        f"time limit (default {optimiser.solve_stall_s:g}, the daemon's)",
    )
    solve.add_argument("--format", choices=["text", "json"], default="text")
    solve.add_argument(
        "--scheduler-name",
        default=scheduler_name,
        help=f"whose pending pods to place (default {scheduler_name})",
    )
    solve.set_defaults(handler=_solve)


def _snapshot(args: argparse.Namespace) -> int:
    from opsche_daemon.kube.client import ConnectionError_, api_client, resolve_kubeconfig  # noqa: PLC0415
    from opsche_daemon.kube.snapshot import take_snapshot  # noqa: PLC0415

    try:
        kubeconfig = resolve_kubeconfig(args.kubeconfig)
    except ConnectionError_ as exc:
        raise UserError(str(exc)) from None
    if not args.output.parent.is_dir():
        raise UserError(f"directory {args.output.parent} does not exist")

    async def run() -> tuple[int, int]:
        api = await api_client(kubeconfig)
        try:
            return await take_snapshot(api, args.output)
        finally:
            await api.close()

    try:
        nodes, pods = asyncio.run(run())
    except OSError as exc:
        raise UserError(f"cannot read the cluster: {exc}") from None
    print(f"wrote {args.output}: {nodes} nodes, {pods} pods", file=sys.stderr)
    return 0


def _solve(args: argparse.Namespace) -> int:
    from opsche_daemon.model.snapshot_file import SnapshotFileError, load_snapshot  # noqa: PLC0415
    from opsche_daemon.optimiser.api import InvalidPlanError, solve_snapshot  # noqa: PLC0415
    from opsche_daemon.safety import is_protected  # noqa: PLC0415

    if args.time_limit <= 0:
        raise UserError(f"--time-limit {args.time_limit:g}: must be positive")
    if args.stall < 0:
        raise UserError(f"--stall {args.stall:g}: must be at least 0")
    try:
        snapshot = load_snapshot(args.file)
    except SnapshotFileError as exc:
        raise UserError(str(exc), exit_code=CONFIG_EXIT_CODE) from None
    try:
        plan = solve_snapshot(
            snapshot,
            scheduler_name=args.scheduler_name,
            protected=is_protected,
            solver=args.solver,
            time_limit=args.time_limit,
            stall_s=args.stall,
        )
    except InvalidPlanError as exc:
        raise UserError(f"{exc} (this is a bug in opsche; please report it)") from None
    if args.format == "json":
        print(json.dumps(plan.to_json(), indent=2))
    else:
        print(format_plan(plan))
    return 0


def format_plan(plan: Any) -> str:
    """The human-readable plan."""
    stats = plan.to_json()["stats"]
    lines = [
        f"plan from snapshot generation {plan.generation}: solver {plan.solver}, "
        f"{stats['status']}, {plan.seconds:.2f}s",
        f"pending pods {plan.pending}: placed {len(plan.placements)}"
        + (f" (upper bound {plan.placed_bound})" if plan.placed_bound is not None else "")
        + f", moves {len(plan.moves)}, evictions {len(plan.evictions)}",
    ]
    for tier in plan.tiers:
        gap = ""
        if tier.placed_bound:
            gap = f", gap {100 * (tier.placed_bound - tier.placed) / tier.placed_bound:.1f}%"
        lines.append(
            f"  priority >= {tier.priority}: placed {tier.placed} "
            f"(bound {tier.placed_bound}{gap}), disruption score {tier.disruption_score}, "
            f"{'optimal' if tier.optimal else 'feasible'}, {tier.seconds:.2f}s"
        )
    lines += [f"PLACE  {p.key} -> {p.node}" for p in plan.placements]
    lines += [f"MOVE   {m.key} {m.from_node} -> {m.to_node}" for m in plan.moves]
    lines += [f"EVICT  {e.key} on {e.node}" for e in plan.evictions]
    lines += [f"note: {n}" for n in plan.notes]
    if plan.empty:
        lines.append("nothing to change")
    return "\n".join(lines)
