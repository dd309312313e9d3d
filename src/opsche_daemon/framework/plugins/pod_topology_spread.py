"""PodTopologySpread: keep matching pods evenly spread over topology domains (upstream semantics).

What is mirrored from kube-scheduler v1.36.3 (``plugins/podtopologyspread``), and why it matters:

* **Which constraints apply.** A pod's own ``topologySpreadConstraints`` win; only a pod with none
  gets the plugin's default constraints (``defaultingType: System`` = hostname maxSkew 3 and zone
  maxSkew 5, both ScheduleAnyway). Defaults need a selector, built like upstream
  ``helper.DefaultSelector``: the AND of every workload selector in the pod's namespace that
  selects the pod. An empty result means "no default spreading" for that pod. ``DoNotSchedule``
  constraints drive Filter, ``ScheduleAnyway`` ones drive Score; a pod with none of a kind makes
  the matching PreFilter/PreScore return Skip, exactly when upstream does.
* **matchLabelKeys.** The pod's values for those keys are ANDed into the selector on every cycle,
  as the scheduler itself does (the API server may also have merged them at creation; merging the
  same ``key=value`` twice changes nothing). A nil selector stays "matches nothing".
* **Counting.** PreFilter counts, per constraint and domain, the pods in the incoming pod's
  namespace that match the selector, skipping terminating pods, over *all* nodes of the snapshot
  that carry every topology key of the pod's constraints and pass the node inclusion policies
  (``nodeAffinityPolicy`` Honor by default: nodeSelector + required node affinity;
  ``nodeTaintsPolicy`` Ignore by default: Honor skips nodes with untolerated NoSchedule/NoExecute
  taints). An empty selector (``{}``) counts nothing, like ``labels.Everything().Empty()``
  upstream, while it still "matches" the incoming pod for the self-match term.
* **Filter.** ``count(domain) + selfMatch - globalMin > maxSkew`` rejects with Unschedulable;
  a node without a constraint's topology label is rejected UnschedulableAndUnresolvable. The
  global minimum is 0 while fewer than ``minDomains`` domains exist.
* **Score.** Each soft constraint adds ``count * log(size + 2) + (maxSkew - 1)`` where ``size`` is
  the number of domains among the feasible nodes (the number of feasible nodes for hostname),
  rounded half away from zero like Go's ``math.Round``. Hostname counts are taken per node at Score
  time, other domains' counts are summed over all nodes at PreScore. Feasible nodes missing a key
  are ignored (score 0) unless the constraints are the system defaults, which let a node without a
  zone label still take part in hostname spreading; NormalizeScore then inverts the scores with
  upstream's integer arithmetic (fewest matching pods = 100).

Deliberately left out:

* PreFilter extensions (AddPod/RemovePod for nominated pods and preemption what-ifs): the
  framework contract here has no such extension point yet; the precomputed state is plain data, so
  adding it later only needs an incremental update of the counts.
* ``DefaultSelector`` looks up the pod's controller owner by name; the snapshot only carries the
  selectors of each namespace's workloads (without their kinds or names), so any workload whose
  selector matches the pod contributes. They coincide whenever a ReplicaSet/StatefulSet/RC that
  selects a pod is also its owner, which the controllers guarantee by adoption.
* Selector syntax errors (upstream PreFilter returns Error): the API server validates pod specs, so
  such selectors never reach the scheduler; an unknown operator here simply matches nothing.
* The alpha ``TaintTolerationComparisonOperators`` gate (off by default in v1.36).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opsche_daemon.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    NodeScore,
    PluginArgsError,
    PreFilterResult,
    Status,
)
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod, TopologySpreadConstraint
from opsche_daemon.model.selectors import LabelSelector, Requirement
from opsche_daemon.model.snapshot import Snapshot

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LabelMatcher",
    "PodTopologySpread",
    "compile_selector",
    "default_selector",
]

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
HONOR = "Honor"

# Taint effects that keep a pod off a node (upstream DoNotScheduleTaintsFilterFunc).
_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
# Initial "no domain yet" minimum of upstream's critical paths (math.MaxInt32).
_MAX_INT32 = 2**31 - 1

SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY, None),
    TopologySpreadConstraint(5, LABEL_ZONE, SCHEDULE_ANYWAY, None),
)

_PREFILTER_KEY = "PodTopologySpread/prefilter"
_PRESCORE_KEY = "PodTopologySpread/prescore"

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_ARG_KEYS = frozenset({"defaultConstraints", "defaultingType"})


LabelMatcher = Callable[[Mapping[str, str]], bool]
_MISSING = object()


def _never(_: Mapping[str, str]) -> bool:
    return False


def _always(_: Mapping[str, str]) -> bool:
    return True


def _requirement_matcher(req: Requirement) -> LabelMatcher:
    key = req.key
    if req.operator == "In":
        values = frozenset(req.values)
        return lambda labels: labels.get(key, _MISSING) in values
    if req.operator == "NotIn":
        excluded = frozenset(req.values)
        return lambda labels: labels.get(key, _MISSING) not in excluded
    if req.operator == "Exists":
        return lambda labels: key in labels
    if req.operator == "DoesNotExist":
        return lambda labels: key not in labels
    return req.matches


def compile_selector(selector: LabelSelector | None) -> LabelMatcher:
    """A predicate equivalent to ``selector.matches`` (None matches nothing), built once.

    Selector matching dominates counting over thousands of pods; a closure per requirement
    avoids re-dispatching on the operator and the generator overhead for every pod.
    """
    if selector is None:
        return _never
    pairs = selector.match_labels
    checks = tuple(_requirement_matcher(r) for r in selector.expressions)
    if not pairs and not checks:
        return _always
    if len(pairs) == 1 and not checks:
        key, value = pairs[0]
        return lambda labels: labels.get(key, _MISSING) == value
    if not pairs and len(checks) == 1:
        return checks[0]

    def matches(labels: Mapping[str, str]) -> bool:
        for key, value in pairs:
            if labels.get(key, _MISSING) != value:
                return False
        return all(check(labels) for check in checks)

    return matches


@dataclass(frozen=True, slots=True)
class _Constraint:
    """A constraint ready for counting: selector final (matchLabelKeys or default selector)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # None: matches nothing (a nil labelSelector)
    min_domains: int
    honor_node_affinity: bool
    honor_node_taints: bool
    matches: LabelMatcher
    # Upstream counts nothing for a nil or empty selector (``selector.Empty()`` short-cut).
    counts_nothing: bool


