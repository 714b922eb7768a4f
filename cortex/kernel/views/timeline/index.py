"""Searching an ordered ledger by time without decoding the lines that are not shown.

A ledger whose state says `ordered` has nondecreasing timestamps in file order
(docs/design/storage.md, "Time order"). Then every time window is one contiguous byte range,
found by binary search over line starts; how many lines a range holds, or how many name one
actor, is a byte count (`bytes.count` runs in C); and only the lines a page shows are decoded.

Lines with the same timestamp are not necessarily in id order (two processes can commit in
one millisecond), so the run of lines sharing a boundary's timestamp is always read whole and
ordered in memory. Such a run is a few lines in practice; a ledger written in one millisecond
would make it the whole file, which is correct and merely slow.

Every method reads only the committed region (`state.bytes`); the mapping is read-only.
"""

from __future__ import annotations

import mmap
import os
from types import TracebackType
from typing import Self

from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import open_for_read
from cortex.cases.layout import ledger_file
from cortex.cases.ledger import parse_line
from cortex.cases.records import LEDGER_TYPES, LedgerState
from cortex.kernel.views.timeline.cards import Entry, Key, ledger_entry

_STAMP = b'"timestamp":"'
_STAMP_WIDTH = 24  # 2026-12-01T09:30:00.120Z: the one width the store writes
_CHUNK = 8 << 20
_HEAD = 160  # a line's id and timestamp are its first two fields


