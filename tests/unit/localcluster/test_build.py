from pathlib import Path

from opsche_daemon.localcluster.build import (
    Builder,
    godebug_line,
    staging_modules,
    tools_go,
    wrapper_go_mod,
)
from opsche_daemon.localcluster.versions import BINARIES, load_versions

GO_MOD = """module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tgithub.com/blang/semver/v4 v4.0.0
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
\tk8s.io/kube-openapi v0.0.0-20250101000000-abcdef123456
\tk8s.io/utils v0.0.0-20250101000000-abcdef123456
)

require (
\tk8s.io/cri-streaming v0.0.0 // indirect
)
"""


def test_staging_modules_are_exactly_the_v0_0_0_requirements() -> None:
    # Pseudo-versions (kube-openapi, utils) are real published modules and must not be replaced.
    assert staging_modules(GO_MOD) == ["k8s.io/api", "k8s.io/client-go", "k8s.io/cri-streaming"]


def test_wrapper_module_repeats_godebug_and_replaces_each_staging_module() -> None:
    text = wrapper_go_mod(
        "opsche.local/x",
        {"k8s.io/kubernetes": "v1.36.3"},
        {"k8s.io/api": "v0.36.3", "k8s.io/client-go": "v0.36.3"},
        godebug_line(GO_MOD),
    )
    assert "godebug default=go1.26" in text
    assert "\tk8s.io/kubernetes v1.36.3" in text
    assert "\tk8s.io/api => k8s.io/api v0.36.3" in text
    assert "\tk8s.io/client-go => k8s.io/client-go v0.36.3" in text
    assert godebug_line("module x\n") is None


def test_tools_file_is_build_tagged_so_it_never_compiles() -> None:
    text = tools_go(["k8s.io/kubernetes/cmd/kubectl"])
    assert text.startswith("//go:build tools\n")
    assert '_ "k8s.io/kubernetes/cmd/kubectl"' in text


def test_cache_is_incomplete_until_the_marker_and_every_binary_exist(tmp_path: Path) -> None:
    builder = Builder(load_versions(), tmp_path, out=lambda _: None)
    assert builder.missing() == list(BINARIES)
    builder.bin_dir.mkdir(parents=True)
    for name in BINARIES:
        (builder.bin_dir / name).write_text("")
    assert builder.missing() == list(BINARIES)  # no marker: a build was interrupted
    (builder.root / ".complete").write_text("")
    assert builder.missing() == []
    assert not builder.complete()  # the kwok stage files are still missing
    builder.stage_dir.mkdir()
    for stage in builder.stage_files():
        stage.write_text("")
    assert builder.complete()
    (builder.bin_dir / "etcd").unlink()
    assert builder.missing() == ["etcd"]
