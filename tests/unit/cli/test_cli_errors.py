"""Bad input gives one plain error line and a non-zero exit, never a traceback."""

from pathlib import Path

import pytest

from opsche_daemon.cli.main import main
from opsche_daemon.cli.run_cmd import blocking_help
from opsche_daemon.localcluster.cluster import ClusterError, ClusterSpec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ClusterSpec(nodes=-1), "--nodes must be 0 or more"),
        (ClusterSpec(node_cpu="four"), "--node-cpu: 'four' is not a Kubernetes quantity"),
        (ClusterSpec(node_memory="0"), "--node-memory must be positive"),
        (ClusterSpec(node_pods=0), "--node-pods must be at least 1"),
        (ClusterSpec(ports={"kubelet": 1234}), "unknown component"),
        (ClusterSpec(ports={"etcd": 70000}), "between 1 and 65535"),
    ],
)
def test_spec_validation_messages(spec: ClusterSpec, message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        spec.validate()


def test_cluster_up_with_bad_quantity_exits_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["cluster", "up", "--state-dir", str(tmp_path), "--node-cpu", "lots"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("opsche: error: --node-cpu: 'lots' is not a Kubernetes quantity")
    assert "Traceback" not in err


def test_malformed_port_option_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cluster", "up", "--port", "etcd:2379"])
    assert exit_info.value.code == 2
    assert "is not COMPONENT=PORT" in capsys.readouterr().err


def test_status_and_down_without_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "none"
    assert main(["cluster", "status", "--state-dir", str(state)]) == 1
    assert "no local cluster" in capsys.readouterr().out
    assert main(["cluster", "down", "--state-dir", str(state)]) == 0
    assert "nothing to do" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--time-limit", "0"], "--time-limit 0: must be positive"),
        (["--stall", "-1"], "--stall -1: must be at least 0"),
    ],
)
def test_solve_refuses_bad_solver_options_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], message: str
) -> None:
    code = main(["solve", str(tmp_path / "snapshot.json"), *option])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err
    assert "Traceback" not in err


def test_solve_refuses_a_snapshot_with_an_impossible_quantity_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snapshot.json"
    path.write_text(
        '{"nodes": [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}],'
        ' "pods": [{"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers":'
        ' [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]}}]}'
    )
    code = main(["solve", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"opsche: error: {path}: pods[0] (p): spec.containers[0].resources.requests.cpu: "
        "'abc' is not a Kubernetes quantity\n"
    )


def test_the_blocking_flag_says_what_the_readme_says() -> None:

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert f"| `--blocking` | off | {blocking_help()} |" in readme
    assert "from the snapshot on" in blocking_help()
