"""``opsche run``: the scheduler daemon.

The whole configuration (the file, the flags that override it, the profile's plugin names and
arguments) is checked before the kubeconfig is even looked for: a misspelt plugin must not hide
behind a missing kubeconfig, and every problem is reported at once (exit 2), as by ``opsche config
check``. Flag choices and defaults come from the settings tree, where they are written once.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError
from opsche_daemon.config import LeaderElect, SchedulerConfig, Trigger, settings_of

__all__ = ["add_trigger_timing", "apply_flags", "blocking_help", "positive_seconds", "register"]

_DEFAULTS = SchedulerConfig()


def register(commands: Any) -> None:
    """Add ``run`` to the top-level parser."""
    run = commands.add_parser("run", help="run the scheduler daemon")
    run.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)",
    )
    run.add_argument(
        "--config",
        type=Path,
        default=None,
        help="YAML config file (see opsche config defaults; opsche config check FILE)",
    )
    run.add_argument(
        "--scheduler-name",
        default=None,
        help="schedule pods with this spec.schedulerName (default: the config file's, else "
        f"{_DEFAULTS.scheduler_name})",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="port for /metrics, /healthz, /readyz (default: the config file's metricsPort, else "
        f"{_DEFAULTS.metrics_port})",
    )
    run.add_argument("--metrics-address", default="0.0.0.0",  # noqa: S104
                     help="address to serve metrics on (default 0.0.0.0)")  # fmt: skip
    run.add_argument("--no-preemption", action="store_true", help="disable default preemption")
    run.add_argument(
        "--trigger",
        choices=[trigger.value for trigger in Trigger],
        default=None,
        help="when to compute cluster-wide plans (default: the config file's, else "
        f"{_DEFAULTS.optimiser.trigger}; {Trigger.NONE} turns the optimiser off)",
    )
    run.add_argument("--blocking", action="store_true", help=blocking_help())
    add_trigger_timing(run)
    run.add_argument(
        "--leader-elect",
        choices=[choice.value for choice in LeaderElect],
        default=None,
        help="elect a leader on a Lease so only one replica acts (default: the config file's "
        "leaderElection.leaderElect, else auto: on inside a pod, off for a local process)",
    )
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    run.set_defaults(handler=_run)


def blocking_help() -> str:
    """``--blocking``'s help: the setting's own reason (the README's table quotes it too)."""
    [reason] = [
        s.doc.reason for s in settings_of(SchedulerConfig) if s.path == "optimiser.blocking"
    ]
    return reason.split(";")[0]


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds, e.g. 8") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
    return value


def add_trigger_timing(parser: Any) -> None:
    """``--period`` and ``--stable-window``: the paper's trigger ablations, without a file."""
    parser.add_argument(
        "--period",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="the periodic trigger's interval (optimiser.periodSeconds; default: the config "
        f"file's, else {_DEFAULTS.optimiser.period_s:g})",
    )
    parser.add_argument(
        "--stable-window",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="how long the pending pods must stay the same before the stable-queue trigger "
        f"fires (optimiser.stableWindowSeconds; default: the config file's, else "
        f"{_DEFAULTS.optimiser.stable_window_s:g})",
    )


def apply_flags(config: SchedulerConfig, args: argparse.Namespace) -> SchedulerConfig:
    """``config`` with the command-line overrides of ``args`` applied (flags win over the file)."""
    if args.scheduler_name:
        config = replace(config, scheduler_name=args.scheduler_name)
    if args.no_preemption:
        config = replace(config, preemption=replace(config.preemption, enabled=False))
    optimiser = config.optimiser
    if args.trigger is not None:
        optimiser = replace(optimiser, trigger=Trigger(args.trigger))
    if args.blocking:
        optimiser = replace(optimiser, blocking=True)
    if args.period is not None:
        optimiser = replace(optimiser, period_s=args.period)
    if args.stable_window is not None:
        optimiser = replace(optimiser, stable_window_s=args.stable_window)
    leader_elect = getattr(args, "leader_elect", None)  # only opsche run has the flag
    if leader_elect is not None:
        election = replace(config.leader_election, leader_elect=LeaderElect(leader_elect))
        config = replace(config, leader_election=election)
    return replace(config, optimiser=optimiser)


def _run(args: argparse.Namespace) -> int:
    from opsche_daemon.cli.config_cmd import checked_config  # noqa: PLC0415

    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UserError(f"--metrics-port {args.metrics_port}: a port is between 0 and 65535")
    config = checked_config(args.config, lambda loaded: apply_flags(loaded, args))

    from opsche_daemon.kube.client import ConnectionError_, resolve_kubeconfig  # noqa: PLC0415

    try:
        kubeconfig = resolve_kubeconfig(args.kubeconfig)
    except ConnectionError_ as exc:
        raise UserError(str(exc)) from None

    # Imported only now: the daemon pulls in kopf, aiohttp and the solver stack, which a bad
    # config file, a missing kubeconfig and the other commands do not need.
    from opsche_daemon.daemon import DaemonOptions, StartupError, run_daemon  # noqa: PLC0415
    from opsche_daemon.framework.registry import ProfileError  # noqa: PLC0415

    options = DaemonOptions(kubeconfig, args.metrics_address, args.metrics_port, args.log_level)
    try:
        return run_daemon(config, options)
    except (ProfileError, StartupError) as exc:
        raise UserError(str(exc)) from None
