"""The forget commit's own steps: planning a tombstone, applying it, and checking a journal's word.

A forget is one multi-file commit (cortex/cases/txn.py); what removes data happens after its
commit point and is finished by recovery (docs/design/storage.md, "Forgetting a record"). Only
`Transaction.forget` plans one, and only a committed journal's `forget` entries are applied.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from cortex.cases import _crash, ledger
from cortex.cases.bounds import RAW_BLOB_MAX, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError, NotFoundError
from cortex.cases.fsio import fsync_dir, open_for_read, read_bounded, splice
from cortex.cases.ids import is_id
from cortex.cases.layout import RAW_DIR, ledger_file, parse_raw_ref, parse_replica_ledger
from cortex.cases.records import (
    Evidence,
    ForgetStep,
    Forgetting,
    ForgottenBlob,
    LedgerState,
    RemovedFile,
)
from cortex.cases.tombstone import build

if TYPE_CHECKING:
    from cortex.cases.txn import Transaction

LOCAL = ledger_file("evidence")


def plan(
    txn: Transaction, record_id: str, *, what: Literal["record", "raw"]
) -> list[tuple[ForgetStep, Forgetting]]:
    """The journal step and the forget record's warrant for each copy of `record_id`.

    A record is held once, except where a replica's history was forked or this machine's own
    was imported back: every copy is forgotten, and the blob goes with the first.
    """
    found = _find(txn, record_id)
    planned = [_plan_one(txn, record_id, copy, what=what) for copy in found]
    for step, _ in planned[1:]:
        step.remove = []
    return planned


def _plan_one(
    txn: Transaction,
    record_id: str,
    copy: tuple[str, int, bytes],
    *,
    what: Literal["record", "raw"],
) -> tuple[ForgetStep, Forgetting]:
    relative, offset, line = copy
    if relative == LOCAL:
        record = ledger.parse_line(line, Evidence, where=f"{relative} byte {offset}")
        chain_hash = ledger.line_hash(line)
    else:
        from cortex.cases.replicas import line_hash, parse

        record, meta = parse(line, Evidence, where=f"{relative} byte {offset}")
        chain_hash = line_hash(line, meta)
    if ledger.recorded_hash(line) is not None:
        raise InvalidInputError(f"{record_id} is already forgotten (a tombstone holds its place)")
    if record.forgets is not None:
        msg = f"{record_id} is the record of a forget; its tombstone would lose its warrant"
        raise InvalidInputError(msg)
    if what == "raw" and record.raw_ref is None:
        raise InvalidInputError(f"{record_id} keeps no raw output to forget")
    blobs = _blobs(txn.path, txn.task_id, record)
    tombstone = build(record, len(line), chain_hash, keep=what == "raw")
    step = ForgetStep(
        ledger=relative,
        offset=offset,
        length=len(line),
        was=sha256_hex(line),
        tombstone=tombstone.decode("utf-8"),
        remove=[RemovedFile(path=path, sha256=blob.sha256) for path, blob in blobs],
    )
    forgetting = Forgetting(
        record=record_id,
        ledger=relative,
        what=what,
        line=chain_hash,
        tombstone=sha256_hex(tombstone),
        raw=[blob for _, blob in blobs],
    )
    return step, forgetting


def _find(txn: Transaction, record_id: str) -> list[tuple[str, int, bytes]]:
    """(ledger relative to the case, offset, line) of each committed copy of a record."""
    case = txn.case
    candidates = [(LOCAL, (case.ledgers.get("evidence") or LedgerState()).bytes)]
    if "replicas" in case.snapshots:
        from cortex.cases.recovery import replica_lengths

        candidates += [
            (relative, length)
            for relative, length in sorted(replica_lengths(txn.store, txn.path, case).items())
            if relative.endswith("/" + LOCAL)
        ]
    copies = []
    for relative, length in candidates:
        found = ledger.locate(os.path.join(txn.path, relative), length, record_id)
        if found is not None:
            copies.append((relative, found[0], found[1]))
    if not copies:
        raise NotFoundError(f"no evidence record {record_id} in case {case.id}")
    return copies


def _blobs(path: str, task_id: str, record: Evidence) -> list[tuple[str, ForgottenBlob]]:
    """The raw files a record cites that are here: its blob, or its tree and the tree's files."""
    parsed = None if record.raw_ref is None else parse_raw_ref(record.raw_ref)
    if parsed is None or parsed[0] != task_id or not is_id(parsed[1], "raw"):
        return []
    raw_id = parsed[1]
    found: list[tuple[str, ForgottenBlob]] = []
    for suffix in ("txt", "tree"):
        relative = f"{RAW_DIR}/{raw_id}.{suffix}"
        try:
            data = read_bounded(os.path.join(path, relative), max(RAW_BLOB_MAX, SNAPSHOT_MAX))
        except FileNotFoundError:
            continue
        found.append((relative, ForgottenBlob(id=raw_id, sha256=sha256_hex(data), bytes=len(data))))
        if suffix == "tree":
            found += _members(path, data)
    return found


