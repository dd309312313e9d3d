from pathlib import Path

import pytest

from opsche_daemon.localcluster.components import (
    COMPONENTS,
    PORT_NAMES,
    Layout,
    argv_for,
    health_url,
    scheduler_config,
)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    ports = {name: 20000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path, tmp_path / "bin", (tmp_path / "a.yaml", tmp_path / "b.yaml"), ports)


def test_every_component_binds_to_loopback_only(layout: Layout) -> None:
    for name in COMPONENTS:
        argv = argv_for(name, layout)
        assert argv[0] == str(layout.bin_dir / name)
        # The service-account issuer is an identifier inside tokens, never dialled.
        urls = [
            a.split("=", 1)[1]
            for a in argv
            if ("://" in a or "address=" in a) and not a.startswith("--service-account-issuer")
        ]
        for url in urls:
            hosts = [part for part in url.replace("opsche=", "").split(",") if part]
            for host in hosts:
                assert "127.0.0.1" in host, (name, host)
        assert health_url(name, layout).split("/")[2].startswith("127.0.0.1:")


def test_apiserver_uses_the_configured_ports_and_certificates(layout: Layout) -> None:
    argv = argv_for("kube-apiserver", layout)
    assert f"--secure-port={layout.ports['kube-apiserver']}" in argv
    assert f"--etcd-servers=http://127.0.0.1:{layout.ports['etcd']}" in argv
    assert f"--client-ca-file={layout.pki.ca_cert}" in argv
    assert "--authorization-mode=Node,RBAC" in argv


def test_kwok_gets_every_stage_file_and_manages_only_annotated_nodes(layout: Layout) -> None:
    argv = argv_for("kwok", layout)
    assert [a for a in argv if a.startswith("--config=")] == [
        f"--config={p}" for p in layout.stage_files
    ]
    assert "--manage-all-nodes=false" in argv


def test_scheduler_config_keeps_upstream_client_defaults(layout: Layout) -> None:
    text = scheduler_config(layout)
    assert "leaderElect: false" in text
    assert "qps" not in text and "burst" not in text
    assert str(layout.kubeconfig) in text


def test_unknown_component_is_rejected(layout: Layout) -> None:
    with pytest.raises(ValueError, match="unknown component"):
        argv_for("kubelet", layout)
