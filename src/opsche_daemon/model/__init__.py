"""Pure data shared by every layer.

``quantity`` and ``resources`` (Kubernetes quantities and request vectors), ``pod``, ``node``,
``selectors`` (labels, affinity, taints), ``snapshot`` (the immutable view decisions read) and
``snapshot_file`` (its JSON form), ``plan`` (what the optimiser wants changed) and ``eviction``
(what an eviction came to).

Nothing here performs I/O or imports a Kubernetes client, so it can be unit-tested and reasoned
about without a cluster.
"""
