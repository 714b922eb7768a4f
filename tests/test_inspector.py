"""Issue 12: the official MCP Inspector, a client no one here wrote, in its CLI mode.

It lists the tools and calls `cortex_read_artifact` with `max_bytes` given as text on its
command line: the Inspector converts an argument by the tool's top-level schema `type`, so the
plain `integer` type makes it send the number 200 (with `anyOf: [integer, null]` it sent the
string "200", which was refused). Slow-marked: it fetches the Inspector with npx (npm must be
reachable); skipped where npx is missing or cannot fetch it. Checked by hand with Inspector
0.15.0 (docs/design/mcp.md has the commands).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli

INSPECTOR = "@modelcontextprotocol/inspector"

pytestmark = pytest.mark.slow


def inspector(env: dict[str, str], cwd: Path, *args: str) -> Any:
    npx = shutil.which("npx", path=env.get("PATH"))
    if npx is None:
        pytest.skip("npx is not installed")
    command = [npx, "-y", INSPECTOR, "--cli", sys.executable, "-m", "cortex", "serve", *args]
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npx could not fetch the Inspector in time")
    if done.returncode != 0 and "npm" in done.stderr and "ERR" in done.stderr:
        pytest.skip(f"npx could not fetch the Inspector: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_the_tools_and_reads_an_artifact_with_max_bytes(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    import os

    task = cli.open()
    raw = "line of raw output\n" * 50
    record = cli("case", "evidence", "add", task, "--claim", "raw", "--raw-file", "-",
                 stdin=raw.encode()).data["evidence"]  # fmt: skip
    # npx needs a home and a cache of its own, and the PATH to node.
    npm = {"npm_config_cache": str(tmp_path / "npm"), "PATH": os.environ.get("PATH", "")}
    run_env = {**env, **npm}
    listing = inspector(run_env, repo, "--method", "tools/list")
    names = {tool["name"] for tool in listing["tools"]}
    assert {"cortex_read_artifact", "cortex_verify", "cortex_block"} <= names
    called = inspector(
        run_env, repo, "--method", "tools/call", "--tool-name", "cortex_read_artifact",
        "--tool-arg", f"task_id={task}", "--tool-arg", f"ref={record['rawRef']}",
        "--tool-arg", "max_bytes=200",
    )  # fmt: skip
    assert called["isError"] is False, called
    envelope = json.loads(called["content"][0]["text"])
    assert "structuredContent" not in called, "the envelope travels once, as text"
    assert envelope["ok"] is True
    data = envelope["data"]
    assert data["maxBytes"] == 200
    assert data["bytesReturned"] == 200
    assert data["truncated"] is True
