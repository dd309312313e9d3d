"""Build the control-plane binaries with the Go toolchain, from the Go module proxy only.

Why it looks like this:

* ``go install k8s.io/kubernetes/cmd/kube-apiserver@vX`` cannot work: the kubernetes module
  requires its staging modules (k8s.io/api, client-go, ...) at ``v0.0.0`` and relies on local
  ``replace`` directives. We write a small wrapper module that requires ``k8s.io/kubernetes`` and
  replaces every such staging module with its published ``v0.X.Y`` release, the list being read from
  the kubernetes ``go.mod`` itself so it tracks the pinned release.
* etcd's server module has ``replace`` directives too, so it is built through a wrapper as well.
* kwok has none: a plain ``go install``. Its stage files (which teach kwok how fake nodes and pods
  progress) are copied from the downloaded module, since v0.8 ships no built-in stages.
* All four Kubernetes binaries are built in one ``go build`` so they share the compile cache.

The build takes minutes on two cores, so it prints a progress line at least every 30 seconds and a
summary of how long each step took. It holds a file lock so two concurrent setups do not collide,
and marks the cache complete only when every binary is in place: an interrupted build is resumed
(Go's own caches make that cheap), never half-used.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from opsche_daemon.localcluster.versions import BINARIES, Versions

__all__ = [
    "KWOK_STAGES",
    "BuildError",
    "BuildReport",
    "Builder",
    "GoBuild",
    "check_go",
    "fmt_seconds",
]

_MIN_GO = (1, 26)
_PROGRESS_EVERY_S = 30.0
_MARKER = ".complete"
# -v lists packages as they compile (our progress count); -mod=mod lets the wrapper's go.sum grow.
_GO_BUILD = ("build", "-v", "-mod=mod", "-trimpath")
_ETCD_MAIN = "go.etcd.io/etcd/server/v3"
# The kwok stages the local cluster runs with (paths under the kwok module's kustomize/stage/):
# nodes become Ready and renew their Lease, so the node lifecycle controller leaves them alone;
# pods bound to a node become Running, and deleted or evicted pods finish terminating (without
# pod-delete they would stay Terminating forever).
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)

Printer = Callable[[str], None]


class BuildError(RuntimeError):
    """A build step failed; the message names the step and ends with the tail of its output."""


@dataclass
class BuildReport:
    """What a build did: per-step seconds, or nothing at all when the cache was complete."""

    bin_dir: Path
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def built(self) -> bool:
        """True when anything was built (False: the cache was already complete)."""
        return bool(self.steps)

    @property
    def total_seconds(self) -> float:
        """Wall-clock seconds over every step."""
        return sum(self.steps.values())


def _go_version(go: str) -> tuple[int, int]:
    try:
        out = subprocess.run(
            [go, "env", "GOVERSION"], capture_output=True, text=True, check=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(
            f"the Go toolchain ({go!r}) is needed to build the control plane and could not be run: "
            f"{exc}. Install Go {_MIN_GO[0]}.{_MIN_GO[1]} or newer and put it on PATH."
        ) from None
    match = re.match(r"go(\d+)\.(\d+)", out)
    if match is None:
        raise BuildError(f"could not read the Go version from {out!r}")
    return int(match[1]), int(match[2])


def check_go(go: str, what: str) -> tuple[int, int]:
    """The Go toolchain's (major, minor); a BuildError if it is missing or older than needed."""
    major, minor = _go_version(go)
    if (major, minor) < _MIN_GO:
        raise BuildError(
            f"Go {major}.{minor} is too old to build {what}; "
            f"Go {_MIN_GO[0]}.{_MIN_GO[1]} or newer is needed"
        )
    return major, minor


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The k8s.io modules that k8s.io/kubernetes requires at ``v0.0.0`` and must be replaced."""
    found = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+v0\.0\.0\s*(?://.*)?$", kubernetes_go_mod, re.M)
    return sorted(set(found))


def godebug_line(go_mod: str) -> str | None:
    """The ``godebug`` directive of a go.mod, which a wrapper module must repeat to behave alike."""
    match = re.search(r"^godebug\s+.+$", go_mod, re.M)
    return match[0] if match else None


def wrapper_go_mod(
    module: str, requires: dict[str, str], replaces: dict[str, str], godebug: str | None
) -> str:
    """Text of a wrapper module's go.mod (pure, so it is unit-tested)."""
    lines = [f"module {module}", "", f"go {_MIN_GO[0]}.{_MIN_GO[1]}.0", ""]
    if godebug:
        lines += [godebug, ""]
    lines += ["require ("] + [f"\t{m} {v}" for m, v in sorted(requires.items())] + [")", ""]
    if replaces:
        lines += ["replace ("]
        lines += [f"\t{m} => {m} {v}" for m, v in sorted(replaces.items())]
        lines += [")", ""]
    return "\n".join(lines)


