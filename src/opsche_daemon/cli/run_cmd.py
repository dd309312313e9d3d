"""``opsche run``: the scheduler daemon."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add ``run`` to the top-level parser."""
    run = commands.add_parser("run", help="run the scheduler daemon")
    run.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)",
    )
    run.add_argument("--config", type=Path, default=None, help="YAML config file")
    run.add_argument(
        "--scheduler-name",
        default=None,
        help="schedule pods with this spec.schedulerName (default: opsche)",
    )
    run.add_argument("--metrics-port", type=int, default=None,
                     help="port for /metrics, /healthz, /readyz (default 10351)")  # fmt: skip
    run.add_argument("--metrics-address", default="0.0.0.0",  # noqa: S104
                     help="address to serve metrics on (default 0.0.0.0)")  # fmt: skip
    run.add_argument("--no-preemption", action="store_true", help="disable default preemption")
    run.add_argument(
        "--trigger",
        choices=["scheduling-failure", "periodic", "stable-queue", "none"],
        default=None,
        help="when to compute cluster-wide plans (default: the config file's, else "
        "scheduling-failure; none turns the optimiser off)",
    )
    run.add_argument(
        "--blocking", action="store_true", help="pause scheduling while a plan is computed"
    )
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the daemon pulls in kopf, aiohttp and the solver stack, which the cluster
    # and demo commands do not need.
    from dataclasses import replace  # noqa: PLC0415

    from opsche_daemon.config import ConfigError, load_config  # noqa: PLC0415
    from opsche_daemon.daemon import DaemonOptions, StartupError, run_daemon  # noqa: PLC0415
    from opsche_daemon.framework.registry import ProfileError  # noqa: PLC0415
    from opsche_daemon.kube.client import ConnectionError_, resolve_kubeconfig  # noqa: PLC0415

    try:
        config = load_config(args.config)
        kubeconfig = resolve_kubeconfig(args.kubeconfig)
    except (ConfigError, ConnectionError_) as exc:
        raise UserError(str(exc)) from None
    if args.scheduler_name:
        config = replace(config, scheduler_name=args.scheduler_name)
    if args.no_preemption:
        config = replace(config, preemption_enabled=False)
    if args.trigger is not None:
        config = replace(config, trigger=args.trigger)
    if args.blocking:
        config = replace(config, blocking=True)
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UserError(f"--metrics-port {args.metrics_port}: a port is between 0 and 65535")
    options = DaemonOptions(kubeconfig, args.metrics_address, args.metrics_port, args.log_level)
    try:
        return run_daemon(config, options)
    except (ProfileError, StartupError) as exc:
        raise UserError(str(exc)) from None
