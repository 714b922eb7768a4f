"""`cortex_status` in a warm `cortex serve`, over stdio, with the MCP SDK's own client.

The workspace is a plain directory (not a git repository), so no git process runs and the
number is the server's own cost. The floor, measured in the same run with the same client, is a
server on the same SDK whose one tool returns a constant: the price of the transport and the
SDK, below which no MCP tool can answer. Every server gets warm-up calls first; then the timed
calls go round the servers in turn (floor, this build, the baseline), so machine noise hits all
of them alike.

Usage: python bench/mcp_status.py [--calls 1000] [--warmup 100] [--baseline OTHER/bin/cortex]

`--baseline` times another installation's `cortex serve` in the same rounds (bench/compare.py
passes an earlier build's).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

FLOOR_SERVER = textwrap.dedent(
    """
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    TOOL = types.Tool(name="constant", input_schema={"type": "object"})

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[TOOL])

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(text='{"ok": true}')])

    server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    """
)


Target = tuple[str, StdioServerParameters, str, dict[str, Any]]
"""(label, how to start the server, the tool, its arguments)."""


async def timed_rounds(
    targets: list[Target], *, calls: int, warmup: int, errlog: TextIO
) -> dict[str, list[float]]:
    """Seconds per call for each target, calls going round the targets in turn."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for label, params, tool, arguments in targets:
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            client = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
            for _ in range(warmup):
                await client.call_tool(tool, arguments)
            clients.append((label, client, tool, arguments))
        times: dict[str, list[float]] = {label: [] for label, *_ in targets}
        for _ in range(calls):
            for label, client, tool, arguments in clients:
                start = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                times[label].append(time.perf_counter() - start)
                if result.is_error:
                    raise SystemExit(f"{label}: {tool} failed: {result}")
        return times


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--baseline", metavar="CORTEX", help="another build's cortex script")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "CORTEX_STATE_DIR": str(Path(scratch) / "state"),
        }
        opened = subprocess.run(
            [sys.executable, "-m", "cortex", "case", "open", "bench the MCP server", "--json"],
            cwd=workspace,
            env=env,
            capture_output=True,
            check=True,
        )
        import json

        task = json.loads(opened.stdout)["data"]["taskId"]
        targets: list[Target] = []
        if args.baseline:
            # The other build keeps its own state: a case store written by one version is not
            # necessarily one an older version reads.
            old_env = {**env, "CORTEX_STATE_DIR": str(Path(scratch) / "state-baseline")}
            old = subprocess.run(
                [args.baseline, "case", "open", "bench the MCP server", "--json"],
                cwd=workspace,
                env=old_env,
                capture_output=True,
                check=True,
            )
            old_task = json.loads(old.stdout)["data"]["taskId"]
            targets.append(
                (
                    "baseline: cortex_status",
                    StdioServerParameters(
                        command=args.baseline, args=["serve"], cwd=str(workspace), env=old_env
                    ),
                    "cortex_status",
                    {"task_id": old_task},
                )
            )
        floor_script = Path(scratch) / "floor_server.py"
        floor_script.write_text(FLOOR_SERVER)
        cortex = StdioServerParameters(
            command=sys.executable, args=["-m", "cortex", "serve"], cwd=str(workspace), env=env
        )
        floor = StdioServerParameters(command=sys.executable, args=[str(floor_script)], env=env)

        targets = [
            ("floor: constant tool", floor, "constant", {}),
            ("cortex_status", cortex, "cortex_status", {"task_id": task}),
            *targets,
        ]

        async def run(errlog: TextIO) -> dict[str, list[float]]:
            return await timed_rounds(targets, calls=args.calls, warmup=args.warmup, errlog=errlog)

        with open(os.devnull, "w") as errlog:
            times = anyio.run(run, errlog)
    rows = list(times.items())
    base = times["floor: constant tool"]
    print(f"{args.calls} calls each after {args.warmup} warm-up calls; milliseconds per call")
    print()
    print("| server | p50 ms | p90 ms | p99 ms | mean ms | p50 / floor p50 |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, values in rows:
        ms = [v * 1000 for v in values]
        ratio = percentile(values, 0.5) / percentile(base, 0.5)
        print(
            f"| {label} | {percentile(ms, 0.5):.2f} | {percentile(ms, 0.9):.2f} | "
            f"{percentile(ms, 0.99):.2f} | {statistics.fmean(ms):.2f} | {ratio:.2f} |"
        )
    print()
    print("Target: cortex_status p50 <= 2.5x the floor's (issue 30).")


if __name__ == "__main__":
    main()
