"""Pure data shared by every layer: resource quantities, and later pods, nodes and plans.

Nothing here performs I/O or imports a Kubernetes client, so it can be unit-tested and reasoned
about without a cluster.
"""
