"""Kernel errors: the store's error tree plus configuration errors.

See `cortex.cases.errors` for the tree, codes and exit statuses.
"""

from __future__ import annotations

from cortex.cases.errors import (
    BusyError,
    CortexError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    RefusedError,
    RevisionConflictError,
    UnsupportedSchemaError,
)

__all__ = [
    "BusyError",
    "ConfigError",
    "CortexError",
    "IntegrityError",
    "InvalidInputError",
    "NotFoundError",
    "RefusedError",
    "RevisionConflictError",
    "UnsupportedSchemaError",
]


class ConfigError(InvalidInputError):
    """A configuration source is unreadable, or names an unknown key or a bad value."""

    code = "config_error"

    def __init__(self, source: str, key: str | None, problem: str) -> None:
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.key = key
