"""`cortex serve`: the MCP server over stdio, on the official `mcp` SDK's low-level server.

Each call decodes its arguments into the tool's msgspec type, runs the same kernel function as
the CLI in a worker thread (a verifier run can take minutes; the server keeps answering pings
and other calls meanwhile), and answers with the CLI's envelope once, as one JSON text block:
the part of a result every host hands its model (docs/design/mcp.md says why not also as
`structuredContent`). A refused call is `isError` with the envelope and its `actions` intact;
the exit status the CLI would have used travels in `_meta` under `cortex/exitStatus`.

stdout carries only protocol: the SDK points file descriptor 1 at stderr while it serves, so a
stray print or a child process cannot corrupt the stream, and this module logs to stderr.
Nothing here is imported by any other command.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import logging
import math
import os
import signal
import threading
from collections.abc import AsyncIterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Self

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from cortex import __version__
from cortex.kernel.envelope import Action, Envelope, Result
from cortex.kernel.errors import InvalidInputError
from cortex.kernel.host_session import default_actor as host_default_actor
from cortex.kernel.surface import (
    execute,
    in_kernel,
    redacted,
    redactor_for,
    scrubbed,
    to_json,
)
from cortex.mcp.actions import action_spelling
from cortex.mcp.progress import Logging, Relay
from cortex.mcp.schemas import input_schema
from cortex.mcp.session import Leases
from cortex.mcp.tools import BY_NAME, TOOLS, Tool, decode_args, spelling
from cortex.mcp.wire import INVALID, Refusal, screen

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel

INSTRUCTIONS = (
    "Cortex keeps a case file for each task; work it in this order:\n"
    "1. Open it retry-safely: cortex_open_task with an idempotency_key.\n"
    "2. Investigate before planning: record what you learn (cortex_record_evidence).\n"
    "3. Plan falsifiable hypotheses, the change boundary and the verifiers (cortex_plan).\n"
    "4. Take the change lease before editing (cortex_begin_change).\n"
    "5. Stay inside the plan's boundary; re-plan with a reason if it must move.\n"
    "6. Verify with a claim for each acceptance criterion (cortex_verify), then complete.\n"
    "7. Never answer a decision yourself: ask (cortex_request_decision) and wait.\n"
    "Answers are envelopes {ok, data, error, actions}: when refused, follow the actions."
)

DEFAULT_ACTOR = "mcp"


def _describe(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.name.removeprefix("cortex_").replace("_", " "),
        description=tool.description,
        input_schema=input_schema(tool),
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            # Every tool acts on local files only: no network, no outside world.
            open_world_hint=False,
        ),
    )


def _answer(envelope: Envelope, exit_status: int) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=to_json(envelope))],
        is_error=not envelope.ok,
        _meta={"cortex/exitStatus": exit_status},
    )


def build(
    cwd: str,
    env: Mapping[str, str],
    *,
    stderr: IO[str] | None = None,
    closing: threading.Event | None = None,
) -> Server[Any]:
    """The server: every tool in `cortex.mcp.tools.TOOLS`, run against `cwd` and `env`.

    `closing` is set when the client closed the session (end of stdin): calls cancelled then
    finish their work; any other cancellation (`notifications/cancelled`) stops it.
    """
    closing = threading.Event() if closing is None else closing
    listing = types.ListToolsResult(tools=[_describe(tool) for tool in TOOLS])
    default_actor = host_default_actor(env, DEFAULT_ACTOR)
    leases = Leases()  # the lease tokens of this connection (docs/design/trust.md)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return listing

    logging_level = Logging()

    def run(tool: Tool, arguments: Mapping[str, Any] | None, relay: Relay) -> tuple[Envelope, int]:
        # `workspace` is the CLI's -C: the kernel is built there, and checked the same way. A
        # value that is not text is refused by the decoding below, in the server's own kernel.
        workspace = (arguments or {}).get("workspace")
        directory = os.path.join(cwd, workspace) if isinstance(workspace, str) else cwd
        built: list[Kernel] = []

        # Arguments are decoded inside the kernel, so an error quoting them is redacted with
        # this workspace's configured literals, as the CLI's are.
        def use_case(kernel: Kernel) -> Result:
            built.append(kernel)
            return tool.call(kernel, decode_args(tool, arguments), leases)

        prefill = action_spelling(tool, arguments)
        bare = action_spelling(tool, None)

        def actions(action: Action) -> Any:
            # A next step echoes the caller's arguments only as the store would keep them.
            if not built:
                return bare(action)
            shown = prefill(action)
            return None if shown is None else redacted(built[0], shown)

        body = in_kernel(
            directory, env, default_actor, use_case, progress=relay.progress, via="mcp"
        )
        return execute(
            tool.command, body, env=env, debug=stderr, spelling=spelling(tool), actions=actions
        )

    def refuse(message: str) -> tuple[Envelope, int]:
        def use_case(_kernel: Kernel) -> Result:
            raise InvalidInputError(message)

        # Named like the CLI's answer to an unknown command: the name asked for may hold
        # anything, secrets included, and is only quoted (redacted) in the message.
        return execute(
            "cortex",
            in_kernel(cwd, env, default_actor, use_case, via="mcp"),
            env=env,
            debug=stderr,
            actions=action_spelling(None, None),
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        relay = Relay(ctx, logging_level.levels(ctx), clock=anyio.current_time, closing=closing)
        tool = BY_NAME.get(params.name)
        if tool is not None:
            work = functools.partial(run, tool, params.arguments, relay)
        elif params.name == INVALID:
            reason = str((params.arguments or {}).get("reason", "the request cannot be read"))
            work = functools.partial(refuse, reason)
        else:
            known = ", ".join(sorted(BY_NAME))
            work = functools.partial(refuse, f"no tool {params.name!r}; the tools are: {known}")
        envelope, exit_status = await relay.run(work)
        return _answer(envelope, exit_status)

    async def set_level(_ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        logging_level.level = params.level
        return types.EmptyResult()

    server: Server[Any] = Server(
        "cortex",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    # Registered by method, not `on_set_logging_level=`: the SDK warns on that keyword because
    # the 2026-07-28 protocol drops the method; clients of earlier versions still send it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


def serve(cwd: str, env: Mapping[str, str], *, stderr: IO[str]) -> int:
    """Serve until the client closes stdin; 0 on a clean shutdown."""
    logging.basicConfig(stream=stderr, level=logging.WARNING, format="cortex serve: %(message)s")
    closing = threading.Event()
    server = build(cwd, env, stderr=stderr, closing=closing)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)

    redactor = redactor_for(cwd, env)

    async def main() -> None:
        refusals, refused = anyio.create_memory_object_stream[Refusal](math.inf)
        async with stdio_server(stdin=_requests(closing, refusals)) as (read_stream, write_stream):
            writes = _RedactedErrors(write_stream, redactor)
            async with anyio.create_task_group() as group:
                group.start_soon(_answer_refused, refused, writes)
                await server.run(read_stream, writes, server.create_initialization_options())
                group.cancel_scope.cancel()

    anyio.run(main)
    return 0


class _RedactedErrors:
    """The wire's write side, with the text of every protocol-level error redacted.

    Every tool answer is an envelope made by `surface.refusal`, redacted there; but the SDK
    answers some requests itself with a JSON-RPC error that quotes them (an unknown method's
    name comes back as the error's data). Those pass through here on their way out.
    """

    def __init__(self, inner: Any, redactor: Any) -> None:
        # A `Redactor` (the workspace's, from `surface.redactor_for`): called on error text.
        self._inner = inner
        self._redactor = redactor

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCError):
            error = message.error.model_copy(
                update={
                    "message": self._redactor(message.error.message),
                    "data": scrubbed(self._redactor, message.error.data),
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
    from cortex.kernel.proof.verify import stop_running

    stop_running()
    os._exit(128 + signum)


async def _answer_refused(refused: Any, writes: _RedactedErrors) -> None:
    """Send the error answer of each request `wire.screen` refused (it names the id)."""
    async with refused:
        async for ident, code, message in refused:
            error = types.JSONRPCError(
                jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message)
            )
            try:
                await writes.send(SessionMessage(error))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


def _requests(closing: threading.Event, refusals: Any) -> Any:
    """The protocol's input, one screened and repaired line at a time (`cortex.mcp.wire`).

    The wire is read from a private duplicate of descriptor 0, which then points at the null
    device, so nothing else in the process (or a child) can consume a request. `closing` is set
    at the end of the input, before the SDK cancels the calls still running.
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    text = io.TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace")
    lines = anyio.wrap_file(text)

    async def repaired() -> AsyncIterator[str]:
        async with refusals:
            async for line in lines:
                passed, answers = screen(line)
                for answer in answers:
                    await refusals.send(answer)
                if passed is not None:
                    yield passed
        closing.set()

    return repaired()
