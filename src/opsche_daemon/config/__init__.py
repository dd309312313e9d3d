"""opsche's configuration: one settings tree, read from a YAML file like KubeSchedulerConfiguration.

Example (every field optional; the defaults are kube-scheduler's)::

    schedulerName: opsche
    clientConnection: {qps: 50, burst: 100}   # qps 0: no client-side rate limit
    bindWorkers: 16
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    percentageOfNodesToScore: 0      # 0: adaptive, as upstream
    preemption:
      enabled: true
      respectPodDisruptionBudgets: false
      avoidBareVictims: true  # off: kube-scheduler's victim choice
      plansFirst: true        # off: preempt before any plan is tried
    profile:
      disabled: [ImageLocality]      # plugin names to turn off
      weights: {NodeResourcesFit: 1} # Score weights to override
      pluginConfig:
        - name: NodeResourcesFit
          args: {scoringStrategy: {type: MostAllocated}}
    optimiser:
      trigger: scheduling-failure    # periodic, stable-queue, none
      solver: cpsat                  # heuristic
      periodSeconds: 8
    leaderElection:
      leaderElect: auto              # true, false; auto: on inside a pod
      leaseDurationSeconds: 15
      renewDeadlineSeconds: 10
      retryPeriodSeconds: 2
      resourceName: opsche           # the Lease's name
      resourceNamespace: kube-system
    extenders:                       # kube-scheduler's extenders, same fields
      - urlPrefix: http://127.0.0.1:8888
        prioritizeVerb: prioritize
        weight: 1
        httpTimeout: 100ms
        ignorable: true

Modules: ``settings`` (the dataclasses and enums, each field's default, unit and reason written
once), ``schema`` (how a field is documented, and walking the tree), ``loader`` (the file to a
tree), ``check`` (bounds and cross-field rules of a tree), ``describe`` (every setting as a
commented YAML file, ``opsche config defaults``), ``errors`` (``ConfigError``, which
carries every problem at once). Unknown keys and wrong values are errors naming the field and the
value: a typo must not silently fall back to a default on a production scheduler. Plugin names and
plugin arguments are checked by ``opsche_daemon.framework.registry.profile_problems``, one layer up.
"""

from __future__ import annotations

from opsche_daemon.config.check import check_config
from opsche_daemon.config.describe import decision_settings, defaults_yaml
from opsche_daemon.config.errors import ConfigError
from opsche_daemon.config.extenders import ExtenderSettings, ExtenderTLS
from opsche_daemon.config.loader import load_config, parse_config, read_config
from opsche_daemon.config.schema import Doc, Setting, settings_of, show, yaml_key
from opsche_daemon.config.settings import (
    ClientConnection,
    LeaderElect,
    LeaderElectionSettings,
    OptimiserSettings,
    PreemptionSettings,
    ProfileSettings,
    QueueSettings,
    SchedulerConfig,
    SolverKind,
    Trigger,
)

__all__ = [
    "ClientConnection",
    "ConfigError",
    "Doc",
    "ExtenderSettings",
    "ExtenderTLS",
    "LeaderElect",
    "LeaderElectionSettings",
    "OptimiserSettings",
    "PreemptionSettings",
    "ProfileSettings",
    "QueueSettings",
    "SchedulerConfig",
    "Setting",
    "SolverKind",
    "Trigger",
    "check_config",
    "decision_settings",
    "defaults_yaml",
    "load_config",
    "parse_config",
    "read_config",
    "settings_of",
    "show",
    "yaml_key",
]
