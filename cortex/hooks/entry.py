"""`cortex hook EVENT [--host claude|codex] [--template DIGEST]`: read, decide, answer, never fail.

Everything a hook can go wrong on (arguments, the payload, the workspace, the store, a slow disk,
a bug) ends the same way: the host gets the "nothing to say" answer and exit 0, and one line
goes to `hooks.log` for `doctor` (docs/design/hosts.md, section 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

PAYLOAD_MAX = 1 << 20
"""A host's payload is a few KiB; a larger one is refused unread."""
DEADLINE = {"PostToolUse": 2, "PostToolUseFailure": 2, "PreToolUse": 2}
DEADLINE_DEFAULT = 8
"""Seconds a hook may take before it gives up (the timeouts `setup` writes are longer)."""
HOSTS = ("claude", "codex")
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
)
_BY_KEY = {name.lower(): name for name in EVENTS}
USAGE = (
    "usage: cortex hook EVENT [--host claude|codex] [--template DIGEST]\n"
    "Answers an agent host's hook; the payload is read from stdin. EVENT is one of: "
    + ", ".join(EVENTS)
    + ". Installed by `cortex setup claude|codex`; see docs/design/hosts.md.\n"
)


class HookInputError(Exception):
    """A failure with a name `doctor` can show (never a message quoting the payload)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class Deadline(BaseException):
    """The hook ran past its own deadline (a BaseException: no handler of the kernel eats it)."""


class Call:
    """One hook call: the event, the host, its payload and the process's environment."""

    def __init__(
        self, event: str, host: str, payload: dict[str, Any], env: Mapping[str, str]
    ) -> None:
        self.event = event
        self.host = host
        self.payload = payload
        self.env = env

    @property
    def cwd(self) -> str:
        """Where the agent is: the payload's `cwd`, else the host's project, else ours."""
        for value in (self.payload.get("cwd"), self.env.get("CLAUDE_PROJECT_DIR")):
            if isinstance(value, str) and os.path.isabs(value):
                return value
        return os.getcwd()


def parse(argv: list[str]) -> tuple[str, str, str | None]:
    """The event, the host and the template digest; HookInputError when they cannot be read."""
    event: str | None = None
    host = "claude"
    template: str | None = None
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word in {"--host", "--template"}:
            if not rest:
                raise HookInputError("missing_value")
            value = rest.pop(0)
            if word == "--host":
                host = value
            else:
                template = value
        elif event is None and not word.startswith("-"):
            event = _BY_KEY.get(word.replace("-", "").replace("_", "").lower())
            if event is None:
                raise HookInputError("unknown_event")
        else:
            raise HookInputError("unknown_argument")
    if event is None:
        raise HookInputError("missing_event")
    if host not in HOSTS:
        raise HookInputError("unknown_host")
    return event, host, template


def read_payload(stdin: IO[bytes]) -> dict[str, Any]:
    """The JSON object on stdin (bounded); HookInputError for anything else."""
    data = stdin.read(PAYLOAD_MAX + 1)
    if len(data) > PAYLOAD_MAX:
        raise HookInputError("payload_too_large")
    try:
        payload = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise HookInputError("payload_not_json") from None
    if not isinstance(payload, dict):
        raise HookInputError("payload_not_object")
    return payload


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Raise `Deadline` in this (main) thread once `seconds` have passed."""

    def expire(_signum: int, _frame: object) -> None:
        raise Deadline

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread (a test calling in-process): no deadline
        yield
        return
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def answer(host: str, reply: dict[str, Any] | None) -> str:
    """The text to print: the reply as JSON, or the host's "nothing to say"."""
    if reply is None:
        # Codex's documentation is unsure whether an empty answer is valid; `{}` is either way.
        return "{}\n" if host == "codex" else ""
    return json.dumps(reply, ensure_ascii=False) + "\n"


def run(
    argv: list[str],
    env: Mapping[str, str],
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    handlers: Mapping[str, Callable[[Call], dict[str, Any] | None]] | None = None,
) -> int:
    """Answer one hook; always exit 0. `handlers` replaces `events.HANDLERS` (tests only)."""
    if argv and argv[0] in {"-h", "--help"}:
        stdout.write(USAGE)
        return 0
    host = "claude"
    reply: dict[str, Any] | None = None
    event = "?"
    template: str | None = None
    try:
        event, host, template = parse(argv)
        from cortex.hooks.capture import FAST

        if event in FAST:  # spelled another way than the launcher's fast path looks for
            from cortex.hooks.capture import main as cheap

            rest = [word for word in argv if word.startswith("-") or word in {host, template}]
            return cheap([event, *rest], env, stdin, stdout)
        with deadline(DEADLINE.get(event, DEADLINE_DEFAULT)):
            call = Call(event, host, read_payload(stdin), env)
            if handlers is None:
                from cortex.hooks.events import HANDLERS

                handlers = HANDLERS
            reply = handlers[event](call)
        _seen(env, host, event)
    except SystemExit:
        reply = None
    except (Exception, Deadline) as exc:  # noqa: BLE001 - a hook fails open, always
        reply = None
        _failed(env, exc, stderr, event=event, host=host, template=template)
    try:
        stdout.write(answer(host, reply))
        stdout.flush()
    except (OSError, ValueError):
        pass  # the host stopped reading: nothing left to tell it
    return 0


def _kind(exc: BaseException) -> str:
    if isinstance(exc, HookInputError):
        return exc.kind
    if isinstance(exc, Deadline):
        return "deadline"
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else type(exc).__name__


def _failed(
    env: Mapping[str, str],
    exc: BaseException,
    stderr: IO[str],
    *,
    event: str,
    host: str,
    template: str | None,
) -> None:
    """One line for `doctor`, and one for a person reading the host's hook output."""
    from cortex.kernel.host import hook_log

    kind = _kind(exc)
    record: dict[str, object] = {"time": hook_log.stamp(), "event": event, "host": host}
    record["error"] = kind
    if template is not None:
        record["template"] = template[:32]
    hook_log.append(env, record)
    with contextlib.suppress(OSError, ValueError):
        stderr.write(f"cortex hook {event}: {kind}; nothing was changed (see `cortex doctor`)\n")
    if env.get("CORTEX_DEBUG"):
        import traceback

        traceback.print_exception(exc, file=stderr)


def _seen(env: Mapping[str, str], host: str, event: str) -> None:
    from cortex.kernel.host import hook_log

    hook_log.seen(env, host, event)
