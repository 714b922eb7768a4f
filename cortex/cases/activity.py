"""`activity.jsonl`: what the host saw the agent do, chained like a ledger (design: activity.md).

Appended by the capture hook outside any transaction, under `activity.lock` (never the case
lock), so a tool call never waits for a commit. Every line carries its position `n` and the hash
of the line before (`prev`); every commit's audit line anchors the last complete line (`n`,
`tip`), so `audit` detects an edited, dropped or reordered record, and a cut back to the last
commit. A torn last line (a killed writer) is skipped by readers and cut by the next append.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from typing import Literal

import msgspec

from cortex.cases import ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import (
    APPEND_FLAGS,
    FILE_MODE,
    check_single_link,
    write_all,
)
from cortex.cases.layout import ACTIVITY_LOCK
from cortex.cases.records import ActivityAnchor as Anchor

FILE = "activity.jsonl"
LOCK = ACTIVITY_LOCK
DROPPED = "activity.dropped"
WARNED = "activity.warned"
RECORD_MAX = 4 * 1024
"""Bytes in one line; longer fields are cut before this is reached."""
RECORDS_MAX = 20_000
"""Records a case keeps; past it, calls are counted in `activity.dropped` instead."""
COMMAND_MAX = 2 * 1024
READ_MAX = RECORDS_MAX * RECORD_MAX
LOCK_WAIT = 2.0
"""Seconds a reader waits for a capture still writing (it holds the lock for milliseconds)."""
Outcome = Literal["passed", "failed"]


class Activity(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename="camel",
               omit_defaults=True):  # fmt: skip
    """One tool call the host reported (docs/design/activity.md, section 1)."""

    id: str
    n: int
    timestamp: str
    tool: str
    actor: str
    command: str | None = None
    files: list[str] = msgspec.field(default_factory=list)
    exit: int | None = None
    failed: bool = False
    duration_ms: int | None = None
    runner: str | None = None
    summary: str | None = None
    outcome: Outcome | None = None
    outside: list[str] = msgspec.field(default_factory=list)
    """Files of `files` outside the plan's boundary when the call ran."""
    session: str | None = None
    prev: str = ""


def genesis(task_id: str) -> str:
    """The `prev` of the first record: ties the chain to one case (as the ledgers' genesis)."""
    return sha256_hex(f"cortex-ledger/v1\0{task_id}\0activity".encode())


def _read(path: str) -> bytes:
    try:
        fd = _open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        chunks: list[bytes] = []
        remaining = READ_MAX + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _complete(data: bytes) -> tuple[list[bytes], int]:
    """The complete lines (without newlines) and the length they span; a torn tail left out."""
    end = data.rfind(b"\n") + 1
    return (data[:end].split(b"\n")[:-1] if end else []), end


def last(case_dir: str) -> Anchor | None:
    """The last complete record's position and hash (None: no record yet).

    A capture still writing (it made the lock before it forked) is waited for, briefly, so a
    commit right after a tool call anchors that call's record.
    """
    if not os.path.exists(os.path.join(case_dir, LOCK)):
        return None  # no capture ever ran for this case: the common case, one stat
    held = lock(case_dir, shared=True)
    try:
        lines, _ = _complete(_tail(os.path.join(case_dir, FILE)))
    finally:
        unlock(held)
    if not lines:
        return None
    try:
        record = msgspec.json.decode(lines[-1], type=Activity)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return Anchor(n=record.n, tip=sha256_hex(lines[-1]))


def _open(path: str, flags: int) -> int:
    """A descriptor of `path` that is a regular file (never a FIFO, a device or a symlink).

    O_NONBLOCK, so a FIFO put in a file's place cannot hang a hook or a reader on the open.
    """
    import stat

    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IntegrityError(f"{path} is not a regular file", path=path)
    return fd


def _tail(path: str) -> bytes:
    """The end of the file from its last complete line's start (b"" when there is none).

    Reads back from the end until a line boundary before the last complete line is found, so a
    line of any length (or a torn tail longer than a record) is never misread as the start.
    """
    try:
        fd = _open(path, os.O_RDONLY)
    except (FileNotFoundError, IntegrityError, OSError):
        return b""
    try:
        size = os.fstat(fd).st_size
        step = 2 * RECORD_MAX
        while True:
            start = max(0, size - step)
            data = os.pread(fd, size - start, start)
            end = data.rfind(b"\n")
            begin = data.rfind(b"\n", 0, end) if end > 0 else -1
            if start == 0 or begin >= 0:
                return data if start == 0 else data[begin + 1 :]
            step *= 2
    finally:
        os.close(fd)


def lock(case_dir: str, *, shared: bool, wait: float = LOCK_WAIT) -> int | None:
    """Take `activity.lock`; the descriptor, or None if it could not be had within `wait`.

    The capture hook holds it (exclusive) from before it forks until its record is on disk;
    readers take it shared, so they see every record of a tool call that has returned.
    """
    # A reader never creates the lock: where there is none, no capture ever ran to wait for.
    flags = os.O_RDONLY if shared else os.O_RDWR | os.O_CREAT
    try:
        fd = _open(os.path.join(case_dir, LOCK), flags)
    except (OSError, IntegrityError):
        return None
    deadline = time.monotonic() + wait
    mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    while True:
        try:
            fcntl.flock(fd, mode)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.005)
        else:
            return fd


