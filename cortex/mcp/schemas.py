"""The JSON schemas of the tools: what each takes (published) and answers (checked by tests)."""

from __future__ import annotations

from typing import Any

from cortex.mcp.actions import ToolAction
from cortex.mcp.tools import Tool


def _plain(node: Any) -> Any:
    """A schema without `anyOf: [T, null]` for optional arguments: their plain type T.

    Clients build inputs from the top-level `type` (the MCP Inspector does); an optional
    argument is one the caller leaves out, so `null` need not be published.
    """
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _plain(value) for key, value in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) == 1:
            node.pop("anyOf")
            if node.get("default", 0) is None:
                node.pop("default")
            node = {**rest[0], **node}
        else:
            node["anyOf"] = rest
            if node.get("default", 0) is None:
                node.pop("default")
    return node


def object_schema(type_: Any, *, plain: bool = False) -> dict[str, Any]:
    """`cortex.kernel.answers.object_schema`; `plain` publishes optional scalars plainly."""
    from cortex.kernel.answers import object_schema as schema_of

    root = schema_of(type_)
    result: dict[str, Any] = _plain(root) if plain else root
    return result


def input_schema(tool: Tool) -> dict[str, Any]:
    """What a tool takes: plain types, defaults shown, unknown arguments refused."""
    return object_schema(tool.args, plain=True)


def output_schema(tool: Tool) -> dict[str, Any]:
    """The envelope this tool answers with, `data` constrained by its command's answer type.

    Not published in `tools/list`: a result carries the envelope once, as text, and an output
    schema would oblige a second copy as `structuredContent` (docs/design/mcp.md). It is the
    contract the tests check every answer against, and `docs/schema/` publishes the CLI's.
    """
    from cortex.kernel.answers import envelope_schema

    return envelope_schema(tool.command, ToolAction)
