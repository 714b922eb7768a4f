"""Next steps over MCP: a CLI step written as a call of the tool that serves it.

The kernel names each next step by its command and the CLI's argument names; this face renames
them to a tool and its arguments, and fills in what the caller already gave, so an agent can
send the step as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import msgspec

from cortex.kernel.envelope import Action
from cortex.kernel.inputs import ALIASES
from cortex.mcp.tools import BY_COMMAND, Tool


class ToolAction(msgspec.Struct, kw_only=True):
    """A next step over MCP: a tool this server serves, its arguments, and why.

    `<...>` in an argument marks what the caller fills in; everything else can be sent as is.
    """

    tool: Annotated[str, msgspec.Meta(description="the tool to call")]
    arguments: Annotated[
        dict[str, Any], msgspec.Meta(description="its arguments; '<...>' marks what to fill in")
    ]
    reason: str


SUBSTITUTES: dict[str, str] = {
    "case.decision.list": "case.status",
    "case.lease.renew": "case.begin-change",
}
"""A step the CLI names that a tool covers here: status carries the pending decision, and
begin_change renews the caller's own lease. A step no tool covers (answering a decision, which
people do; trusting a command; set-up) is left out of an MCP answer."""


def _placeholder(value: object) -> bool:
    if isinstance(value, str):
        return value.startswith("<") and value.endswith(">")
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) and "<" in v for v in value)
    return False


@functools.cache
def _fields(args: type[msgspec.Struct]) -> tuple[frozenset[str], frozenset[str]]:
    """A tool's argument names, and those that hold a list (computed once per tool)."""
    info = msgspec.inspect.type_info(args)
    assert isinstance(info, msgspec.inspect.StructType)  # noqa: S101 - tool args are structs
    lists = set()
    for field in info.fields:
        kind = field.type
        while isinstance(kind, msgspec.inspect.Metadata):
            kind = kind.type
        if isinstance(kind, msgspec.inspect.ListType):
            lists.add(field.name)
    return frozenset(f.name for f in info.fields), frozenset(lists)


def action_spelling(tool: Tool | None, given: Mapping[str, Any] | None) -> Callable[[Action], Any]:
    """How a call of `tool` with the arguments `given` writes a next step: as a tool call.

    The step's arguments are renamed to the tool's, and what the caller already gave is filled
    in: for a step that calls the same tool, every argument the caller gave that the step does
    not set (or marks `<...>`); for another tool, the `<...>` arguments the caller gave by the
    same name. `workspace` is always carried over.
    """
    given = dict(given or {})

    def spell(action: Action) -> ToolAction | None:
        operation = SUBSTITUTES.get(action.operation or "", action.operation or "")
        target = BY_COMMAND.get(operation)
        if target is None:
            return None
        fields, lists = _fields(target.args)
        names = {ALIASES.get(field, field): field for field in fields}
        arguments: dict[str, Any] = {}
        for name, value in action.arguments.items():
            field = names.get(name)
            if field is None:
                continue  # the tool standing in for this step takes no such argument
            listed = field in lists and not isinstance(value, list)
            arguments[field] = [value] if listed else value
        same = tool is not None and target.name == tool.name
        for field, value in given.items():
            if field not in fields:
                continue
            if (
                field == "workspace"
                or (same and field not in arguments)
                or (field in arguments and _placeholder(arguments[field]))
            ):
                arguments[field] = value
        return ToolAction(tool=target.name, arguments=arguments, reason=action.reason)

    return spell
