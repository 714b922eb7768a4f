"""`refusals.jsonl`: the commands a case's rules refused, counted without touching the case.

A refused command commits nothing, so the case's ledgers cannot count it; this file does. It
lives in the case directory but outside the commit protocol (docs/design/storage.md, "The
refusal log"):

- Nothing else depends on it: case.json does not record it, its lines are not chained, and it
  changes no revision. `audit` checks only its place (a regular file, private); its lines are
  a count for `metrics`, not evidence.
- A line holds no text from the caller: the operation (a name from the command table), the
  error code, the time and the acting identity as validated for the ledgers. Nothing in it can
  need redacting, and no line can be long.
- One `write` per line with O_APPEND, never through a symlink or a hard link, and no fsync: a
  crash can lose the newest lines or leave half of one, which the next append starts after
  (on a line of its own) and readers skip. It undercounts; it never invents a refusal.
- Bounded: once the file reaches `REFUSALS_MAX` bytes nothing more is appended, and readers
  say the count is capped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import msgspec

from cortex.cases.bounds import REFUSALS_MAX
from cortex.cases.errors import CortexError
from cortex.cases.fsio import APPEND_FLAGS, FILE_MODE, check_single_link, open_for_read, write_all

REFUSALS_FILE = "refusals.jsonl"
RECORDED = frozenset({"refused", "lease_conflict", "revision_conflict"})
"""The error codes a refusal line is written for: the case's own rules said no. Bad input is
refused before a case is read, and `busy` never reached the case's lock; neither is counted."""
_FLAGS = (APPEND_FLAGS & ~os.O_WRONLY) | os.O_RDWR | getattr(os, "O_NONBLOCK", 0)
"""Appending, and reading the last byte (is a torn line to be ended first?); non-blocking, so a
FIFO planted here cannot hang the command that was refused."""
_LINE_MAX = 1024
"""A line is a few fixed fields; anything longer is not one of ours."""


class Refusal(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """One refused command."""

    timestamp: str
    operation: str
    code: str
    actor: str | None = None


def append(case_path: str, refusal: Refusal) -> bool:
    """Add one line; False when the log is full (or cannot be written: it only counts)."""
    line = msgspec.json.encode(refusal) + b"\n"
    path = os.path.join(case_path, REFUSALS_FILE)
    if len(line) > _LINE_MAX:
        return False
    try:
        fd = os.open(path, _FLAGS, FILE_MODE)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        check_single_link(fd, path)
        size = os.fstat(fd).st_size
        if size + len(line) > REFUSALS_MAX:
            return False
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # after a torn line, on a line of its own
        write_all(fd, line)
    except (OSError, CortexError):
        return False
    finally:
        os.close(fd)
    return True


class Tally(msgspec.Struct, kw_only=True):
    """What a refusal log says: how many refusals, by code and by operation."""

    total: int = 0
    by_code: dict[str, int] = msgspec.field(default_factory=dict)
    by_operation: dict[str, int] = msgspec.field(default_factory=dict)
    capped: bool = False
    """The log reached its bound: later refusals were not recorded."""
    unreadable: int = 0
    """Lines that are not refusals (a torn write, an edit), skipped."""


def tally(case_path: str) -> Tally:
    """Count the refusals of one case (an absent log is none); reads at most the bound."""
    found = Tally()
    for line in _lines(os.path.join(case_path, REFUSALS_FILE), found):
        try:
            refusal = msgspec.json.decode(line, type=Refusal)
        except (msgspec.DecodeError, msgspec.ValidationError):
            found.unreadable += 1
            continue
        found.total += 1
        found.by_code[refusal.code] = found.by_code.get(refusal.code, 0) + 1
        found.by_operation[refusal.operation] = found.by_operation.get(refusal.operation, 0) + 1
    return found


def _lines(path: str, found: Tally) -> Iterator[bytes]:
    try:
        fd = open_for_read(path)
    except FileNotFoundError:
        return
    except (OSError, CortexError):
        found.unreadable += 1  # a symlink or not a regular file: counted, never followed
        return
    try:
        data = os.pread(fd, REFUSALS_MAX + 1, 0)
    finally:
        os.close(fd)
    # Within a line of the bound: appends stop when the next line would not fit.
    found.capped = len(data) > REFUSALS_MAX - _LINE_MAX
    for line in data[:REFUSALS_MAX].split(b"\n"):
        if line.strip():
            yield line
