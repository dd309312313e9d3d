from typing import Any

import pytest

from opsche_daemon.framework.interface import Code, CycleState
from opsche_daemon.framework.plugins.node_ports import NodePorts
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, container, node_info, state_of


def _ports(*specs: str) -> list[dict[str, Any]]:
    """``"UDP/127.0.0.1/8080"`` → a container port entry (as upstream's test helper newPod)."""
    out = []
    for spec in specs:
        protocol, host_ip, port = spec.split("/")
        out.append(
            {
                "containerPort": int(port),
                "hostPort": int(port),
                "protocol": protocol,
                "hostIP": host_ip,
            }
        )
    return out


def _pod(name: str, *specs: str) -> Pod:
    return api_pod(name, containers=[container(ports=_ports(*specs))])


def _run(wanting: Pod, *existing: Pod) -> tuple[CycleState, Any]:
    target = node_info(api_node("m1"), *existing)
    state = state_of(target)
    _, pre = NodePorts().pre_filter(state, wanting, [target])
    assert pre.code == Code.SUCCESS
    return state, NodePorts().filter(state, wanting, target)


def test_pod_without_host_ports_skips_the_filter() -> None:
    # upstream TestNodePorts "skip filter"
    state = state_of(node_info(api_node("m1")))
    result, status = NodePorts().pre_filter(state, api_pod(), [])
    assert result is None
    assert status.code == Code.SKIP


def test_container_port_without_host_port_is_ignored() -> None:
    no_host = api_pod(containers=[container(ports=[{"containerPort": 8080}])])
    _, status = NodePorts().pre_filter(state_of(), no_host, [])
    assert status.code == Code.SKIP


def test_non_sidecar_init_container_ports_are_ignored() -> None:
    # upstream TestNodePorts "non-sidecar initContainer using hostPort"
    init_only = api_pod(init_containers=[container("init", ports=_ports("TCP/0.0.0.0/8001"))])
    _, status = NodePorts().pre_filter(state_of(), init_only, [])
    assert status.code == Code.SKIP


@pytest.mark.parametrize(
    ("case", "wanted", "used", "conflict"),
    [
        ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], False),
        ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
        ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
        ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], False),
        ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
        (
            "second udp port conflict",
            ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            ["UDP/127.0.0.1/8080"],
            True,
        ),
        (
            "first tcp port conflict",
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            True,
        ),
        (
            "first tcp port conflict due to 0.0.0.0 hostIP",
            ["TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            True,
        ),
        (
            "TCP hostPort conflict due to 0.0.0.0 hostIP",
            ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            True,
        ),
        (
            "second tcp port conflict to 0.0.0.0 hostIP",
            ["TCP/127.0.0.1/8001"],
            ["TCP/0.0.0.0/8001"],
            True,
        ),
        ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
        (
            "UDP hostPort conflict due to 0.0.0.0 hostIP",
            ["UDP/127.0.0.1/8001"],
            ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            True,
        ),
    ],
)
def test_conflicts_follow_upstream_host_ip_rules(
    case: str, wanted: list[str], used: list[str], conflict: bool
) -> None:
    # upstream TestNodePorts, case named by ``case``
    _, status = _run(_pod("incoming", *wanted), _pod("existing", *used))
    if conflict:
        assert status.code == Code.UNSCHEDULABLE, case
        assert status.reasons == ("node(s) didn't have free ports for the requested pod ports",)
        assert status.plugin == "NodePorts"
    else:
        assert status.code == Code.SUCCESS, case


def test_empty_host_ip_and_protocol_mean_all_addresses_and_tcp() -> None:
    bare = api_pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 8080}])])
    _, status = _run(bare, _pod("existing", "TCP/192.168.1.5/8080"))
    assert status.code == Code.UNSCHEDULABLE


def test_sidecar_host_port_conflicts() -> None:
    # upstream TestNodePorts "TCP hostPort conflict from sidecar initContainer"
    sidecar = api_pod(
        init_containers=[
            container("proxy", ports=_ports("TCP/0.0.0.0/8001"), restart_policy="Always")
        ]
    )
    _, status = _run(sidecar, _pod("existing", "TCP/0.0.0.0/8001"))
    assert status.code == Code.UNSCHEDULABLE


def test_filter_without_pre_filter_is_an_error() -> None:
    # upstream TestPreFilterDisabled
    target = node_info(api_node("m1"))
    status = NodePorts().filter(state_of(target), _pod("p", "TCP/0.0.0.0/80"), target)
    assert status.code == Code.ERROR
