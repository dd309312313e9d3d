"""What the Helm chart's tests share: the chart, the tools the project builds, rendering."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from opsche_daemon.localcluster.tools import ToolBuilder, load_tool_versions
from opsche_daemon.localcluster.versions import cache_root

CHART = Path(__file__).resolve().parents[2] / "helm" / "opsche"


def tool(name: str) -> Path:
    """A tool from the project's cache; built by ``make tools`` (``make test`` runs it)."""
    builder = ToolBuilder(load_tool_versions(), cache_root())
    missing = builder.missing()
    if missing:
        raise AssertionError(
            f"{', '.join(missing)} not built in {builder.bin_dir}: run `make tools` "
            "(make test does)"
        )
    return builder.bin_dir / name


def run(argv: Sequence[str | Path], *, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a tool; the completed process (the caller checks the code and the output)."""
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False
    )


def helm(*args: str | Path, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``helm`` with the project's build, against ``kubeconfig`` if given."""
    extra: list[str | Path] = ["--kubeconfig", kubeconfig] if kubeconfig is not None else []
    return run([tool("helm"), *args, *extra])


def render(
    *sets: str, namespace: str = "opsche-system", release: str = "opsche"
) -> list[dict[str, Any]]:
    """The chart rendered with ``--set`` values, as a list of objects."""
    argv: list[str | Path] = ["template", release, CHART, "--namespace", namespace]
    for item in sets:
        argv += ["--set", item]
    done = helm(*argv)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The rendered objects of one kind."""
    return [o for o in objects if o.get("kind") == kind]
