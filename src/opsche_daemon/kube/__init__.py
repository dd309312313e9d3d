"""The only package that talks to the API server.

Intake is kopf event handlers (no per-object annotations: opsche never writes to pods it merely
observes); writes (bindings, events, status conditions, evictions) go through kubernetes-asyncio
behind a client-side rate limiter, like kube-scheduler's client QPS/burst.
"""
