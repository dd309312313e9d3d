"""opsche: a Kubernetes scheduler with a cluster-wide constraint-solver optimiser.

The package is layered (see ``docs/architecture.md`` and the import-linter contracts in
``pyproject.toml``): pure data and logic at the bottom never import a Kubernetes client, the
``kube`` package is the only one that talks to the API server, and user tooling such as the
local control plane (``localcluster``) sits beside the daemon, never inside it.
"""

__version__ = "0.1.0"
