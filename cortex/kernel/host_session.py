"""The agent host's session a call belongs to: Claude Code's or Codex's session id.

A host gives every command its model runs, every MCP server it starts and every hook the same
session id (docs/design/hosts.md, "The lease follows the host session"). The faces read it (from
the environment or a hook's payload) and hand it to the Kernel; the lease then treats a caller
from the session that took it as the holder, with no token pasted (docs/design/trust.md,
"Host sessions").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from cortex.cases.digest import sha256_hex

HostName = Literal["claude", "codex"]
SESSION_ID_MAX = 128
"""Longer ids are not a host's: they are refused (and a call then belongs to no session)."""
_SAFE = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_")

ENVIRONMENT: tuple[tuple[HostName, str], ...] = (
    ("claude", "CLAUDE_CODE_SESSION_ID"),
    ("codex", "CODEX_SESSION_ID"),
)
"""Where each host puts its session id for the commands and servers it starts."""


class HostSession(msgspec.Struct, frozen=True):
    """One host session: which host, its session id, and the host process it runs in."""

    # A Struct, not a NamedTuple: building a NamedTuple class costs half a millisecond at import,
    # and this module loads on every call an agent makes.

    host: HostName
    id: str
    process: str | None = None
    """`pid:start time` of the host's own process (Claude Code's `CLAUDE_PID`), or None. A
    `/clear` gives the conversation a new session id in the same process: the process carries
    the lease across it (docs/design/hosts.md, section 5)."""

    @property
    def process_digest(self) -> str | None:
        """What a lease binding keeps of the host process (None: not known)."""
        if self.process is None:
            return None
        return sha256_hex(f"{self.host}-process:{self.process}".encode())

    @property
    def digest(self) -> str:
        """What a lease keeps of the session: sha256 of `host:id`, never the id itself."""
        return sha256_hex(f"{self.host}:{self.id}".encode())

    @property
    def actor(self) -> str:
        """The identity a call of this session acts as when it names none (`claude-3f2c9a1b`).

        The id's first eight characters let a reader match it to the host's transcript; an id
        that is not plain text gives its digest's instead.
        """
        head = self.id[:8]
        if len(head) < 8 or not all(char in _SAFE for char in head):
            head = self.digest[:8]
        return f"{self.host}-{head}"


def session(host: str, value: object) -> HostSession | None:
    """The session `value` names for `host`, or None when it is not a usable session id."""
    if host not in ("claude", "codex") or not isinstance(value, str):
        return None
    if not 0 < len(value) <= SESSION_ID_MAX or not value.isprintable() or value.strip() != value:
        return None
    return HostSession("claude" if host == "claude" else "codex", value)


def default_actor(env: Mapping[str, str], face: str) -> str:
    """Who a face's call acts as when it names no one: $CORTEX_ACTOR, the session, the face.

    A subagent's command carries `CORTEX_AGENT` (put there by the PreToolUse hook,
    docs/design/activity.md section 6): its actor is the session's, then `/` and the subagent.
    """
    found = from_environment(env)
    base = env.get("CORTEX_ACTOR") or (found.actor if found is not None else None)
    if base is None:
        return face
    agent = env.get("CORTEX_AGENT") or ""
    kind, at, head = agent.partition("@")
    plain = kind and at and head.isalnum() and all(c.isalnum() or c in "._-" for c in kind)
    return f"{base}/{agent}" if plain and len(agent) <= 64 else base


def from_environment(env: Mapping[str, str]) -> HostSession | None:
    """The host session a process was started in, from the variables the hosts set."""
    for host, variable in ENVIRONMENT:
        found = session(host, env.get(variable))
        if found is not None:
            return with_process(found, env)
    return None


def with_process(found: HostSession, env: Mapping[str, str]) -> HostSession:
    """`found`, with the host process Claude Code names in `CLAUDE_PID`.

    Its start time is read from /proc where there is one, so a reused pid is another process.
    """
    pid = env.get("CLAUDE_PID") or ""
    if found.host != "claude" or not pid.isdigit() or len(pid) > 10:
        return found
    started = ""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The start time is field 22; the command name (field 2) may hold spaces.
            started = stat.read(4096).rsplit(b")", 1)[-1].split()[19].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        started = ""
    return HostSession(found.host, found.id, f"{pid}:{started}")