class OrderedLedger:
    """One committed, time-ordered ledger, searched by byte offsets of line starts."""

    def __init__(self, case_path: str, name: str, state: LedgerState, actor: str | None) -> None:
        self.name = name
        self.file = ledger_file(name)
        self.length = state.bytes
        self.lines = state.count
        self.needle = None if actor is None else b'"actor":"' + actor.encode() + b'"'
        self._fd = -1
        self._view: mmap.mmap | None = None
        if self.length:
            self._fd = open_for_read(os.path.join(case_path, self.file))
            if os.fstat(self._fd).st_size < self.length:
                os.close(self._fd)
                msg = f"{self.file} is shorter than its committed length: acknowledged data is gone"
                raise IntegrityError(msg)
            self._view = mmap.mmap(self._fd, self.length, access=mmap.ACCESS_READ)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._view is not None:
            self._view.close()
        if self._fd >= 0:
            os.close(self._fd)

    # Lines -------------------------------------------------------------------------------

    @property
    def view(self) -> mmap.mmap:
        """The committed bytes (only asked for when there are some)."""
        if self._view is None:
            msg = "an empty ledger has no bytes to read"
            raise ValueError(msg)
        return self._view

    def _end(self, start: int) -> int:
        """The offset of the newline that ends the line starting at `start`."""
        end = self.view.find(b"\n", start, self.length)
        if end < 0:
            raise IntegrityError(f"{self.file}: the committed region ends inside a line")
        return end

    def _time(self, start: int) -> str:
        head = self.view[start : start + _HEAD]
        at = head.find(_STAMP)
        stop = at + len(_STAMP) + _STAMP_WIDTH
        if at >= 0 and head[stop : stop + 1] == b'"':
            return head[at + len(_STAMP) : stop].decode("ascii", "replace")
        return self.entry(start).at  # an unusual line: decode it rather than guess

    def entry(self, start: int) -> Entry:
        """The decoded entry of the line starting at `start`."""
        line = self.view[start : self._end(start)]
        record = parse_line(line, LEDGER_TYPES[self.name], where=f"{self.file} byte {start}")
        return ledger_entry(self.name, record)

    # Searching ---------------------------------------------------------------------------

    def at_time(self, moment: str | None, *, after: bool = False) -> int:
        """The first line at or after `moment` (strictly after, with `after`); None: the end."""
        if moment is None or not self.length:
            return self.length
        lo, hi = 0, self.length  # both line starts (or the end); the answer is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            newline = self.view.rfind(b"\n", lo, mid)
            start = lo if newline < 0 else newline + 1
            stamp = self._time(start)
            if stamp > moment or (stamp == moment and not after):
                hi = start
            else:
                lo = self._end(start) + 1
        return lo

    def count(self, start: int, stop: int) -> int:
        """Lines in [start, stop) that pass the actor filter: byte counts, nothing decoded.

        Read with `pread` into one reused buffer rather than through the mapping: a count may
        cover the whole ledger, and mapped pages would all join the process's resident set.
        """
        if start >= stop:
            return 0
        if self.needle is None and start == 0 and stop == self.length:
            return self.lines
        needle = b"\n" if self.needle is None else self.needle
        total = 0
        carry = b""  # the end of the previous chunk, in case a match spans the boundary
        while start < stop:
            chunk = os.pread(self._fd, min(_CHUNK, stop - start), start)
            if not chunk:
                raise IntegrityError(f"{self.file} ended early while reading")
            joined = carry + chunk
            total += joined.count(needle)
            start += len(chunk)
            # Keep less than a whole needle, so no match is counted twice.
            carry = joined[max(0, len(joined) - len(needle) + 1) :] if len(needle) > 1 else b""
        return total

    def forward(self, start: int, stop: int, wanted: int) -> list[Entry]:
        """The `wanted` smallest-keyed matching entries in [start, stop), in key order."""
        found: list[Entry] = []
        position = start
        while position < stop and len(found) < wanted:
            position = self._next_match(position, stop)
            if position >= stop:
                break
            found.append(self.entry(position))
            position = self._end(position) + 1
        if found and position < stop:
            # Lines sharing the last one's time may hold smaller ids: take the whole run.
            run_end = self.at_time(found[-1].at, after=True)
            found += self.decode(position, min(run_end, stop))
        return sorted(found, key=lambda entry: entry.key)[:wanted]

    def backward(self, start: int, stop: int, wanted: int) -> list[Entry]:
        """The `wanted` largest-keyed matching entries in [start, stop), in key order."""
        found: list[Entry] = []
        position = stop
        while position > start and len(found) < wanted:
            line = self._previous_match(start, position)
            if line < 0:
                position = start
                break
            found.append(self.entry(line))
            position = line
        if found and position > start:
            run_start = max(self.at_time(found[-1].at), start)
            found += self.decode(run_start, position)
        ordered = sorted(found, key=lambda entry: entry.key)
        return ordered[max(0, len(ordered) - wanted) :] if wanted else []

    def decode(self, start: int, stop: int) -> list[Entry]:
        """Every matching entry in [start, stop) (a boundary run: short in practice)."""
        found = []
        position = start
        while position < stop:
            position = self._next_match(position, stop)
            if position >= stop:
                break
            found.append(self.entry(position))
            position = self._end(position) + 1
        return found

    def _next_match(self, position: int, stop: int) -> int:
        """The start of the first matching line at or after `position` (or `stop`)."""
        if self.needle is None:
            return position
        at = self.view.find(self.needle, position, stop)
        if at < 0:
            return stop
        return self.view.rfind(b"\n", position, at) + 1 or position

    def _previous_match(self, start: int, position: int) -> int:
        """The start of the last matching line before `position` (and at or after `start`)."""
        if self.needle is None:
            newline = self.view.rfind(b"\n", start, position - 1)
            return start if newline < 0 else newline + 1
        at = self.view.rfind(self.needle, start, position)
        if at < 0:
            return -1
        newline = self.view.rfind(b"\n", start, at)
        return start if newline < 0 else newline + 1

    def split(self, key: Key, start: int, stop: int) -> tuple[int, int, list[Entry]]:
        """The run of lines sharing `key`'s time within [start, stop): its bounds, decoded."""
        run_start = min(max(self.at_time(key[0]), start), stop)
        run_stop = max(run_start, min(self.at_time(key[0], after=True), stop))
        return run_start, run_stop, self.decode(run_start, run_stop)
