"""The records of a case directory, as msgspec Structs that reject unknown fields.

Python attributes are snake_case; on disk every field is camelCase (`rename="camel"`), the
format the case files document. Ledger records end with two fields the store fills in when it
appends them: `revision` (the case revision the line was committed at) and `prev` (the sha256 of
the previous line, which chains the ledger).
"""

# No `from __future__ import annotations` here: with string annotations msgspec must eval every
# field type on first use, about 1 ms per process on the per-call path (docs/benchmarks.md).
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from cortex.cases.digest import sha256_hex

SCHEMA_VERSION = 1

Mode = Literal["change", "investigate", "review"]
Risk = Literal["low", "medium", "high"]
Phase = Literal[
    "new",
    "orienting",
    "investigating",
    "planned",
    "changing",
    "verifying",
    "persisting",
    "complete",
    "blocked",
    "abandoned",
    "needs_human_decision",
]
Surface = Literal["code", "browser", "terminal", "artifact", "secret"]
Confidence = Literal["high", "medium", "low", "unknown"]
Sensitivity = Literal["normal", "sensitive"]
Origin = Literal["agent", "human", "reviewer", "tool"]
Via = Literal["cli-tty", "cli", "mcp", "studio", "share", "hook"]
"""How a record arrived: the face that received the call (docs/design/trust.md)."""
EvidenceKind = Literal[
    "observation",
    "note",
    "plan",
    "code_location",
    "code_graph",
    "semantic_search",
    "browser_run",
    "terminal_run",
    "unit_test",
    "build",
    "lint",
    "artifact",
    "human_report",
    "model_inference",
    "repository_contract",
    "tool_unavailable",
]
WorkspaceKind = Literal["git", "directory"]
Count = Annotated[int, msgspec.Meta(ge=0)]
Revision = Annotated[int, msgspec.Meta(ge=0)]
Digest = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]

LEDGERS = ("evidence", "commands", "phases")
"""The ledgers of format v1; each is `<name>.jsonl` in the case directory."""


class Record(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename="camel"):
    """Common options: strict decoding, keyword construction, camelCase on disk."""


# case.json ----------------------------------------------------------------------------------


class Workspace(Record, kw_only=True):
    """Where the task runs: captured once, when the case is opened."""

    kind: WorkspaceKind
    root: str
    repository: str
    branch: str | None = None
    commit_before: str | None = None


class Criterion(Record, kw_only=True):
    """An acceptance criterion, immutable once the case exists."""

    id: str
    statement: str


class ChangeBoundary(Record, kw_only=True):
    """The files and symbols a change task may touch (set by the plan)."""

    files: list[str] = msgspec.field(default_factory=list)
    symbols: list[str] = msgspec.field(default_factory=list)
    reason: str | None = None


class Lease(Record, kw_only=True):
    """A time-bounded claim on making changes; kept for audit after release."""

    actor: str
    acquired_at: str
    renewed_at: str
    expires_at: str
    released_at: str | None = None
    token_sha256: Digest | None = None
    """sha256 of the lease token `begin-change` returned; never the token itself. None on a
    lease taken before tokens existed, which is honoured by name until it ends."""
    epoch: Count = 0
    """The fencing epoch: one more than the lease this one replaced (a renewal keeps it). Shared
    replicas resolve their state by it first (docs/design/sharing.md)."""


class SnapshotRef(Record, kw_only=True):
    """Which version of an auxiliary snapshot (plan.json, ...) the case is at."""

    revision: Revision
    sha256: Digest


class LedgerState(Record, kw_only=True):
    """The committed extent of one ledger: readers never look past `bytes`."""

    count: Count = 0
    bytes: Count = 0
    tip: str = ""
    last: str = ""
    """The latest timestamp committed to the ledger ("" before the first line, or unknown)."""
    ordered: bool = False
    """Whether every committed line's timestamp is at or after the one before it (readers may
    then search the ledger by time; docs/design/storage.md, "Time order")."""


