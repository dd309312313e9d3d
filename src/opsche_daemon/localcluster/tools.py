"""The shipping tools (helm, helm-unittest, crane), built with Go from the module proxy only.

They are pinned in ``versions.env`` beside the control plane and cached the same way, keyed by
their versions (``$OPSCHE_CACHE_DIR/tools/<key>/bin``), so the chart's tests and the image build
use tools the project builds itself. Each has its quirk:

* helm sets its version string by ldflags; without them ``helm version`` prints ``v3.22`` only;
* helm-unittest cannot be ``go install``-ed (its go.mod has a replace directive): the module is
  downloaded, copied out of the read-only module cache and built in place;
* crane is a plain ``go install``.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from opsche_daemon.localcluster.build import BuildError, BuildReport, GoBuild, Printer, check_go
from opsche_daemon.localcluster.versions import cache_root, read_pins

__all__ = ["TOOLS", "ToolBuilder", "ToolVersions", "load_tool_versions", "tool_bin_dir"]

TOOLS = ("helm", "helm-unittest", "crane")
_MARKER = ".complete"


@dataclass(frozen=True)
class ToolVersions:
    """The pinned helm, helm-unittest and crane releases."""

    helm: str
    helm_unittest: str
    crane: str

    @property
    def key(self) -> str:
        """A directory name that changes whenever any pinned tool version changes."""
        return f"helm-{self.helm}_helm-unittest-{self.helm_unittest}_crane-{self.crane}"


def load_tool_versions(path: Path | None = None) -> ToolVersions:
    """The tools' pins from ``versions.env``; a missing one is a packaging bug, said plainly."""
    pins, where = read_pins(path)
    try:
        return ToolVersions(
            helm=pins["HELM_VERSION"],
            helm_unittest=pins["HELM_UNITTEST_VERSION"],
            crane=pins["CRANE_VERSION"],
        )
    except KeyError as missing:
        raise ValueError(f"{where}: {missing.args[0]} is not set") from None


def tool_bin_dir(versions: ToolVersions, root: Path | None = None) -> Path:
    """Where the tools of these versions live (or will be built)."""
    return (root or cache_root()) / "tools" / versions.key / "bin"


class ToolBuilder(GoBuild):
    """Builds (or finds already built) helm, helm-unittest and crane for one set of versions."""

    def __init__(
        self, versions: ToolVersions, cache: Path, *, go: str = "go", out: Printer = print
    ) -> None:
        super().__init__(cache / "tools" / versions.key, go=go, out=out)
        self.versions = versions
        self.bin_dir = self.root / "bin"

    def missing(self) -> list[str]:
        """Tools not yet in the cache (all of them when the last build did not finish)."""
        if not (self.root / _MARKER).exists():
            return list(TOOLS)
        return [t for t in TOOLS if not (self.bin_dir / t).is_file()]

    def build(self) -> BuildReport:
        """Build what is missing; print progress; return per-tool timings."""
        report = BuildReport(self.bin_dir)
        if not self.missing():
            return report
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if not self.missing():
                return report
            check_go(self.go, "the shipping tools")
            self.bin_dir.mkdir(parents=True, exist_ok=True)
            v = self.versions
            self.out(
                f"building helm {v.helm}, helm-unittest {v.helm_unittest} and crane {v.crane} "
                f"into {self.bin_dir}; a first build takes 5-10 minutes on 2 cores"
            )
            for name, step in (
                ("helm", self._helm),
                ("helm-unittest", self._helm_unittest),
                ("crane", self._crane),
            ):
                started = time.monotonic()
                step()
                report.steps[name] = time.monotonic() - started
            (self.root / "build-info.json").write_text(
                json.dumps({"seconds": {k: round(s, 1) for k, s in report.steps.items()}}) + "\n"
            )
            (self.root / _MARKER).write_text("\n".join(TOOLS) + "\n")
        return report

    def _install(self, package: str, what: str, ldflags: str = "-s -w") -> None:
        self._go(
            ["install", "-v", "-trimpath", "-ldflags", ldflags, package],
            cwd=self.root,
            what=what,
            env={"GOBIN": str(self.bin_dir)},
        )

    def _helm(self) -> None:
        version = self.versions.helm
        ldflags = f"-s -w -X helm.sh/helm/v3/internal/version.version={version}"
        self._install(f"helm.sh/helm/v3/cmd/helm@{version}", f"compiling helm {version}", ldflags)

    def _crane(self) -> None:
        version = self.versions.crane
        package = f"github.com/google/go-containerregistry/cmd/crane@{version}"
        self._install(package, f"compiling crane {version}")

    def _helm_unittest(self) -> None:
        version = self.versions.helm_unittest
        module = Path(
            self._download_field(f"github.com/helm-unittest/helm-unittest@{version}", "Dir")
        )
        work = self.root / "work" / "helm-unittest"
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(module, work)
        for path in [work, *work.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # the module cache is read-only
        if not (work / "cmd" / "helm-unittest").is_dir():
            raise BuildError(f"helm-unittest {version} has no cmd/helm-unittest")
        self._go(
            [
                "build", "-v", "-trimpath", "-ldflags", "-s -w",
                "-o", str(self.bin_dir / "helm-unittest"), "./cmd/helm-unittest",
            ],
            cwd=work,
            what=f"compiling helm-unittest {version}",
        )  # fmt: skip
