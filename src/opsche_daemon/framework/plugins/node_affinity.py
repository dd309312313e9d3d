"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred affinity scores.

PreFilter mirrors upstream: Skip when the pod has neither a required node affinity nor a
``nodeSelector`` and the profile adds no required affinity, so the Filter is never called for the
common pod. When *every* required term pins nodes by name (``matchFields`` on ``metadata.name``
with operator In) the search is narrowed to the union, over terms, of the names each term allows
(the intersection of its In lists); names that can never match make the pod unresolvable with
"pod affinity terms conflict". One term without such a field means any node may match, so there
is no narrowing. This is how DaemonSet pods, which pin their node this way, avoid a full scan.

Filter: first the profile's ``addedAffinity`` required selector ("node(s) didn't match
scheduler-enforced node affinity"), then the pod's ``nodeSelector`` and required affinity
("node(s) didn't match Pod's node affinity/selector"); both unresolvable, since evicting pods never
changes node labels.

Score: the sum of the weights of the preferred terms (the pod's and the profile's added ones) that
the node matches; PreScore returns Skip when there are none. NormalizeScore scales to 0..100 with
upstream's ``DefaultNormalizeScore``, so the best-matching node gets 100.

Args: ``{"addedAffinity": {...}}`` in the API's NodeAffinity form, validated like upstream's
``ValidateNodeAffinityArgs`` (operators, label keys and values, Gt/Lt integers, matchFields with
exactly one value). A pod's own terms are not re-validated: the API server validated them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opsche_daemon.framework.interface import (
    CycleState,
    NodeScore,
    PluginArgsError,
    PreFilterResult,
    Status,
)
from opsche_daemon.framework.plugins.helpers import (
    default_normalize_score,
    label_value_errors,
    qualified_name_errors,
)
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod, PreferredSchedulingTerm
from opsche_daemon.model.selectors import NodeSelector, NodeSelectorTerm, Requirement

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NodeAffinity",
]

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

OBJECT_NAME_FIELD = "metadata.name"
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _label_requirement_errors(req: Requirement, path: str) -> list[str]:
    if req.operator not in _LABEL_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in _LABEL_OPERATORS)
        return [
            f"{path}.operator: Unsupported value: {req.operator!r}: supported values: {supported}"
        ]
    errors = [
        f"{path}.key: Invalid value: {req.key!r}: {e}" for e in qualified_name_errors(req.key)
    ]
    if req.operator in ("In", "NotIn") and not req.values:
        errors.append(
            f"{path}.values: Required value: for 'in', 'notin' operators, values set can't be empty"
        )
    elif req.operator in ("Exists", "DoesNotExist") and req.values:
        errors.append(
            f"{path}.values: Forbidden: values set must be empty for exists and does not exist"
        )
    elif req.operator in ("Gt", "Lt"):
        if len(req.values) != 1:
            errors.append(
                f"{path}.values: Required value: "
                "for 'Gt', 'Lt' operators, exactly one value is required"
            )
        else:
            try:
                int(req.values[0])
            except ValueError:
                errors.append(
                    f"{path}.values[0]: Invalid value: {req.values[0]!r}: for 'Gt', 'Lt' "
                    "operators, the value must be an integer"
                )
    for i, value in enumerate(req.values):
        errors.extend(
            f"{path}.values[{i}]: Invalid value: {value!r}: {e}" for e in label_value_errors(value)
        )
    return errors


def _field_requirement_errors(req: Requirement, path: str) -> list[str]:
    if req.operator not in _FIELD_OPERATORS:
        supported = ", ".join(f'"{op}"' for op in _FIELD_OPERATORS)
        return [
            f"{path}.operator: Unsupported value: {req.operator!r}: supported values: {supported}"
        ]
    if len(req.values) != 1:
        return [f"{path}.values: Invalid value: {list(req.values)!r}: must have one element"]
    return []


def _term_errors(term: NodeSelectorTerm, path: str) -> list[str]:
    errors: list[str] = []
    for i, req in enumerate(term.expressions):
        errors.extend(_label_requirement_errors(req, f"{path}.matchExpressions[{i}]"))
    for i, req in enumerate(term.fields):
        errors.extend(_field_requirement_errors(req, f"{path}.matchFields[{i}]"))
    return errors


def _is_empty(term: NodeSelectorTerm) -> bool:
    return not term.expressions and not term.fields


