from opsche_daemon.framework.interface import Code, FilterPlugin, PreFilterPlugin
from opsche_daemon.framework.plugins.node_name import NodeName
from tests.factories import api_node, api_pod, node_info, state_of


def test_is_filter_only_like_upstream() -> None:
    plugin = NodeName()
    assert plugin.name == "NodeName"
    assert isinstance(plugin, FilterPlugin)
    assert not isinstance(plugin, PreFilterPlugin)


def test_no_requested_node_fits_everywhere() -> None:
    # upstream TestNodeName "no host specified"
    foo = node_info(api_node("foo"))
    assert NodeName().filter(state_of(foo), api_pod(), foo).code == Code.SUCCESS


def test_requested_node_matches() -> None:
    # upstream TestNodeName "host matches"
    foo = node_info(api_node("foo"))
    assert NodeName().filter(state_of(foo), api_pod(node_name="foo"), foo).ok


def test_other_node_is_rejected_as_unresolvable() -> None:
    # upstream TestNodeName "host doesn't match"
    foo = node_info(api_node("foo"))
    status = NodeName().filter(state_of(foo), api_pod(node_name="bar"), foo)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) didn't match the requested node name",)
    assert status.plugin == "NodeName"