def unlock(fd: int | None) -> None:
    """Release a lock `lock` returned."""
    if fd is not None:
        os.close(fd)


def append(case_dir: str, task_id: str, record: Activity) -> Activity | None:
    """Chain and append one record (the caller holds the lock); None when the case is full.

    A torn tail is cut first; `n` and `prev` are set here.
    """
    path = os.path.join(case_dir, FILE)
    data = _tail(path)
    lines, end = _complete(data)
    if end != len(data):
        _cut_torn_tail(path, len(data) - end)
    previous = None
    if lines:
        previous = msgspec.json.decode(lines[-1], type=Activity)
    elif _size(path):
        msg = f"{path} holds no complete record to chain on; it is not appended to"
        raise IntegrityError(msg, path=path)
    n = 1 if previous is None else previous.n + 1
    if n > RECORDS_MAX:
        count_dropped(case_dir)
        return None
    record.n = n
    record.prev = genesis(task_id) if previous is None else sha256_hex(lines[-1])
    line = bounded(record)
    fd = _open(path, APPEND_FLAGS)
    try:
        check_single_link(fd, path)
        write_all(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return record


PATH_MAX = 512
"""Characters kept of one file path in a record (a longer one is cut, marked)."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 6] + " [cut]"


def bounded(record: Activity) -> bytes:
    """The record's line, cut to RECORD_MAX: command, paths and summary cut, then counted.

    Every field that can grow is cut before encoding; a line still over the bound is refused.
    """
    record.files = [_cut(f, PATH_MAX) for f in record.files[:8]]
    record.outside = [_cut(f, PATH_MAX) for f in record.outside[:8]]
    if record.command is not None:
        record.command = _cut(record.command, COMMAND_MAX)
    if record.summary is not None:
        record.summary = _cut(record.summary, 256)
    line = msgspec.json.encode(record) + b"\n"
    if len(line) > RECORD_MAX:
        record.command = None if record.command is None else _cut(record.command, COMMAND_MAX // 4)
        record.files, record.outside = record.files[:2], record.outside[:2]
        line = msgspec.json.encode(record) + b"\n"
    if len(line) > RECORD_MAX:
        raise IntegrityError(f"an activity record of {len(line)} bytes is over {RECORD_MAX}")
    return line


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def _cut_torn_tail(path: str, torn: int) -> None:
    size = os.stat(path).st_size
    os.truncate(path, size - torn)


def count_dropped(case_dir: str) -> None:
    """Count one tool call that was not recorded (the case was full, or its lock was held)."""
    fd = _open(os.path.join(case_dir, DROPPED), APPEND_FLAGS)
    try:
        write_all(fd, b"1\n")
    finally:
        os.close(fd)


def dropped(case_dir: str) -> int:
    """How many tool calls were not recorded because the case was full."""
    try:
        return os.stat(os.path.join(case_dir, DROPPED)).st_size // 2
    except OSError:
        return 0


class Log(msgspec.Struct, kw_only=True):
    """A case's activity as read: the records in order, and what did not check out."""

    records: list[Activity] = msgspec.field(default_factory=list)
    problems: list[str] = msgspec.field(default_factory=list)
    hashes: list[str] = msgspec.field(default_factory=list)
    """Each record's line hash (what an anchor's `tip` names), in order."""
    dropped: int = 0


def read(case_dir: str, task_id: str, *, wait: float = LOCK_WAIT) -> Log:
    """Every complete record, its chain checked; waits (bounded) for a capture still writing."""
    held = lock(case_dir, shared=True, wait=wait)
    try:
        data = _read(os.path.join(case_dir, FILE))
    except IntegrityError as exc:
        return Log(problems=[exc.message], dropped=dropped(case_dir))
    finally:
        unlock(held)
    log = Log(dropped=dropped(case_dir))
    lines, _ = _complete(data)
    prev = genesis(task_id)
    for index, line in enumerate(lines, start=1):
        if ledger.recorded_hash(line) is not None:
            # Activity keeps no cortex command's arguments, so nothing in it is ever forgotten:
            # a tombstone here was written by hand, to change a record and keep the chain.
            log.problems.append(f"{FILE} line {index} is a tombstone: activity is never forgotten")
            break
        try:
            record = msgspec.json.decode(line, type=Activity)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.problems.append(f"{FILE} line {index} does not decode ({exc})")
            break
        if record.n != index or record.prev != prev:
            log.problems.append(
                f"{FILE} line {index} ({record.id}) breaks the chain: a record was edited, "
                "dropped or reordered"
            )
            break
        prev = sha256_hex(line)
        log.records.append(record)
        log.hashes.append(prev)
    return log


def check_anchors(log: Log, anchors: list[Anchor]) -> list[str]:
    """What the commits' anchors say is wrong with the log (empty: it holds up)."""
    problems: list[str] = []
    high = 0
    for anchor in anchors:
        if anchor.n < high:
            problems.append(f"an activity anchor goes back from record {high} to {anchor.n}")
        high = max(high, anchor.n)
        if anchor.n > len(log.hashes):
            problems.append(
                f"a commit anchored activity record {anchor.n}, but {FILE} holds only "
                f"{len(log.hashes)}: records were cut"
            )
        elif log.hashes[anchor.n - 1] != anchor.tip:
            problems.append(f"activity record {anchor.n} is not the one a commit anchored")
    return problems
