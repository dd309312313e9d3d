"""An immutable view of a Pod with what scheduling needs, computed once when the pod arrives.

Why precompute: the scheduler evaluates every pending pod against every node, and the optimiser
against every node again; parsing quantities and walking containers on each evaluation would
dominate the cycle in Python. ``Pod.from_api`` reads the API's JSON form (camelCase keys, as the
watch delivers it) and nothing here imports a Kubernetes client.

Requests follow upstream ``resourcehelper.PodRequests``: the sum over regular containers and
restartable init containers (sidecars), or the largest single init container plus the sidecars
started before it, whichever is larger per resource, plus ``spec.overhead``; pod-level
``spec.resources.requests`` replace the container sum for the resources they name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from opsche_daemon.model.apiobject import without_managed_fields
from opsche_daemon.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    Resources,
)
from opsche_daemon.model.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Taint,
    Toleration,
)

__all__ = [
    "HostPort",
    "Owner",
    "Pod",
    "PodAffinityTerm",
    "PreferredSchedulingTerm",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
    "parse_time",
]

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# Volume sources that need volume plugins (binding, zones, attach limits) which opsche leaves out;
# a pod using one is refused with a clear event instead of being placed without those checks.
_UNSUPPORTED_VOLUMES = (
    "persistentVolumeClaim",
    "ephemeral",
    "csi",
    "awsElasticBlockStore",
    "gcePersistentDisk",
    "azureDisk",
    "cinder",
)
_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class HostPort:
    """A container port bound on the node (``hostPort``)."""

    port: int
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"  # noqa: S104 - the API's default meaning "all addresses"


@dataclass(frozen=True, slots=True)
class Owner:
    """The controller owner reference (``controller: true``)."""

    kind: str
    name: str
    uid: str
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    """A weighted preferred node-affinity term."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A pod (anti-)affinity term; namespaces empty and no namespace selector = the pod's own."""

    selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> PodAffinityTerm:
        """From the API form."""
        return cls(
            LabelSelector.parse(raw.get("labelSelector")),
            str(raw.get("topologyKey", "")),
            tuple(raw.get("namespaces") or ()),
            LabelSelector.parse(raw.get("namespaceSelector")),
            tuple(raw.get("matchLabelKeys") or ()),
            tuple(raw.get("mismatchLabelKeys") or ()),
        )


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred pod (anti-)affinity term with its weight (1-100)."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[]`` with upstream defaults filled in."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> TopologySpreadConstraint:
        """From the API form."""
        return cls(
            int(raw.get("maxSkew", 1)),
            str(raw.get("topologyKey", "")),
            str(raw.get("whenUnsatisfiable", "DoNotSchedule")),
            LabelSelector.parse(raw.get("labelSelector")),
            int(raw.get("minDomains") or 1),
            str(raw.get("nodeAffinityPolicy") or "Honor"),
            str(raw.get("nodeTaintsPolicy") or "Ignore"),
            tuple(raw.get("matchLabelKeys") or ()),
        )


def parse_time(text: str | None) -> float:
    """RFC 3339 timestamp to epoch seconds (0 when absent)."""
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _container_requests(container: Mapping[str, Any], non_zero: bool) -> Resources:
    requests = (container.get("resources") or {}).get("requests") or {}
    parsed = Resources.parse(requests)
    if not non_zero:
        return parsed
    return Resources(
        parsed.milli_cpu if CPU in requests else DEFAULT_MILLI_CPU_REQUEST,
        parsed.memory if MEMORY in requests else DEFAULT_MEMORY_REQUEST,
        parsed.ephemeral_storage,
        parsed.pods,
        parsed.scalars,
    )


