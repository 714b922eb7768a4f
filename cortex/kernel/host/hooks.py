"""The hook set `cortex setup` installs, and how it goes into (and out of) a host's hooks file.

Claude Code (`.claude/settings.json`, `~/.claude/settings.json`, a plugin's `hooks/hooks.json`)
and Codex (`hooks.json`) read the same shape: `{"hooks": {EVENT: [{"matcher": M, "hooks":
[{"type": "command", "command": C, "timeout": S}]}]}}`. Setup owns exactly the hook entries whose
command runs `cortex hook`; every other entry, group, event and key is kept, in order
(docs/design/hosts.md, section 7).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from cortex.cases.digest import sha256_hex
from cortex.cases.errors import InvalidInputError
from cortex.kernel.host.program import Program

# (event, matcher, timeout in seconds) per host. The timeouts leave room beyond the hook's own
# deadline (cortex.hooks.entry), so a slow hook is a logged failure, not a host timeout.
TEMPLATE: dict[str, tuple[tuple[str, str | None, int], ...]] = {
    "claude": (
        ("SessionStart", None, 15),
        ("UserPromptSubmit", None, 10),
        ("Stop", None, 15),
        ("SubagentStop", None, 15),
        ("PreCompact", None, 10),
        ("PreToolUse", "Bash", 5),
        ("PostToolUse", "Bash|Edit|Write|MultiEdit|NotebookEdit", 5),
        ("PostToolUseFailure", "Bash|Edit|Write|MultiEdit|NotebookEdit", 5),
    ),
    "codex": (
        ("SessionStart", None, 15),
        ("UserPromptSubmit", None, 10),
        ("Stop", None, 15),
        ("PostToolUse", "Bash", 5),
    ),
}
DIGEST = re.compile(r"--template\s+([0-9a-f]{12})\b")


def digest(host: str) -> str:
    """12 hex of the hook set's sha256: what `--template` carries and `doctor` compares."""
    return sha256_hex(json.dumps([host, TEMPLATE[host]]).encode())[:12]


def command(program: Program, host: str, event: str) -> str:
    """The command line of one hook."""
    words = f"{program.hook(host)} hook {event}"
    if host != "claude":
        words += f" --host {host}"
    return f"{words} --template {digest(host)}"


def ours(entry: object) -> bool:
    """Whether a hook entry is one Cortex installed: its command *runs* `cortex hook`.

    The program is the command's first word: a `cortex` (bare, a path, under
    `$CLAUDE_PROJECT_DIR`), or a Python with `-m cortex`; a command that only mentions
    `cortex hook` somewhere (`echo cortex hook`) is someone else's.
    """
    if not isinstance(entry, dict):
        return False
    text = entry.get("command")
    if not isinstance(text, str):
        return False
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program.startswith("python") and words[1:3] == ["-m", "cortex"]:
        words = ["cortex", *words[3:]]
    elif program != "cortex":
        return False
    # Exactly the shape setup writes: a person's own command that runs cortex hook among other
    # things (`cortex hook Stop && notify-send ...`) is theirs, and kept.
    if len(words) < 3 or words[1] != "hook" or not words[2].replace("-", "").isalpha():
        return False
    rest = words[3:]
    while rest[:1] in (["--host"], ["--template"]) and len(rest) >= 2:
        rest = rest[2:]
    return not rest


def wanted(program: Program, host: str) -> dict[str, dict[str, Any]]:
    """Each event's matcher group of the hook set, as it is written."""
    groups: dict[str, dict[str, Any]] = {}
    for event, matcher, timeout in TEMPLATE[host]:
        hook = {"type": "command", "command": command(program, host, event), "timeout": timeout}
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [hook]
        groups[event] = group
    return groups


