"""Clients for a real `cortex serve` process, shared by the MCP tests.

Two ways in: the MCP SDK's own stdio client (`serving`, `Session`), and a raw JSON-RPC line
client (`RawServer`) for what the SDK would refuse to send. The SDK is imported only when a
test connects through it, so collecting the suite does not pay for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pytest
from conftest import Cli, configure_verifiers, git, ready_to_verify

from cortex.mcp.schemas import output_schema
from cortex.mcp.tools import BY_NAME

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.client.session import ClientSession


class Session:
    """A connected client plus the advertised tools, with schema-checked calls."""

    def __init__(self, client: ClientSession, tools: dict[str, types.Tool]) -> None:
        self.client = client
        self.tools = tools

    async def call(
        self, name: str, **arguments: Any
    ) -> tuple[dict[str, Any], types.CallToolResult]:
        """Call a tool; return its envelope after checking it against the tool's schema."""
        import jsonschema

        result = await self.client.call_tool(name, arguments)
        envelope = envelope_in(result)
        jsonschema.validate(envelope, output_schema(BY_NAME[name]))
        return envelope, result


def envelope_in(result: Any) -> dict[str, Any]:
    """The envelope of an SDK tool result: once, as its one JSON text block, and nowhere else."""
    import mcp_types as types

    assert isinstance(result, types.CallToolResult)
    assert result.structured_content is None, "the envelope travels once, as text"
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    envelope: dict[str, Any] = json.loads(block.text)
    assert isinstance(envelope, dict)
    assert result.is_error is (not envelope["ok"])
    return envelope


def text_envelope(result: dict[str, Any]) -> dict[str, Any]:
    """The envelope of a raw `tools/call` result: once, as its one JSON text block."""
    assert "structuredContent" not in result, "the envelope travels once, as text"
    assert len(result["content"]) == 1
    assert result["content"][0]["type"] == "text"
    envelope: dict[str, Any] = json.loads(result["content"][0]["text"])
    assert isinstance(envelope, dict)
    return envelope


@asynccontextmanager
async def serving(cwd: Path, env: dict[str, str], errlog: Any) -> AsyncIterator[Session]:
    """Start `python -m cortex serve` in `cwd` and connect the SDK's stdio client to it."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex", "serve"], cwd=str(cwd), env=env
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        listing = await client.list_tools()
        yield Session(client, {tool.name: tool for tool in listing.tools})


def run_async(test: Callable[[], Any]) -> None:
    """Run an async test body under anyio (no pytest plugin needed), with a deadline."""

    import anyio

    async def bounded() -> None:
        with anyio.fail_after(120):
            await test()

    anyio.run(bounded)


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[IO[str]]:
    """A real file for the server's stderr (the client hands it to the child process)."""
    with (tmp_path / "stderr.txt").open("w+") as file:
        yield file


@pytest.fixture
def served(env: dict[str, str], repo: Path) -> dict[str, str]:
    """The repo configured with an approved `unit` command verifier and a file to change."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('unit: 3 passed')"]})
    (repo / "app.py").write_text("def login():\n    return '/home'\n")
    git(repo, "add", "app.py", env=env)
    git(repo, "commit", "-q", "-m", "app", env=env)
    return {**env, "CORTEX_APPROVE_COMMANDS": "1", "CORTEX_ACTOR": "agent-1"}


class RawServer:
    """`cortex serve` spoken to line by line, with deadlines on every read.

    Every stdout line is kept (`lines`) so a test can check that stdout carried only JSON-RPC;
    stderr goes to a file so a chatty server can never block on a full pipe.
    """

    def __init__(self, cwd: Path, env: dict[str, str], stderr: IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cortex", "serve"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        self.lines: list[bytes] = []
        self.replies: dict[Any, dict[str, Any]] = {}
        self._buffer = b""
        self._next = 100
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "adversary", "version": "0"},
                },
            }
        )
        init = self.wait_for(0, 30)
        assert init is not None, "no answer to initialize"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.tools: dict[str, dict[str, Any]] = {}
        listing = self.wait_for(self.request("tools/list", {}), 30)
        assert listing is not None
        self.tools = {tool["name"]: tool for tool in listing["result"]["tools"]}

    def send(self, message: dict[str, Any] | bytes) -> None:
        """Write one line (a dict is JSON-encoded; bytes go as they are)."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def new_id(self) -> int:
        self._next += 1
        return self._next

    def request(self, method: str, params: dict[str, Any]) -> int:
        ident = self.new_id()
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        return ident

    def start_call(self, name: Any, arguments: Any = ...) -> int:
        """Send a tools/call without waiting; `...` leaves `arguments` out entirely."""
        params: dict[str, Any] = {"name": name}
        if arguments is not ...:
            params["arguments"] = arguments
        return self.request("tools/call", params)

    def call(self, name: Any, arguments: Any = ..., timeout: float = 60) -> dict[str, Any]:
        """A tools/call and its reply (the whole JSON-RPC message); fails on no reply."""
        ident = self.start_call(name, arguments)
        reply = self.wait_for(ident, timeout)
        assert reply is not None, f"no reply to {name!r} within {timeout} s"
        return reply

    def _pump(self, deadline: float) -> bool:
        """Read what stdout has until `deadline`; False when it timed out or hit EOF."""
        assert self.proc.stdout is not None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
        if not ready:
            return False
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            return False
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            self.lines.append(line)
            message = json.loads(line)
            if "id" in message and "method" not in message:
                self.replies[message["id"]] = message
        return True

    def wait_for(self, ident: Any, timeout: float) -> dict[str, Any] | None:
        """The reply with this id, or None if none came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while ident not in self.replies:
            if not self._pump(deadline):
                return self.replies.get(ident)
        return self.replies[ident]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.stdin = None

    def finish(self, timeout: float = 60) -> int:
        """Close stdin, drain stdout and wait for the exit status."""
        if self.proc.stdin is not None:
            self.close_stdin()
        deadline = time.monotonic() + timeout
        while self._pump(deadline):
            pass
        return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))

    def stop(self) -> None:
        """Make sure the process is gone (it is ours: killed by its own pid)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.proc.stdin = None