def _pod_requests(spec: Mapping[str, Any], non_zero: bool) -> Resources:
    """Upstream ``PodRequests`` (with ``NonMissingContainerRequests`` when ``non_zero``)."""
    total = Resources()
    for container in spec.get("containers") or ():
        total += _container_requests(container, non_zero)
    sidecars = Resources()
    init_max = Resources()
    for init in spec.get("initContainers") or ():
        requests = _container_requests(init, non_zero)
        if init.get("restartPolicy") == "Always":
            # A sidecar runs for the pod's lifetime: it adds to the steady state and to every
            # init container started after it.
            total += requests
            sidecars += requests
            init_max = init_max.max(sidecars)
        else:
            init_max = init_max.max(requests + sidecars)
    result = total.max(init_max)
    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        level = Resources.parse(pod_level)
        result = Resources(
            level.milli_cpu if CPU in pod_level else result.milli_cpu,
            level.memory if MEMORY in pod_level else result.memory,
            result.ephemeral_storage,
            result.pods,
            result.scalars,
        )
    overhead = spec.get("overhead")
    if overhead:
        result += Resources.parse(overhead)
    return result


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    containers = list(spec.get("containers") or ())
    containers += [
        c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"
    ]
    for container in containers:
        for port in container.get("ports") or ():
            host_port = int(port.get("hostPort") or 0)
            if host_port > 0:
                ports.append(
                    HostPort(
                        host_port,
                        str(port.get("protocol") or "TCP"),
                        str(port.get("hostIP") or "0.0.0.0"),  # noqa: S104
                    )
                )
    return tuple(ports)


def _owner(meta: Mapping[str, Any]) -> Owner | None:
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return Owner(
                str(ref.get("kind", "")),
                str(ref.get("name", "")),
                str(ref.get("uid", "")),
                str(ref.get("apiVersion", "")),
            )
    return None


def _terms(raw: Mapping[str, Any] | None, key: str) -> tuple[PodAffinityTerm, ...]:
    return tuple(PodAffinityTerm.parse(t) for t in (raw or {}).get(key) or ())


def _weighted(raw: Mapping[str, Any] | None, key: str) -> tuple[WeightedPodAffinityTerm, ...]:
    return tuple(
        WeightedPodAffinityTerm(
            int(t.get("weight", 0)), PodAffinityTerm.parse(t.get("podAffinityTerm") or {})
        )
        for t in (raw or {}).get(key) or ()
    )


def _unschedulable_message(status: Mapping[str, Any]) -> str | None:
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return str(condition.get("message") or "")
    return None