@dataclass(frozen=True, slots=True)
class _FilterItem:
    """Per DoNotSchedule constraint: what Filter needs, already reduced to plain numbers."""

    topology_key: str
    counts: Mapping[str, int]
    min_match: int
    self_match: int
    max_skew: int


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    items: tuple[_FilterItem, ...]


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    constraints: tuple[_Constraint, ...]
    ignored: frozenset[str]
    # Per constraint: domain value -> matching pods (empty for hostname constraints).
    counts: tuple[Mapping[str, int], ...]
    weights: tuple[float, ...]


def _go_round(value: float) -> int:
    """Go's ``math.Round`` for non-negative values: halves round away from zero."""
    whole = math.floor(value)
    return int(whole) + (1 if value - whole >= 0.5 else 0)


def _count_matching(pods: Sequence[Pod], c: _Constraint, namespace: str) -> int:
    """Upstream ``countPodsMatchSelector``: same namespace, not terminating, selector matches."""
    if c.counts_nothing:
        return 0
    matches = c.matches
    count = 0
    for pod in pods:
        if pod.namespace == namespace and not pod.deleting and matches(pod.labels):
            count += 1
    return count


def _merge_match_label_keys(
    selector: LabelSelector | None, keys: tuple[str, ...], labels: Mapping[str, str]
) -> LabelSelector | None:
    """AND ``key=<pod's value>`` for each matchLabelKey the pod carries into the selector."""
    if selector is None or not keys:
        return selector
    extra = tuple((key, labels[key]) for key in keys if key in labels)
    if not extra:
        return selector
    return LabelSelector(extra + selector.match_labels, selector.expressions)


