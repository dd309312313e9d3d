from opsche_daemon.framework.interface import Code, FilterPlugin
from opsche_daemon.framework.plugins.node_unschedulable import NodeUnschedulable
from tests.factories import api_node, api_pod, node_info, state_of

UNSCHEDULABLE_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def test_is_a_filter_plugin_with_the_upstream_name() -> None:
    assert isinstance(NodeUnschedulable(), FilterPlugin)
    assert NodeUnschedulable().name == "NodeUnschedulable"


def test_cordoned_node_rejects_pod_without_toleration() -> None:
    # upstream "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"
    cordoned = node_info(api_node("n1", unschedulable=True))
    status = NodeUnschedulable().filter(state_of(cordoned), api_pod(), cordoned)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) were unschedulable",)
    assert status.plugin == "NodeUnschedulable"


def test_schedulable_node_accepts_any_pod() -> None:
    # upstream "Schedule pod to normal node"
    ready = node_info(api_node("n1"))
    assert NodeUnschedulable().filter(state_of(ready), api_pod(), ready).code == Code.SUCCESS


def test_pod_tolerating_the_unschedulable_taint_may_use_a_cordoned_node() -> None:
    # upstream "Schedule pod with toleration to unschedulable node"
    cordoned = node_info(api_node("n1", unschedulable=True))
    tolerant = api_pod(spec={"tolerations": [UNSCHEDULABLE_TOLERATION]})
    assert NodeUnschedulable().filter(state_of(cordoned), tolerant, cordoned).ok


def test_toleration_for_another_effect_does_not_count() -> None:
    cordoned = node_info(api_node("n1", unschedulable=True))
    wrong_effect = api_pod(
        spec={"tolerations": [{**UNSCHEDULABLE_TOLERATION, "effect": "NoExecute"}]}
    )
    assert NodeUnschedulable().filter(state_of(cordoned), wrong_effect, cordoned).rejected


def test_tolerate_everything_also_tolerates_a_cordon() -> None:
    cordoned = node_info(api_node("n1", unschedulable=True))
    tolerant = api_pod(spec={"tolerations": [{"operator": "Exists"}]})
    assert NodeUnschedulable().filter(state_of(cordoned), tolerant, cordoned).ok
