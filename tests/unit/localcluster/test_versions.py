from pathlib import Path

import pytest

from opsche_daemon.localcluster.tools import ToolBuilder, load_tool_versions, tool_bin_dir
from opsche_daemon.localcluster.versions import cache_root, load_versions


def test_pinned_versions_are_releases_and_key_names_all_three() -> None:
    versions = load_versions()
    assert versions.kubernetes.startswith("v1.")
    assert versions.staging == "v0." + versions.kubernetes.split(".", 1)[1]
    for part in (versions.kubernetes, versions.etcd, versions.kwok):
        assert part in versions.key


def test_malformed_versions_file_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "versions.env"
    bad.write_text("KUBERNETES_VERSION=1.36\nKWOK_VERSION=v0.8.0\nETCD_VERSION=v3.6.16\n")
    with pytest.raises(ValueError, match=r"KUBERNETES_VERSION='1\.36' is not a release"):
        load_versions(bad)
    bad.write_text("KWOK_VERSION=v0.8.0\n")
    with pytest.raises(ValueError, match="KUBERNETES_VERSION is not set"):
        load_versions(bad)
    bad.write_text("just words\n")
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        load_versions(bad)


def test_cache_root_honours_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPSCHE_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("OPSCHE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "x" / "opsche"


def test_the_shipping_tools_are_pinned_beside_the_control_plane(tmp_path: Path) -> None:
    tools = load_tool_versions()
    assert tools.helm.startswith("v3.")
    assert tool_bin_dir(tools, tmp_path) == tmp_path / "tools" / tools.key / "bin"
    assert ToolBuilder(tools, tmp_path).missing() == ["helm", "helm-unittest", "crane"]
    broken = tmp_path / "versions.env"
    broken.write_text("HELM_VERSION=v3.22.0\n")
    with pytest.raises(ValueError, match="HELM_UNITTEST_VERSION is not set"):
        load_tool_versions(broken)
