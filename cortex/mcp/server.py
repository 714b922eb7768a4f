"""`cortex serve`: the MCP server over stdio, on the official `mcp` SDK's low-level server.

Each call decodes its arguments into the tool's msgspec type, runs the same kernel function as
the CLI in a worker thread (a verifier run can take minutes; the server keeps answering pings
and other calls meanwhile), and answers with the CLI's envelope twice: as `structuredContent`
(checked by the client against the tool's `outputSchema`) and as JSON text for clients that
read only text. A refused call is `isError` with the envelope and its `actions` intact; the
exit status the CLI would have used travels in `_meta` under `cortex/exitStatus`.

stdout carries only protocol: the SDK points file descriptor 1 at stderr while it serves, so a
stray print or a child process cannot corrupt the stream, and this module logs to stderr.
Nothing here is imported by any other command.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from cortex import __version__
from cortex.cases.errors import InvalidInputError
from cortex.kernel.envelope import Envelope, Result
from cortex.kernel.surface import Seen, execute, in_kernel, refusal, to_json
from cortex.mcp.tools import BY_NAME, TOOLS, Tool, decode_args, object_schema, output_schema

INSTRUCTIONS = (
    "Cortex keeps a case file for each task: open one with cortex_open_task, record evidence "
    "as you learn, commit a plan of falsifiable hypotheses, take the change lease with "
    "cortex_begin_change before editing, run cortex_verify, then cortex_complete. Every answer "
    "is an envelope {ok, command, data, error, actions}; follow `actions` when a call is "
    "refused. Questions for a person go through cortex_request_decision; only people answer."
)

DEFAULT_ACTOR = "mcp"


def _describe(tool: Tool, envelope_schema: dict[str, Any]) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.name.removeprefix("cortex_").replace("_", " "),
        description=tool.description,
        input_schema=object_schema(tool.args),
        output_schema=envelope_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            # Every tool acts on local files only: no network, no outside world.
            open_world_hint=False,
        ),
    )


def _answer(envelope: Envelope, exit_status: int) -> types.CallToolResult:
    text = to_json(envelope)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=msgspec.json.decode(text),
        is_error=not envelope.ok,
        _meta={"cortex/exitStatus": exit_status},
    )


def build(cwd: str, env: Mapping[str, str], *, stderr: IO[str] | None = None) -> Server[Any]:
    """The server: every tool in `cortex.mcp.tools.TOOLS`, run against `cwd` and `env`."""
    envelope_schema = output_schema()
    listing = types.ListToolsResult(tools=[_describe(tool, envelope_schema) for tool in TOOLS])
    default_actor = env.get("CORTEX_ACTOR") or DEFAULT_ACTOR

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return listing

    def run(tool: Tool, arguments: Mapping[str, Any] | None) -> tuple[Envelope, int]:
        def body(seen: Seen) -> Result:
            args = decode_args(tool, arguments)
            return in_kernel(cwd, env, default_actor, lambda k: tool.call(k, args, env))(seen)

        return execute(tool.command, body, env=env, debug=stderr)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None:
            known = ", ".join(sorted(BY_NAME))
            error = InvalidInputError(f"no tool {params.name!r}; the tools are: {known}")
            return _answer(refusal(params.name, error), error.exit_status)
        call = functools.partial(run, tool, params.arguments)
        envelope, exit_status = await anyio.to_thread.run_sync(call)
        return _answer(envelope, exit_status)

    return Server(
        "cortex",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(cwd: str, env: Mapping[str, str], *, stderr: IO[str]) -> int:
    """Serve until the client closes stdin; 0 on a clean shutdown."""
    logging.basicConfig(stream=stderr, level=logging.WARNING, format="cortex serve: %(message)s")
    server = build(cwd, env, stderr=stderr)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 130
    return 0
