"""The output contract every surface shares: one envelope per command.

`{"schema": "cortex/v1", "ok", "command", "data", "error": {code, message} | null}`, plus
`actions` (machine-usable next steps) when there is one. The CLI prints it with `--json`; the MCP
server returns it as each tool's structured content.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cortex.cases.errors import CortexError

SCHEMA = "cortex/v1"


class Action(msgspec.Struct, kw_only=True):
    """A next step: a command a caller can run as is, and why."""

    command: str
    reason: str


class ErrorInfo(msgspec.Struct, kw_only=True):
    """What went wrong, as a stable code and a message for people."""

    code: str
    message: str


class Envelope(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One command's answer. `actions` is left out when there is no next step."""

    schema: str
    ok: bool
    command: str
    data: Any
    error: ErrorInfo | None
    actions: list[Action] = msgspec.field(default_factory=list)


class Result(msgspec.Struct, kw_only=True):
    """What a use case returns to a surface."""

    data: Any
    actions: list[Action] = msgspec.field(default_factory=list)


def success(command: str, result: Result) -> Envelope:
    """The envelope of a command that did what it was asked."""
    return Envelope(
        schema=SCHEMA,
        ok=True,
        command=command,
        data=result.data,
        error=None,
        actions=result.actions,
    )


def failure(
    command: str, error: CortexError, *, data: Any = None, actions: list[Action] | None = None
) -> Envelope:
    """The envelope of a command that did not."""
    return Envelope(
        schema=SCHEMA,
        ok=False,
        command=command,
        data=data,
        error=ErrorInfo(code=error.code, message=error.message),
        actions=actions or [],
    )
