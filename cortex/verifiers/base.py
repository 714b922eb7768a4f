"""The verifier protocol: what the kernel gives a verifier and what a verifier returns.

A verifier never writes to the case. It returns an `Outcome`; the kernel redacts, bounds and
stores it in the batch's one commit (docs/design/verification.md §2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from cortex.cases.bounds import (
    CLAIM_STATEMENT_MAX,
    CONTRACTS_MAX,
    FAILING_SHOWN,
    NOTES_MAX,
    RAW_BLOB_MAX,
    SUMMARY_MAX,
)
from cortex.cases.redact import clip

if TYPE_CHECKING:
    from cortex.cases.records import CaseFile
    from cortex.verifiers.config import VerifierConfig
    from cortex.verifiers.runner import Watch
    from cortex.workspace.capture import Capture

Status = Literal["passed", "failed", "inconclusive", "blocked", "not_applicable", "not_run"]
EvidenceKind = Literal["unit_test", "build", "lint", "terminal_run", "observation", "artifact"]


class Finding(msgspec.Struct, kw_only=True):
    """A claim a verifier wants recorded as evidence (failing tests, scope drift, ...)."""

    kind: EvidenceKind = "observation"
    claim: str
    confidence: Literal["high", "medium", "low", "unknown"] = "high"


class Outcome(msgspec.Struct, kw_only=True):
    """What one verifier run found."""

    status: Status
    summary: str
    """One line for the receipt's claim: what ran and what it showed."""
    notes: list[str] = msgspec.field(default_factory=list)
    raw: bytes | None = None
    """The run's output, kept as a raw blob (the store redacts it)."""
    evidence_kind: EvidenceKind = "observation"
    findings: list[Finding] = msgspec.field(default_factory=list)
    contracts: dict[str, Status] = msgspec.field(default_factory=dict)
    """Per-selector results a named claim can rest on (a test id for pytest)."""
    details: dict[str, int] = msgspec.field(default_factory=dict)
    """Counts worth showing (tests passed, failed, ...)."""
    failing: list[str] = msgspec.field(default_factory=list)
    """What failed, by name, in the verifier's order: failing test ids, files outside the
    boundary. The receipt keeps the first `FAILING_SHOWN` and the total, so verify and status
    can name them (docs/design/verification.md §2)."""
    failing_total: int = 0
    """How many failed in all, when the verifier listed only some (else `len(failing)`)."""
    acknowledged: str | None = None
    """What the caller acknowledged to let this run pass (`drift` for `--ack-drift`): a pass by
    acknowledgement, shown as one, never as a plain pass (docs/design/verification.md §2)."""


class Context(msgspec.Struct, kw_only=True):
    """What a verifier may look at. Read-only by convention; the kernel owns every write."""

    root: str
    """The workspace root (the verifier's working directory)."""
    env: Mapping[str, str]
    """The environment cortex was launched with (approval is decided by the kernel)."""
    case: CaseFile
    start: Capture
    """The workspace capture taken before any verifier ran."""
    verifiers: Mapping[str, VerifierConfig]
    approve: Callable[[str, Sequence[str]], bool]
    """Whether the command (name, argv) may run: CORTEX_APPROVE_COMMANDS or a grant."""
    changed: list[str] | None = None
    """Files the task changed since the case was opened (None: git cannot say)."""
    ack_drift: bool = False
    watch: Watch | None = None
    """Who follows this verifier's run (the kernel's progress channel), if anyone: a verifier
    that runs a command passes it to `cortex.verifiers.runner.run`."""


class Verifier(Protocol):
    """A kind of verifier, registered under `kind` (built in, or the `cortex.verifiers` group)."""

    kind: str
    version: str

    def check(self, requirement: str, context: Context) -> str | None:
        """Why `requirement` cannot run at all (a configuration error), or None.

        Called for every requirement before anything runs, so one bad name refuses the whole
        call (exit 4) without a partial batch.
        """
        ...

    def run(self, requirement: str, context: Context) -> Outcome:
        """Run once and report; must not raise for an ordinary failure of the thing verified."""
        ...


def validated(outcome: object) -> Outcome:
    """A verifier's outcome, validated and bounded like input (a bad one raises).

    The kernel passes every `run()` result through this before storing it (a raise becomes a
    `blocked` receipt), and `cortex.verifiers.testing.run` does the same, so a plugin's tests see
    exactly what would be kept.
    """
    if not isinstance(outcome, Outcome):
        msg = f"run() returned {type(outcome).__name__}, not an Outcome"
        raise TypeError(msg)
    valid = msgspec.convert(msgspec.to_builtins(outcome, builtin_types=(bytes,)), Outcome)
    # Cut between words: these are redacted when stored, and a cut secret is not recognised.
    valid.summary = clip(valid.summary, SUMMARY_MAX)
    valid.notes = [clip(note, SUMMARY_MAX) for note in valid.notes[:NOTES_MAX]]
    valid.findings = valid.findings[:NOTES_MAX]
    for finding in valid.findings:
        finding.claim = clip(finding.claim, CLAIM_STATEMENT_MAX)
    if len(valid.contracts) > CONTRACTS_MAX:
        valid.contracts = dict(list(valid.contracts.items())[:CONTRACTS_MAX])
        valid.notes.append(f"only the first {CONTRACTS_MAX} contract results were kept")
    valid.details = dict(list(valid.details.items())[:NOTES_MAX])
    valid.failing_total = max(valid.failing_total, len(valid.failing), 0)
    if valid.acknowledged is not None:
        valid.acknowledged = clip(valid.acknowledged, 64) or None
    valid.failing = [clip(name, SUMMARY_MAX) for name in valid.failing[:FAILING_SHOWN]]
    msgspec.json.encode(valid)  # text that cannot be stored (a lone surrogate) raises here
    if valid.raw is not None and len(valid.raw) > RAW_BLOB_MAX:
        cut = max(valid.raw.rfind(space, 0, RAW_BLOB_MAX) for space in (b"\n", b" ", b"\t"))
        valid.raw = valid.raw[: cut + 1 if cut >= 0 else RAW_BLOB_MAX]
        valid.notes.append(f"the raw output was cut at {RAW_BLOB_MAX} bytes")
    return valid


def split(requirement: str) -> tuple[str, str | None]:
    """`command:unit` -> ("command", "unit"); `scope` -> ("scope", None)."""
    kind, sep, name = requirement.partition(":")
    return kind, (name if sep else None)
