"""Benchmarks that run opsche and the real kube-scheduler side by side on the local cluster.

User tooling beside the daemon: it may import anything, and nothing in the daemon imports it.
"""
