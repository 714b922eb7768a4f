"""The output contract every surface shares: one envelope per command.

`{"schema": "cortex/v1", "ok", "command", "data", "error": {code, message} | null}`, plus
`actions` (machine-usable next steps) when there is one. The CLI prints it with `--json`; the MCP
server returns it as each tool's structured content. `schema` names the version of the
contract; docs/schema/ publishes it, one file per command.

A use case gives each next step as an `Action`: an operation and its arguments, by the kernel's
names, and the command line the CLI shows. Each face spells it in the envelope its own way: the
CLI as `{command, reason}` (`CommandAction`), the MCP server as a tool and its arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from cortex.cases.errors import CortexError

SCHEMA = "cortex/v1"

Data = dict[str, Any]
"""A JSON object as the faces and views pass it around: an envelope's `data`, or part of it."""


class Action(msgspec.Struct, kw_only=True):
    """A next step: what to call, with which arguments, and why (build one with `step`).

    `operation` is the command's dotted name (`case.verify`); `arguments` use the kernel's names
    (the CLI's options, `task` for the case), repeated options as lists, and `<...>` where the
    caller fills something in. `command` is the same step as a command line.
    """

    command: str
    reason: str
    operation: str | None = None
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class CommandAction(msgspec.Struct, kw_only=True):
    """A next step as the CLI answers it: a command a caller can run as is, and why."""

    command: str
    reason: str


def command_action(action: Action) -> CommandAction:
    """The CLI's spelling of a next step."""
    return CommandAction(command=action.command, reason=action.reason)


_TEXT = frozenset(
    {
        "accept_failed",
        "boundary_reason",
        "claim",
        "contract",
        "goal",
        "hypothesis",
        "option",
        "outcome",
        "question",
        "reason",
        "text",
        "uncertainty",
        "verification_not_possible",
    }
)
"""Arguments that hold prose: always quoted on the command line."""

_POSITIONAL: dict[str, tuple[str, ...]] = {
    "case.open": ("goal",),
    "case.note": ("task", "text"),
    "case.resolve": ("task", "hypothesis"),
    "case.read-evidence": ("task", "evidence"),
    "case.read-artifact": ("task", "ref"),
    "case.decision.answer": ("task", "decision"),
    "case.trust": ("name",),
}
"""The CLI's positional arguments of an operation, in order (`task` for any other `case.*`)."""

_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:@/+,=|<>-")


def _word(name: str, value: object) -> str:
    text = str(value)
    if name not in _TEXT and text and all(char in _BARE for char in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def command_line(operation: str, arguments: dict[str, Any]) -> str:
    """`operation` with `arguments` as a command line: `cortex case verify T --ack-drift`."""
    words = ["cortex", *operation.split(".")]
    positional = _POSITIONAL.get(operation, ("task",)) if operation.startswith("case.") else ()
    words += [_word(name, arguments[name]) for name in positional if name in arguments]
    for name, value in arguments.items():
        if name in positional or value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
            continue
        for item in value if isinstance(value, list) else [value]:
            words += [flag, _word(name, item)]
    return " ".join(words)


def step(operation: str, reason: str, /, **arguments: Any) -> Action:
    """A next step: `step("case.verify", "run it again", task=task_id)`."""
    return Action(
        command=command_line(operation, arguments),
        reason=reason,
        operation=operation,
        arguments=arguments,
    )


Spelling = Callable[[Action], Any]
"""How a face writes a next step into its envelope (None: the face leaves it out)."""


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
    actions: list[Any] = msgspec.field(default_factory=list)
    """Next steps as the face spells them (the CLI: `CommandAction`)."""


class Result(msgspec.Struct, kw_only=True):
    """What a use case returns to a surface."""

    data: Any
    actions: list[Action] = msgspec.field(default_factory=list)
    minted: tuple[str, ...] = ()
    """Keys of `data` holding a secret Cortex minted for this caller (a lease token), returned
    as it is: the answer's redaction, which masks echoed input, would otherwise mask it."""
    exit_status: int = 0
    """The exit status of a command that did what it was asked but whose answer is "no" (a
    verify that recorded a batch that does not verify the case: `NOT_VERIFIED`)."""


NOT_VERIFIED = 2
"""Exit status of `case verify` when its batch was recorded but the case is not verified by it
(failed, partial, unverified): like pytest's 1 or `git diff --exit-code`'s, so a script can
tell a pass from a recorded failure without reading the answer."""


def spelled(actions: list[Any], spelling: Spelling | None) -> list[Any]:
    """Next steps (`Action`s, or their plain form) as a face spells them; the CLI's by default."""
    if not actions:
        return []
    steps = [a if isinstance(a, Action) else msgspec.convert(a, Action) for a in actions]
    shown = [(spelling or command_action)(a) for a in steps]
    return [a for a in shown if a is not None]


def success(command: str, result: Result, *, spelling: Spelling | None = None) -> Envelope:
    """The envelope of a command that did what it was asked."""
    return Envelope(
        schema=SCHEMA,
        ok=True,
        command=command,
        data=result.data,
        error=None,
        actions=spelled(result.actions, spelling),
    )


def failure(
    command: str,
    error: CortexError,
    *,
    data: Any = None,
    actions: list[Any] | None = None,
    spelling: Spelling | None = None,
) -> Envelope:
    """The envelope of a command that did not."""
    return Envelope(
        schema=SCHEMA,
        ok=False,
        command=command,
        data=data,
        error=ErrorInfo(code=error.code, message=error.message),
        actions=spelled(actions or [], spelling),
    )
