r"""Append-only JSONL ledgers: line format, hash chain, appends, committed reads, torn tails.

A line is one compact JSON object plus `\\n`. JSON encoding escapes every control character, so
no field value can split a record into two physical lines (and so forge one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TypeVar

import msgspec

from cortex.cases import _crash
from cortex.cases.bounds import LEDGER_RECORD_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.fsio import (
    APPEND_FLAGS,
    FILE_MODE,
    check_single_link,
    open_for_read,
    write_all,
)
from cortex.cases.records import LineMeta, decode, encode

_R = TypeVar("_R")
_CHUNK = 1 << 20
_SCAN_BACK = 64 * 1024
_ID_READ = 64
"""Bytes read after `{"id":"` to take a record's id (every id is far shorter)."""
TAIL_SCAN_MAX = 64 * 1024 * 1024
"""Uncommitted bytes a writer will inspect before calling the tail foreign (see recovery)."""


def genesis(task_id: str, ledger: str) -> str:
    """The `prev` of a ledger's first line: ties the chain to one case and one ledger."""
    return sha256_hex(f"cortex-ledger/v1\0{task_id}\0{ledger}".encode())


FORGOTTEN_MEMBER = b',"forgotten":"'
"""How a tombstone ends, before its recorded hash, `"}` and padding. JSON escapes every quote
inside a string, so these bytes can only be that member (docs/design/storage.md)."""
_TOMBSTONE_TAIL = len(FORGOTTEN_MEMBER) + 64 + 2
_HEX = frozenset(b"0123456789abcdef")


def recorded_hash(line: bytes) -> str | None:
    """The chain hash a tombstone records (the sha256 of the line it replaced), else None."""
    end = len(line)
    while end and line[end - 1] == 0x20:  # the padding that keeps the line's length
        end -= 1
    start = end - _TOMBSTONE_TAIL
    if start < 1 or line[start : start + len(FORGOTTEN_MEMBER)] != FORGOTTEN_MEMBER:
        return None
    digest = line[end - 66 : end - 2]
    if line[end - 2 : end] != b'"}' or not _HEX.issuperset(digest):
        return None
    return digest.decode("ascii")


def tombstone_body(line: bytes) -> bytes:
    """A tombstone without its `"forgotten"` member and padding: the record it decodes as."""
    end = len(line.rstrip(b" "))
    return line[: end - _TOMBSTONE_TAIL] + b"}"


def line_hash(line: bytes) -> str:
    """The hash that the next line's `prev` must carry (of the line without its newline).

    The sha256 of the line, or for a tombstone the hash it records: so a forget keeps every
    chain verifiable.
    """
    recorded = recorded_hash(line)
    return sha256_hex(line) if recorded is None else recorded


def format_line(record: object) -> bytes:
    """Encode one record as a ledger line, refusing one over the record limit."""
    data = encode(record)
    if len(data) + 1 > LEDGER_RECORD_MAX:
        msg = f"record is {len(data) + 1} bytes encoded, over the {LEDGER_RECORD_MAX}-byte limit"
        raise InvalidInputError(msg)
    return data + b"\n"


def parse_line(line: bytes, type_: type[_R], *, where: str) -> _R:
    """Decode one line (without its newline) into `type_`, or raise IntegrityError.

    A tombstone decodes as the record it keeps (its `"forgotten"` member set aside).
    """
    if recorded_hash(line) is not None:
        line = tombstone_body(line)
    try:
        return decode(line, type_)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{where}: {exc}") from None


