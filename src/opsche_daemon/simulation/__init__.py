"""The virtual-time replay: opsche's own code on an in-process API server and a virtual clock.

* ``apiserver``: ``VirtualApiServer``, the store, its watches and what the cluster's controllers,
  admission and KWOK do for a replay's workload;
* ``latency``: ``Latencies``, the virtual seconds charged for each of those steps;
* ``writer``: ``VirtualWriter``, opsche's writes (``kube.binder.WriteApi``) into it;
* ``opsche``: ``VirtualOpsche``, the daemon's object graph (``daemon.compose``) and tasks on it;
* ``cluster``: ``VirtualReplayCluster``, what the replay driver (``replay.driver``) needs;
* ``run``: one replay on ``looptime``'s virtual clock, to a result file.
"""