def _parse_added_affinity(
    raw: Any, errors: list[str]
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    path = "addedAffinity"
    if raw is None:
        return None, ()
    if not isinstance(raw, Mapping):
        errors.append(f"{path}: must be a mapping, got {raw!r}")
        return None, ()
    errors.extend(
        f'{path}.{key}: unknown field "{key}"' for key in raw if key not in (_REQUIRED, _PREFERRED)
    )
    required: NodeSelector | None = None
    required_raw = raw.get(_REQUIRED)
    if required_raw is not None:
        if isinstance(required_raw, Mapping):
            required = NodeSelector(
                tuple(
                    NodeSelectorTerm.parse(t) for t in required_raw.get("nodeSelectorTerms") or ()
                )
            )
            for i, term in enumerate(required.terms):
                if not _is_empty(term):
                    errors.extend(_term_errors(term, f"{path}.{_REQUIRED}.nodeSelectorTerms[{i}]"))
        else:
            errors.append(f"{path}.{_REQUIRED}: must be a mapping, got {required_raw!r}")
    preferred: list[PreferredSchedulingTerm] = []
    preferred_raw = raw.get(_PREFERRED) or ()
    if isinstance(preferred_raw, str) or not isinstance(preferred_raw, Sequence):
        errors.append(f"{path}.{_PREFERRED}: must be a list, got {preferred_raw!r}")
        preferred_raw = ()
    for i, item in enumerate(preferred_raw):
        item_path = f"{path}.{_PREFERRED}[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{item_path}: must be a mapping, got {item!r}")
            continue
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            errors.append(f"{item_path}.weight: must be an integer, got {weight!r}")
            continue
        term = NodeSelectorTerm.parse(item.get("preference") or {})
        # Upstream ignores zero-weight and empty terms before validating the rest.
        if weight == 0 or _is_empty(term):
            continue
        errors.extend(_term_errors(term, f"{item_path}.preference"))
        preferred.append(PreferredSchedulingTerm(weight, term))
    return required, tuple(preferred)


def _preferred_score(terms: Sequence[PreferredSchedulingTerm], node: NodeInfo) -> int:
    labels = node.node.labels
    return sum(t.weight for t in terms if t.weight and t.term.matches(node.name, labels))


class NodeAffinity:
    """Required node affinity and nodeSelector filter; preferred node affinity scores."""

    NAME = "NodeAffinity"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        raw = dict(args or {})
        errors = [
            f'{key}: unknown field "{key}"'
            for key in raw
            if key not in ("addedAffinity", "apiVersion", "kind")
        ]
        self.added_required, self.added_preferred = _parse_added_affinity(
            raw.get("addedAffinity"), errors
        )
        if errors:
            raise PluginArgsError(f"{self.NAME} args: " + "; ".join(errors))

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip pods without constraints; narrow to nodes pinned by ``metadata.name``."""
        required = pod.required_node_affinity
        if required is None and self.added_required is None and not pod.node_selector:
            return None, Status.skip()
        if required is None or not required.terms:
            return None, Status.success()
        node_names: set[str] | None = None
        for term in required.terms:
            term_names: set[str] | None = None
            for req in term.fields:
                if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                    allowed = set(req.values)
                    term_names = allowed if term_names is None else term_names & allowed
            if term_names is None:
                # This term can match nodes of any name: no narrowing is possible.
                return None, Status.success()
            node_names = term_names if node_names is None else node_names | term_names
        if not node_names:
            return None, Status.unresolvable(self.NAME, ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(node_names)), Status.success()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        """The profile's added affinity, then the pod's nodeSelector and required affinity."""
        labels = node.node.labels
        if self.added_required is not None and not self.added_required.matches(node.name, labels):
            return Status.unresolvable(self.NAME, ERR_REASON_ENFORCED)
        if not pod.matches_node_selector_and_affinity(node.name, labels):
            return Status.unresolvable(self.NAME, ERR_REASON_POD)
        return Status.success()

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        """Skip when neither the pod nor the profile has preferred terms."""
        if not pod.preferred_node_affinity and not self.added_preferred:
            return Status.skip()
        return Status.success()

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """The summed weights of the preferred terms ``node`` matches."""
        total = _preferred_score(self.added_preferred, node)
        total += _preferred_score(pod.preferred_node_affinity, node)
        return total, Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Scale so the best-matching node scores 100."""
        default_normalize_score(scores)
        return Status.success()
