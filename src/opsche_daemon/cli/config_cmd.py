"""``opsche config check FILE`` and ``opsche config defaults``: the config file, without a cluster.

``check`` applies every check ``opsche run`` applies before it touches a kubeconfig: the settings
(unknown keys, types, ranges) and the profile (plugin names, each plugin's arguments), and prints
every problem, one per line and prefixed by the file name, so a file can be fixed in one pass and
checked in CI. ``defaults`` prints every setting at its default as a commented config file,
generated from the same field documentation the loader reads.

Heavy imports (the plugin registry) happen inside the functions: registering the subcommand must
stay cheap for every other ``opsche`` command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import CONFIG_EXIT_CODE, UserError
from opsche_daemon.config import SchedulerConfig

__all__ = ["checked_config", "register"]


def register(commands: Any) -> None:
    """Add the ``config`` command group to the top-level parser."""
    config = commands.add_parser("config", help="check a config file; print the defaults")
    sub = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = sub.add_parser(
        "check", help="report every problem of a config file (exit 2), without a cluster"
    )
    check.add_argument("file", type=Path, help="the YAML config file of opsche run --config")
    check.set_defaults(handler=_check)
    defaults = sub.add_parser(
        "defaults", help="print every setting at its default, with its unit and reason"
    )
    defaults.set_defaults(handler=_defaults)


def checked_config(
    path: Path | None,
    adjust: Callable[[SchedulerConfig], SchedulerConfig] | None = None,
) -> SchedulerConfig:
    """The configuration of ``path`` (None: defaults), ``adjust``-ed, with its profile checked.

    Raises a ``UserError`` (exit code 2) listing every problem of the settings and of the
    profile, each line prefixed by the file name. ``adjust`` applies command-line overrides
    before the profile is checked (``--no-preemption`` decides whether DefaultPreemption is part
    of the profile).
    """
    from opsche_daemon.config import ConfigError, read_config  # noqa: PLC0415
    from opsche_daemon.framework.registry import profile_problems  # noqa: PLC0415
    from opsche_daemon.plans import PLAN_PLUGINS  # noqa: PLC0415

    config, problems = read_config(path)
    if adjust is not None:
        config = adjust(config)
    problems += profile_problems(
        config.profile,
        preemption_enabled=config.preemption.enabled,
        extra_plugins=PLAN_PLUGINS,
    )
    if problems:
        raise UserError(str(ConfigError(problems, path)), exit_code=CONFIG_EXIT_CODE)
    return config


def _summary(config: SchedulerConfig) -> str:
    from opsche_daemon.framework.registry import DEFAULT_PLUGINS  # noqa: PLC0415

    enabled = [p for p in DEFAULT_PLUGINS if p not in config.profile.disabled]
    optimiser = config.optimiser
    return (
        f"schedulerName {config.scheduler_name}, {len(enabled)} of {len(DEFAULT_PLUGINS)} "
        f"default plugins, preemption {'on' if config.preemption.enabled else 'off'}, "
        f"trigger {optimiser.trigger} (solver {optimiser.solver})"
    )


def _check(args: argparse.Namespace) -> int:
    config = checked_config(args.file)
    print(f"{args.file}: OK: {_summary(config)}")
    return 0


def _defaults(args: argparse.Namespace) -> int:
    from opsche_daemon.config import defaults_yaml  # noqa: PLC0415

    del args
    print(defaults_yaml(), end="")
    return 0
