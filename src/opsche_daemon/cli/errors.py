"""The one exception type the CLI prints as a plain message instead of a traceback."""

from __future__ import annotations

__all__ = ["CONFIG_EXIT_CODE", "UserError"]

CONFIG_EXIT_CODE = 2
"""Exit code of an invalid configuration, as argparse's for invalid arguments."""


class UserError(Exception):
    """Something the user can fix: bad input, a busy port, a component that would not start.

    The message may have several lines (every problem of a config file); each is printed as its
    own ``opsche: error:`` line.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
