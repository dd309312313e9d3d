"""The one exception type the CLI prints as a plain message instead of a traceback."""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """Something the user can fix: bad input, a busy port, a component that would not start."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
