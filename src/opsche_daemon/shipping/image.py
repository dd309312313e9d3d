"""``make image``: opsche's container image as an OCI layout, built without a Docker engine.

No Docker engine runs here and no registry outside the machine may be reached, so the image is
assembled from parts this machine can make:

1. the base layer, a Debian root filesystem with Python 3.11 (Debian's own ``python3``) made by
   ``mmdebstrap`` from Debian's packages, ``SOURCE_DATE_EPOCH`` fixing its timestamps;
2. the application layer, opsche's wheel and its dependencies from PyPI installed with pip into
   ``/usr/local/lib/python3.11/dist-packages`` (where Debian's Python looks), written as a tar
   with sorted names, one owner and one timestamp, so the same inputs give the same bytes;
3. crane (built from the Go module proxy, ``make tools``) pushes both layers onto an empty OCI
   base in a registry it serves on 127.0.0.1 for the duration of the build, sets the entrypoint
   (``python3 -m opsche_daemon.cli.main``: no shell at run time), a non-root user, environment
   and OCI labels, and pulls the result as an OCI image layout.

The digest is printed at the end; ``crane push DIR REF`` (or any OCI tool) publishes it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ENTRYPOINT",
    "ImageError",
    "ImageSpec",
    "build_image",
    "deterministic_tar",
    "image_config",
    "unpack",
]

Printer = Callable[[str], None]

ENTRYPOINT = ("/usr/bin/python3", "-m", "opsche_daemon.cli.main")
USER = "65532:65532"  # the chart's runAsUser/runAsGroup; no passwd entry is needed
SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"
SUITE = "bookworm"  # Debian 12: Python 3.11, as the project's floor
# python3 for the interpreter and its standard library; libstdc++6 for the C++ extensions of
# OR-Tools and numpy; ca-certificates for TLS to API servers with public certificates.
PACKAGES = ("python3", "libstdc++6", "ca-certificates")
SOURCE_DATE_EPOCH = 1764547200  # 2025-12-01T00:00:00Z: every timestamp in the image


class ImageError(RuntimeError):
    """A step of the build failed; the message says which and how to fix it."""


@dataclass(frozen=True)
class ImageSpec:
    """What to build: the checkout, the version, where the layout goes, the tools."""

    source: Path
    version: str
    out: Path
    crane: Path
    work: Path | None = None  # kept between builds (the root filesystem is reused)


def deterministic_tar(root: Path, target: Path, epoch: int = SOURCE_DATE_EPOCH) -> None:
    """``root``'s tree as an uncompressed tar: sorted, owned by root, dated ``epoch``."""

    def entries(directory: Path) -> Iterator[Path]:
        for path in sorted(directory.iterdir(), key=lambda p: p.name):
            yield path
            if path.is_dir() and not path.is_symlink():
                yield from entries(path)

    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in entries(root):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(root)))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = epoch
            info.pax_headers = {}
            if info.isreg():
                info.mode = 0o755 if info.mode & 0o111 else 0o644
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                if info.isdir():
                    info.mode = 0o755
                tar.addfile(info)


