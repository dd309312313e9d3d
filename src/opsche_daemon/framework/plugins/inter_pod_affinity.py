"""InterPodAffinity: required and preferred pod (anti-)affinity, with upstream semantics.

Mirrors kube-scheduler v1.36.3 (``plugins/interpodaffinity``). Both Filter and Score work on
*topology pairs* (``topologyKey=value``) counted once per cycle, so the per-node work is a few
dictionary lookups:

* **PreFilter** counts, over every node of the snapshot, (1) the required anti-affinity terms of
  existing pods that match the incoming pod, keyed by the existing pod's node's pair; (2) the
  existing pods that match *all* of the incoming pod's required affinity terms, once per term's
  pair; (3) the existing pods matching each required anti-affinity term of the incoming pod. With
  nothing to check it returns Skip.
* **Filter** rejects, in upstream's order: affinity (UnschedulableAndUnresolvable, also when the
  node lacks a topology key), the incoming pod's anti-affinity (Unschedulable), existing pods'
  anti-affinity (Unschedulable). The first pod of a group that has affinity to itself passes when
  no pod anywhere matches the terms and the pod matches its own terms (it would otherwise wait
  forever).
* **Score** sums weights per pair: the incoming pod's preferred terms (anti-affinity negative)
  matched by existing pods; existing pods' required affinity terms matched by the incoming pod,
  weighted ``hardPodAffinityWeight``; existing pods' preferred terms matched by the incoming pod.
  NormalizeScore maps min..max onto 0..100 with upstream's float arithmetic and truncation.
  ``ignorePreferredTermsOfExistingPods`` skips scoring pods without preferred terms of their own.

Namespaces, as upstream: a term with neither ``namespaces`` nor ``namespaceSelector`` means the
term owner's namespace; an empty selector ``{}`` means all namespaces. The incoming pod's selector
is resolved once into the namespaces of ``snapshot.namespace_labels`` it selects; existing pods'
selectors are evaluated against the incoming pod's namespace labels (empty when unknown).

``matchLabelKeys``/``mismatchLabelKeys``: kube-scheduler itself never reads them, because the API
server merges ``key in (value)``/``key notin (value)`` into the label selector when it creates the
pod. To place pods the same way whether or not that merge happened (pods built by tests, or by
tools that skip admission), a key is merged here only when the selector has no requirement on it
with that operator yet, so a pod merged by the API server (even if its labels changed since) is
read exactly as the scheduler reads it.

Deliberately left out: PreFilter extensions (AddPod/RemovePod for nominated pods and preemption
what-ifs) which the framework contract does not have yet, and upstream's Error status for selectors
with invalid syntax (the API server rejects such pods; an unknown operator simply matches nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from opsche_daemon.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    NodeScore,
    PluginArgsError,
    PreFilterResult,
    Status,
)
from opsche_daemon.framework.plugins.pod_topology_spread import LabelMatcher, compile_selector
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from opsche_daemon.model.selectors import LabelSelector, Requirement
from opsche_daemon.model.snapshot import Snapshot

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "InterPodAffinity",
]

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_PREFILTER_KEY = "InterPodAffinity/prefilter"
_PRESCORE_KEY = "InterPodAffinity/prescore"
_ARG_KEYS = frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
_EMPTY_LABELS: Mapping[str, str] = MappingProxyType({})
_CACHE_LIMIT = 65536

_Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Term:
    """A pod (anti-)affinity term with its namespaces and effective selector worked out."""

    # The effective label selector (None, a nil labelSelector, matches nothing), compiled.
    selects: LabelMatcher
    topology_key: str
    namespaces: frozenset[str]
    # Still to evaluate against the other pod's namespace labels (existing pods' terms only).
    namespace_selector: LabelSelector | None
    all_namespaces: bool = False

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str] = _EMPTY_LABELS) -> bool:
        """Upstream ``AffinityTerm.Matches``: namespace first, then the label selector."""
        if not (
            self.all_namespaces
            or pod.namespace in self.namespaces
            or (
                self.namespace_selector is not None
                and self.namespace_selector.matches(namespace_labels)
            )
        ):
            return False
        return self.selects(pod.labels)


@dataclass(frozen=True, slots=True)
class _PodTerms:
    """An existing pod's terms, compiled once per pod object (see ``_TermCache``)."""

    required_affinity: tuple[_Term, ...]
    required_anti_affinity: tuple[_Term, ...]
    preferred_affinity: tuple[tuple[_Term, int], ...]
    preferred_anti_affinity: tuple[tuple[_Term, int], ...]


