"""The scheduling framework: extension-point contracts, the plugin registry and the runner.

Pure: it reads Snapshots and returns decisions, never importing a Kubernetes client, so the same
plugins decide feasibility for the scheduling cycle, the optimiser and plan validation.

``interface`` (the contracts and ``Status``), ``runtime`` (``Framework``, which runs a profile's
plugins), ``registry`` (plugin names, default weights, building and checking a profile),
``plugins/`` (one module per default plugin, and DefaultPreemption).
"""
