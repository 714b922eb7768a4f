"""The hooks that run on every tool call: PostToolUse, PostToolUseFailure, PreToolUse.

They must cost the agent's turn almost nothing (docs/design/activity.md, section 3), so this
module loads only what an interpreter has at hand: `os`, the C JSON scanner, `fcntl`. The
record itself (redaction, the chain, the fsync) is written by a forked, detached child, which
holds the case's `activity.lock` from before the fork until its record is on disk; the host
waits only for the parent. Every failure is silence (exit 0) and a line for `doctor`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` is not loaded on this path (see the module docstring)
    from collections.abc import Mapping
    from typing import IO

FAST = frozenset({"PostToolUse", "PostToolUseFailure", "PreToolUse"})
RECORDED = {
    "claude": frozenset({"Bash", "Edit", "Write", "MultiEdit", "NotebookEdit"}),
    "codex": frozenset({"Bash"}),
}
EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
PAYLOAD_MAX = 1 << 20
LOCK_WAIT = 1.0
"""Seconds the hook waits, in all, for the cases' locks (a writer holds one for milliseconds)."""
DEADLINE = 3
"""Seconds the hook may take at all (setup gives the tool hooks 5)."""
WRITER_DEADLINE = 20
"""Seconds the detached writer may take before the kernel's SIGALRM ends it, lock and all."""
AGENT_EXPORT = "export CORTEX_AGENT="
"""What PreToolUse puts before a subagent's `cortex` command (section 6): removed when recorded."""


class _Context:
    """What the C scanner needs to read JSON the way `json.loads` does."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: dict[str, str] = {}  # noqa: RUF012 - the scanner's own cache, per process


def loads(text: str) -> object:
    """A JSON value, parsed by the interpreter's C scanner without importing `json`."""
    import _json

    value, end = _json.make_scanner(_Context())(text, 0)  # type: ignore[arg-type]
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: object) -> str:
    """Compact JSON for the host's answer (dicts, lists, strings, numbers, booleans, null)."""
    import _json

    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} is not written here")


def _regular(path: str, flags: int) -> int:
    """A descriptor of `path` if it is a regular file; OSError otherwise (a FIFO cannot hang us)."""
    import stat

    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def _read_small(path: str) -> bytes:
    fd = _regular(path, os.O_RDONLY)
    try:
        return os.read(fd, PAYLOAD_MAX)
    finally:
        os.close(fd)


def _card(env: Mapping[str, str], cwd: str) -> dict[str, object] | None:
    """The capture card of the workspace holding `cwd`, found walking up; None if none."""
    from cortex.cases import digest, state_dir

    root = state_dir.state_dir(env)
    if root is None:
        return None
    directory = os.path.realpath(cwd)
    while True:
        name = digest.sha256_hex(os.fsencode(directory))[:16] + ".json"
        try:
            card = loads(_read_small(os.path.join(root, "hosts", "capture", name)).decode("utf-8"))
        except FileNotFoundError:
            card = None
        if isinstance(card, dict) and card.get("workspace") == directory:
            return _checked(card)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _checked(card: dict[str, object]) -> dict[str, object]:
    """The card with only the cases whose directory is that task's own, in the card's store.

    The card is derived data in the state root: one edited to point elsewhere makes the hook
    write nowhere but in real case directories of its store.
    """
    store = card.get("store")
    cases = card.get("cases") if isinstance(store, str) else None
    kept = []
    for case in cases if isinstance(cases, list) else []:
        task = case.get("task") if isinstance(case, dict) else None
        if not isinstance(task, str) or len(task) != 31 or not task.startswith("task_"):
            continue
        if not task[5:].isalnum() or case.get("dir") != os.path.join(str(store), task):
            continue
        if os.path.isfile(os.path.join(str(store), task, "case.json")):
            kept.append(case)
    return {**card, "cases": kept}


def _lock(case_dir: str, deadline: float) -> int | None:
    """`activity.lock` of a case, exclusive, waited for until `deadline` (`cases.activity.lock`)."""
    import errno
    import fcntl
    import time

    try:
        fd = _regular(os.path.join(case_dir, "activity.lock"), os.O_RDWR | os.O_CREAT)
    except OSError:
        return None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.002)
        else:
            return fd


