"""The auxiliary snapshots of a case: plan, hypotheses, decisions and verification.

Kept apart from `records` so that the commands that never touch them (evidence add, note,
status of a case without a plan) do not pay to define them: each msgspec Struct class costs
import time on the per-call path (docs/benchmarks.md).
"""

# No `from __future__ import annotations`: see records.py.
from __future__ import annotations

from typing import Literal

import msgspec

from cortex.cases.records import SCHEMA_VERSION, ChangeBoundary, Record, Revision, Via

HypothesisStatus = Literal["open", "confirmed", "challenged", "rejected"]
DecisionStatus = Literal["pending", "answered", "withdrawn"]


class Plan(Record, kw_only=True):
    """`plan.json`: the current plan. Earlier revisions live in the evidence ledger."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision = 0
    plan_revision: int
    created_at: str
    actor: str
    reason: str | None = None
    hypotheses: list[str]
    change_boundary: ChangeBoundary
    verification_required: list[str]
    uncertainty: str
    evidence_id: str
    """The `plan` evidence record whose raw blob holds this plan in full."""


class HypothesisEvent(Record, kw_only=True):
    """One resolution of a hypothesis."""

    status: HypothesisStatus
    reason: str
    evidence: list[str] = msgspec.field(default_factory=list)
    actor: str
    at: str


class Hypothesis(Record, kw_only=True):
    """A falsifiable explanation and how it could be shown wrong."""

    id: str
    statement: str
    disproof: str
    supports: list[str] = msgspec.field(default_factory=list)
    status: HypothesisStatus = "open"
    plan_revision: int
    retired: bool = False
    """True once a later plan replaced it; its status and history stay."""
    history: list[HypothesisEvent] = msgspec.field(default_factory=list)


class Hypotheses(Record, kw_only=True):
    """`hypotheses.json`."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision = 0
    hypotheses: list[Hypothesis] = msgspec.field(default_factory=list)


class DecisionOption(Record, kw_only=True):
    """One answer a person can choose."""

    id: str
    label: str
    consequence: str | None = None


class Decision(Record, kw_only=True):
    """A bounded question for a person; the case waits for it."""

    id: str
    question: str
    options: list[DecisionOption]
    requester: str
    requested_at: str
    status: DecisionStatus = "pending"
    answer: str | None = None
    responder: str | None = None
    answered_at: str | None = None
    evidence_id: str | None = None
    answered_via: Via | None = None
    """How the answer arrived: `cli-tty` (confirmed at a terminal), `studio`, or the channel of
    an unattended answer (None before channels were recorded)."""
    unattended: str | None = None
    """For an answer made under the machine's opt-in, whom the opt-in says it stands for."""
    subject: str | None = None
    """What the decision is about; a later answered decision on the same subject supersedes it."""


class Decisions(Record, kw_only=True):
    """`decisions.json`."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision = 0
    decisions: list[Decision] = msgspec.field(default_factory=list)


ReceiptStatus = Literal["passed", "failed", "inconclusive", "blocked", "not_applicable", "not_run"]
Purpose = Literal["verifier_run", "named_claim", "marker"]
Binding = Literal["bound", "unbound"]


class Receipt(Record, kw_only=True):
    """One verification result, bound (or not) to the code state it was produced on."""

    id: str
    batch_id: str
    purpose: Purpose
    requirement: str | None = None
    """The plan's verifier requirement this run addresses (`command:unit`, `scope`)."""
    claim: str
    claim_id: str | None = None
    contract: str | None = None
    """For a named claim: the run it rests on, `REQUIREMENT` or `REQUIREMENT#SELECTOR`."""
    actor: str
    tool: str
    verifier_version: str | None = None
    status: ReceiptStatus
    evidence: list[str] = msgspec.field(default_factory=list)
    artifact: str | None = None
    sensitive: bool = False
    notes: list[str] = msgspec.field(default_factory=list)
    revision: str | None = None
    """The HEAD commit the batch was bound to."""
    dirty_digest: str | None = None
    binding: Binding
    timestamp: str
    tree: str | None = None
    """The git tree id of the code it ran on (verification.md §1.1); a receipt with one is
    current while the workspace's tree id equals it, whatever HEAD is. None in receipts
    written before tree ids, or when none could be named: HEAD and digest decide then."""
    failing: list[str] = msgspec.field(default_factory=list)
    """What failed, by name (failing test ids, files outside the boundary): the first
    `FAILING_SHOWN` the verifier listed. Empty in receipts written before it was recorded."""
    failing_total: int = 0
    """How many failed in all (`failing` may name only the first of them)."""
    acknowledged: str | None = None
    """What the caller acknowledged for this receipt to pass (`drift`): a pass by
    acknowledgement, not a plain pass. None in receipts written before it was recorded (the
    assessment reads an older scope receipt's note instead)."""
    verifier_sha256: str | None = None
    """The digest of the verifier definition that ran (`definition_digest`: a configured
    table's argv, timeout and kind), which the merge gate compares with the base branch's.
    None in receipts written before it was recorded (docs/design/report.md)."""


class Batch(Record, kw_only=True):
    """One `verify` call: what it captured and whether its receipts are bound."""

    id: str
    actor: str
    started_at: str
    finished_at: str
    binding: Binding
    reasons: list[str] = msgspec.field(default_factory=list)
    """Why the batch is unbound (empty when bound)."""
    revision: str | None = None
    dirty_digest: str | None = None
    branch: str | None = None
    case_revision: int
    lease_actor: str | None = None
    plan_sha256: str | None = None
    """The plan the batch ran under (its snapshot digest): a new plan makes the batch stale."""
    acknowledged: list[str] = msgspec.field(default_factory=list)
    """Gates the caller acknowledged (`no-op`, `drift`)."""
    tree: str | None = None
    """The git tree id of the work tree at the commit-time capture (its receipts carry it)."""
    head_tree: str | None = None
    """HEAD's own tree id then: when it differs from `tree`, the run was on uncommitted code."""


class ClaimTerms(Record, kw_only=True):
    """What a named-claim id means, fixed by its first use."""

    statement: str
    contract: str


class Verification(Record, kw_only=True):
    """`verification.json`: the newest batches and their receipts, oldest first."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision = 0
    batches: list[Batch] = msgspec.field(default_factory=list)
    receipts: list[Receipt] = msgspec.field(default_factory=list)
    claims: dict[str, ClaimTerms] = msgspec.field(default_factory=dict)
    """Every claim id the case has used, so that trimming old batches cannot free an id."""


AUX_TYPES: dict[str, type[Plan | Hypotheses | Decisions | Verification]] = {
    "plan.json": Plan,
    "hypotheses.json": Hypotheses,
    "decisions.json": Decisions,
    "verification.json": Verification,
}
