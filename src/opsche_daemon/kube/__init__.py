"""The only package that talks to the API server.

Intake is kopf event handlers (no per-object annotations: opsche never writes to pods it merely
observes); writes (bindings, events, status conditions, evictions) go through kubernetes-asyncio
behind a client-side rate limiter, like kube-scheduler's client QPS/burst.

* ``intake``: the initial LIST and the kopf watch handlers, into ``scheduler.events``;
* ``writer``: every write, rate-limited (``ratelimit``: the token bucket);
* ``binder``: ``KubeBinder``, the scheduler's ``Binder`` over the writer (binds, preemption);
* ``leader``: leader election on a Lease (``LeaderElector``, ``Leadership``);
* ``fenced``: ``FencedWriter``, the writer of a replica that may lose its Lease;
* ``client``: building the API client from a kubeconfig or the pod's service account;
* ``snapshot``: reading the cluster into a snapshot file (``opsche snapshot``).
"""
