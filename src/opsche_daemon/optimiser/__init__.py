"""The cluster-wide optimiser: from a Snapshot to a Plan of placements, moves and evictions.

Pure (no Kubernetes client): ``problem`` builds the grouped model and maps solutions back to
plans, ``solver`` is the seam every solver implements, ``heuristic`` and ``cpsat`` are the two
solvers, ``validate`` checks a plan against a (fresh) snapshot, and ``api.solve_snapshot`` is the
one call from a snapshot to a validated plan that the CLI and the plans package use.
"""
