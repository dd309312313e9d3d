"""The container image, built here without Docker, runs opsche from its own entrypoint.

``opsche image build`` (``make image``) makes an OCI layout from a Debian root filesystem
(mmdebstrap) and opsche from PyPI (crane assembles it). The test unpacks the layout's layers and
runs the image's entrypoint under ``chroot`` as the image's user, against the local cluster on
127.0.0.1 (the chroot shares the host's network): ``--version``, then a short ``opsche run``
that binds a pod and stops cleanly on SIGTERM. chroot needs root, as CI runs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from opsche_daemon import __version__
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import DaemonProcess, wait_until_ready
from opsche_daemon.localcluster.versions import cache_root
from opsche_daemon.shipping.image import image_config, unpack
from tests.integration.waiting import wait_for_pods

SCHEDULER = "opsche-image"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    layout = tmp_path_factory.mktemp("image") / "layout"
    done = subprocess.run(
        [Path(sys.executable).with_name("opsche"), "image", "build", "--out", layout,
         "--work", cache_root() / "image"],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "digest sha256:" in done.stdout
    return layout


@pytest.fixture(scope="module")
def rootfs(image: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if os.geteuid() != 0:
        raise AssertionError("running the image needs chroot, which needs root (CI runs as root)")
    root = tmp_path_factory.mktemp("rootfs")
    unpack(image, root)
    (root / "proc").mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root / "proc")], check=False)


def entrypoint(image: Path, root: Path, *args: str) -> list[str]:
    """The command line the image runs, under chroot as the image's user with its env."""
    config: dict[str, Any] = image_config(image)["config"]  # type: ignore[assignment]
    env = [f"{item}" for item in config["Env"]]
    return [
        "chroot", f"--userspec={config['User']}", str(root),
        "/usr/bin/env", "-i", *env, *config["Entrypoint"], *args,
    ]  # fmt: skip


def test_the_image_is_labelled_runs_as_non_root_and_needs_no_shell(image: Path) -> None:
    config: dict[str, Any] = image_config(image)["config"]  # type: ignore[assignment]
    assert config["Entrypoint"] == ["/usr/bin/python3", "-m", "opsche_daemon.cli.main"]
    assert config["User"] == "65532:65532"
    assert config["Labels"]["org.opencontainers.image.version"] == __version__
    assert (image / "oci-layout").is_file()


def test_the_entrypoint_prints_the_version(image: Path, rootfs: Path) -> None:
    done = subprocess.run(
        entrypoint(image, rootfs, "--version"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"opsche {__version__}"


def start_and_wait_ready(argv: list[str], log: Path, port: int) -> subprocess.Popen[bytes]:
    """Start the image's ``opsche run``; return once its /readyz answers 200 (bounded)."""
    with log.open("wb") as handle:
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT)
    return wait_until_ready(DaemonProcess(process, port, log), within=120).process


async def test_the_image_schedules_a_pod_and_stops_cleanly(
    image: Path, rootfs: Path, local_cluster: Layout, api: client.ApiClient, namespace: str
) -> None:
    inside = rootfs / "tmp" / "kubeconfig"
    shutil.copy(local_cluster.kubeconfig, inside)
    inside.chmod(0o644)  # the image's user reads it
    port = 18700 + os.getpid() % 200
    argv = entrypoint(
        image, rootfs, "run", "--kubeconfig", "/" + str(inside.relative_to(rootfs)),
        "--scheduler-name", SCHEDULER, "--metrics-address", "127.0.0.1",
        "--metrics-port", str(port), "--trigger", "none",
    )  # fmt: skip
    log = rootfs.parent / "opsche-image.log"
    process = await asyncio.to_thread(start_and_wait_ready, argv, log, port)
    try:
        await client.CoreV1Api(api).create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name="from-the-image"),
                spec=client.V1PodSpec(
                    scheduler_name=SCHEDULER,
                    containers=[client.V1Container(name="c", image="registry.k8s.io/pause:3.10")],
                ),
            ),
        )
        await wait_for_pods(
            api, namespace, lambda p: bool(p and p["from-the-image"].spec.node_name),
            what="the pod bound by opsche running from its image",
        )  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(process.wait, 30)
    assert code == 0, log.read_text()[-3000:]
    assert '"opsche stopped"' in log.read_text()