def _relative(path: str, workspace: str) -> str:
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(workspace, path))
    # The workspace is a real path: resolve the file's directory too (a host may report paths
    # through a symlink), keeping the file's own name.
    full = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    inside = full.startswith(workspace.rstrip(os.sep) + os.sep)
    return os.path.relpath(full, workspace).replace(os.sep, "/") if inside else full


def edited_files(payload: dict[str, object], workspace: str) -> list[str]:
    """The files an Edit/Write-like call touched, relative to the workspace where inside it."""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return []
    found = []
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            found.append(_relative(value, workspace))
    return found


def outside(files: list[str], boundary: list[str]) -> list[str]:
    """The files a boundary does not cover (scope's rule: a file, or a directory ending in /)."""
    exact = {b for b in boundary if not b.endswith("/")}
    directories = tuple(b for b in boundary if b.endswith("/"))
    return [f for f in files if f not in exact and not f.startswith(directories)]


def _warn_once(case_dir: str, files: list[str]) -> list[str]:
    """The files not warned about before in this case; remembers them (by digest)."""
    from cortex.cases import digest

    sha256_hex = digest.sha256_hex
    path = os.path.join(case_dir, "activity.warned")
    try:
        seen = set(_read_small(path).decode("ascii").split())
    except (FileNotFoundError, UnicodeDecodeError):
        seen = set()
    fresh = [f for f in files if sha256_hex(f.encode("utf-8", "surrogateescape")) not in seen]
    if fresh:
        digests = "".join(sha256_hex(f.encode("utf-8", "surrogateescape")) + "\n" for f in fresh)
        fd = _regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, digests.encode("ascii"))
        finally:
            os.close(fd)
    return fresh


def _missed(env: Mapping[str, str], case_dir: str, host: str) -> None:
    """A call not recorded (its case's lock was held too long): counted in the case, and logged."""
    try:
        fd = _regular(os.path.join(case_dir, "activity.dropped"), os.O_WRONLY | os.O_APPEND
                      | os.O_CREAT)  # fmt: skip
        try:
            os.write(fd, b"1\n")
        finally:
            os.close(fd)
    except OSError:
        pass
    from cortex.kernel.host import hook_log

    hook_log.append(env, {"time": hook_log.stamp(), "event": "PostToolUse", "host": host,
                          "error": "activity_lock_busy"})  # fmt: skip


def _boundary_warning(task: str, files: list[str], boundary: list[str]) -> str:
    shown = ", ".join(boundary) if boundary else "(no files)"
    return (
        f"Cortex: {', '.join(files)} is outside the change boundary of case {task} "
        f"({shown}). Undo the edit, or change the plan with a reason "
        f"(cortex case plan {task} ... --reason '<why the boundary moves>') before you verify."
    )


def _pre_tool_use(payload: dict[str, object], host: str) -> dict[str, object] | None:
    """A subagent's `cortex` command gets its name in the environment (section 6)."""
    agent, kind = payload.get("agent_id"), payload.get("agent_type")
    tool_input = payload.get("tool_input")
    if host != "claude" or not isinstance(agent, str) or not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if (
        payload.get("tool_name") != "Bash"
        or not isinstance(command, str)
        or "cortex" not in command
    ):
        return None
    label = agent_label(kind if isinstance(kind, str) else "agent", agent)
    updated = {**tool_input, "command": f"{AGENT_EXPORT}{label}; {command}"}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": updated}}


