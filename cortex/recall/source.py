"""Reading one case's committed files for its cards: snapshots whole, the evidence ledger by range.

A reader like every other: no lock, no write. `read_source` reads one consistent view
(`read_view`) and the evidence lines from a byte offset to the committed end, so an update after
a commit reads what the commit added, not the whole ledger. Lines that cannot matter to recall
are skipped by a byte test before any decoding.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple

from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Decisions, Hypotheses, Plan, Verification
from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import open_for_read
from cortex.cases.layout import CASE_FILE, ledger_file
from cortex.cases.ledger import find_lines, parse_line, tail_lines
from cortex.cases.records import (
    CaseFile,
    Evidence,
    LedgerState,
    PhaseChange,
    encode,
)
from cortex.cases.store import CaseStore
from cortex.recall.cards import Source
from cortex.recall.notable import changes_cards

VERDICTS = frozenset({"verified", "partial", "failed", "unverified"})
_CHUNK = 1 << 20
_MAYBE = (
    b'"confidence":"high"',
    b'"origin":"human"',
    b'"origin":"reviewer"',
    b'"contests":"',
    b'"resolves":{',
    b'"forgets":{',
)
"""Byte patterns one of which every line that can make a card or a relation holds."""


class Read(NamedTuple):
    """One case as read for the index."""

    source: Source
    key: str
    """`case.json` as a file (inode, modification time, size), taken before reading it."""
    evidence_bytes: int
    """The committed length of the evidence ledger the read went up to."""
    digest: str
    """The card-relevant content of the snapshots (see `snapshot_digest`)."""


def file_key(store: CaseStore, task_id: str) -> str | None:
    """`case.json` as a file, for the manifest's cheap check; None when it cannot be seen."""
    try:
        info = os.stat(os.path.join(store.case_path(task_id), CASE_FILE))
    except (OSError, IntegrityError):
        return None
    except Exception:  # noqa: BLE001 - NotFoundError and the like: the case is not there
        return None
    return f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"


def scan_evidence(path: str, start: int, end: int) -> Iterator[Evidence]:
    """The records between two committed offsets that can make a card or a relation."""
    if end <= start:
        return
    fd = open_for_read(path)
    try:
        position, pending = start, b""
        while position < end:
            chunk = os.pread(fd, min(_CHUNK, end - position), position)
            if not chunk:
                raise IntegrityError(f"{path} ended early while reading", path=path)
            position += len(chunk)
            pending += chunk
            cut = pending.rfind(b"\n")
            if cut < 0:
                continue
            lines, pending = pending[:cut].split(b"\n"), pending[cut + 1 :]
            for line in lines:
                if any(marker in line for marker in _MAYBE):
                    record = parse_line(line, Evidence, where=ledger_file("evidence"))
                    if changes_cards(record):
                        yield record
        if pending:
            msg = f"{path}: the committed region does not end with a complete line"
            raise IntegrityError(msg, path=path)
    finally:
        os.close(fd)


def _completion(store: CaseStore, case: CaseFile) -> tuple[str | None, str | None]:
    """(verdict, when) a completed case was completed: its last phase line, into `complete`."""
    if case.status != "complete":
        return None, None
    state = case.ledgers.get("phases") or LedgerState()
    path = os.path.join(store.case_path(case.id), ledger_file("phases"))
    last = tail_lines(path, state.bytes, 1)
    if not last:
        return None, None
    change = parse_line(last[0], PhaseChange, where=ledger_file("phases"))
    if change.to_phase != "complete":
        return None, None
    return (change.reason if change.reason in VERDICTS else None), change.timestamp


def snapshot_digest(source: Source) -> str:
    """What of the snapshots cards depend on, and nothing else.

    A phase change, a plan's open hypotheses, a pending question or a lease does not move it,
    so such commits never make the index behind: only resolved hypotheses, answered decisions
    and the completion do.
    """
    case = source.case
    complete = case.status == "complete"
    return sha256_hex(
        encode(
            [
                complete,
                case.status_reason if complete else None,
                source.verdict,
                source.completed_at,
                source.outcome_head if complete else None,
                source.boundary if complete else [],
                [
                    (h.id, h.status, len(h.history))
                    for h in source.hypotheses
                    if h.status in {"rejected", "confirmed"}
                ],
                [
                    (d.id, d.answer, d.subject, d.answered_at)
                    for d in source.decisions
                    if d.status == "answered"
                ],
            ]
        )
    )


def read_source(store: CaseStore, task_id: str, store_id: str, *, since: int = 0) -> Read:
    """Read a case for its cards: the snapshots whole, evidence from byte `since` on."""
    key = file_key(store, task_id) or ""
    case, documents = store.read_view(task_id)
    hypotheses: Hypotheses | None = documents.get("hypotheses.json")
    decisions: Decisions | None = documents.get("decisions.json")
    plan: Plan | None = documents.get("plan.json")
    verification: Verification | None = documents.get("verification.json")
    state = case.ledgers.get("evidence") or LedgerState()
    path = os.path.join(store.case_path(task_id), ledger_file("evidence"))
    start = since if 0 <= since <= state.bytes else 0
    evidence = list(scan_evidence(path, start, state.bytes))
    wanted = sorted(
        {
            evidence_id
            for h in (hypotheses.hypotheses if hypotheses else [])
            if h.status in {"rejected", "confirmed"}
            for event in h.history
            for evidence_id in event.evidence
        }
    )
    cited: dict[str, Evidence] = {}
    for evidence_id, line in find_lines(path, state.bytes, wanted).items():
        cited[evidence_id] = parse_line(line, Evidence, where=ledger_file("evidence"))
    batches = verification.batches if verification else []
    verdict, completed_at = _completion(store, case)
    source = Source(
        case=case,
        store_id=store_id,
        hypotheses=list(hypotheses.hypotheses) if hypotheses else [],
        decisions=list(decisions.decisions) if decisions else [],
        evidence=evidence,
        cited=cited,
        verdict=verdict,
        completed_at=completed_at,
        outcome_head=next((b.revision for b in reversed(batches) if b.revision), None),
        boundary=list(plan.change_boundary.files) if plan else [],
    )
    return Read(source, key, state.bytes, snapshot_digest(source))


def unchanged(read: Read, digest: str) -> bool:
    """Whether a read says nothing new for the index against a manifest `digest` (tail empty)."""
    return read.digest == digest and not read.source.evidence


def describe(value: Any) -> str:
    """A short text for a failure while reading a case (for `behind` and warnings)."""
    return str(getattr(value, "message", value))
