"""Kernel errors: the store's error tree plus configuration errors.

See `cortex.cases.errors` for the tree, codes and exit statuses.
"""

from __future__ import annotations

from cortex.cases.errors import (
    ArgumentError,
    BusyError,
    CortexError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    RefusedError,
    RevisionConflictError,
    UnsupportedSchemaError,
    option_spelling,
)
from cortex.kernel.envelope import Action

__all__ = [
    "ArgumentError",
    "BusyError",
    "ConfigError",
    "CortexError",
    "GateRefusedError",
    "IntegrityError",
    "InvalidInputError",
    "LeaseConflictError",
    "NotFoundError",
    "RefusedError",
    "RevisionConflictError",
    "UnsupportedSchemaError",
    "option_spelling",
]


class GateRefusedError(RefusedError):
    """A lifecycle gate refused the step; `actions` lists what may be done instead."""

    def __init__(self, message: str, actions: list[Action] | None = None) -> None:
        super().__init__(message)
        self.actions = actions or []


class LeaseConflictError(CortexError):
    """Someone else holds the change lease, or ours expired: retry after taking it."""

    code = "lease_conflict"
    exit_status = 6
    retryable = True

    def __init__(self, message: str, actions: list[Action] | None = None) -> None:
        super().__init__(message)
        self.actions = actions or []


class ConfigError(InvalidInputError):
    """A configuration source is unreadable, or names an unknown key or a bad value."""

    code = "config_error"

    def __init__(self, source: str, key: str | None, problem: str) -> None:
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.key = key