def agent_label(kind: str, agent_id: str) -> str:
    """`Explore@a430`: the subagent's type and the start of its id, in actor characters."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in kind)[:40] or "agent"
    head = "".join(c for c in agent_id if c.isalnum())[:4] or "0000"
    return f"{safe}@{head}"


def run(argv: list[str], env: Mapping[str, str], stdin: IO[bytes]) -> str:
    """Answer one cheap hook: the text for stdout ("" for nothing). Raises on bad input."""
    event = argv[0]
    host = argv[argv.index("--host") + 1] if "--host" in argv[:-1] else "claude"
    raw = stdin.read(PAYLOAD_MAX + 1)
    if len(raw) > PAYLOAD_MAX:
        raise ValueError("payload_too_large")
    payload = loads(raw.decode("utf-8"))
    if not isinstance(payload, dict):
        raise ValueError("payload_not_object")  # noqa: TRY004 - a name for doctor, not a type
    nothing = "{}\n" if host == "codex" else ""
    if event == "PreToolUse":
        reply = _pre_tool_use(payload, host)
        return nothing if reply is None else dumps(reply) + "\n"
    tool = payload.get("tool_name")
    if tool not in RECORDED.get(host, frozenset()):
        return nothing
    cwd = payload.get("cwd")
    card = _card(env, cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd())
    if card is None or not card.get("capture") or not card.get("cases"):
        return nothing
    workspace = str(card["workspace"])
    cases = [c for c in card["cases"] if isinstance(c, dict)]  # type: ignore[attr-defined]
    files = edited_files(payload, workspace) if tool in EDITS else []
    import time

    warnings = []
    held: list[tuple[dict[str, object], int]] = []
    deadline = time.monotonic() + LOCK_WAIT  # one wait for every case, not one each
    for case in cases:
        boundary = [str(b) for b in case.get("boundary") or []]
        strays = outside(files, boundary)
        case["outside"] = strays
        if strays and case.get("status") == "changing":
            fresh = _warn_once(str(case["dir"]), strays)
            if fresh:
                warnings.append(_boundary_warning(str(case["task"]), fresh, boundary))
        fd = _lock(str(case["dir"]), deadline)
        if fd is not None:
            held.append((case, fd))
        else:
            _missed(env, str(case["dir"]), host)
    if held:
        _spawn_writer(
            payload, event=event, host=host, workspace=workspace, files=files, held=held, env=env,
            seen_at=time.time(),
        )  # fmt: skip
    if not warnings:
        return nothing
    text = "\n".join(warnings)
    event_name = "PostToolUse" if event == "PostToolUseFailure" else event
    reply = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    return dumps(reply) + "\n"


def _spawn_writer(
    payload: dict[str, object],
    *,
    event: str,
    host: str,
    workspace: str,
    files: list[str],
    held: list[tuple[dict[str, object], int]],
    env: Mapping[str, str],
    seen_at: float,
) -> None:
    """Fork the child that writes the records; the parent returns at once."""
    pid = os.fork()
    if pid:
        for _case, fd in held:
            os.close(fd)  # the child's copies keep the locks until its records are on disk
        return
    code = 0
    try:
        import signal

        signal.alarm(WRITER_DEADLINE)  # a writer that hangs must not hold the lock for ever
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        from cortex.hooks.record import write

        write(
            payload, event=event, host=host, workspace=workspace, files=files, held=held,
            env=dict(env), seen_at=seen_at,
        )  # fmt: skip
    except BaseException:  # noqa: BLE001 - a detached child reports through hooks.log only
        code = 1
        try:
            from cortex.kernel.host import hook_log

            record = {"time": hook_log.stamp(), "event": event, "host": host}
            hook_log.append(dict(env), {**record, "error": "capture_write"})
        except BaseException:  # noqa: BLE001, S110 - nothing left to tell anyone
            pass
    finally:
        os._exit(code)


def main(argv: list[str], env: Mapping[str, str], stdin: IO[bytes], stdout: IO[str]) -> int:
    """The cheap hooks' process: answer, or on any failure answer nothing; always exit 0."""
    import signal

    host = argv[argv.index("--host") + 1] if "--host" in argv[:-1] else "claude"
    try:
        previous = signal.signal(signal.SIGALRM, _expire)
    except ValueError:  # not the main thread (an in-process caller): no deadline
        previous = None
    else:
        signal.alarm(DEADLINE)
    try:
        text = run(argv, env, stdin)
    except (Exception, _Late) as exc:  # noqa: BLE001 - a hook fails open, always
        text = "{}\n" if host == "codex" else ""
        from cortex.kernel.host import hook_log

        named = isinstance(exc, ValueError) and str(exc).startswith("payload_")
        kind = str(exc) if named else "deadline" if isinstance(exc, _Late) else type(exc).__name__
        hook_log.append(dict(env), {"time": hook_log.stamp(), "event": argv[0] if argv else "?",
                                    "host": host, "error": kind})  # fmt: skip
    finally:
        if previous is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    try:
        stdout.write(text)
        stdout.flush()
    except (OSError, ValueError):
        pass
    return 0


class _Late(BaseException):
    """The hook ran past its deadline (a disk that hangs): it answers nothing and goes."""


def _expire(_signum: int, _frame: object) -> None:
    raise _Late
