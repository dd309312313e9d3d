"""The image's pure parts: a layer's bytes depend on its files only; the Dockerfile agrees."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

from opsche_daemon.shipping.image import ENTRYPOINT, USER, deterministic_tar


def tree(root: Path, mtime: int) -> Path:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "b.py").write_text("b\n")
    (root / "pkg" / "a.py").write_text("a\n")
    (root / "pkg" / "sub" / "tool").write_text("#!x\n")
    (root / "pkg" / "sub" / "tool").chmod(0o775)
    for path in [root, *root.rglob("*")]:
        os.utime(path, (mtime, mtime))
    return root


def test_the_same_files_give_the_same_layer_whatever_their_dates_and_order(tmp_path: Path) -> None:
    first, second = tmp_path / "one.tar", tmp_path / "two.tar"
    deterministic_tar(tree(tmp_path / "x", 1_000_000), first)
    deterministic_tar(tree(tmp_path / "y", 2_000_000), second)
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["pkg", "pkg/a.py", "pkg/b.py", "pkg/sub", "pkg/sub/tool"]
    assert {(m.uid, m.gid, m.uname) for m in members} == {(0, 0, "root")}
    assert [m.mode for m in members if m.isreg()] == [0o644, 0o644, 0o755]


def test_the_dockerfile_builds_the_same_entrypoint_and_user() -> None:
    dockerfile = (Path(__file__).resolve().parents[3] / "Dockerfile").read_text()
    assert f"ENTRYPOINT {json.dumps(list(ENTRYPOINT))}" in dockerfile
    assert f"USER {USER}" in dockerfile