@contextlib.contextmanager
def raw_server(cwd: Path, env: dict[str, str], tmp_path: Path) -> Iterator[RawServer]:
    with (tmp_path / "serve-stderr.txt").open("ab") as errlog:
        server = RawServer(cwd, env, errlog)
        try:
            yield server
        finally:
            server.stop()


def envelope_of(
    reply: dict[str, Any], server: RawServer | None = None
) -> tuple[dict[str, Any], int]:
    """The envelope and exit status of a tools/call reply, checking the envelope contract."""
    import jsonschema

    assert "result" in reply, f"a protocol error instead of an envelope: {reply}"
    result = reply["result"]
    envelope = text_envelope(result)
    assert result["isError"] is (not envelope["ok"])
    if server is not None and server.tools:
        # Each tool's own schema (its command's answer); an unknown tool's envelope ("cortex")
        # is the envelope with no answer: checked against any tool's with `data` null.
        schemas = {BY_NAME[name].command: output_schema(BY_NAME[name]) for name in server.tools}
        schema = schemas.get(envelope["command"])
        if schema is None:
            assert envelope["command"] == "cortex", envelope["command"]
            assert envelope["data"] is None
            schema = dict(next(iter(schemas.values())))
            schema["properties"] = {**schema["properties"], "command": {"const": "cortex"}}
        jsonschema.validate(envelope, schema)
    status = result["_meta"]["cortex/exitStatus"]
    assert isinstance(status, int)
    if envelope["command"] == "case.verify" and envelope["ok"]:
        # The CLI's status: 2 for a recorded batch that does not verify the case.
        verified = envelope["data"]["assessment"]["status"] == "verified"
        assert status == (0 if verified else 2)
    else:
        assert (status == 0) is envelope["ok"]
    return envelope, status


SLOW_VERIFIER = """
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
time.sleep(float(sys.argv[2]))
print("slow: 1 passed")
"""


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def slow_case(
    served: dict[str, str], repo: Path, tmp_path: Path, seconds: float
) -> Iterator[tuple[str, Path]]:
    """A case ready to verify with a verifier that runs `seconds` and spawns a grandchild.

    Yields the task and the file where the verifier writes "<its pid> <grandchild pid>"; any
    process it started is killed (by pid) afterwards, so a failing test leaves nothing behind.
    Nobody holds the lease yet: the server (`take_lease`) or the CLI takes it.
    """
    pids = tmp_path / "verifier.pids"
    argv = [sys.executable, "-c", SLOW_VERIFIER, str(pids), str(seconds)]
    configure_verifiers(repo, served, {"slow": argv})
    task = ready_to_verify(Cli(served, repo), verify=("command:slow",), lease=False)
    (repo / "app.py").write_text("print('changed')\n")
    try:
        yield task, pids
    finally:
        for pid in read_pids(pids, wait=0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def read_pids(path: Path, wait: float = 30) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        if path.exists() and path.read_text().strip():
            return [int(p) for p in path.read_text().split()]
        if time.monotonic() >= deadline:
            return []
        time.sleep(0.02)