class CaseFile(Record, kw_only=True):
    """`case.json`: the case snapshot. Its revision counts commits."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision
    id: str
    created_at: str
    updated_at: str
    goal: str
    mode: Mode = "change"
    status: Phase = "new"
    paused_from: Phase | None = None
    """Where a held case goes back to: the phase a pending decision paused, or the phase a
    blocked case was blocked in (`unblock` returns there)."""
    actor: str
    risk: Risk = "medium"
    parent_task_id: str | None = None
    child_task_ids: list[str] = msgspec.field(default_factory=list)
    idempotency_key: str | None = None
    workspace: Workspace
    surfaces: list[Surface] = msgspec.field(default_factory=lambda: ["code"])
    change_boundary: ChangeBoundary = msgspec.field(default_factory=ChangeBoundary)
    change_lease: Lease | None = None
    verification_required: list[str] = msgspec.field(default_factory=list)
    acceptance_criteria: list[Criterion] = msgspec.field(default_factory=list)
    status_reason: str | None = None
    """Why the case is blocked or abandoned."""
    ledgers: dict[str, LedgerState] = msgspec.field(default_factory=dict)
    snapshots: dict[str, SnapshotRef] = msgspec.field(default_factory=dict)


# Ledger records ---------------------------------------------------------------------------


class Source(Record, kw_only=True):
    """Where a piece of evidence came from."""

    tool: str
    uri: str | None = None
    actor: str | None = None
    origin: Origin = "agent"
    via: Via | None = None
    """How it arrived (None: written before channels were recorded, or by a library call)."""
    claimed_by_agent: bool = False
    """A human or reviewer origin that arrived where no person was present: the caller's claim,
    shown as reported by `actor` (docs/design/trust.md, "Provenance with its channel")."""


class Location(Record, kw_only=True):
    """A place in the repository a piece of evidence is about."""

    file: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    symbol: str | None = None
    blob: str | None = None
    """The git blob id of `file` in the work tree when the record was made (None: not a git
    workspace, no such file, or over the hashing bound). Freshness is judged against it."""
    head: str | None = None
    """The HEAD commit when the record was made, where renames of `file` are traced from."""


Outcome = Literal["upheld", "overturned"]


class Resolution(Record, kw_only=True):
    """A person's resolution of the contests of one decision (docs/design/recall.md)."""

    decision: str
    outcome: Outcome
    contests: list[str] = msgspec.field(default_factory=list)
    """The contesting evidence ids this resolution closes (those open when it was made)."""


class ForgottenBlob(Record, kw_only=True):
    """A raw blob a forget removed: which, and the digest and size of what was removed."""

    id: str
    sha256: Digest
    bytes: Count


class Forgetting(Record, kw_only=True):
    """What a forget record vouches for (docs/design/storage.md, "Forgetting a record")."""

    record: str
    ledger: str = "evidence.jsonl"
    """The ledger holding the tombstone, relative to the case directory of the replica that
    wrote this record (`replicas/<key>/evidence.jsonl` for a record imported from another)."""
    what: Literal["record", "raw"] = "record"
    """`record`: the whole record; `raw`: only its raw output (the claim stays)."""
    line: Digest
    """The chain hash of the replaced line: the digest of what was removed."""
    tombstone: Digest
    """The sha256 of the tombstone as written."""
    raw: list[ForgottenBlob] = msgspec.field(default_factory=list)


class Evidence(Record, kw_only=True):
    """One line of `evidence.jsonl`: a claim with its provenance."""

    id: str
    timestamp: str
    kind: EvidenceKind = "observation"
    source: Source
    claim: str
    location: Location | None = None
    confidence: Confidence = "unknown"
    sensitivity: Sensitivity = "normal"
    raw_ref: str | None = None
    raw_sha256: Digest | None = None
    """sha256 of the raw blob as stored (after redaction), so audit can detect an edit."""
    derived_from: list[str] = msgspec.field(default_factory=list)
    contests: str | None = None
    """A decision (dec_...) this record disputes; it stays contested until a person resolves it."""
    resolves: Resolution | None = None
    """Set on the record of a person's resolution of a contest (`case decision resolve`)."""
    forgets: Forgetting | None = None
    """Set on the record of a forget: what it replaced by a tombstone, and why (the claim)."""
    revision: Revision = 0
    prev: str = ""


class ActivityAnchor(Record, kw_only=True):
    """The last complete `activity.jsonl` record when a commit was made: position and hash."""

    n: Count
    tip: Digest


class Command(Record, kw_only=True):
    """One line of `commands.jsonl`: what was done, by whom, how it ended. Never content."""

    id: str
    timestamp: str
    actor: str
    operation: str
    status: Literal["ok"] = "ok"
    duration_ms: int
    target: str | None = None
    note: str | None = None
    case_digest: Digest | None = None
    """sha256 of case.json as this commit wrote it (ledger extents aside): `audit` compares the
    last one with the snapshot on disk, so an edit of an unchained field is detected."""
    via: Via | None = None
    """How the command arrived (None before channels were recorded)."""
    activity: ActivityAnchor | None = None
    """The activity the host had recorded by this commit (None: none, or before activity)."""
    revision: Revision = 0
    prev: str = ""


