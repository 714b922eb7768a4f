"""Four MCP server processes and four CLI processes append to one case at once: nothing is lost.

Each MCP client drives its own `cortex serve` process and keeps several calls in flight (the
server runs calls in worker threads, so one server also writes concurrently with itself).
Afterwards every claim is in the ledger exactly once, revisions are gapless, and audit passes.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from conftest import CHILDREN, Cli, case_path

pytestmark = pytest.mark.process  # every test here starts Python processes

SERVERS = 4
CLI_WRITERS = 4
PER_WRITER = 60
IN_FLIGHT = 3
"""Calls each MCP client keeps outstanding at once."""


async def mcp_writer(
    index: int, cwd: Path, env: dict[str, str], task: str, *, ready: anyio.Event, go: anyio.Event
) -> list[str]:
    """Append PER_WRITER pieces of evidence through one server; return the refusals seen.

    It says `ready` once its server answered `initialize` and writes only after `go`: a server
    takes far longer to start than a CLI writer, and all the writers must run at the same time.
    """
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex", "serve"], cwd=str(cwd), env=env
    )
    problems: list[str] = []
    limiter = anyio.Semaphore(IN_FLIGHT)
    with (cwd.parent / f"serve-{index}.err").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            ready.set()
            await go.wait()

            async def one(seq: int) -> None:
                async with limiter:
                    claim = f"mcp {index} seq {seq}"
                    result = await client.call_tool(
                        "cortex_record_evidence", {"task_id": task, "claim": claim}
                    )
                assert isinstance(result, types.CallToolResult)
                if result.is_error:
                    problems.append(f"{claim}: {result.content}")

            async with anyio.create_task_group() as group:
                for seq in range(PER_WRITER):
                    group.start_soon(one, seq)
    return problems


def test_four_servers_and_four_cli_processes_lose_nothing(cli: Cli) -> None:
    task = cli.open("Concurrent writers")
    env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "300"}
    counts = [str(PER_WRITER), str(cli.cwd)]
    problems: list[str] = []
    gate = cli.cwd.parent / "gate"
    # The CLI writers load, say so, and wait at the gate; the servers wait for `go`.
    writers = [
        subprocess.Popen(
            [sys.executable, str(CHILDREN / "writer.py"), "append", str(w), *counts, task],
            env={**env, "WRITER_GATE": str(gate)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(CLI_WRITERS)
    ]
    deadline = time.monotonic() + 120
    while not all(Path(f"{gate}.{w}").exists() for w in range(CLI_WRITERS)):
        for proc in writers:
            if proc.poll() is not None:  # it died before the gate: say why
                raise AssertionError(proc.communicate()[1].decode(errors="replace"))
        assert time.monotonic() < deadline, "a CLI writer did not load in 120 s"
        time.sleep(0.01)
    ready = [anyio.Event() for _ in range(SERVERS)]
    go = anyio.Event()

    async def servers() -> None:
        async def run(index: int) -> None:
            problems.extend(await mcp_writer(index, cli.cwd, env, task, ready=ready[index], go=go))

        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for index in range(SERVERS):
                    group.start_soon(run, index)
                for event in ready:
                    await event.wait()
                gate.touch()  # every writer of both kinds starts now
                go.set()

    anyio.run(servers)
    for proc in writers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        assert b'"other": []' in out, out
    assert problems == []

    # Every claim exactly once, and the case is consistent.
    expected = {f"writer {w} seq {s}" for w in range(CLI_WRITERS) for s in range(PER_WRITER)}
    expected |= {f"mcp {i} seq {s}" for i in range(SERVERS) for s in range(PER_WRITER)}
    ledger = (case_path(cli.env, task) / "evidence.jsonl").read_text().splitlines()
    claims = [json.loads(line)["claim"] for line in ledger]
    assert sorted(claims) == sorted(expected)
    # The two kinds of writer really overlapped: their appends interleave in the ledger.
    kinds = [claim.split()[0] for claim in claims]
    switches = sum(1 for a, b in itertools.pairwise(kinds) if a != b)
    assert switches >= 4, f"the writers ran one after the other ({switches} switches)"
    status = cli("case", "status", task).data
    assert status["revision"] == 1 + len(expected)
    audit = cli("case", "audit", task)
    assert audit.code == 0, audit.stdout