@dataclass(frozen=True, slots=True)
class _Incoming:
    """The incoming pod with its preferred terms resolved and its namespace's labels."""

    pod: Pod
    preferred: tuple[tuple[_Term, int], ...]
    preferred_anti: tuple[tuple[_Term, int], ...]
    namespace_labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    affinity_terms: tuple[_Term, ...]
    anti_affinity_keys: tuple[str, ...]
    existing_anti_affinity: Mapping[_Pair, int]
    affinity_counts: Mapping[_Pair, int]
    anti_affinity_counts: Mapping[_Pair, int]
    # The incoming pod matches all its own required affinity terms.
    matches_own_affinity: bool


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    # topology key -> value -> summed weight
    topology_score: Mapping[str, Mapping[str, int]]


def _has_requirement(selector: LabelSelector, key: str, operator: str) -> bool:
    return any(r.key == key and r.operator == operator for r in selector.expressions)


def _effective_selector(
    term: PodAffinityTerm, owner_labels: Mapping[str, str]
) -> LabelSelector | None:
    """The term's selector with matchLabelKeys/mismatchLabelKeys applied as the API server does."""
    selector = term.selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    extra: list[Requirement] = []
    for keys, operator in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            if key in owner_labels and not _has_requirement(selector, key, operator):
                extra.append(Requirement(key, operator, (owner_labels[key],)))
    if not extra:
        return selector
    return LabelSelector(selector.match_labels, selector.expressions + tuple(extra))


def _own_namespaces(term: PodAffinityTerm, owner: Pod) -> frozenset[str]:
    if not term.namespaces and term.namespace_selector is None:
        return frozenset((owner.namespace,))
    return frozenset(term.namespaces)


def _existing_term(term: PodAffinityTerm, owner: Pod) -> _Term:
    return _Term(
        compile_selector(_effective_selector(term, owner.labels)),
        term.topology_key,
        _own_namespaces(term, owner),
        term.namespace_selector,
    )


def _incoming_term(term: PodAffinityTerm, pod: Pod, snapshot: Snapshot) -> _Term:
    """Resolve the namespace selector into namespace names (upstream merges them at PreFilter)."""
    namespaces = _own_namespaces(term, pod)
    ns_selector = term.namespace_selector
    all_namespaces = ns_selector is not None and ns_selector.empty
    if ns_selector is not None and not all_namespaces:
        namespaces |= {
            name
            for name, labels in snapshot.namespace_labels.items()
            if ns_selector.matches(labels)
        }
    return _Term(
        compile_selector(_effective_selector(term, pod.labels)),
        term.topology_key,
        namespaces,
        None,
        all_namespaces,
    )


def _weighted_incoming(
    terms: Iterable[WeightedPodAffinityTerm], pod: Pod, snapshot: Snapshot
) -> tuple[tuple[_Term, int], ...]:
    return tuple((_incoming_term(t.term, pod, snapshot), t.weight) for t in terms)


def _weighted_existing(
    terms: Iterable[WeightedPodAffinityTerm], pod: Pod
) -> tuple[tuple[_Term, int], ...]:
    return tuple((_existing_term(t.term, pod), t.weight) for t in terms)


