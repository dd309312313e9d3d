"""Label selectors, node selector terms and taints/tolerations, with upstream matching semantics.

These are shared by the scheduler's plugins, the optimiser's feasibility check and plan
validation: one definition of "matches" (see ``k8s.io/apimachinery/pkg/labels`` and
``k8s.io/component-helpers/scheduling/corev1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LabelSelector",
    "NodeSelector",
    "NodeSelectorTerm",
    "Requirement",
    "Taint",
    "Toleration",
]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One expression: ``key operator values`` (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Requirement:
        """From an API ``matchExpressions`` entry."""
        return cls(
            str(raw.get("key", "")), str(raw.get("operator", "")), tuple(raw.get("values") or ())
        )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies this requirement (unknown operators never match)."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt"):
            if not present or len(self.values) != 1:
                return False
            try:
                have, bound = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > bound if self.operator == "Gt" else have < bound
        return False


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector. ``None`` where the API allows it means "matches nothing"."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector | None:
        """From the API form; ``None`` stays ``None``."""
        if raw is None:
            return None
        labels = tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items()))
        exprs = tuple(Requirement.parse(e) for e in raw.get("matchExpressions") or ())
        return cls(labels, exprs)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """An empty selector matches everything, as upstream ``LabelSelectorAsSelector``."""
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            e.matches(labels) for e in self.expressions
        )

    @property
    def empty(self) -> bool:
        """True for ``{}`` (which matches every object)."""
        return not self.match_labels and not self.expressions


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A term matches when all its label expressions and all its field expressions match."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> NodeSelectorTerm:
        """From the API form."""
        return cls(
            tuple(Requirement.parse(e) for e in raw.get("matchExpressions") or ()),
            tuple(Requirement.parse(e) for e in raw.get("matchFields") or ()),
        )

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Upstream: an empty term matches nothing; ``metadata.name`` is the only field."""
        if not self.expressions and not self.fields:
            return False
        if not all(e.matches(labels) for e in self.expressions):
            return False
        for f in self.fields:
            if f.key != "metadata.name" or not f.matches({"metadata.name": node_name}):
                return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed together (requiredDuringSchedulingIgnoredDuringExecution)."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> NodeSelector | None:
        """From the API form; ``None`` when absent."""
        if raw is None:
            return None
        return cls(tuple(NodeSelectorTerm.parse(t) for t in raw.get("nodeSelectorTerms") or ()))

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """True when any term matches."""
        return any(t.matches(node_name, labels) for t in self.terms)


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint."""

    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Taint:
        """From the API form."""
        return cls(str(raw.get("key", "")), str(raw.get("value") or ""), str(raw.get("effect", "")))

    def __str__(self) -> str:
        # kube-scheduler prints taints as {key: value} in FailedScheduling messages.
        return f"{{{self.key}: {self.value}}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration (``v1.Toleration.ToleratesTaint`` semantics)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Toleration:
        """From the API form (operator defaults to Equal)."""
        return cls(
            str(raw.get("key") or ""),
            str(raw.get("operator") or "Equal"),
            str(raw.get("value") or ""),
            str(raw.get("effect") or ""),
        )

    def tolerates(self, taint: Taint) -> bool:
        """An empty effect tolerates every effect; an empty key with Exists tolerates all keys."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False
