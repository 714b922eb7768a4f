"""`cortex_status` in a warm `cortex serve`, over stdio, with the MCP SDK's own client.

The workspace is a plain directory (not a git repository), so no git process runs and the
number is the server's own cost. The floor, measured in the same run with the same client, is a
server on the same SDK whose one tool returns a constant: the price of the transport and the
SDK, below which no MCP tool can answer. Each side gets warm-up calls first, then CALLS timed
calls one after another.

Usage: python bench/mcp_status.py [--calls 1000] [--warmup 100]
"""

from __future__ import annotations

import argparse
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
        text = '{"ok": true}'
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content={"ok": True}
        )

    server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    """
)


async def timed_calls(
    params: StdioServerParameters,
    tool: str,
    arguments: dict[str, Any],
    *,
    calls: int,
    warmup: int,
    errlog: TextIO,
) -> list[float]:
    """Seconds per call, after `warmup` untimed calls."""
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        for _ in range(warmup):
            await client.call_tool(tool, arguments)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            times.append(time.perf_counter() - start)
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result}")
        return times


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
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
        floor_script = Path(scratch) / "floor_server.py"
        floor_script.write_text(FLOOR_SERVER)
        cortex = StdioServerParameters(
            command=sys.executable, args=["-m", "cortex", "serve"], cwd=str(workspace), env=env
        )
        floor = StdioServerParameters(command=sys.executable, args=[str(floor_script)], env=env)

        async def run(errlog: TextIO) -> tuple[list[float], list[float]]:
            n, warm = args.calls, args.warmup
            base = await timed_calls(floor, "constant", {}, calls=n, warmup=warm, errlog=errlog)
            status = {"task_id": task}
            real = await timed_calls(
                cortex, "cortex_status", status, calls=n, warmup=warm, errlog=errlog
            )
            return base, real

        with open(os.devnull, "w") as errlog:
            base, real = anyio.run(run, errlog)
    rows = [("floor: constant tool", base), ("cortex_status", real)]
    print(f"{args.calls} calls each after {args.warmup} warm-up calls; milliseconds per call")
    print(f"{'':24} {'p50':>7} {'p90':>7} {'p99':>7} {'mean':>7}")
    for label, values in rows:
        ms = [v * 1000 for v in values]
        print(
            f"{label:24} {percentile(ms, 0.5):7.2f} {percentile(ms, 0.9):7.2f} "
            f"{percentile(ms, 0.99):7.2f} {statistics.fmean(ms):7.2f}"
        )
    ratio = percentile(real, 0.5) / percentile(base, 0.5)
    print(f"cortex_status p50 / floor p50: {ratio:.2f}x; target p50 <= 3 ms")


if __name__ == "__main__":
    main()