def tools_go(packages: list[str]) -> str:
    """A build-tagged file importing main packages so ``go mod tidy`` resolves their modules."""
    imports = "\n".join(f'\t_ "{p}"' for p in packages)
    return f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"


class GoBuild:
    """What every build from the Go module proxy shares: the go command, its progress, a lock.

    ``root`` is the version-keyed cache directory of one build (it holds the lock file).
    """

    def __init__(self, root: Path, *, go: str = "go", out: Printer = print) -> None:
        self.root = root
        self.go = go
        self.out = out

    def _download_field(self, module: str, name: str) -> str:
        result = subprocess.run(
            [self.go, "mod", "download", "-json", module],
            capture_output=True,
            text=True,
            env=self._env(),
            cwd=self.root,
            check=False,
            timeout=1800,
        )
        try:
            info = json.loads(result.stdout)
        except json.JSONDecodeError:
            info = {}
        if result.returncode != 0 or name not in info:
            detail = info.get("Error") or result.stderr.strip() or result.stdout.strip()
            raise BuildError(f"go mod download {module} failed: {detail}")
        return str(info[name])

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOWORK": "off"})
        env.pop("GOFLAGS", None)
        env.update(extra or {})
        return env

    def _go(
        self, args: list[str], *, cwd: Path, what: str, env: dict[str, str] | None = None
    ) -> None:
        """Run a go command, printing progress at least every 30 s and failing with its tail."""
        self.out(f"  {what} ...")
        started = time.monotonic()
        tail: list[str] = []
        compiled = 0
        lock = threading.Lock()
        proc = subprocess.Popen(
            [self.go, *args],
            cwd=cwd,
            env=self._env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )

        stream = proc.stdout
        if stream is None:  # impossible with stdout=PIPE; keeps the type checker honest
            raise BuildError("no output pipe from go")

        def reader() -> None:
            nonlocal compiled
            for line in stream:
                with lock:
                    compiled += 1
                    tail.append(line.rstrip())
                    del tail[:-40]

        thread = threading.Thread(target=reader, name="go-output", daemon=True)
        thread.start()
        while True:
            try:
                proc.wait(timeout=_PROGRESS_EVERY_S)
                break
            except subprocess.TimeoutExpired:
                with lock:
                    count = compiled
                self.out(
                    f"    ... {what}: {_fmt(time.monotonic() - started)} elapsed, "
                    f"{count} packages so far"
                )
        thread.join(timeout=10)
        if proc.returncode != 0:
            shown = "\n".join(tail[-25:])
            raise BuildError(f"go {args[0]} failed while {what} (exit {proc.returncode}):\n{shown}")

    @contextmanager
    def _lock(self) -> Iterator[None]:
        with (self.root / ".build.lock").open("w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.out("another build of the same versions is running; waiting for it to finish")
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class Builder(GoBuild):
    """Builds (or finds already built) every control-plane binary for one set of versions."""

    def __init__(
        self,
        versions: Versions,
        cache: Path,
        *,
        go: str = "go",
        out: Printer = print,
    ) -> None:
        super().__init__(cache / "controlplane" / versions.key, go=go, out=out)
        self.versions = versions
        self.cache = cache
        self.bin_dir = self.root / "bin"
        self.stage_dir = self.root / "stages"
        self.work_dir = self.root / "work"

    # ----------------------------------------------------------------- queries
    def missing(self) -> list[str]:
        """Binaries not yet in the cache (all of them when the last build did not finish)."""
        if not (self.root / _MARKER).exists():
            return list(BINARIES)
        return [b for b in BINARIES if not (self.bin_dir / b).is_file()]

    def complete(self) -> bool:
        """True when every binary and the kwok stage files are cached."""
        return not self.missing() and all(p.is_file() for p in self.stage_files())

    def stage_files(self) -> list[Path]:
        """The kwok stage files the cluster passes to kwok (present once the build completed)."""
        return [self.stage_dir / Path(relative).name for relative in KWOK_STAGES]

    # ----------------------------------------------------------------- build
    def build(self) -> BuildReport:
        """Build what is missing; print progress; return per-step timings."""
        report = BuildReport(self.bin_dir)
        if self.complete():
            return report
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if self.complete():  # another process finished it while we waited
                return report
            major, minor = check_go(self.go, f"Kubernetes {self.versions.kubernetes}")
            self.bin_dir.mkdir(parents=True, exist_ok=True)
            self.out(
                f"building the control plane (Kubernetes {self.versions.kubernetes}, etcd "
                f"{self.versions.etcd}, kwok {self.versions.kwok}) into {self.bin_dir}; "
                "a first build takes 10-25 minutes on 2 cores"
            )
            steps: list[tuple[str, Callable[[], None]]] = [
                ("kubernetes", self._build_kubernetes),
                ("etcd", self._build_etcd),
                ("kwok", self._build_kwok),
            ]
            for name, step in steps:
                started = time.monotonic()
                step()
                report.steps[name] = time.monotonic() - started
                self.out(f"  {name}: done in {_fmt(report.steps[name])}")
            info = {
                "versions": {
                    "kubernetes": self.versions.kubernetes,
                    "etcd": self.versions.etcd,
                    "kwok": self.versions.kwok,
                },
                "go": ".".join(map(str, (major, minor))),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "seconds": {k: round(v, 1) for k, v in report.steps.items()},
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            (self.root / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
            (self.root / _MARKER).write_text("\n".join(BINARIES) + "\n")
            self.out(f"control plane built in {_fmt(report.total_seconds)}")
        return report

    # ----------------------------------------------------------------- steps
    def _build_kubernetes(self) -> None:
        v = self.versions
        go_mod_path = self._download_field(f"k8s.io/kubernetes@{v.kubernetes}", "GoMod")
        upstream = Path(go_mod_path).read_text(encoding="utf-8")
        staging = staging_modules(upstream)
        if not staging:
            raise BuildError(f"k8s.io/kubernetes {v.kubernetes} go.mod lists no staging modules")
        work = self.work_dir / "kubernetes"
        work.mkdir(parents=True, exist_ok=True)
        commands = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"]
        packages = [f"k8s.io/kubernetes/cmd/{c}" for c in commands]
        (work / "go.mod").write_text(
            wrapper_go_mod(
                "opsche.local/controlplane/kubernetes",
                {"k8s.io/kubernetes": v.kubernetes},
                dict.fromkeys(staging, v.staging),
                godebug_line(upstream),
            )
        )
        (work / "tools.go").write_text(tools_go(packages))
        self._go(["mod", "tidy"], cwd=work, what="resolving Kubernetes modules")
        version_vars = {
            "gitVersion": v.kubernetes,
            "gitMajor": "1",
            "gitMinor": v.minor,
            "gitTreeState": "clean",
            "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        ldflags = ["-s", "-w"]
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            ldflags += [f"-X {pkg}.{name}={value}" for name, value in version_vars.items()]
        self._go(
            [*_GO_BUILD, "-ldflags", " ".join(ldflags), "-o", f"{self.bin_dir}/", *packages],
            cwd=work,
            what="compiling kube-apiserver, kube-controller-manager, kube-scheduler, kubectl",
        )

    def _build_etcd(self) -> None:
        v = self.versions
        work = self.work_dir / "etcd"
        work.mkdir(parents=True, exist_ok=True)
        (work / "go.mod").write_text(
            wrapper_go_mod(
                "opsche.local/controlplane/etcd",
                {"go.etcd.io/etcd/server/v3": v.etcd},
                {},
                None,
            )
        )
        (work / "tools.go").write_text(tools_go(["go.etcd.io/etcd/server/v3"]))
        self._go(["mod", "tidy"], cwd=work, what="resolving etcd modules")
        self._go(
            [*_GO_BUILD, "-ldflags", "-s -w", "-o", str(self.bin_dir / "etcd"), _ETCD_MAIN],
            cwd=work,
            what="compiling etcd",
        )

    def _build_kwok(self) -> None:
        v = self.versions
        self._go(
            [
                "install",
                "-v",
                "-trimpath",
                "-ldflags",
                "-s -w",
                f"sigs.k8s.io/kwok/cmd/kwok@{v.kwok}",
            ],
            cwd=self.root,
            what="compiling kwok",
            env={"GOBIN": str(self.bin_dir)},
        )
        module_dir = Path(self._download_field(f"sigs.k8s.io/kwok@{v.kwok}", "Dir"))
        stage_root = module_dir / "kustomize" / "stage"
        if self.stage_dir.exists():
            shutil.rmtree(self.stage_dir)
        self.stage_dir.mkdir(parents=True)
        for relative in KWOK_STAGES:
            source = stage_root / relative
            if not source.is_file():
                raise BuildError(f"kwok {v.kwok} does not ship the stage file {relative}")
            target = self.stage_dir / source.name
            target.write_bytes(source.read_bytes())
            target.chmod(0o644)


def fmt_seconds(seconds: float) -> str:
    """``4m05s``, or ``12.3s`` under a minute (build progress lines)."""
    return _fmt(seconds)


def _fmt(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"