class PhaseChange(Record, kw_only=True):
    """One line of `phases.jsonl`: a committed phase transition."""

    id: str
    timestamp: str
    from_phase: Phase | None = msgspec.field(default=None, name="from")
    to_phase: Phase = msgspec.field(name="to")
    actor: str
    reason: str | None = None
    via: Via | None = None
    """How the command that made the step arrived (None before channels were recorded)."""
    adopted: str | None = None
    """Set when the transition adopts another replica's state at a fetch (its replica key): the
    local chain records it, the merged history leaves it out (docs/design/sharing.md)."""
    revision: Revision = 0
    prev: str = ""


LEDGER_TYPES: dict[str, type[Evidence | Command | PhaseChange]] = {
    "evidence": Evidence,
    "commands": Command,
    "phases": PhaseChange,
}
LEDGER_PREFIXES = {"evidence": "ev", "commands": "cmd", "phases": "ph"}

LedgerRecord = Evidence | Command | PhaseChange


class SchemaProbe(msgspec.Struct, rename="camel"):
    """Just the format version of a snapshot, read before decoding it strictly."""

    schema_version: int = 0


class LineMeta(msgspec.Struct):
    """Just the revision of a ledger line, decoded without validating the rest."""

    revision: int = 0


# Store bookkeeping ------------------------------------------------------------------------


class StagedFile(Record, kw_only=True):
    """One file of a multi-file commit: where it was staged and where it goes."""

    staged: str
    final: str
    backup: str | None = None
    inode: int | None = None
    """The staged file's inode: a rollback removes a published file only while it is this one,
    so a journal cannot make recovery delete a file another commit published."""


class RemovedFile(Record, kw_only=True):
    """A file a committed forget removes, if it still holds what was named."""

    path: str
    sha256: Digest


class ForgetStep(Record, kw_only=True):
    """One forget a committed journal applies: a ledger range and the files to remove."""

    ledger: str
    offset: Count
    length: Count
    was: Digest
    """The sha256 of the bytes the range holds before the forget."""
    tombstone: str
    """The bytes that replace them (ASCII JSON and spaces, no forgotten text)."""
    remove: list[RemovedFile] = msgspec.field(default_factory=list)


class Journal(Record, kw_only=True):
    """`.journal.json`: enough to roll an interrupted multi-file commit back or forward."""

    schema_version: int = SCHEMA_VERSION
    task_id: str
    from_revision: int
    to_revision: int
    ledgers: dict[str, int]
    files: list[StagedFile] = msgspec.field(default_factory=list)
    replica_ledgers: dict[str, int] = msgspec.field(default_factory=dict)
    """Imported replicas' ledgers this commit appends to (`replicas/<key>/<ledger>.jsonl`) and
    their committed lengths, which a rollback truncates them back to."""
    forget: list[ForgetStep] = msgspec.field(default_factory=list)
    """What a forget replaces and removes once the commit point is passed; recovery finishes it."""


class LockInfo(msgspec.Struct, kw_only=True):
    """Who holds a lock, written by the holder for `busy` diagnostics only."""

    pid: int
    host: str
    actor: str
    operation: str
    since: str


class KeyRecord(Record, kw_only=True):
    """An idempotency key's claim on a case id."""

    task_id: str
    fingerprint: str


# Codec ------------------------------------------------------------------------------------

_T = TypeVar("_T")

_encoder = msgspec.json.Encoder(order="deterministic")
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def encode(obj: Any) -> bytes:
    """Compact, deterministic JSON (the form used for ledger lines and hashing)."""
    return _encoder.encode(obj)


def encode_pretty(obj: Any) -> bytes:
    """Indented JSON with a final newline: the form used for snapshots people read."""
    return msgspec.json.format(_encoder.encode(obj), indent=2) + b"\n"


def case_digest(case: CaseFile) -> str:
    """The digest a commit's audit line carries: case.json without its ledger extents.

    The extents are left out because they depend on the audit line itself; the ledgers are
    chained, so they need no second guard.
    """
    return sha256_hex(encode(msgspec.structs.replace(case, ledgers={})))


def decode(data: bytes, type_: type[_T]) -> _T:
    """Decode and validate; raises msgspec.ValidationError or msgspec.DecodeError."""
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    result: _T = decoder.decode(data)
    return result