def default_selector(pod: Pod, snapshot: Snapshot) -> LabelSelector:
    """The selector default constraints spread by: every workload selector that selects the pod.

    Mirrors upstream ``helper.DefaultSelector`` (Services, ReplicationControllers, ReplicaSets and
    StatefulSets in the pod's namespace, their requirements ANDed). Empty when none selects it.
    """
    pairs: dict[tuple[str, str], None] = {}
    expressions: list[Requirement] = []
    for selector in snapshot.workload_selectors.get(pod.namespace, ()):
        if not selector.matches(pod.labels):
            continue
        for pair in selector.match_labels:
            pairs[pair] = None
        expressions.extend(selector.expressions)
    return LabelSelector(tuple(pairs), tuple(expressions))


def _args_error(path: str, message: str) -> PluginArgsError:
    return PluginArgsError(f"PodTopologySpreadArgs.{path}: {message}")


def _validate_label_name(path: str, key: str) -> None:
    """``ValidateLabelName``: an optional DNS-subdomain prefix and a 63-character name."""
    prefix, _, name = key.rpartition("/")
    bad = len(name) > 63 or not _NAME_PART.match(name)
    if "/" in key:
        bad = bad or not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)
    if bad:
        raise _args_error(path, f'Invalid value: "{key}": not a valid label key')


