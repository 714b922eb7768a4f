"""The hooks file of a host, composed: Cortex's hook set in, or out, and nothing else touched.

`setup` calls `composer` or `remover` for the file `hooks_location` names; each returns the
file's new bytes (None: nothing to change; empty: the file is to go), the names of what was kept,
and a line per change (shown by `--dry-run`). Claude Code's settings file also gets
`env.MCP_TOOL_TIMEOUT`, the tool timeout Claude Code reads from there (docs/design/hosts.md §7).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cortex.cases.errors import InvalidInputError, RefusedError
from cortex.kernel.host import hooks
from cortex.kernel.host.formats import JsonNumber, dump_json, parse_json
from cortex.kernel.host.program import Program
from cortex.kernel.host.setup import CLAUDE_TOOL_TIMEOUT, Location

Composed = tuple[bytes | None, list[str], list[str]]


def template_digest(host: str) -> str:
    """The digest of the hook set installed for `host`."""
    return hooks.digest(host)


def _read(where: Location, original: bytes | None) -> dict[str, Any]:
    document = {} if original is None else parse_json(where.path, original)
    variables = document.get("env")
    if variables is not None and not isinstance(variables, dict):
        raise InvalidInputError(f"{where.path}: env is not an object")
    return document


def _finish(where: Location, original: bytes | None, document: dict[str, Any]) -> bytes | None:
    """The document's bytes, None if it reads as the original did, b"" if nothing is left."""
    if original is not None and parse_json(where.path, original) == document:
        return None
    if not document:
        return None if original is None else b""
    data = dump_json(document)
    if parse_json(where.path, data) != document:
        raise RefusedError(f"{where.path} would not read back as intended; nothing was written")
    return data


def _timeout(value: object) -> float | None:
    text = value.text if isinstance(value, JsonNumber) else value
    try:
        return float(str(text))
    except ValueError:
        return None


def composer(program: Program, seconds: int) -> Callable[[Location, bytes | None], Composed]:
    """Install the hook set for `program` (and, for Claude Code, its tool timeout)."""

    def edit(where: Location, original: bytes | None) -> Composed:
        document = _read(where, original)
        before = hooks.installed(document)
        groups = hooks.wanted(program, where.host)
        for group in groups.values():
            for hook in group["hooks"]:
                # As parsed numbers are kept (JsonNumber), so the read-back compares like for like.
                hook["timeout"] = JsonNumber(str(hook["timeout"]))
        hooks.install(document, where.path, groups)
        after = hooks.installed(document)
        events = [event for event in after if before.get(event) != after[event]]
        changes = []
        if events:
            shown = hooks.command(program, where.host, "EVENT")
            changes.append(f"{where.path}: hooks {', '.join(events)} run `{shown}`")
        kept = sorted(k for k in document if k not in {"hooks", "env"})
        if where.host == "claude":
            variables = document.setdefault("env", {})
            wanted = seconds * 1000
            had = _timeout(variables.get(CLAUDE_TOOL_TIMEOUT))
            if had is None or had < wanted:
                variables[CLAUDE_TOOL_TIMEOUT] = str(wanted)
                changes.append(f"{where.path}: env.{CLAUDE_TOOL_TIMEOUT} = {wanted} (ms)")
        return _finish(where, original, document), kept, changes

    return edit


def remover(seconds: int) -> Callable[[Location, bytes | None], Composed]:
    """Take Cortex's hooks out (and a tool timeout that is still the one setup would write)."""

    def edit(where: Location, original: bytes | None) -> Composed:
        if original is None:
            return None, [], []
        document = _read(where, original)
        count = hooks.remove(document, where.path)
        changes = [f"{where.path}: {count} cortex hook(s) removed"] if count else []
        variables = document.get("env")
        ours = _timeout((variables or {}).get(CLAUDE_TOOL_TIMEOUT)) == seconds * 1000
        if where.host == "claude" and isinstance(variables, dict) and ours:
            del variables[CLAUDE_TOOL_TIMEOUT]
            changes.append(f"{where.path}: env.{CLAUDE_TOOL_TIMEOUT} removed")
            if not variables:
                del document["env"]
        return _finish(where, original, document), [], changes

    return edit
