"""How a setting is described: YAML key, unit, reason and bounds, written once beside its default.

Every leaf field of the settings tree is a ``dataclasses.field`` whose ``metadata`` is
:func:`doc` (a :class:`Doc`). The loader finds YAML keys there, the checker finds bounds
there, and ``opsche config defaults`` prints the same records; so a default, its documentation
and the key that sets it cannot drift apart. :func:`settings_of` walks the tree and yields one
:class:`Setting` per leaf, with its dotted attribute path (``optimiser.period_s``).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Doc", "Setting", "doc", "settings_of", "show", "yaml_key"]

_DOC = "opsche.doc"


@dataclass(frozen=True, slots=True)
class Doc:
    """What a user needs to know about one setting.

    ``yaml`` is the dotted key in the config file (``optimiser.periodSeconds``), or None for a
    setting the file cannot set (it is still documented, and code may change it). ``low`` and
    ``high`` bound a number (or each value of a mapping of numbers); ``above`` is an exclusive
    lower bound (``above=0``: positive).
    """

    yaml: str | None
    unit: str
    reason: str
    low: float | None = None
    above: float | None = None
    high: float | None = None

    @property
    def bounds(self) -> str:
        """The allowed range in words, or ``""`` when any value of the type is allowed."""
        if self.above is not None:
            return f"> {_number(self.above)}"
        if self.low is not None and self.high is not None:
            return f"{_number(self.low)} to {_number(self.high)}"
        if self.low is not None:
            return f">= {_number(self.low)}"
        if self.high is not None:
            return f"<= {_number(self.high)}"
        return ""

    def violation(self, value: float) -> str | None:
        """Why ``value`` is out of bounds (e.g. ``must be positive``), or None if it is within."""
        if self.above is not None and not value > self.above:
            return "must be positive" if self.above == 0 else f"must be above {self.above}"
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            return f"must be between {_number(self.low)} and {_number(self.high)}"
        if self.low is not None and value < self.low:
            return f"must be at least {_number(self.low)}"
        if self.high is not None and value > self.high:
            return f"must be at most {_number(self.high)}"
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


_SHOWN = 60


def show(value: object) -> str:
    """A value as written in YAML, for messages: ``-1``, ``'fast'``, ``true``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    # str() first: a StrEnum member shows as its value, not as <Trigger.PERIODIC: 'periodic'>.
    text = repr(str(value)) if isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def doc(
    *,
    yaml: str | None,
    unit: str = "",
    reason: str,
    low: float | None = None,
    above: float | None = None,
    high: float | None = None,
) -> Mapping[str, Doc]:
    """The ``metadata`` of a leaf field: ``field(default=..., metadata=doc(yaml=..., ...))``."""
    return {_DOC: Doc(yaml, unit, reason, low, above, high)}


@dataclass(frozen=True, slots=True)
class Setting:
    """One leaf of the settings tree."""

    path: str  # dotted attribute path from the root: "optimiser.period_s"
    doc: Doc
    default: Any
    hint: Any  # the resolved type annotation: int, float, Trigger, tuple[str, ...], ...

    @property
    def name(self) -> str:
        """How messages name it: the YAML key, or the attribute path when the file cannot set it."""
        return self.doc.yaml or self.path

    def value_in(self, root: object) -> Any:
        """The value of this setting in the tree ``root``."""
        value = root
        for attr in self.path.split("."):
            value = getattr(value, attr)
        return value


def settings_of(cls: type[Any], prefix: str = "") -> Iterator[Setting]:
    """Every leaf of the settings dataclass ``cls``, depth first, in declaration order."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        path = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hint):
            yield from settings_of(typing.cast("type[Any]", hint), f"{path}.")
            continue
        doc = f.metadata.get(_DOC)
        if not isinstance(doc, Doc):
            raise TypeError(f"{cls.__name__}.{f.name} has no doc() in its metadata")
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}.{f.name} has no default")
        yield Setting(path, doc, default, hint)


def yaml_key(cls: type[Any], attr: str) -> str:
    """The YAML key of ``cls.attr`` (for messages about it), or its attribute name."""
    for f in dataclasses.fields(cls):
        if f.name == attr:
            doc = f.metadata.get(_DOC)
            return (doc.yaml or attr) if isinstance(doc, Doc) else attr
    raise KeyError(f"{cls.__name__} has no setting {attr}")