class _TermCache:
    """Compiled terms of existing pods, keyed by object identity.

    Pods are immutable and snapshots share them between cycles, so an existing pod's terms are
    compiled once. The cache holds a reference to each pod, so an ``id`` cannot be reused while
    its entry exists; it is simply dropped when it grows past a bound.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Pod, _PodTerms]] = {}

    def get(self, pod: Pod) -> _PodTerms:
        entry = self._entries.get(id(pod))
        if entry is not None and entry[0] is pod:
            return entry[1]
        terms = _PodTerms(
            tuple(_existing_term(t, pod) for t in pod.affinity_required),
            tuple(_existing_term(t, pod) for t in pod.anti_affinity_required),
            _weighted_existing(pod.affinity_preferred, pod),
            _weighted_existing(pod.anti_affinity_preferred, pod),
        )
        if len(self._entries) >= _CACHE_LIMIT:
            self._entries.clear()
        self._entries[id(pod)] = (pod, terms)
        return terms


def _add(counts: dict[_Pair, int], labels: Mapping[str, str], key: str, value: int = 1) -> None:
    """Count ``value`` for the node's pair of ``key`` (nothing when the node lacks the key)."""
    node_value = labels.get(key)
    if node_value is not None:
        pair = (key, node_value)
        counts[pair] = counts.get(pair, 0) + value


