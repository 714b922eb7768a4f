"""The errors the case store raises, each with a stable code and a semantic exit status.

    CortexError                 internal_error       1
    ├── NotFoundError           not_found            3
    ├── InvalidInputError       invalid_input        4
    │   └── ArgumentError           invalid_input        4  (names arguments per face)
    ├── IntegrityError          integrity_error      4
    │   └── UnsupportedSchemaError  unsupported_schema  4
    ├── RefusedError            refused              5
    ├── RevisionConflictError   revision_conflict    6  (retryable)
    └── BusyError               busy                 6  (retryable)

Surfaces map `code` and `exit_status` to their output without a table of their own, so a new
error cannot be forgotten by one of them. The kernel adds its own subclasses in
`cortex.kernel.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar


class CortexError(Exception):
    """Base of every error Cortex raises on purpose."""

    code = "internal_error"
    exit_status = 1
    retryable = False
    template: str | None = None
    """The message with `{name}` where it names an argument; see `spell`."""
    arguments: tuple[str, ...] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def spell(self, name_of: Callable[[str], str]) -> None:
        """Name each argument the way the caller's face spells it (`--raw-file`, `raw_file`).

        A rule lives in the kernel once, and its message still speaks the caller's language:
        the CLI names options, the MCP server names tool arguments.
        """
        if self.template is not None:
            self.message = _fill(self.template, self.arguments, name_of)


def _fill(template: str, arguments: tuple[str, ...], name_of: Callable[[str], str]) -> str:
    # Plain replacement, not str.format: a template quotes user input, braces and all.
    for argument in arguments:
        template = template.replace("{" + argument + "}", name_of(argument))
    return template


_E = TypeVar("_E", bound="CortexError")


def naming(error: _E, *arguments: str) -> _E:
    """`error`, whose message names `arguments` as `{name}`, spelled per face (see `spell`).

    For errors other than `ArgumentError` (a refusal, a missing record) whose message names an
    argument: `raise naming(RefusedError("... pass {ack_drift}"), "ack_drift")`.
    """
    error.template = error.message
    error.arguments = arguments
    error.message = _fill(error.message, arguments, option_spelling)
    return error


def option_spelling(argument: str) -> str:
    """How the CLI spells an argument: `raw_file` is `--raw-file`."""
    return "--" + argument.replace("_", "-")


class NotFoundError(CortexError):
    """An explicitly named case, record or file does not exist."""

    code = "not_found"
    exit_status = 3


class InvalidInputError(CortexError):
    """The caller's input is malformed, out of bounds or unsafe; nothing was written."""

    code = "invalid_input"
    exit_status = 4


class ArgumentError(InvalidInputError):
    """Bad input that a message names by argument: `{raw_file}` in the template.

    Until a face spells it, the message names options the CLI's way.
    """

    def __init__(self, template: str, *arguments: str) -> None:
        self.template = template
        self.arguments = arguments
        super().__init__(_fill(template, arguments, option_spelling))


class IntegrityError(CortexError):
    """Stored data does not satisfy the format's invariants."""

    code = "integrity_error"
    exit_status = 4

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class UnsupportedSchemaError(IntegrityError):
    """A file was written by a newer Cortex; it is left untouched."""

    code = "unsupported_schema"


class RefusedError(CortexError):
    """A gate or policy refused the operation; nothing was written."""

    code = "refused"
    exit_status = 5


class RevisionConflictError(CortexError):
    """The case moved on since the caller read it; reload and retry."""

    code = "revision_conflict"
    exit_status = 6
    retryable = True

    def __init__(self, *, expected: int, actual: int) -> None:
        super().__init__(
            f"case is at revision {actual}, not the expected {expected}; reload it and retry"
        )
        self.expected = expected
        self.actual = actual


class BusyError(CortexError):
    """Another writer held the lock for longer than the configured wait."""

    code = "busy"
    exit_status = 6
    retryable = True

    def __init__(self, message: str, *, holder: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.holder = holder or {}