def append(path: str, data: bytes) -> None:
    """Append whole lines with one write to an O_APPEND descriptor, then fsync.

    O_APPEND makes seek-to-end and write one step, so concurrent appenders (which the case lock
    already excludes) could not overwrite each other even if they raced.
    """
    fd = os.open(path, APPEND_FLAGS, FILE_MODE)
    try:
        check_single_link(fd, path)
        _crash.point("ledger.before_write")
        if _crash.armed is not None and _crash.due("ledger.torn_write"):
            # Injected fault: leave half of the write on disk, as a kill mid-write would.
            write_all(fd, data[: max(1, len(data) // 2)])
            if _crash.action is not None:
                _crash.action("ledger.torn_write")
        write_all(fd, data)
        _crash.point("ledger.written")
        os.fsync(fd)
        _crash.point("ledger.synced")
    finally:
        os.close(fd)


def iter_lines(path: str, length: int) -> Iterator[tuple[int, bytes]]:
    """Yield `(offset, line)` for the first `length` bytes of a ledger, newline stripped.

    The committed region must end on a line boundary and fit the record limit per line; a file
    shorter than `length` has lost acknowledged data. Both are integrity errors.
    """
    if length == 0:
        return
    fd = open_for_read(path)
    try:
        size = os.fstat(fd).st_size
        if size < length:
            msg = f"{path} is {size} bytes but {length} are committed: acknowledged data is gone"
            raise IntegrityError(msg, path=path)
        offset = 0
        pending = b""
        remaining = length
        while remaining > 0:
            chunk = os.read(fd, min(_CHUNK, remaining))
            if not chunk:
                raise IntegrityError(f"{path} ended early while reading", path=path)
            remaining -= len(chunk)
            pending += chunk
            start = 0
            while True:
                end = pending.find(b"\n", start)
                if end < 0:
                    break
                line = pending[start:end]
                if len(line) + 1 > LEDGER_RECORD_MAX:
                    msg = f"{path}: line at byte {offset} exceeds the record limit"
                    raise IntegrityError(msg, path=path)
                yield offset, line
                offset += end - start + 1
                start = end + 1
            pending = pending[start:]
            if len(pending) > LEDGER_RECORD_MAX:
                msg = f"{path}: line at byte {offset} exceeds the record limit"
                raise IntegrityError(msg, path=path)
        if pending:
            msg = f"{path}: the committed region does not end with a complete line"
            raise IntegrityError(msg, path=path)
    finally:
        os.close(fd)


def read_records(path: str, length: int, type_: type[_R], *, revision: int) -> Iterator[_R]:
    """Decode every committed record, refusing a line tagged later than `revision`."""
    name = os.path.basename(path)
    for offset, line in iter_lines(path, length):
        record = parse_line(line, type_, where=f"{name} byte {offset}")
        line_revision = getattr(record, "revision", 0)
        if line_revision > revision:
            msg = f"{name} byte {offset}: line claims revision {line_revision} > case {revision}"
            raise IntegrityError(msg, path=path)
        yield record


def _occurrences(fd: int, length: int, needle: bytes) -> Iterator[int]:
    """Offsets of `needle` in the first `length` bytes, in order, read in chunks with `pread`.

    Not through a mapping: a search may cover the whole ledger, and every mapped page it
    touched would count against the reader's resident memory.
    """
    start, carry = 0, b""
    while start < length:
        chunk = os.pread(fd, min(_CHUNK, length - start), start)
        if not chunk:
            return
        joined = carry + chunk
        base = start - len(carry)
        at = joined.find(needle)
        while at >= 0:
            yield base + at
            at = joined.find(needle, at + 1)
        start += len(chunk)
        carry = joined[max(0, len(joined) - len(needle) + 1) :] if len(needle) > 1 else b""


def _line_around(fd: int, length: int, at: int) -> tuple[int, bytes]:
    """The start and bytes (newline stripped) of the committed line holding offset `at`."""
    line_start = at
    while line_start > 0:
        window = os.pread(fd, min(_SCAN_BACK, line_start), line_start - min(_SCAN_BACK, line_start))
        newline = window.rfind(b"\n")
        if newline >= 0:
            line_start -= len(window) - newline - 1
            break
        line_start -= len(window)
        if at - line_start > LEDGER_RECORD_MAX:
            break
    data = b""
    position = line_start
    while position < length and b"\n" not in data:
        data += os.pread(fd, min(_SCAN_BACK, length - position), position)
        position = line_start + len(data)
        if len(data) > LEDGER_RECORD_MAX + 1:
            break
    end = data.find(b"\n")
    return line_start, data[: end if end >= 0 else len(data)]


def _checked_fd(path: str, length: int) -> int:
    fd = open_for_read(path)
    size = os.fstat(fd).st_size
    if size < length:
        os.close(fd)
        msg = f"{path} is {size} bytes but {length} are committed: acknowledged data is gone"
        raise IntegrityError(msg, path=path)
    return fd


def line_containing(path: str, length: int, needle: bytes) -> bytes | None:
    """The first committed line holding `needle` (a JSON `"field":"value"` pattern), or None.

    JSON escapes every quote inside string values, so an unescaped `"field":"value"` can only be
    that field itself. Searched at memchr speed, without decoding anything else.
    """
    if length == 0:
        return None
    fd = _checked_fd(path, length)
    try:
        for at in _occurrences(fd, length, needle):
            return _line_around(fd, length, at)[1]
        return None
    finally:
        os.close(fd)


def locate(path: str, length: int, record_id: str) -> tuple[int, bytes] | None:
    """The offset and bytes (newline stripped) of a record's committed line, or None."""
    if length == 0:
        return None
    fd = _checked_fd(path, length)
    try:
        needle = b'{"id":"' + record_id.encode() + b'"'
        for at in _occurrences(fd, length, needle):
            if at == 0 or os.pread(fd, 1, at - 1) == b"\n":
                return _line_around(fd, length, at)
        return None
    finally:
        os.close(fd)


def lines_containing(path: str, length: int, needle: bytes) -> list[bytes]:
    """Every committed line holding `needle` (a JSON member pattern), in ledger order, once."""
    if length == 0:
        return []
    fd = _checked_fd(path, length)
    try:
        found: list[bytes] = []
        last = -1
        for at in _occurrences(fd, length, needle):
            start, line = _line_around(fd, length, at)
            if start != last:
                found.append(line)
                last = start
        return found
    finally:
        os.close(fd)


def find_lines(path: str, length: int, record_ids: list[str]) -> dict[str, bytes]:
    """The committed line (newline stripped) of each record id found, without decoding the rest.

    Every record type begins with its `id` field, so a line starts with `{"id":"<id>"`; JSON
    escapes every quote inside values, so that byte pattern at a line start can only be the
    record's own id. The search runs at memchr speed over the committed region only.
    """
    if length == 0 or not record_ids:
        return {}
    fd = _checked_fd(path, length)
    try:
        found: dict[str, bytes] = {}
        for record_id in record_ids:
            needle = b'{"id":"' + record_id.encode() + b'"'
            for at in _occurrences(fd, length, needle):
                if at == 0 or os.pread(fd, 1, at - 1) == b"\n":
                    found[record_id] = _line_around(fd, length, at)[1]
                    break
        return found
    finally:
        os.close(fd)


def ids_beginning(path: str, length: int, start: str, limit: int) -> tuple[list[str], int]:
    """Ids of committed records that begin with `start` (the first `limit`), and how many.

    Found as `find_lines` finds one id, at a line's start, in ledger order; nothing is decoded.
    """
    if length == 0:
        return [], 0
    fd = _checked_fd(path, length)
    needle = b'{"id":"' + start.encode()
    head = len(b'{"id":"')
    try:
        found: list[str] = []
        total = 0
        for at in _occurrences(fd, length, needle):
            if at == 0 or os.pread(fd, 1, at - 1) == b"\n":
                total += 1
                if len(found) < limit:
                    window = os.pread(fd, min(_ID_READ, length - at - head), at + head)
                    found.append(window.split(b'"', 1)[0].decode("ascii", "replace"))
        return found, total
    finally:
        os.close(fd)


def read_range(path: str, start: int, end: int) -> bytes:
    """The bytes of a ledger from `start` to `end` (both committed offsets), read in one go."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, end - start, start)
    finally:
        os.close(fd)


def tail_lines(path: str, length: int, count: int) -> list[bytes]:
    """The last `count` committed lines (newline stripped), oldest first, read backwards.

    Cost and memory follow `count`, not the ledger's size: a view of the newest records of a
    million-line ledger reads a few hundred kilobytes from its end.
    """
    if length == 0 or count <= 0:
        return []
    fd = open_for_read(path)
    try:
        size = os.fstat(fd).st_size
        if size < length:
            msg = f"{path} is {size} bytes but {length} are committed: acknowledged data is gone"
            raise IntegrityError(msg, path=path)
        if os.pread(fd, 1, length - 1) != b"\n":
            msg = f"{path}: the committed region does not end with a complete line"
            raise IntegrityError(msg, path=path)
        lines: list[bytes] = []
        end = length - 1  # the final newline
        buffer = b""
        position = end
        while len(lines) < count and position > 0:
            step = min(1 << 16, position)
            position -= step
            buffer = os.pread(fd, step, position) + buffer
            cut = buffer.rfind(b"\n")
            while cut >= 0 and len(lines) < count:
                lines.append(buffer[cut + 1 :])
                buffer = buffer[:cut]
                cut = buffer.rfind(b"\n")
            if len(buffer) > LEDGER_RECORD_MAX:
                msg = (
                    f"{path}: a line before byte {position + len(buffer)} exceeds the record limit"
                )
                raise IntegrityError(msg, path=path)
        if position == 0 and len(lines) < count:  # what is left is the first line
            lines.append(buffer)
        lines.reverse()
        return lines
    finally:
        os.close(fd)


def uncommitted_tail(path: str, committed: int) -> int:
    """How many bytes follow the committed end (0 if none or the file does not exist)."""
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        return 0
    return max(size - committed, 0)


def check_tail(path: str, committed: int, revision: int) -> int:
    """Classify the bytes after the committed end; return how many may be truncated.

    The protocol can leave only an incomplete final line and/or complete lines tagged with a
    revision above the committed one (a commit that never reached its commit point). Anything
    else was written by someone else, and we refuse to destroy it.
    """
    try:
        fd = open_for_read(path)
    except FileNotFoundError:
        if committed:
            msg = f"{path} is missing but {committed} bytes are committed: data is gone"
            raise IntegrityError(msg, path=path) from None
        return 0
    try:
        size = os.fstat(fd).st_size
        if size < committed:
            msg = f"{path} is {size} bytes but {committed} are committed: acknowledged data is gone"
            raise IntegrityError(msg, path=path)
        extra = size - committed
        if extra == 0:
            return 0
        if extra > TAIL_SCAN_MAX:
            msg = f"{path} has {extra} uncommitted bytes, too many to be an interrupted write"
            raise IntegrityError(msg, path=path)
        tail = os.pread(fd, extra, committed)
    finally:
        os.close(fd)
    *complete, _partial = tail.split(b"\n")
    for line in complete:
        try:
            line_revision = decode(line, LineMeta).revision
        except (msgspec.DecodeError, msgspec.ValidationError):
            line_revision = 0
        if line_revision <= revision:
            msg = (
                f"{path} has data after its committed end that no interrupted write could have "
                "left; refusing to truncate it (run `cortex case audit`)"
            )
            raise IntegrityError(msg, path=path)
    return extra


def truncate(path: str, length: int) -> None:
    """Cut a ledger back to its committed length and make that durable."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    finally:
        os.close(fd)
