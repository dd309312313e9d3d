"""Print the opsche chart's values as a Markdown table (docs/install.md holds its output).

Each row is a leaf of ``values.yaml`` with its default and the comment written above it (or above
its group). Run ``python helm/values_table.py``; a test fails when docs/install.md differs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parent / "opsche"


def _comments(text: str) -> dict[str, str]:
    """The comment block above each key, by dotted path (indentation gives the nesting)."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --") or not stripped:
            pending = [] if not stripped else pending
            continue
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("# ").strip())
            continue
        match = re.match(r"^(\s*)([A-Za-z][\w.-]*):", line)
        if not match:
            continue
        indent, key = len(match[1]), match[2]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        if pending:
            found[path] = " ".join(pending)
        pending = []
        stack.append((indent, key))
    return found


def _leaves(values: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(values, dict) and values and prefix not in ("config",):
        rows: list[tuple[str, Any]] = []
        for key, value in values.items():
            rows += _leaves(value, f"{prefix}.{key}" if prefix else key)
        return rows
    return [(prefix, values)]


def table() -> str:
    """The Markdown table of every value."""
    text = (CHART / "values.yaml").read_text()
    comments = _comments(text)
    lines = ["| value | default | meaning |", "| --- | --- | --- |"]
    for path, default in _leaves(yaml.safe_load(text)):
        parts = path.split(".")
        meaning = next(
            (comments[".".join(parts[:i])] for i in range(len(parts), 0, -1)
             if ".".join(parts[:i]) in comments),
            "",
        )  # fmt: skip
        shown = json.dumps(default, separators=(", ", ": "))
        lines.append(f"| `{path}` | `{shown}` | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table())
