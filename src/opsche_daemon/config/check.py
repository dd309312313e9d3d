"""Checks of a built settings tree: bounds from each field's ``Doc``, and the rules across fields.

The loader runs these after converting the file, and so can anyone who builds or changes a
``SchedulerConfig`` in code: a tree that did not come from a file gets the same checks. (The CLI's
flags replace values with choices it has already checked, so it does not need them again.) Type
checks live in the loader, where the raw YAML value is still known.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from opsche_daemon.config.schema import Setting, settings_of, show, yaml_key
from opsche_daemon.config.settings import (
    LeaderElectionSettings,
    OptimiserSettings,
    QueueSettings,
    SchedulerConfig,
    SolverKind,
)

__all__ = ["check_config"]


def _shown_number(value: float) -> str:
    # Seconds are floats even when written as integers: -1 in the file is -1.0 here.
    if isinstance(value, float) and value.is_integer():
        return show(int(value))
    return show(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _setting_problems(item: Setting, value: Any) -> list[str]:
    hint = item.hint
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        if value not in {member.value for member in hint}:
            choices = ", ".join(member.value for member in hint)
            return [f"{item.name}: expected one of {choices}, got {show(value)}"]
        return []
    if hint is str and not value:
        return [f"{item.name}: must not be empty, got {show(value)}"]
    if _is_number(value):
        why = item.doc.violation(value)
        return [f"{item.name}: {why}, got {_shown_number(value)}"] if why else []
    if isinstance(value, Mapping):
        problems = []
        for key, entry in value.items():
            why = item.doc.violation(entry) if _is_number(entry) else None
            if why:
                problems.append(f"{item.name}.{key}: {why}, got {_shown_number(entry)}")
        return problems
    return []


def check_config(config: SchedulerConfig) -> list[str]:
    """Every bound or cross-field rule ``config`` breaks, one message per problem (empty: valid).

    Messages name the YAML key (or, for a setting the file cannot set, the attribute path) and
    the offending value: ``optimiser.periodSeconds: must be positive, got -1``.
    """
    problems: list[str] = []
    for item in settings_of(SchedulerConfig):
        problems += _setting_problems(item, item.value_in(config))
    optimiser = config.optimiser
    if optimiser.max_disruptions_per_placement > 0 and optimiser.solver != SolverKind.CPSAT:
        problems.append(
            f"{yaml_key(OptimiserSettings, 'max_disruptions_per_placement')}: applies to the "
            f"cpsat solver only, and {yaml_key(OptimiserSettings, 'solver')} is "
            f"{optimiser.solver}"
        )
    if optimiser.placement_worth_moves > 0 and optimiser.solver != SolverKind.CPSAT:
        problems.append(
            f"{yaml_key(OptimiserSettings, 'placement_worth_moves')}: applies to the "
            f"cpsat solver only, and {yaml_key(OptimiserSettings, 'solver')} is "
            f"{optimiser.solver}"
        )
    if optimiser.budget_across_plans and optimiser.max_disruptions_per_placement <= 0:
        problems.append(
            f"{yaml_key(OptimiserSettings, 'budget_across_plans')}: needs a budget, and "
            f"{yaml_key(OptimiserSettings, 'max_disruptions_per_placement')} is 0 (no limit)"
        )
    queue = config.queue
    if queue.initial_backoff_s > 0 and queue.max_backoff_s < queue.initial_backoff_s:
        initial = yaml_key(QueueSettings, "initial_backoff_s")
        problems.append(
            f"{yaml_key(QueueSettings, 'max_backoff_s')}: must be at least {initial} "
            f"({_shown_number(queue.initial_backoff_s)}), got {_shown_number(queue.max_backoff_s)}"
        )
    problems += _leader_election_problems(config.leader_election)
    return problems


def _leader_election_problems(election: LeaderElectionSettings) -> list[str]:
    """client-go's rules: lease > renew deadline > 1.2 x retry period (retries jitter by 20 %)."""
    lease = yaml_key(LeaderElectionSettings, "lease_duration_s")
    renew = yaml_key(LeaderElectionSettings, "renew_deadline_s")
    retry = yaml_key(LeaderElectionSettings, "retry_period_s")
    problems = []
    if election.lease_duration_s <= election.renew_deadline_s:
        problems.append(
            f"{renew}: must be less than {lease} ({_shown_number(election.lease_duration_s)}), "
            f"got {_shown_number(election.renew_deadline_s)}"
        )
    if election.renew_deadline_s <= 1.2 * election.retry_period_s:
        problems.append(
            f"{retry}: must be less than {renew} / 1.2 "
            f"({_shown_number(round(election.renew_deadline_s / 1.2, 2))}), "
            f"got {_shown_number(election.retry_period_s)}"
        )
    return problems
