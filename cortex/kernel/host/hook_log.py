"""`<state root>/hooks.log`: what went wrong inside a hook, for `doctor` (docs/design/hosts.md §2).

A hook never breaks the host's turn, so its failures are silent there; they are written here
instead, one JSON line each, and `doctor` reports the latest. A line names the event, the host,
the kind of failure (an exception type or a Cortex error code) and the hook set's template
digest, never the payload or a message that could quote it. A hook that ran touches
`hosts/seen/<host>.<event>` instead of writing a line, so `doctor` can say when each event last
ran without the log growing on every tool call. The file is cut to its newer half when it passes
`LOG_MAX`. Standard library only, so the cheapest hook can write it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Mapping

from cortex.cases.state_dir import state_dir

LOG_NAME = "hooks.log"
LOG_MAX = 256 * 1024
READ_MAX = 2 * LOG_MAX


def path(state_root: str) -> str:
    """Where the log lives under a state root."""
    return os.path.join(state_root, LOG_NAME)


def append(env: Mapping[str, str], record: dict[str, object]) -> None:
    """Add one line (best effort: a log that cannot be written is not worth failing over)."""
    state_root = state_dir(env)
    if state_root is None:
        return
    line = (json.dumps(record, separators=(",", ":"), ensure_ascii=True) + "\n").encode()
    target = path(state_root)
    try:
        os.makedirs(state_root, mode=0o700, exist_ok=True)
        # O_NONBLOCK: a FIFO put in the log's place must not hang a hook (and is not written).
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(target, flags, 0o600)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        os.write(fd, line)
        size = os.fstat(fd).st_size
    except OSError:
        return
    finally:
        os.close(fd)
    if size > LOG_MAX:
        _halve(target)


def _halve(target: str) -> None:
    """Keep the newer half, whole lines only; a concurrent append may be lost, never torn."""
    try:
        with open(target, "rb") as file:
            data = file.read(READ_MAX)
        keep = data[len(data) // 2 :]
        keep = keep[keep.find(b"\n") + 1 :]
        temp = f"{target}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, keep)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError:
        return


def read(state_root: str) -> list[dict[str, object]]:
    """Every readable line, oldest first (a torn or foreign line is skipped)."""
    try:
        with open(path(state_root), "rb") as file:
            data = file.read(READ_MAX)
    except OSError:
        return []
    records: list[dict[str, object]] = []
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def seen(env: Mapping[str, str], host: str, event: str) -> None:
    """Mark that `event` of `host` ran now (best effort)."""
    state_root = state_dir(env)
    if state_root is None:
        return
    marker = os.path.join(state_root, "hosts", "seen", f"{host}.{event}")
    try:
        os.utime(marker)
    except FileNotFoundError:
        try:
            os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        except OSError:
            return
    except OSError:
        return


def last_seen(state_root: str) -> dict[str, float]:
    """When each `host.event` last ran, by its marker's time."""
    directory = os.path.join(state_root, "hosts", "seen")
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    found: dict[str, float] = {}
    for name in names:
        try:
            found[name] = os.stat(os.path.join(directory, name)).st_mtime
        except OSError:
            continue
    return found


def stamp() -> str:
    """The time a line records (UTC, seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