def _parse_args(args: Mapping[str, Any] | None) -> tuple[int, bool]:
    raw = dict(args or {})
    unknown = sorted(set(raw) - _ARG_KEYS)
    if unknown:
        raise PluginArgsError(f"InterPodAffinityArgs: unknown field(s) {', '.join(unknown)}")
    weight = raw.get("hardPodAffinityWeight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int):
        raise PluginArgsError(
            f"InterPodAffinityArgs.hardPodAffinityWeight: Invalid value: {weight!r}: "
            "must be an integer"
        )
    if not 0 <= weight <= 100:
        raise PluginArgsError(
            f"InterPodAffinityArgs.hardPodAffinityWeight: Invalid value: {weight}: "
            "not in valid range [0, 100]"
        )
    ignore = raw.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise PluginArgsError(
            f"InterPodAffinityArgs.ignorePreferredTermsOfExistingPods: Invalid value: {ignore!r}: "
            "must be a boolean"
        )
    return weight, ignore


class InterPodAffinity:
    """Pod affinity and anti-affinity between the incoming pod and the pods already placed."""

    NAME = "InterPodAffinity"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self._hard_weight, self._ignore_existing_preferred = _parse_args(args)
        self._cache = _TermCache()

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    # -- PreFilter / Filter -----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count the topology pairs that Filter checks; Skip when the pod is unconstrained."""
        snapshot = state.snapshot
        affinity = tuple(_incoming_term(t, pod, snapshot) for t in pod.affinity_required)
        anti_affinity = tuple(_incoming_term(t, pod, snapshot) for t in pod.anti_affinity_required)
        ns_labels = snapshot.namespace_labels.get(pod.namespace, _EMPTY_LABELS)

        existing: dict[_Pair, int] = {}
        affinity_counts: dict[_Pair, int] = {}
        anti_counts: dict[_Pair, int] = {}
        for info in snapshot.nodes.values():
            labels = info.node.labels
            for other in info.pods:
                if other.anti_affinity_required:
                    for term in self._cache.get(other).required_anti_affinity:
                        if term.matches(pod, ns_labels):
                            _add(existing, labels, term.topology_key)
                if affinity and all(term.matches(other) for term in affinity):
                    for term in affinity:
                        _add(affinity_counts, labels, term.topology_key)
                for term in anti_affinity:
                    if term.matches(other):
                        _add(anti_counts, labels, term.topology_key)

        if not existing and not affinity and not anti_affinity:
            return None, Status.skip()
        state.write(
            _PREFILTER_KEY,
            _PreFilterState(
                affinity,
                tuple(t.topology_key for t in anti_affinity),
                existing,
                affinity_counts,
                anti_counts,
                bool(affinity) and all(term.matches(pod) for term in affinity),
            ),
        )
        return None, Status.success()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Affinity, then the pod's anti-affinity, then existing pods' anti-affinity."""
        pre = state.data.get(_PREFILTER_KEY)
        if not isinstance(pre, _PreFilterState):
            return Status.error(self.NAME, f'reading "{_PREFILTER_KEY}" from cycleState: not found')
        labels = node.node.labels
        if pre.affinity_terms and not _satisfies_affinity(pre, labels):
            return Status.unresolvable(self.NAME, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if pre.anti_affinity_counts:
            for key in pre.anti_affinity_keys:
                value = labels.get(key)
                if value is not None and pre.anti_affinity_counts.get((key, value), 0) > 0:
                    return Status.unschedulable(self.NAME, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if pre.existing_anti_affinity:
            for pair in labels.items():
                if pre.existing_anti_affinity.get(pair, 0) > 0:
                    return Status.unschedulable(
                        self.NAME, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
                    )
        return Status.success()

    # -- PreScore / Score / NormalizeScore --------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Sum preferred (and hard-symmetric) weights per topology pair over all nodes."""
        has_preferred = bool(pod.affinity_preferred or pod.anti_affinity_preferred)
        if self._ignore_existing_preferred and not has_preferred:
            return Status.skip()
        snapshot = state.snapshot
        incoming = _Incoming(
            pod,
            _weighted_incoming(pod.affinity_preferred, pod, snapshot),
            _weighted_incoming(pod.anti_affinity_preferred, pod, snapshot),
            snapshot.namespace_labels.get(pod.namespace, _EMPTY_LABELS),
        )

        scores: dict[_Pair, int] = {}
        for info in snapshot.nodes.values():
            labels = info.node.labels
            if not labels:
                continue
            for other in info.pods:
                # Without preferred terms of its own, only pods with affinity terms can matter.
                if not has_preferred and not other.has_pod_affinity:
                    continue
                self._score_pair(scores, labels, incoming, other)

        if not scores:
            return Status.skip()
        topology_score: dict[str, dict[str, int]] = {}
        for (key, value), weight in scores.items():
            topology_score.setdefault(key, {})[value] = weight
        state.write(_PRESCORE_KEY, _PreScoreState(topology_score))
        return Status.success()

    def _score_pair(
        self,
        scores: dict[_Pair, int],
        labels: Mapping[str, str],
        incoming: _Incoming,
        other: Pod,
    ) -> None:
        """Upstream ``processExistingPod``: both pods' terms, keyed by ``other``'s node pairs."""
        for term, weight in incoming.preferred:
            if term.matches(other):
                _add(scores, labels, term.topology_key, weight)
        for term, weight in incoming.preferred_anti:
            if term.matches(other):
                _add(scores, labels, term.topology_key, -weight)
        if not other.has_pod_affinity:
            return
        pod, ns_labels = incoming.pod, incoming.namespace_labels
        terms = self._cache.get(other)
        if self._hard_weight > 0:
            for term in terms.required_affinity:
                if term.matches(pod, ns_labels):
                    _add(scores, labels, term.topology_key, self._hard_weight)
        for term, weight in terms.preferred_affinity:
            if term.matches(pod, ns_labels):
                _add(scores, labels, term.topology_key, weight)
        for term, weight in terms.preferred_anti_affinity:
            if term.matches(pod, ns_labels):
                _add(scores, labels, term.topology_key, -weight)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """The summed weights of the node's topology pairs (negative for anti-affinity)."""
        pre = state.data.get(_PRESCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            return 0, Status.error(
                self.NAME, f'reading "{_PRESCORE_KEY}" from cycleState: not found'
            )
        labels = node.node.labels
        total = 0
        for key, values in pre.topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total, Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Min-max onto 0..100, truncated like Go's ``int64(float64)``; all-equal gives 0."""
        pre = state.data.get(_PRESCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            return Status.error(self.NAME, f'reading "{_PRESCORE_KEY}" from cycleState: not found')
        if not pre.topology_score or not scores:
            return Status.success()
        low = min(entry.score for entry in scores)
        spread = max(entry.score for entry in scores) - low
        for entry in scores:
            fraction = 0.0
            if spread > 0:
                fraction = float(MAX_NODE_SCORE) * (float(entry.score - low) / float(spread))
            entry.score = int(fraction)
        return Status.success()


def _satisfies_affinity(pre: _PreFilterState, labels: Mapping[str, str]) -> bool:
    """Upstream ``satisfyPodAffinity``, including the first-pod-of-a-group exception."""
    pods_exist = True
    for term in pre.affinity_terms:
        value = labels.get(term.topology_key)
        if value is None:
            return False  # every topology key must exist on the node
        if pre.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # No pod anywhere matches the terms yet: let the group's first pod in if it matches itself.
    return not pre.affinity_counts and pre.matches_own_affinity
