"""The capture hook's child: the host's payload, read into one observation for the kernel.

Runs detached, after the host has its answer (`cortex.hooks.capture`); it may load anything.
"""

from __future__ import annotations

import os
import re

from cortex.hooks.capture import AGENT_EXPORT, agent_label
from cortex.kernel.activity.observe import Observation, record

_EXIT = re.compile(r"^Exit code (-?\d+)")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def observe(payload: dict[str, object], event: str, files: list[str]) -> Observation:
    """What the payload says happened: the tool, its command or files, how it ended."""
    tool = _text(payload.get("tool_name"))
    tool_input = payload.get("tool_input")
    command = None
    if tool == "Bash" and isinstance(tool_input, dict):
        command = _text(tool_input.get("command"))
        if command.startswith(AGENT_EXPORT):
            command = command.split("; ", 1)[-1]  # the name PreToolUse added, not the agent's
    response = payload.get("tool_response")
    output = ""
    exit_status: int | None = None
    failed = event == "PostToolUseFailure"
    if failed:
        error = _text(payload.get("error"))
        output = error
        found = _EXIT.match(error)
        exit_status = int(found.group(1)) if found else None
    elif isinstance(response, dict):  # Claude Code: stdout, stderr, interrupted
        output = _text(response.get("stdout")) + "\n" + _text(response.get("stderr"))
        failed = response.get("interrupted") is True
        exit_status = None if failed or tool != "Bash" else 0
    elif isinstance(response, str):  # Codex: the output only
        output = response
    duration = payload.get("duration_ms")
    agent, kind = payload.get("agent_id"), payload.get("agent_type")
    label = None
    if isinstance(agent, str) and agent:
        label = agent_label(kind if isinstance(kind, str) else "agent", agent)
    return Observation(
        tool=tool,
        command=command,
        files=files,
        exit=exit_status,
        failed=failed,
        duration_ms=duration if isinstance(duration, int) else None,
        output=output,
        agent=label,
        session=_text(payload.get("session_id")) or None,
    )


def write(
    payload: dict[str, object],
    *,
    event: str,
    host: str,
    workspace: str,
    files: list[str],
    held: list[tuple[dict[str, object], int]],
    env: dict[str, str],
    seen_at: float,
) -> None:
    """Record the call in each held case (as of `seen_at`), then let each lock go."""
    seen = observe(payload, event, files)
    try:
        record(
            seen,
            host=host,
            workspace=workspace,
            env=env,
            now=seen_at,
            cases=[(str(case["task"]), str(case["dir"]), list(case.get("outside") or []))  # type: ignore[call-overload]
                   for case, _fd in held],
        )  # fmt: skip
        from cortex.kernel.host import hook_log

        # For doctor: when a call was last recorded (before the locks go: readers wait on them).
        hook_log.seen(env, host, "capture")
    finally:
        for _case, fd in held:
            os.close(fd)