@dataclass(frozen=True, slots=True)
class Pod:
    """Everything the scheduler, the optimiser and plan validation read from a pod."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    nominated_node_name: str = ""
    phase: str = "Pending"
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    requests: Resources = field(default_factory=Resources)
    non_zero_requests: Resources = field(default_factory=Resources)
    host_ports: tuple[HostPort, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    required_node_affinity: NodeSelector | None = None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    affinity_required: tuple[PodAffinityTerm, ...] = ()
    affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_affinity_required: tuple[PodAffinityTerm, ...] = ()
    anti_affinity_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    owner: Owner | None = None
    images: tuple[str, ...] = ()
    unsupported_volumes: tuple[str, ...] = ()
    created: float = 0.0
    deleting: bool = False
    # The message of its PodScheduled=False/Unschedulable condition, if it has one: a scheduler
    # that failed it again for the same reason writes nothing (as upstream's updatePod).
    unschedulable_message: str | None = None
    # The API object it was built from, as the watch delivered it: scheduler extenders are sent
    # the pod itself (ExtenderArgs.Pod), not opsche's view of it. Not compared, not copied by
    # ``dataclasses.replace`` callers on purpose (a pod changed in memory keeps the object it
    # came from).
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        """``namespace/name``, the identity used in logs, queues and plans."""
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: it no longer uses its node's resources."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_mirror(self) -> bool:
        """A static pod's mirror: the kubelet owns it; nothing may move or evict it."""
        return MIRROR_ANNOTATION in self.annotations

    @property
    def is_daemonset(self) -> bool:
        """Owned by a DaemonSet: bound to its node by design."""
        return self.owner is not None and self.owner.kind == "DaemonSet"

    @property
    def has_pod_affinity(self) -> bool:
        """Any inter-pod (anti-)affinity term."""
        return bool(
            self.affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )

    def matches_node_selector_and_affinity(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """``nodeSelector`` and required node affinity both hold.

        Upstream ``GetRequiredNodeAffinity(pod).Match(node)``: the test NodeAffinity filters on
        and PodTopologySpread applies for ``nodeAffinityPolicy: Honor``.
        """
        if any(labels.get(k) != v for k, v in self.node_selector.items()):
            return False
        affinity = self.required_node_affinity
        return affinity is None or affinity.matches(node_name, labels)

    def untolerated_taint(
        self, taints: tuple[Taint, ...], effects: tuple[str, ...]
    ) -> Taint | None:
        """The first taint with one of ``effects`` that no toleration tolerates, or None.

        Upstream ``v1helper.FindMatchingUntoleratedTaint``.
        """
        for taint in taints:
            if taint.effect in effects and not any(t.tolerates(taint) for t in self.tolerations):
                return taint
        return None

    @classmethod
    def from_api(cls, obj: Mapping[str, Any], *, keep_raw: bool = True) -> Pod:
        """Build from the API's JSON form of a Pod.

        ``keep_raw=False`` drops the API object (about 4.5 KB a pod as Python objects, measured
        on a ReplicaSet pod): a daemon without extenders never sends it anywhere.
        """
        meta: Mapping[str, Any] = obj.get("metadata") or {}
        spec: Mapping[str, Any] = obj.get("spec") or {}
        status: Mapping[str, Any] = obj.get("status") or {}
        affinity: Mapping[str, Any] = spec.get("affinity") or {}
        node_affinity: Mapping[str, Any] = affinity.get("nodeAffinity") or {}
        pod_affinity = affinity.get("podAffinity")
        anti_affinity = affinity.get("podAntiAffinity")
        volumes = spec.get("volumes") or ()
        kinds = {kind for v in volumes for kind in _UNSUPPORTED_VOLUMES if kind in v}
        if spec.get("resourceClaims"):
            kinds.add("resourceClaims")  # dynamic resource allocation needs the DRA plugin
        unsupported = tuple(sorted(kinds))
        images = tuple(
            str(c.get("image"))
            for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())
            if c.get("image")
        )
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            labels=MappingProxyType(dict(meta.get("labels") or {})),
            annotations=MappingProxyType(dict(meta.get("annotations") or {})),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
            node_name=str(spec.get("nodeName") or ""),
            nominated_node_name=str(status.get("nominatedNodeName") or ""),
            unschedulable_message=_unschedulable_message(status),
            phase=str(status.get("phase") or "Pending"),
            priority=int(spec.get("priority") or 0),
            preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
            requests=_pod_requests(spec, non_zero=False),
            non_zero_requests=_pod_requests(spec, non_zero=True),
            host_ports=_host_ports(spec),
            node_selector=MappingProxyType(dict(spec.get("nodeSelector") or {})),
            required_node_affinity=NodeSelector.parse(
                node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
            ),
            preferred_node_affinity=tuple(
                PreferredSchedulingTerm(
                    int(t.get("weight", 0)), NodeSelectorTerm.parse(t.get("preference") or {})
                )
                for t in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            ),
            affinity_required=_terms(
                pod_affinity, "requiredDuringSchedulingIgnoredDuringExecution"
            ),
            affinity_preferred=_weighted(
                pod_affinity, "preferredDuringSchedulingIgnoredDuringExecution"
            ),
            anti_affinity_required=_terms(
                anti_affinity, "requiredDuringSchedulingIgnoredDuringExecution"
            ),
            anti_affinity_preferred=_weighted(
                anti_affinity, "preferredDuringSchedulingIgnoredDuringExecution"
            ),
            tolerations=tuple(Toleration.parse(t) for t in spec.get("tolerations") or ()),
            topology_spread=tuple(
                TopologySpreadConstraint.parse(c)
                for c in spec.get("topologySpreadConstraints") or ()
            ),
            scheduling_gates=tuple(
                str(g.get("name", "")) for g in spec.get("schedulingGates") or ()
            ),
            owner=_owner(meta),
            images=images,
            unsupported_volumes=unsupported,
            created=parse_time(meta.get("creationTimestamp")),
            deleting=meta.get("deletionTimestamp") is not None,
            raw=without_managed_fields(obj) if keep_raw else None,
        )
