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

import dataclasses
import functools
import io
import logging
import os
import signal
from collections.abc import AsyncIterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Self

import anyio
import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from cortex import __version__
from cortex.cases.errors import InvalidInputError
from cortex.cases.redact import Redactor
from cortex.cases.scrub import scrub_value
from cortex.kernel.envelope import Envelope, Result
from cortex.kernel.surface import execute, in_kernel, redactor_for, to_json
from cortex.mcp.tools import BY_NAME, TOOLS, Tool, decode_args, object_schema, output_schema
from cortex.mcp.wire import INVALID, repair

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel

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
        # Arguments are decoded inside the kernel, so an error quoting them is redacted with
        # this workspace's configured literals, as the CLI's are.
        def use_case(kernel: Kernel) -> Result:
            return tool.call(kernel, decode_args(tool, arguments), env)

        body = in_kernel(cwd, env, default_actor, use_case)
        return execute(tool.command, body, env=env, debug=stderr)

    def refuse(message: str) -> tuple[Envelope, int]:
        def use_case(_kernel: Kernel) -> Result:
            raise InvalidInputError(message)

        # Named like the CLI's answer to an unknown command: the name asked for may hold
        # anything, secrets included, and is only quoted (redacted) in the message.
        return execute(
            "cortex", in_kernel(cwd, env, default_actor, use_case), env=env, debug=stderr
        )

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is not None:
            call = functools.partial(run, tool, params.arguments)
        elif params.name == INVALID:
            reason = str((params.arguments or {}).get("reason", "the request cannot be read"))
            call = functools.partial(refuse, reason)
        else:
            known = ", ".join(sorted(BY_NAME))
            call = functools.partial(refuse, f"no tool {params.name!r}; the tools are: {known}")
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
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)

    redactor = redactor_for(cwd, env)

    async def main() -> None:
        async with stdio_server(stdin=_requests()) as (read_stream, write_stream):
            writes = _RedactedErrors(write_stream, redactor)
            await server.run(read_stream, writes, server.create_initialization_options())

    anyio.run(main)
    return 0


class _RedactedErrors:
    """The wire's write side, with the text of every protocol-level error redacted.

    Every tool answer is an envelope made by `surface.refusal`, redacted there; but the SDK
    answers some requests itself with a JSON-RPC error that quotes them (an unknown method's
    name comes back as the error's data). Those pass through here on their way out.
    """

    def __init__(self, inner: Any, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCError):
            error = message.error.model_copy(
                update={
                    "message": self._redactor(message.error.message),
                    "data": scrub_value(message.error.data, self._redactor),
                }
            )
            item = dataclasses.replace(item, message=message.model_copy(update={"error": error}))
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


def _stop(signum: int, _frame: object) -> None:
    """SIGTERM or SIGINT: kill every running verifier's whole group, then exit at once.

    Calls run in worker threads, where the verifier runner cannot take signals itself. A commit
    interrupted here is an interrupted commit like any other: the next writer recovers it.
    """
    from cortex.verifiers.runner import kill_running

    kill_running()
    os._exit(128 + signum)


def _requests() -> Any:
    """The protocol's input, one repaired line at a time (`cortex.mcp.wire`).

    The wire is read from a private duplicate of descriptor 0, which then points at the null
    device, so nothing else in the process (or a child) can consume a request.
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    text = io.TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace")
    lines = anyio.wrap_file(text)

    async def repaired() -> AsyncIterator[str]:
        async for line in lines:
            yield repair(line)

    return repaired()
