"""The safety rules every caller shares: who is protected, who is bare, who a plan may disturb."""

from __future__ import annotations

import pytest

from opsche_daemon.model.pod import MIRROR_ANNOTATION, Pod
from opsche_daemon.safety import (
    OPT_OUT_ANNOTATION,
    disturb_refusals,
    is_bare,
    is_protected,
    never_protected,
)
from tests.factories import controller, pod

RS = controller("web")


@pytest.mark.parametrize(
    ("subject", "protected"),
    [
        (pod("web-1", owner=RS), False),
        (pod("dns", namespace="kube-system", owner=RS), True),
        (pod("agent", owner=controller("agent", "DaemonSet")), True),
        (pod("static", annotations={MIRROR_ANNOTATION: "x"}), True),
        (pod("pinned", owner=RS, annotations={OPT_OUT_ANNOTATION: "false"}), True),
        (pod("willing", owner=RS, annotations={OPT_OUT_ANNOTATION: "true"}), False),
    ],
)
def test_protected_pods(subject: Pod, protected: bool) -> None:
    assert is_protected(subject) is protected
    assert never_protected(subject) is False


def test_a_pod_without_a_controller_is_bare() -> None:
    assert is_bare(pod("lonely"))
    assert not is_bare(pod("web-1", owner=RS))


def test_a_plan_may_disturb_only_its_own_controller_managed_unprotected_live_pods() -> None:
    mine = pod("web-1", owner=RS, scheduler="opsche", on="n1")
    assert disturb_refusals(mine, "move default/web-1", "opsche") == []

    refusals = disturb_refusals(
        pod("x", namespace="kube-system", scheduler="other", deleting=True),
        "move kube-system/x",
        "opsche",
    )
    assert refusals == [
        "move kube-system/x: the pod has no controller (deleting it would lose it)",
        "move kube-system/x: the pod is protected",
        "move kube-system/x: the pod belongs to scheduler other",
        "move kube-system/x: the pod is already terminating",
    ]


def test_an_injected_rule_replaces_the_default() -> None:
    dns = pod("dns", namespace="kube-system", owner=RS, scheduler="opsche")
    assert disturb_refusals(dns, "evict", "opsche", protected=never_protected) == []
    assert disturb_refusals(dns, "evict", "opsche") == ["evict: the pod is protected"]
