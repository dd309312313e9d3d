from opsche_daemon.framework.interface import Code, PreEnqueuePlugin, Status
from opsche_daemon.framework.plugins.scheduling_gates import SchedulingGates
from tests.factories import api_pod


def test_is_a_pre_enqueue_plugin_with_the_upstream_name() -> None:
    plugin = SchedulingGates()
    assert isinstance(plugin, PreEnqueuePlugin)
    assert plugin.name == "SchedulingGates"


def test_pod_without_gates_is_admitted() -> None:
    # upstream TestPreEnqueue "pod does not carry scheduling gates"
    assert SchedulingGates().pre_enqueue(api_pod("p")) == Status.success()


def test_gated_pod_waits_with_the_gates_listed_in_spec_order() -> None:
    # upstream TestPreEnqueue "pod carries scheduling gates"
    gated = api_pod("p", spec={"schedulingGates": [{"name": "foo"}, {"name": "bar"}]})
    status = SchedulingGates().pre_enqueue(gated)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("waiting for scheduling gates: [foo bar]",)
    assert status.plugin == "SchedulingGates"
    assert status.rejected


def test_single_gate_is_printed_like_a_go_slice() -> None:
    gated = api_pod("p", spec={"schedulingGates": [{"name": "example.com/quota"}]})
    assert SchedulingGates().pre_enqueue(gated).message == (
        "waiting for scheduling gates: [example.com/quota]"
    )
