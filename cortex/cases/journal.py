"""The commit journal: what a multi-file commit staged, read back by recovery and by audit.

A journal lists the files a transaction staged under temp names and the final names they take.
Recovery deletes and renames what a journal names, so a journal is decoded strictly and each
entry is checked against the few names a commit may stage (docs/design/storage.md).
"""

from __future__ import annotations

import msgspec

from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import TEMP_PREFIX
from cortex.cases.ids import is_id
from cortex.cases.layout import AUX_SNAPSHOTS, BACKUP_PREFIX, RAW_DIR, WRITE_ONCE_FILES
from cortex.cases.records import Journal, StagedFile, decode


def decode_journal(data: bytes, path: str) -> Journal:
    """Decode a commit journal."""
    try:
        return decode(data, Journal)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: not a commit journal ({exc})", path=path) from None


def journal_entry_ok(entry: StagedFile) -> bool:
    """A journal names only blobs, write-once files and auxiliary snapshots, under temp names.

    Blobs are raw `.txt` files and tree manifests (`.tree`). Recovery deletes and renames what
    a journal names, so a forged one must not reach outside these (used by the writer's
    recovery and by `audit`).
    """
    stage_ok = entry.staged.startswith(TEMP_PREFIX) and "/" not in entry.staged
    stage_ok = stage_ok and "\0" not in entry.staged and entry.staged not in {".", ".."}
    if entry.final in AUX_SNAPSHOTS:
        return stage_ok and entry.backup in {None, BACKUP_PREFIX + entry.final}
    if entry.final in WRITE_ONCE_FILES:
        return stage_ok and entry.backup is None
    directory, _, name = entry.final.partition("/")
    stem, dot, suffix = name.rpartition(".")
    blob_ok = directory == RAW_DIR and dot == "." and suffix in {"txt", "tree"}
    blob_ok = blob_ok and is_id(stem, "raw")
    return stage_ok and blob_ok and entry.backup is None
