"""What the setup tests share: where each host's files go, the hook set spelled out, and the
kernel's setup run in process."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any

from cortex.kernel.host import hooks as hook_set
from cortex.kernel.host import setup as setup_host
from cortex.kernel.kernel import Kernel

PYTHON = os.path.abspath(sys.executable)
ARGS = ["serve"]
MODULE_ARGS = ["-m", "cortex", "serve"]
"""An interpreter with no `cortex` script beside it runs `<python> -m cortex serve` (user scope)."""
CLAUDE_ENTRY = {"type": "stdio", "command": "cortex", "args": ARGS, "env": {}}
"""This installation runs from PATH (the `env` fixture below): the portable form setup writes."""
HOSTILE = 'we"ird \\ dir\nwith\ttabs\x7f ñ 漢 \'\'\' """'

# The hook set each host gets (docs/design/hosts.md, sections 1 and 7), spelled out here rather
# than read from the template, so a change to the template is a change a test sees.
HOOK_SET: dict[str, list[tuple[str, str | None, int]]] = {
    "claude": [
        ("SessionStart", None, 15),
        ("UserPromptSubmit", None, 10),
        ("Stop", None, 15),
        ("SubagentStop", None, 15),
        ("PreCompact", None, 10),
        ("PreToolUse", "Bash", 5),
        ("PostToolUse", "Bash|Edit|Write|MultiEdit|NotebookEdit", 5),
        ("PostToolUseFailure", "Bash|Edit|Write|MultiEdit|NotebookEdit", 5),
    ],
    "codex": [
        ("SessionStart", None, 15),
        ("UserPromptSubmit", None, 10),
        ("Stop", None, 15),
        ("PostToolUse", "Bash", 5),
    ],
}
TIMEOUT_MS = "180000"
"""env.MCP_TOOL_TIMEOUT with no verifier configured: the default 120 s plus the 60 s margin."""


def digest(host: str) -> str:
    """The template digest setup writes into every command (its properties: test_host_setup)."""
    return hook_set.digest(host)


def hook_command(host: str, event: str, program: str = "cortex") -> str:
    """One hook's command line, as the design spells it."""
    flag = "" if host == "claude" else f" --host {host}"
    return f"{program} hook {event}{flag} --template {digest(host)}"


def hook_groups(host: str, program: str = "cortex") -> dict[str, list[dict[str, Any]]]:
    """The `hooks` object setup writes into an empty file, event by event, in order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, timeout in HOOK_SET[host]:
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        command = hook_command(host, event, program)
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups[event] = [group]
    return groups


def hooks_file(host: str, program: str = "cortex") -> bytes:
    """The whole hooks file setup creates: Claude Code's settings also get the tool timeout."""
    document: dict[str, Any] = {"hooks": hook_groups(host, program)}
    if host == "claude":
        document["env"] = {"MCP_TOOL_TIMEOUT": TIMEOUT_MS}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def home(env: dict[str, str]) -> Path:
    return Path(env["HOME"])


def target(env: dict[str, str], repo: Path, host: str, scope: str) -> Path:
    """Where each host and scope is expected to be written (spelled out, not computed)."""
    return {
        ("claude", "project"): repo / ".mcp.json",
        ("claude", "user"): home(env) / ".claude.json",
        ("codex", "user"): home(env) / ".codex" / "config.toml",
        ("codex", "project"): repo / ".codex" / "config.toml",
    }[host, scope]


def hooks_target(env: dict[str, str], repo: Path, host: str, scope: str) -> Path:
    """Where each host and scope's hook set is expected to be written (spelled out)."""
    return {
        ("claude", "project"): repo / ".claude" / "settings.json",
        ("claude", "user"): home(env) / ".claude" / "settings.json",
        ("codex", "user"): home(env) / ".codex" / "hooks.json",
        ("codex", "project"): repo / ".codex" / "hooks.json",
    }[host, scope]


def installed_commands(path: Path) -> dict[str, list[str]]:
    """Every hook command in a hooks file, by event, as the host would read them."""
    document = json.loads(path.read_bytes())
    return {
        event: [hook["command"] for group in groups for hook in group["hooks"]]
        for event, groups in document["hooks"].items()
    }


def registered(path: Path) -> Any:
    """The cortex entry as the host would read it."""
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text("utf-8"))["mcp_servers"]["cortex"]
    return json.loads(path.read_bytes())["mcpServers"]["cortex"]


def snapshot(path: Path) -> tuple[bytes, int, int, int]:
    info = path.stat()
    return path.read_bytes(), info.st_mtime_ns, info.st_ino, stat.S_IMODE(info.st_mode)


def stray_temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".tmp-"))


def run_setup(env: dict[str, str], repo: Path, host: str, **options: Any) -> dict[str, Any]:
    """The kernel use case in-process, for what the command line cannot set (the interpreter)."""
    result = setup_host.setup(Kernel(str(repo), env, default_actor="cli"), host, **options)
    data: dict[str, Any] = result.data
    return data


ALL = [("claude", "project"), ("claude", "user"), ("codex", "user"), ("codex", "project")]


def make_venv(root: Path, marker: Path | None = None) -> Path:
    """A virtualenv inside `root`: `.venv/bin/python` links to this interpreter, and
    `.venv/bin/cortex` is an executable (that leaves `marker` if it is ever run)."""
    bindir = root / ".venv" / "bin"
    bindir.mkdir(parents=True)
    python = bindir / "python"
    python.symlink_to(sys.executable)
    touch = f"touch {shlex.quote(str(marker))}\n" if marker else ""
    script = bindir / "cortex"
    script.write_text(f"#!/bin/sh\n{touch}exit 0\n")
    script.chmod(0o755)
    return python