def _run(argv: Sequence[str | Path], what: str, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            [str(a) for a in argv],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            check=False,
            timeout=1800,
        )
    except FileNotFoundError:
        raise ImageError(f"{what}: {argv[0]} is not installed") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise ImageError(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def _rootfs(work: Path, out: Printer) -> Path:
    target = work / f"rootfs-{SUITE}-{'-'.join(PACKAGES)}.tar"
    if target.exists():
        out(f"  base layer: {target} (kept from an earlier build)")
        return target
    if shutil.which("mmdebstrap") is None:
        raise ImageError(
            "mmdebstrap is not installed: `apt-get install mmdebstrap` (make image does it when "
            "run as root)"
        )
    out(f"  base layer: Debian {SUITE} with python3 (mmdebstrap, about 2 minutes)")
    partial = target.with_name(target.stem + ".partial.tar")  # mmdebstrap reads the suffix
    _run(
        [
            "mmdebstrap", "--variant=essential", f"--include={','.join(PACKAGES)}",
            "--quiet", SUITE, partial,
        ],
        "mmdebstrap",
        env={"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)},
    )  # fmt: skip
    partial.replace(target)
    return target


def _user_files(base: Path, staging: Path) -> None:
    """The base's /etc/passwd and /etc/group plus the image's user (65532, ``opsche``).

    A uid without an entry breaks ``getpwuid``, which kopf calls at start: the image's user
    must exist, not only be a number.
    """
    name, (uid, gid) = "opsche", USER.split(":")
    with tarfile.open(base) as tar:
        for member, line in (
            ("etc/passwd", f"{name}:x:{uid}:{gid}:opsche:/tmp:/usr/sbin/nologin\n"),
            ("etc/group", f"{name}:x:{gid}:\n"),
        ):
            found = next(m for m in tar.getmembers() if m.name.lstrip("./") == member)
            handle = tar.extractfile(found)
            if handle is None:
                raise ImageError(f"the base layer's {member} is not a file")
            target = staging / member
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(handle.read() + line.encode())


def _app_layer(spec: ImageSpec, base: Path, work: Path, out: Printer) -> Path:
    out("  application layer: opsche's wheel and its dependencies from PyPI")
    wheels = work / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # SOURCE_DATE_EPOCH dates the wheel's members: the same source gives the same wheel, and
    # so the same direct_url.json (it records the wheel's hash) and the same layer.
    epoch = {"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}
    _run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", wheels, spec.source],
        "building the wheel",
        env=epoch,
    )
    [wheel] = wheels.glob("opsche-*.whl")
    staging = work / "app"
    shutil.rmtree(staging, ignore_errors=True)
    _run(
        [
            *pip, "install", "--no-compile", "--no-warn-script-location",
            "--only-binary=:all:", "--target", staging / SITE_PACKAGES, wheel,
        ],
        "installing opsche and its dependencies",
        env=epoch,
    )  # fmt: skip
    # Console scripts pip wrote point at this machine's interpreter; the entrypoint needs none.
    shutil.rmtree(staging / SITE_PACKAGES / "bin", ignore_errors=True)
    for cache in (staging / SITE_PACKAGES).rglob("__pycache__"):
        shutil.rmtree(cache)
    _user_files(base, staging)
    layer = work / "app.tar"
    deterministic_tar(staging, layer)
    return layer


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _registry(crane: Path, disk: Path) -> Iterator[str]:
    """A registry served by crane on 127.0.0.1 while the build runs; yields its host:port."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    disk.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [str(crane), "registry", "serve", "--address", address, "--disk", str(disk)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise ImageError(f"crane registry serve did not listen on {address}")
            time.sleep(0.05)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=10)


def build_image(spec: ImageSpec, out: Printer = print) -> str:
    """Build the image into ``spec.out`` (an OCI layout directory); return its digest."""
    started = time.monotonic()
    work = spec.work or Path(tempfile.mkdtemp(prefix="opsche-image-"))
    work.mkdir(parents=True, exist_ok=True)
    out(f"building the opsche {spec.version} image into {spec.out}")
    base = _rootfs(work, out)
    app = _app_layer(spec, base, work, out)
    crane = [str(spec.crane), "--insecure"]
    with _registry(spec.crane, work / "registry") as registry:
        ref = f"{registry}/opsche:{spec.version}"
        out("  assembling with crane (empty OCI base, two layers, entrypoint, user, labels)")
        _run([*crane, "append", "--oci-empty-base", "-f", base, "-f", app, "-t", ref],
             "crane append")  # fmt: skip
        labels = {
            "org.opencontainers.image.title": "opsche",
            "org.opencontainers.image.description": "A Kubernetes scheduler with cluster-wide "
            "CP-SAT plans",
            "org.opencontainers.image.version": spec.version,
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.base.name": f"debian:{SUITE} (mmdebstrap)",
        }
        mutate = [*crane, "mutate", ref, "-t", ref, "--user", USER, "--workdir", "/",
                  "--entrypoint", ",".join(ENTRYPOINT), "--cmd", "--help",
                  "--set-platform", "linux/amd64",
                  "-e", "PYTHONDONTWRITEBYTECODE=1", "-e", "PYTHONUNBUFFERED=1",
                  "-e", "HOME=/tmp"]  # fmt: skip
        for key, value in labels.items():
            mutate += ["-l", f"{key}={value}"]
        _run(mutate, "crane mutate")
        shutil.rmtree(spec.out, ignore_errors=True)
        _run([*crane, "pull", "--format=oci", ref, spec.out], "crane pull")
        digest = _run([*crane, "digest", ref], "crane digest").strip()
    out(f"image built in {time.monotonic() - started:.0f}s: {spec.out} (OCI layout)")
    out(f"digest {digest}")
    return digest


def image_config(layout: Path) -> dict[str, object]:
    """The image's config (entrypoint, user, env, labels) from an OCI layout directory."""
    index = json.loads((layout / "index.json").read_text())
    manifest = _blob(layout, index["manifests"][0]["digest"])
    config: dict[str, object] = json.loads(_blob(layout, json.loads(manifest)["config"]["digest"]))
    return config


def _blob(layout: Path, digest: str) -> bytes:
    algorithm, _, value = digest.partition(":")
    return (layout / "blobs" / algorithm / value).read_bytes()


def unpack(layout: Path, target: Path) -> None:
    """Extract the image's layers in order into ``target`` (a root filesystem to chroot into)."""
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads(_blob(layout, index["manifests"][0]["digest"]))
    target.mkdir(parents=True, exist_ok=True)
    for layer in manifest["layers"]:
        data = _blob(layout, layer["digest"])
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            # Our own layers (no whiteouts), extracted as a runtime would: modes kept (/tmp 1777)
            # and the root filesystem's absolute links too.
            tar.extractall(target, filter="fully_trusted")  # noqa: S202 - layers we built
