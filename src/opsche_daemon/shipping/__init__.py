"""Shipping opsche: the container image (``image``), built here without a Docker engine."""