def _parse_default_constraints(raw: Any) -> tuple[TopologySpreadConstraint, ...]:
    """Validate ``defaultConstraints`` like upstream ``ValidatePodTopologySpreadArgs``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _args_error("defaultConstraints", "must be a list of constraints")
    parsed: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        path = f"defaultConstraints[{i}]"
        if not isinstance(item, Mapping):
            raise _args_error(path, "must be an object")
        max_skew = item.get("maxSkew", 0)
        if isinstance(max_skew, bool) or not isinstance(max_skew, int) or max_skew <= 0:
            raise _args_error(f"{path}.maxSkew", f"Invalid value: {max_skew!r}: not in (0, inf)")
        key = item.get("topologyKey") or ""
        if not isinstance(key, str) or not key:
            raise _args_error(f"{path}.topologyKey", "Required value: can not be empty")
        _validate_label_name(f"{path}.topologyKey", key)
        action = item.get("whenUnsatisfiable") or ""
        if not action:
            raise _args_error(f"{path}.whenUnsatisfiable", "Required value: can not be empty")
        if action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise _args_error(
                f"{path}.whenUnsatisfiable",
                f'Unsupported value: "{action}": supported values: '
                f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"',
            )
        if item.get("labelSelector") is not None:
            raise _args_error(
                f"{path}.labelSelector",
                "Forbidden: constraint must not define a selector, as they deduced for each pod",
            )
        if (key, action) in seen:
            raise _args_error(path, f'Duplicate value: "{{{key}, {action}}}"')
        seen.add((key, action))
        for policy_field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = item.get(policy_field)
            if policy is not None and policy not in (HONOR, "Ignore"):
                raise _args_error(f"{path}.{policy_field}", f'Unsupported value: "{policy}"')
        parsed.append(TopologySpreadConstraint.parse(item))
    return tuple(parsed)


class PodTopologySpread:
    """Spreads pods over topology domains; Filter for DoNotSchedule, Score for ScheduleAnyway."""

    NAME = "PodTopologySpread"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = dict(args or {})
        unknown = sorted(set(args) - _ARG_KEYS)
        if unknown:
            raise PluginArgsError(f"PodTopologySpreadArgs: unknown field(s) {', '.join(unknown)}")
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
        if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise _args_error(
                "defaultingType",
                f'Unsupported value: "{defaulting}": supported values: '
                f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"',
            )
        constraints = _parse_default_constraints(args.get("defaultConstraints"))
        if defaulting == SYSTEM_DEFAULTING and constraints:
            raise _args_error(
                "defaultingType",
                f'Invalid value: "{defaulting}": when .defaultConstraints are not empty',
            )
        self._system_defaulted = defaulting == SYSTEM_DEFAULTING
        self._default_constraints = (
            SYSTEM_DEFAULT_CONSTRAINTS if self._system_defaulted else constraints
        )

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    # -- constraints ------------------------------------------------------------------------

    def _constraints(self, pod: Pod, snapshot: Snapshot, action: str) -> tuple[_Constraint, ...]:
        """The pod's constraints of one kind (upstream ``getConstraints``/``initPreScoreState``)."""
        if pod.topology_spread:
            return tuple(
                _compile(c, _merge_match_label_keys(c.selector, c.match_label_keys, pod.labels))
                for c in pod.topology_spread
                if c.when_unsatisfiable == action
            )
        defaults = [c for c in self._default_constraints if c.when_unsatisfiable == action]
        if not defaults:
            return ()
        selector = default_selector(pod, snapshot)
        if selector.empty:
            return ()
        return tuple(_compile(c, selector) for c in defaults)

    # -- PreFilter / Filter -----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count matching pods per domain for each DoNotSchedule constraint (Skip if none)."""
        snapshot = state.snapshot
        constraints = self._constraints(pod, snapshot, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status.skip()
        keys = tuple(c.topology_key for c in constraints)
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for info in snapshot.nodes.values():
            node = info.node
            labels = node.labels
            if any(key not in labels for key in keys):
                continue
            inclusion = _Inclusion(pod, node)
            for i, c in enumerate(constraints):
                if not inclusion.includes(c):
                    continue
                value = labels[c.topology_key]
                domain = counts[i]
                domain[value] = domain.get(value, 0) + _count_matching(info.pods, c, pod.namespace)
        items = []
        for c, domain in zip(constraints, counts, strict=True):
            if len(domain) < c.min_domains:
                # Fewer eligible domains than minDomains: the global minimum is taken as 0.
                min_match = 0
            else:
                min_match = min(domain.values()) if domain else _MAX_INT32
            items.append(
                _FilterItem(
                    c.topology_key,
                    domain,
                    min_match,
                    1 if c.matches(pod.labels) else 0,
                    c.max_skew,
                )
            )
        state.write(_PREFILTER_KEY, _PreFilterState(tuple(items)))
        return None, Status.success()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """Reject the node when placing the pod there would exceed a constraint's maxSkew."""
        pre = state.data.get(_PREFILTER_KEY)
        if not isinstance(pre, _PreFilterState):
            return Status.error(self.NAME, f'reading "{_PREFILTER_KEY}" from cycleState: not found')
        labels = node.node.labels
        for item in pre.items:
            value = labels.get(item.topology_key)
            if value is None:
                return Status.unresolvable(self.NAME, ERR_REASON_NODE_LABEL_NOT_MATCH)
            skew = item.counts.get(value, 0) + item.self_match - item.min_match
            if skew > item.max_skew:
                return Status.unschedulable(self.NAME, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return Status.success()

    # -- PreScore / Score / NormalizeScore --------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Domain sizes over the feasible nodes, matching-pod counts over all nodes."""
        snapshot = state.snapshot
        if not snapshot.nodes:
            return Status.skip()
        # Only user-given or List-defaulted constraints require every key on a node, so nodes
        # without a zone label still get hostname spreading from the system defaults.
        require_all = bool(pod.topology_spread) or not self._system_defaulted
        constraints = self._constraints(pod, snapshot, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        keys = tuple(c.topology_key for c in constraints)
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for info in nodes:
            labels = info.node.labels
            if require_all and any(key not in labels for key in keys):
                ignored.add(info.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # counted per node at Score
                counts[i].setdefault(labels.get(c.topology_key, ""), 0)
        weights = []
        for c, domain in zip(constraints, counts, strict=True):
            size = len(domain)
            if c.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(ignored)
            weights.append(math.log(size + 2))
        if any(counts):
            _add_domain_counts(snapshot, pod, constraints, counts, require_all)
        state.write(
            _PRESCORE_KEY,
            _PreScoreState(constraints, frozenset(ignored), tuple(counts), tuple(weights)),
        )
        return Status.success()

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """Weighted matching-pod counts of the node's domains (lower is better until normalised)."""
        pre = state.data.get(_PRESCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            return 0, Status.error(
                self.NAME, f'reading "{_PRESCORE_KEY}" from cycleState: not found'
            )
        if node.name in pre.ignored:
            return 0, Status.success()
        labels = node.node.labels
        total = 0.0
        for c, domain, weight in zip(pre.constraints, pre.counts, pre.weights, strict=True):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = _count_matching(node.pods, c, pod.namespace)
            else:
                count = domain.get(value, 0)
            total += float(count) * weight + float(c.max_skew - 1)
        return _go_round(total), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Invert to 0..100 (fewest matching pods best); ignored nodes get 0."""
        pre = state.data.get(_PRESCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            return Status.error(self.NAME, f'reading "{_PRESCORE_KEY}" from cycleState: not found')
        counted = [entry.score for entry in scores if entry.name not in pre.ignored]
        min_score = min(counted, default=0)
        max_score = max(0, *counted)
        for entry in scores:
            if entry.name in pre.ignored:
                entry.score = 0
            elif max_score == 0:
                entry.score = MAX_NODE_SCORE
            else:
                # Raw scores are non-negative, so floor division is Go's truncating division.
                entry.score = MAX_NODE_SCORE * (max_score + min_score - entry.score) // max_score
        return Status.success()


def _compile(c: TopologySpreadConstraint, selector: LabelSelector | None) -> _Constraint:
    return _Constraint(
        c.max_skew,
        c.topology_key,
        selector,
        c.min_domains,
        c.node_affinity_policy == HONOR,
        c.node_taints_policy == HONOR,
        compile_selector(selector),
        selector is None or selector.empty,
    )


def _add_domain_counts(
    snapshot: Snapshot,
    pod: Pod,
    constraints: tuple[_Constraint, ...],
    counts: list[dict[str, int]],
    require_all: bool,
) -> None:
    """Add the matching pods of every node to the domains the feasible nodes defined."""
    keys = tuple(c.topology_key for c in constraints)
    for info in snapshot.nodes.values():
        node = info.node
        labels = node.labels
        if require_all and any(key not in labels for key in keys):
            continue
        inclusion = _Inclusion(pod, node)
        for i, c in enumerate(constraints):
            domain = counts[i]
            # A node without the key falls in the "" domain, as upstream's map lookup does; it
            # only exists when a feasible node lacks the key too (system defaults).
            value = labels.get(c.topology_key, "")
            if value not in domain or not inclusion.includes(c):
                continue
            domain[value] += _count_matching(info.pods, c, pod.namespace)


class _Inclusion:
    """Lazily evaluated node inclusion policies for one node (shared by all constraints)."""

    __slots__ = ("_affinity", "_node", "_pod", "_taints")

    def __init__(self, pod: Pod, node: Node) -> None:
        self._pod = pod
        self._node = node
        self._affinity: bool | None = None
        self._taints: bool | None = None

    def includes(self, c: _Constraint) -> bool:
        """``matchNodeInclusionPolicies``: the node takes part in this constraint's domains."""
        if c.honor_node_affinity:
            if self._affinity is None:
                self._affinity = self._pod.matches_node_selector_and_affinity(
                    self._node.name, self._node.labels
                )
            if not self._affinity:
                return False
        if c.honor_node_taints:
            if self._taints is None:
                self._taints = (
                    self._pod.untolerated_taint(self._node.taints, _DO_NOT_SCHEDULE_EFFECTS) is None
                )
            if not self._taints:
                return False
        return True
