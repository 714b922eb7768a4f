"""Recording what the host saw the agent do, and reading it back (docs/design/activity.md).

`record` is the capture hook's writer: it runs in the hook's detached child, with the cases'
`activity.lock` already held, and appends one redacted record per case. Everything it writes
passes through the repository's redactor, configured literals included, as every write does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from cortex.cases import activity
from cortex.cases.ids import new_id
from cortex.cases.redact import Redactor
from cortex.cases.scrub import scrub
from cortex.kernel.activity import test_runs
from cortex.kernel.host_session import HostSession, session
from cortex.kernel.kernel import format_time


class Observation(msgspec.Struct, kw_only=True):
    """One tool call as the face read it from the host's payload (unredacted, in memory only)."""

    tool: str
    command: str | None
    files: list[str]
    exit: int | None
    failed: bool
    duration_ms: int | None
    output: str
    """The tool's output, only to find a test run's summary line in: never stored."""
    agent: str | None
    """The subagent's label (`Explore@a430`), or None for the session's own agent."""
    session: str | None


def actor(env: Mapping[str, str], host: str, session_id: str | None, agent: str | None) -> str:
    """Who made the call: $CORTEX_ACTOR or the session's actor, and the subagent after a `/`."""
    found: HostSession | None = session(host, session_id)
    base = env.get("CORTEX_ACTOR") or (found.actor if found is not None else host)
    return base if agent is None else f"{base}/{agent}"


_SEGMENTS = re.compile(r"(\s*(?:&&|\|\||[;|\n])\s*)")
_CORTEX_WORDS = 4
"""Words of a `cortex` command kept (`cortex case evidence add`): its arguments are the case's
own records, which keep them; the activity keeps only what was run, so a forgotten record's
text is never also here (docs/design/activity.md, section 1)."""


def elide_cortex_arguments(command: str) -> str:
    """`command` with every `cortex ...` segment cut to its subcommand (and a task id)."""
    parts = _SEGMENTS.split(command)
    for index in range(0, len(parts), 2):
        words = parts[index].split()
        at = next((i for i, w in enumerate(words[:3]) if w.rsplit("/", 1)[-1] == "cortex"), None)
        if at is None:
            continue
        kept = [w for w in words[at : at + _CORTEX_WORDS] if not w.startswith("-")]
        task = next((w for w in words if w.startswith("task_")), None)
        if task is not None and task not in kept:
            kept.append(task)
        parts[index] = " ".join([*words[:at], *kept, "…"])
    return "".join(parts)


REDACT_READ = 64 * 1024
"""Characters of a command read at all; a longer one is cut at a word boundary first."""


def _first_part(text: str) -> str:
    """`text`, or its first REDACT_READ characters up to the last whitespace (no word halved)."""
    if len(text) <= REDACT_READ:
        return text
    head = text[:REDACT_READ]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return (head[:cut] if cut > 0 else "") + " [cut]"


def build(seen: Observation, *, host: str, env: Mapping[str, str], now: float) -> activity.Activity:
    """The record of one call (before redaction, chaining and its position)."""
    entry = activity.Activity(
        id=new_id("act"),
        n=0,
        timestamp=format_time(now),
        tool=seen.tool,
        actor=actor(env, host, seen.session, seen.agent),
        session=actor(env, host, seen.session, None),
        # Cut only after redaction (`record`): a secret cut in two would lose its shape.
        command=None if seen.command is None else _first_part(elide_cortex_arguments(seen.command)),
        files=seen.files[:16],
        exit=seen.exit,
        failed=seen.failed,
        duration_ms=seen.duration_ms,
    )
    kind = test_runs.runner(seen.command) if seen.command else None
    if kind is not None:
        line, says_failed = test_runs.summary(kind, seen.output)
        entry.runner = kind
        entry.summary = line
        status = seen.exit if seen.exit is not None else (1 if seen.failed else None)
        result = test_runs.outcome(status, says_failed)
        entry.outcome = "failed" if result == "failed" else "passed" if result else None
    return entry


def record(
    seen: Observation,
    *,
    host: str,
    workspace: str,
    env: Mapping[str, str],
    now: float,
    cases: list[tuple[str, str, list[str]]],
) -> None:
    """Append the call, seen at `now`, to each case (`(task id, case directory, files outside)`)."""
    from cortex.kernel.config import load_config

    redactor = Redactor(load_config(workspace, env).redact_literals)
    if seen.agent is not None and redactor.looks_secret(seen.agent):
        # A subagent's label is part of an actor name: one that looks secret is replaced whole.
        from cortex.cases.digest import sha256_hex

        seen.agent = "agent@" + sha256_hex(seen.agent.encode())[:4]
    base = build(seen, host=host, env=env, now=now)
    for task_id, case_dir, strays in cases:
        entry = msgspec.structs.replace(base, outside=strays)
        clean, _ = scrub(entry, redactor)
        activity.append(case_dir, task_id, clean)