def _members(path: str, listing: bytes) -> list[tuple[str, ForgottenBlob]]:
    from cortex.cases.tree import decode_manifest

    found: list[tuple[str, ForgottenBlob]] = []
    for member in decode_manifest(listing).files:
        relative = f"{RAW_DIR}/{member.raw}.txt"
        if not is_id(member.raw, "raw"):
            continue
        try:
            data = read_bounded(os.path.join(path, relative), RAW_BLOB_MAX)
        except FileNotFoundError:
            continue
        blob = ForgottenBlob(id=member.raw, sha256=sha256_hex(data), bytes=len(data))
        found.append((relative, blob))
    return found


def apply(case_path: str, steps: list[ForgetStep]) -> None:
    """Write each tombstone and remove each named blob; done again safely after a crash."""
    for step in steps:
        path = os.path.join(case_path, step.ledger)
        tombstone = step.tombstone.encode("utf-8")
        current = _read(path, step.offset, step.length)
        if current != tombstone:
            if sha256_hex(current) != step.was:
                msg = (
                    f"{step.ledger} holds neither the line a committed forget replaces nor its "
                    f"tombstone at byte {step.offset}; left untouched for a person"
                )
                raise IntegrityError(msg, path=path)
            splice(path, step.offset, tombstone, temp_dir=case_path)
            _crash.point("forget.rewritten")
        touched = False
        for item in step.remove:
            full = os.path.join(case_path, item.path)
            try:
                data = read_bounded(full, max(RAW_BLOB_MAX, SNAPSHOT_MAX))
            except FileNotFoundError:
                continue
            if sha256_hex(data) == item.sha256:
                os.unlink(full)
                touched = True
        if touched:
            fsync_dir(os.path.join(case_path, RAW_DIR))
        _crash.point("forget.removed")


def _read(path: str, offset: int, length: int) -> bytes:
    fd = open_for_read(path)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def step_ok(step: ForgetStep, evidence_bytes: int, replica_lengths: dict[str, int]) -> bool:
    """Whether this protocol could have journaled `step` (recovery acts on it only then)."""
    if step.ledger == LOCAL:
        limit = evidence_bytes
    else:
        parsed = parse_replica_ledger(step.ledger)
        if parsed is None or parsed[1] != "evidence":
            return False
        limit = replica_lengths.get(step.ledger, -1)
    data = step.tombstone.encode("utf-8")
    if not step.length or len(data) != step.length or step.offset + step.length > limit:
        return False
    if ledger.recorded_hash(data) is None:
        return False
    return all(_blob_name(item.path) for item in step.remove)


def _blob_name(relative: str) -> bool:
    directory, _, name = relative.partition("/")
    stem, dot, suffix = name.rpartition(".")
    return directory == RAW_DIR and dot == "." and suffix in {"txt", "tree"} and is_id(stem, "raw")
