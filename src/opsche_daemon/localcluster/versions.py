"""The pinned control-plane versions and where their binaries are cached.

The versions live in ``versions.env`` beside this module, the single file to edit for an upgrade.
The cache is outside the checkout (CI clones afresh every run, and a build costs minutes) and keyed
by every pinned version, so a changed pin never reuses stale binaries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BINARIES", "Versions", "cache_root", "load_versions", "read_pins"]

# Every binary the local cluster runs, plus kubectl for people poking at it by hand.
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
)

_VERSIONS_FILE = Path(__file__).with_name("versions.env")


@dataclass(frozen=True)
class Versions:
    """The Kubernetes, kwok and etcd releases the local cluster is built from."""

    kubernetes: str
    kwok: str
    etcd: str

    @property
    def staging(self) -> str:
        """The k8s.io staging modules' version for this release (v1.36.3 -> v0.36.3)."""
        return "v0." + self.kubernetes.removeprefix("v").split(".", 1)[1]

    @property
    def minor(self) -> str:
        """The minor release number as a string, e.g. ``"36"``."""
        return self.kubernetes.removeprefix("v").split(".")[1]

    @property
    def key(self) -> str:
        """A directory name that changes whenever any pinned version changes."""
        return f"k8s-{self.kubernetes}_etcd-{self.etcd}_kwok-{self.kwok}"

    def bin_dir(self, root: Path | None = None) -> Path:
        """Where the binaries of these versions live (or will be built)."""
        return (root or cache_root()) / "controlplane" / self.key / "bin"


def _parse(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"versions.env: line {raw!r} is not KEY=VALUE")
        values[key.strip()] = value.strip()
    return values


def read_pins(path: Path | None = None) -> tuple[dict[str, str], Path]:
    """Every ``KEY=VALUE`` of ``versions.env`` (or ``path``), and the file read."""
    where = path or _VERSIONS_FILE
    return _parse(where.read_text(encoding="utf-8")), where


def load_versions(path: Path = _VERSIONS_FILE) -> Versions:
    """Read the pinned versions; a missing or malformed entry is a packaging bug, said plainly."""
    values, _ = read_pins(path)
    try:
        versions = Versions(
            kubernetes=values["KUBERNETES_VERSION"],
            kwok=values["KWOK_VERSION"],
            etcd=values["ETCD_VERSION"],
        )
    except KeyError as missing:
        raise ValueError(f"{path}: {missing.args[0]} is not set") from None
    for name, value in (
        ("KUBERNETES_VERSION", versions.kubernetes),
        ("KWOK_VERSION", versions.kwok),
        ("ETCD_VERSION", versions.etcd),
    ):
        parts = value.removeprefix("v").split(".")
        if not value.startswith("v") or len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"{path}: {name}={value!r} is not a release like v1.2.3")
    return versions


def cache_root() -> Path:
    """``$OPSCHE_CACHE_DIR``, else ``$XDG_CACHE_HOME/opsche``, else ``~/.cache/opsche``."""
    explicit = os.environ.get("OPSCHE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "opsche"
