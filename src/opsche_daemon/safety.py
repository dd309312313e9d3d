"""The safety rules: which running pods opsche may disturb, written once for every caller.

A plan, a preemption and the CLI's dry run must agree on which pods are off limits, or a rule
tightened in one place would silently stay loose in another. These predicates are pure functions
of a ``Pod`` (no Kubernetes client, no I/O), so ``opsche solve`` can apply them to a file without
loading the daemon:

* **protected** pods are never evicted or moved by a plan, and never preempted: kube-system pods
  (the cluster's own components), DaemonSet pods (their controller would recreate them on the same
  node, so evicting them frees nothing), mirror pods (static pods; the API cannot delete them) and
  pods their owner opted out with the annotation ``opsche.dev/evictable: "false"``;
* **bare** pods (no controller owner reference) are never moved or evicted by a plan: nothing
  would recreate them, so "moving" one would delete it;
* a pod a plan may **disturb** must, besides, belong to the scheduler making the plan (the
  replacement is pinned to its new node by that scheduler, which another scheduler's pods never
  reach) and not already be terminating.

The scheduler's plan plugins, DefaultPreemption, the optimiser's model, plan validation and the
CLI all read these.
"""

from __future__ import annotations

from collections.abc import Callable

from opsche_daemon.model.pod import Pod

__all__ = [
    "OPT_OUT_ANNOTATION",
    "Protected",
    "disturb_refusals",
    "is_bare",
    "is_protected",
    "never_protected",
]

OPT_OUT_ANNOTATION = "opsche.dev/evictable"
"""Set to ``"false"`` on a pod to keep every plan and preemption away from it."""

Protected = Callable[[Pod], bool]
"""A protection rule: ``is_protected`` in the daemon; tests may inject their own."""


def is_protected(pod: Pod) -> bool:
    """Pods opsche never evicts or moves: kube-system, DaemonSet and mirror pods, opted-out pods."""
    return (
        pod.namespace == "kube-system"
        or pod.is_daemonset
        or pod.is_mirror
        or pod.annotations.get(OPT_OUT_ANNOTATION) == "false"
    )


def never_protected(pod: Pod) -> bool:
    """No pod is protected: the rule of upstream's preemption and of unit tests that want it."""
    del pod
    return False


def is_bare(pod: Pod) -> bool:
    """A pod without a controller: deleting it would lose it, so no plan moves or evicts it."""
    return pod.owner is None


def disturb_refusals(
    pod: Pod, what: str, scheduler_name: str, protected: Protected = is_protected
) -> list[str]:
    """Every reason a plan must not move or evict the running ``pod`` (empty: it may).

    ``what`` prefixes each reason (``"move ns/name"``), so a refused plan says which step broke
    which rule.
    """
    refusals = []
    if is_bare(pod):
        refusals.append(f"{what}: the pod has no controller (deleting it would lose it)")
    if protected(pod):
        refusals.append(f"{what}: the pod is protected")
    if pod.scheduler_name != scheduler_name:
        refusals.append(f"{what}: the pod belongs to scheduler {pod.scheduler_name}")
    if pod.deleting:
        refusals.append(f"{what}: the pod is already terminating")
    return refusals
