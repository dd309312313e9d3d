"""``ConfigError``: every problem of a configuration at once, each naming its field and value.

A user fixing a config file should see all of its mistakes in one run, not one per restart of the
daemon; so validation collects problems and raises once, and ``str()`` lists them one per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """The configuration is unreadable or invalid.

    ``problems`` are ``"field: what is wrong, got VALUE"`` lines, without the file name;
    ``source`` is the file they come from (None for a mapping parsed in memory). ``str()`` gives
    one line per problem, each prefixed by the file name.
    """

    def __init__(self, problems: str | Sequence[str], source: Path | None = None) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        super().__init__(str(self))

    def lines(self) -> list[str]:
        """One line per problem, prefixed by the file name when there is one."""
        prefix = f"{self.source}: " if self.source is not None else ""
        return [prefix + problem for problem in self.problems]

    def __str__(self) -> str:
        return "\n".join(self.lines())
