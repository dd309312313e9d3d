"""Replaying a trace against a real cluster: ReplicaSets on the trace clock, a 1 s monitor."""
