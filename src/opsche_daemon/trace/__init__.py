"""Workload traces: the generator of seed 000's Section 4.1, the trace file, and replay results.

Everything here is pure (no API server): ``model`` is the trace file, ``distributions``,
``config`` and ``generate`` make traces, ``show`` summarises one, ``bounds`` computes the two
usage ceilings from a trace alone, ``result`` is the replay result file and ``summary`` the
arithmetic that turns a replay's samples and pod records into its summary. The replayer that
talks to a cluster lives in ``opsche_daemon.replay``.
"""
