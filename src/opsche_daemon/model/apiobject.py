"""The API objects kept beside opsche's views of pods and nodes (for scheduler extenders)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["without_managed_fields"]


def without_managed_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` without ``metadata.managedFields`` (left alone when it has none).

    Server bookkeeping, often most of an object's size, that nothing in opsche (nor any
    extender) reads; the object passed in is never changed.
    """
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj
