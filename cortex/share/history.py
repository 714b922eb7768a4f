"""Replica histories compared: equal, one extending the other, or diverged (a fork).

A history is a replica's three ledgers, as exported (in a shared tree, or just built) or as the
local ledgers store them. Two histories of one replica are compared ledger by ledger with one
chain hash each: since every line's `prev` is the hash of the line before, two ledgers whose
n-th lines have the same hash agree on their first n lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from cortex.cases import ledger
from cortex.cases.records import LEDGER_TYPES
from cortex.cases.replicas import line_hash, parse
from cortex.share.format import LEDGER_NAMES, Head, LedgerHead

Relation = Literal["equal", "first", "second", "diverged"]
"""`first`: the first history extends the second; `second`: the other way round."""


class History(Protocol):
    """What comparing needs: line counts and the chain hash after any line."""

    def count(self, name: str) -> int:
        """Lines of a ledger."""
        ...

    def hash_at(self, name: str, n: int) -> str:
        """The chain hash after line `n` (1-based; 0 is the ledger's genesis)."""
        ...


class Shared:
    """A replica's history as its exported head and segments describe it."""

    def __init__(self, task_id: str, head: Head, load: Callable[[str, str], bytes]) -> None:
        """`load(ledger, file name)` returns a segment's (or the tail's) exported bytes."""
        self.task_id = task_id
        self.head = head
        self._load = load
        self._lines: dict[tuple[str, str], list[bytes]] = {}

    def count(self, name: str) -> int:
        """Lines of a ledger."""
        found = self.head.ledgers.get(name)
        return found.count if found is not None else 0

    def _file_lines(self, name: str, file: str) -> list[bytes]:
        key = (name, file)
        if key not in self._lines:
            self._lines[key] = self._load(name, file).splitlines()
        return self._lines[key]

    def hash_at(self, name: str, n: int) -> str:
        """The chain hash after line `n`."""
        if n == 0:
            return ledger.genesis(self.task_id, name)
        head: LedgerHead | None = self.head.ledgers.get(name)
        if head is None or n > head.count:
            msg = f"line {n} is past the end of {name}"
            raise ValueError(msg)
        if n == head.count:
            return head.tip
        from cortex.share.format import TAIL, segment_name

        for segment in head.segments:
            if segment.first <= n <= segment.last:
                if n == segment.last:
                    return segment.tip
                lines = self._file_lines(name, segment_name(segment.first, segment.last))
                return _hash(name, lines[n - segment.first])
        sealed = head.segments[-1].last if head.segments else 0
        lines = self._file_lines(name, TAIL)
        return _hash(name, lines[n - sealed - 1])


class Lines:
    """A history held as lists of exported (or stored) lines, in memory."""

    def __init__(self, task_id: str, lines: dict[str, list[bytes]]) -> None:
        self.task_id = task_id
        self.lines = lines

    def count(self, name: str) -> int:
        """Lines of a ledger."""
        return len(self.lines.get(name, []))

    def hash_at(self, name: str, n: int) -> str:
        """The chain hash after line `n`."""
        if n == 0:
            return ledger.genesis(self.task_id, name)
        return _hash(name, self.lines[name][n - 1])


def _hash(name: str, line: bytes) -> str:
    _, meta = parse(line, LEDGER_TYPES[name], where=name)
    return line_hash(line, meta)


def relation(first: History, second: History) -> Relation:
    """How two histories of one replica relate (see the module docstring)."""
    first_extends = second_extends = True
    for name in LEDGER_NAMES:
        a, b = first.count(name), second.count(name)
        common = min(a, b)
        if common and first.hash_at(name, common) != second.hash_at(name, common):
            return "diverged"
        first_extends = first_extends and a >= b
        second_extends = second_extends and b >= a
    if first_extends and second_extends:
        return "equal"
    if first_extends:
        return "first"
    if second_extends:
        return "second"
    return "diverged"


def fork_suffix(kept: History, other: History) -> str:
    """The 8 hex naming `other` beside `kept`: its first line that differs, commands first.

    Every commit writes a commands line, so a diverged side has one, and the name stays the
    same however far `other` grows.
    """
    for name in ("commands", "evidence", "phases"):
        a, b = kept.count(name), other.count(name)
        low, high = 0, min(a, b)
        while low < high:  # the longest common prefix, by the chain property
            middle = (low + high + 1) // 2
            if kept.hash_at(name, middle) == other.hash_at(name, middle):
                low = middle
            else:
                high = middle - 1
        if low < b:  # `other` has a line `kept` lacks or holds otherwise
            return other.hash_at(name, low + 1)[:8]
    return other.hash_at("commands", other.count("commands"))[:8]