def _check(path: str, hooks: object) -> dict[str, Any]:
    """The `hooks` object, refused when it is not the shape both hosts read."""
    if not isinstance(hooks, dict):
        raise InvalidInputError(f"{path}: hooks is not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise InvalidInputError(f"{path}: hooks.{event} is not a list")
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise InvalidInputError(f"{path}: hooks.{event} holds a group that is not one")
    return hooks


def install(document: dict[str, Any], path: str, groups: dict[str, dict[str, Any]]) -> None:
    """Put the hook set into `document`, every other entry kept where it is.

    Cortex's entries in events the set no longer has go. In an event it has, Cortex's entry is
    replaced where it stands when its group has the wanted matcher (a person's hooks added to
    that group stay in it); otherwise the wanted group takes the place of the first group that
    held a Cortex entry, or comes last.
    """
    hooks = _check(path, document.setdefault("hooks", {}))
    for event in [name for name in hooks if name not in groups]:
        _strip(hooks[event])
        if not hooks[event]:
            del hooks[event]
    for event, group in groups.items():
        existing = hooks.get(event, [])
        if not _replace_in_place(existing, group):
            place = _strip(existing)
            existing.insert(len(existing) if place is None else place, group)
        hooks[event] = existing


def _replace_in_place(groups: list[Any], wanted: dict[str, Any]) -> bool:
    """Swap Cortex's entry inside the one group with the wanted matcher; False if none is."""
    matcher = wanted.get("matcher")
    holders = [g for g in groups if any(ours(h) for h in g.get("hooks", []))]
    if len(holders) != 1 or holders[0].get("matcher") != matcher:
        return False
    group = holders[0]
    entries = group.get("hooks", [])
    mine = [i for i, h in enumerate(entries) if ours(h)]
    # A person's own keys on Cortex's entry (`statusMessage`, a longer timeout) stay.
    old, new = entries[mine[0]], dict(wanted["hooks"][0])
    kept = old.get("timeout")
    longer = (_seconds(kept) or 0.0) > (_seconds(new["timeout"]) or 0.0)
    entries[mine[0]] = {**old, **new, "timeout": kept if longer else new["timeout"]}
    for index in reversed(mine[1:]):
        del entries[index]
    return True


def _seconds(value: object) -> float | None:
    """A timeout as a number (a JsonNumber keeps its text), or None when it is not one."""
    text = getattr(value, "text", value)
    if isinstance(text, bool):
        return None
    try:
        return float(str(text))
    except ValueError:
        return None


def remove(document: dict[str, Any], path: str) -> int:
    """Take Cortex's hook entries out of `document`; returns how many there were."""
    if "hooks" not in document:
        return 0
    hooks = _check(path, document["hooks"])
    before = sum(_count(groups) for groups in hooks.values())
    for event in list(hooks):
        _strip(hooks[event])
        if not hooks[event]:
            del hooks[event]
    if not hooks:
        del document["hooks"]
    return before


def _count(groups: list[Any]) -> int:
    return sum(1 for g in groups for h in g.get("hooks", []) if ours(h))


def _strip(groups: list[Any]) -> int | None:
    """Remove Cortex's entries in place; the index of the first group that held one, if any.

    A group left empty by the removal goes too; a group that was empty before stays.
    """
    first: int | None = None
    kept: list[Any] = []
    for group in groups:
        entries = group.get("hooks", [])
        mine = [h for h in entries if ours(h)]
        if mine and first is None:
            first = len(kept)
        if mine:
            rest = [h for h in entries if not ours(h)]
            if not rest:
                continue
            group["hooks"] = rest
        kept.append(group)
    groups[:] = kept
    return first


def installed(document: object) -> dict[str, list[str]]:
    """Cortex's hook commands in a hooks document, by event (for `doctor`)."""
    found: dict[str, list[str]] = {}
    hooks = document.get("hooks") if isinstance(document, dict) else None
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for hook in entries if isinstance(entries, list) else []:
                if ours(hook):
                    found.setdefault(event, []).append(hook["command"])
    return found
