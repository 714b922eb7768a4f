"""What `audit` says about forgets: a vouched tombstone, a hand-written one, a restored line.

docs/design/storage.md, "What audit says". Only a case holding a tombstone or a forget record
loads this module.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cortex.cases.digest import sha256_hex
from cortex.cases.errors import CortexError
from cortex.cases.findings import Collector, LedgerContext, Tombstone
from cortex.cases.fsio import read_bounded
from cortex.cases.layout import JOURNAL_FILE, RAW_DIR, ledger_file

if TYPE_CHECKING:
    from cortex.cases.records import Evidence

LOCAL = ledger_file("evidence")


def _target(origin: str | None, ledger: str) -> str:
    """The file on this machine a forget record's ledger names (it names its writer's own)."""
    if origin is not None and ledger == LOCAL:
        return f"replicas/{origin}/{LOCAL}"
    return ledger


def audit_forgets(context: LedgerContext, found: Collector) -> list[Tombstone]:
    """Check every tombstone against the forget records; the vouched ones, for the report."""
    pending = os.path.lexists(os.path.join(context.path, JOURNAL_FILE))
    vouch: dict[tuple[str, str], tuple[str | None, Evidence]] = {}
    for origin, record in context.forgets:
        assert record.forgets is not None  # noqa: S101 - only forget records are listed
        vouch[(_target(origin, record.forgets.ledger), record.forgets.record)] = (origin, record)
    shown: list[Tombstone] = []
    for file, record_id, offset, chain, sha in context.tombstones:
        entry = vouch.pop((file, record_id), None)
        warrant = None if entry is None else entry[1].forgets
        if warrant is None or warrant.line != chain or warrant.tombstone != sha:
            found.error(
                "tombstone",
                f"{record_id} was replaced by a tombstone no forget record vouches for "
                "(written or edited by hand)",
                file=file,
                offset=offset,
            )
            continue
        assert entry is not None  # noqa: S101 - a warrant comes with its record
        origin, record = entry
        if origin is None:
            _check_blobs(context.path, record, pending, found)
        shown.append(
            Tombstone(
                record=record_id,
                ledger=file,
                what=warrant.what,
                removed_line=warrant.line,
                removed_raw=warrant.raw,
                by=record.source.actor,
                via=record.source.via,
                at=record.timestamp,
                reason=record.claim,
                forget_record=record.id,
            )
        )
    tombstoned = {record_id for _, record_id, *_ in context.tombstones}
    for (file, record_id), (origin, record) in sorted(vouch.items()):
        if origin is not None and (
            record_id in tombstoned or record_id not in context.evidence_ids
        ):
            continue  # forgotten here too (under this machine's own name for it), or never held
        if origin is not None:
            found.warn(
                "forgotten_elsewhere",
                f"replica {origin} forgot {record_id} ({record.id}); this machine still holds it "
                f"in {file}: forget it here too (cortex case forget)",
                file=file,
            )
        elif pending:
            found.warn(
                "forget_pending",
                f"{record_id} is forgotten by a committed forget the next write finishes",
                file=file,
            )
        else:
            found.error(
                "forgotten_present",
                f"{record_id} was forgotten by {record.id} but its line is not a tombstone "
                "(restored or edited)",
                file=file,
            )
    return shown


def _check_blobs(path: str, record: Evidence, pending: bool, found: Collector) -> None:
    """A blob a forget removed must be gone (or about to be, while its journal is pending)."""
    assert record.forgets is not None  # noqa: S101 - a forget record
    for blob in record.forgets.raw:
        for suffix in ("txt", "tree"):
            relative = f"{RAW_DIR}/{blob.id}.{suffix}"
            try:
                data = read_bounded(os.path.join(path, relative), 1 << 30)
            except (FileNotFoundError, CortexError):
                continue
            if sha256_hex(data) != blob.sha256:
                continue
            if pending:
                found.warn(
                    "forget_pending", f"{relative} is removed by the next write", file=relative
                )
            else:
                msg = f"{relative} was forgotten by {record.id} but is still here"
                found.error("forgotten_present", msg, file=relative)
