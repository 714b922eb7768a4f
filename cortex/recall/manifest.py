"""Which cases the index is behind on, and bringing them up to date.

The cheap test is one `stat` of each case's `case.json` against the key the manifest recorded.
A case whose key moved is read (snapshots, and the evidence added since the recorded offset);
it is behind only if what cards depend on changed (docs/design/recall.md, "Knowing it is
behind"). Updating goes through `refresh`, which re-reads the case inside SQLite's write lock,
so an update never writes an older state over a newer one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from cortex.cases.errors import CortexError
from cortex.cases.layout import CASE_FILE
from cortex.recall.cards import derive
from cortex.recall.index import PURGE, CaseRow, Index, Store
from cortex.recall.source import file_key, read_source, unchanged

Redact = Callable[[str], str]


class Moved(NamedTuple):
    """A case whose `case.json` is not what the manifest recorded (or that is new, or gone)."""

    store: Store | None
    """None when the case is gone and only its manifest row is left."""
    task: str
    row: CaseRow | None


class Report(NamedTuple):
    """What a check found."""

    behind: list[str]
    """Task ids whose cards are out of date, in (store, task) order."""
    removed: list[str]
    """Task ids the index still holds although their case is gone."""
    unreadable: list[tuple[str, str]]
    """(task id, why) of cases that could not be read."""


_TASK = re.compile(r"task_[0-7][0-9A-HJKMNP-TV-Z]{25}")
"""A case directory's name (cortex.cases.ids, compiled once: this check runs per recall)."""
_CASE_FILE = os.sep + CASE_FILE


def keys(root: str) -> dict[str, str | None]:
    """Each case directory of a store and its `case.json` key, with one `stat` per case.

    The same key `source.file_key` gives; None when `case.json` cannot be seen. Symlinked
    entries are skipped, as the store skips them.
    """
    found: dict[str, str | None] = {}
    try:
        entries = os.scandir(root)
    except OSError:
        return found
    with entries:
        for entry in entries:
            if not _TASK.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                info = os.stat(entry.path + _CASE_FILE)
            except OSError:
                found[entry.name] = None
                continue
            found[entry.name] = f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"
    return found


def moved(index: Index, stores: Sequence[Store]) -> list[Moved]:
    """Every case whose manifest row does not match its `case.json`, and every orphaned row."""
    rows = index.manifest()
    seen: set[tuple[str, str]] = set()
    found: list[Moved] = []
    for ref in stores:
        for task, key in sorted(keys(ref.root).items()):
            seen.add((ref.root, task))
            row = rows.get((ref.root, task))
            if row is None or row.key != key:
                found.append(Moved(ref, task, row))
    found.extend(
        Moved(None, task, row)
        for (root, task), row in sorted(rows.items())
        if (root, task) not in seen
    )
    return found


def check(index: Index, stores: Sequence[Store], redact: Redact) -> Report:
    """Which cases the index is behind on (a reader: nothing is written)."""
    behind: list[str] = []
    removed: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for item in moved(index, stores):
        if item.store is None:
            removed.append(item.task)
            continue
        since = 0 if item.row is None else item.row.evidence_bytes
        try:
            read = read_source(item.store.store, item.task, item.store.id, since=since)
        except CortexError as exc:
            unreadable.append((item.task, exc.message))
            continue
        if item.row is not None:
            if not unchanged(read, item.row.source):
                behind.append(item.task)
            continue
        derived = derive(read.source, redact)
        if derived.cards or derived.contests or derived.closings:
            behind.append(item.task)
    return Report(behind, removed, unreadable)


def refresh(index: Index, ref: Store, task: str, redact: Redact) -> bool:
    """Bring one case's rows up to date inside one transaction; whether anything was written."""
    with index.transaction():
        row = index.case_row(ref.root, task)
        key = file_key(ref.store, task)
        if key is None:
            if row is None:
                return False
            index.drop_case(ref.root, task)
            index.relate(ref.root)
            return True
        if row is not None and row.key == key:
            return False
        since = 0 if row is None else row.evidence_bytes
        read = read_source(ref.store, task, ref.id, since=since)
        # A forget since the last read replaced a record this index may hold, or quote: the
        # case's rows are derived again whole, and the file purged (docs/design/recall.md).
        forgot = row is not None and any(r.forgets is not None for r in read.source.evidence)
        if forgot:
            index.set_meta(PURGE, "pending")  # committed with the rows it replaces
        full = row is None or since == 0 or read.evidence_bytes < since or forgot
        if full and since:
            read = read_source(ref.store, task, ref.id, since=0)
        index.put_case(
            ref.root,
            read.key,
            task,
            revision=read.source.case.revision,
            evidence_bytes=read.evidence_bytes,
            source=read.digest,
            derived=derive(read.source, redact),
            full=full,
            workspace=read.source.case.workspace.root,
        )
        index.relate(ref.root)
    if forgot:
        index.purge()
    return True


def forget(index: Index, root: str, task: str) -> None:
    """Drop the rows of a case that is gone."""
    with index.transaction():
        index.drop_case(root, task)
        index.relate(root)
