"""What an audit finds and reports, and what its checks share (`integrity` and its helpers).

`integrity` audits a case, `replica_audit` its imported replicas and `forgotten` its forgets;
each collects findings in one `Collector` and reads the ledgers through one `LedgerContext`.
Here, not in `integrity`, so that the helpers need not import the module that calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from cortex.cases import ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.records import (
    ActivityAnchor,
    CaseFile,
    Command,
    Evidence,
    ForgottenBlob,
    PhaseChange,
)
from cortex.cases.redact import Redactor
from cortex.cases.scrub import strings


class Finding(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One problem found by the audit."""

    severity: Literal["error", "warning"]
    code: str
    message: str
    file: str | None = None
    offset: int | None = None


class Tombstone(msgspec.Struct, kw_only=True, rename="camel"):
    """A forgotten record, as its forget record vouches for it: who, how, when, why, what."""

    record: str
    ledger: str
    what: str
    removed_line: str
    """The chain hash of the line the tombstone replaced: the digest of what was removed."""
    removed_raw: list[ForgottenBlob]
    by: str | None
    via: str | None
    at: str
    reason: str
    forget_record: str


class ReplicaAudited(msgspec.Struct, kw_only=True, rename="camel"):
    """One imported replica the audit checked, and the lines of each ledger it read there."""

    key: str
    replica: str
    records: dict[str, int]


class AuditReport(msgspec.Struct, kw_only=True, rename="camel"):
    """The outcome of an audit: ok means no errors (warnings allowed)."""

    task_id: str
    ok: bool
    revision: int | None
    records: dict[str, int]
    """Ledger lines audited, per ledger: the local replica's and every imported one's."""
    errors: list[Finding]
    warnings: list[Finding]
    tombstones: list[Tombstone] = msgspec.field(default_factory=list)
    replicas: list[ReplicaAudited] = msgspec.field(default_factory=list)
    """The imported replicas audited (a fetched case's records are mostly theirs)."""


class Collector:
    """The findings of one audit, errors and warnings apart."""

    def __init__(self) -> None:
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []

    def error(self, code: str, message: str, **where: Any) -> None:
        """A violation of the format's invariants."""
        self.errors.append(Finding(severity="error", code=code, message=message, **where))

    def warn(self, code: str, message: str, **where: Any) -> None:
        """Debris of an interrupted write, or something a person may want to look at."""
        self.warnings.append(Finding(severity="warning", code=code, message=message, **where))


def ulid_checker() -> Callable[[str], bool]:
    """An independent ULID parser (python-ulid) to cross-check the ids we minted."""
    from ulid import ULID  # lazy: ~50 ms to import, audit only

    def check(text: str) -> bool:
        try:
            return str(ULID.from_str(text)) == text
        except ValueError:
            return False

    return check


class LedgerContext:
    """What the ledger checks share: the case, the findings, and cross-ledger references."""

    def __init__(self, *, path: str, case: CaseFile, found: Collector, redactor: Redactor) -> None:
        self.path = path
        self.case = case
        self.found = found
        self.redactor = redactor
        self.check_ulid = ulid_checker()
        self.raw_refs: dict[str, str | None] = {}
        """raw id -> the sha256 the evidence recorded for it."""
        self.evidence_ids: set[str] = set()
        self.last_command: Command | None = None
        self.phases: list[PhaseChange] = []
        self.anchors: list[ActivityAnchor] = []
        """Each commit's anchor of the activity ledger, in order (docs/design/activity.md)."""
        self.tombstones: list[tuple[str, str, int, str, str]] = []
        """(ledger file, record id, offset, recorded chain hash, sha256 of the tombstone)."""
        self.forgets: list[tuple[str | None, Evidence]] = []
        """Forget records, each with the replica key it was imported from (None: local)."""

    def note_forget(
        self, file: str, record: Evidence, line: bytes, offset: int, origin: str | None
    ) -> None:
        """Remember a tombstone or a forget record, for `forgotten.audit_forgets`."""
        recorded = ledger.recorded_hash(line)
        if recorded is not None:
            self.tombstones.append((file, record.id, offset, recorded, sha256_hex(line)))
        if record.forgets is not None:
            self.forgets.append((origin, record))


def audit_secrets(
    record: msgspec.Struct,
    redactor: Redactor,
    file: str,
    found: Collector,
    *,
    offset: int | None = None,
) -> None:
    """Warn when stored text still matches a secret pattern (e.g. a literal added later)."""
    for text in strings(msgspec.to_builtins(record)):
        if redactor.looks_secret(text):
            found.warn(
                "secret_residue",
                "stored text matches a secret pattern (was a redaction literal added later?)",
                file=file,
                offset=offset,
            )
            return
