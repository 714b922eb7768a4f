"""What each command answers in the envelope's `data`, as msgspec types: the published schemas.

The MCP server's `outputSchema` for a tool and the CLI's `docs/schema/<command>.json` are the
envelope with `data` constrained by the command's type here (`schema_of`). The use cases build
their answers from the store's own record types (`Evidence`, `Batch`, `Receipt`, `Assessment`,
...), which these types reuse, plus plain dicts for views; each answer type forbids unknown
fields, so a key added to an answer without its type fails the tests that validate every
answer of a scripted case against its schema (tests/test_schemas.py, tests/test_mcp.py).

A command without a type here answers with `data` left open (an object); the schema says so.

Long because: it is the table of every command's published answer, a short Struct each;
split, the schemas would lose the one place a reader checks them against each other.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from cortex.cases.documents import Batch, Decision, Hypothesis, Receipt
from cortex.cases.records import ChangeBoundary, Criterion, Evidence, Workspace
from cortex.kernel.envelope import SCHEMA, ErrorInfo
from cortex.kernel.kernel import StoreInfo
from cortex.kernel.proof.assessment import Assessment
from cortex.kernel.proof.will_run import WillRun
from cortex.recall.cards import Card as RecallCard


class _Answer(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """An answer's fields are camelCase on the wire, like the records they carry."""


class Problem(_Answer):
    """A record that could not be read: listed with its error, never hidden."""

    code: str
    message: str


class LeaseView(_Answer):
    """The change lease as `status` shows it."""

    actor: str
    state: Literal["active", "expired", "released"]
    acquired_at: str
    renewed_at: str | None
    expires_at: str
    released_at: str | None


class Opened(_Answer):
    """`case open`."""

    task_id: str
    created: bool
    revision: int
    status: str
    goal: str
    mode: str
    risk: str
    workspace: Workspace
    store: StoreInfo
    path: str
    warnings: list[str]
    brief: Brief | None = None
    """Cards of earlier cases matching the goal (None with --no-recall or recall_brief off)."""


class Counts(_Answer):
    """Exact committed record counts."""

    commands: int
    evidence: int
    phases: int


class PlanSummary(_Answer):
    """The current plan as `status` summarizes it."""

    plan_revision: int
    created_at: str
    hypotheses: int
    change_boundary: ChangeBoundary
    verification_required: list[str]
    uncertainty: str | None
    evidence_id: str


class Binding(_Answer):
    """Whether receipts can be bound to code in this workspace, and if not why."""

    possible: bool
    reason: str | None


class HypothesisLine(_Answer):
    """An open or challenged hypothesis."""

    id: str
    statement: str
    status: str


class Child(_Answer):
    """A child case and its own phase (or why it cannot be read)."""

    task_id: str
    status: str | None = None
    goal: str | None = None
    error: Problem | None = None


class LastRun(_Answer):
    """The last observed run of one test runner (docs/design/activity.md)."""

    runner: str
    outcome: Literal["passed", "failed"]
    summary: str | None
    at: str
    id: str
    actor: str


class Flag(_Answer):
    """Something observed that a claim or the proof does not account for."""

    kind: Literal["claim_after_failed_run", "edited_after_verify", "edited_outside_boundary"]
    message: str
    records: list[str]


class Observed(_Answer):
    """What the host saw the agent do, set against its claims (only where anything was seen)."""

    records: int
    dropped: int
    problems: list[str]
    last_at: str | None
    last_runs: list[LastRun]
    flags: list[Flag]


class Status(_Answer):
    """`case status`."""

    task_id: str
    goal: str
    status: str
    paused_from: str | None
    status_reason: str | None
    mode: str
    risk: str
    actor: str
    revision: int
    created_at: str
    updated_at: str
    workspace: Workspace
    """The workspace as the case was opened in it (`commitBefore`: HEAD then)."""
    head: str | None
    """The commit HEAD names there now (None outside git, or when it cannot be read)."""
    store: StoreInfo
    counts: Counts
    surfaces: list[str]
    acceptance_criteria: list[Criterion]
    lease: LeaseView | None
    pending_decision: Decision | None
    plan: PlanSummary | None
    verification: Assessment | None
    binding: Binding
    unresolved_hypotheses: list[HypothesisLine]
    parent_task_id: str | None
    children: list[Child]
    warnings: list[str]
    replicas: dict[str, Any] | None = None
    """Where a shared case's records came from (only once it imported a replica; see
    `cortex.cases.replicas.origins`)."""
    observed: Observed | None = None
    """What the agent's host recorded it doing, and the flags against its claims (only where
    the host recorded anything; docs/design/activity.md)."""


class Listed(_Answer):
    """One case of `case list` (or why it cannot be read)."""

    task_id: str
    goal: str | None = None
    status: str | None = None
    mode: str | None = None
    revision: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    evidence: int | None = None
    error: Problem | None = None


class Listing(_Answer):
    """`case list`."""

    store: StoreInfo
    total: int
    limit: int
    truncated: bool
    items: list[Listed]
    archived: bool = False
    """Whether these are the store's archived cases (`--archived`)."""


class Recorded(_Answer):
    """`case evidence add` and `case note`."""

    task_id: str
    revision: int
    evidence: Evidence
    recovered: list[str]
    warnings: list[str]


class EvidenceRead(_Answer):
    """`case read-evidence`."""

    task_id: str
    revision: int
    evidence: Evidence
    warnings: list[str]


class Planned(_Answer):
    """`case plan`."""

    task_id: str
    revision: int
    status: str
    plan_revision: int
    evidence_id: str
    hypotheses: list[Hypothesis]
    change_boundary: ChangeBoundary
    verification_required: list[str]
    uncertainty: str | None
    rejected_before: list[RejectedBefore] = msgspec.field(default_factory=list)
    verifiers: list[WillRun] = msgspec.field(default_factory=list)
    """Each required command verifier as it would run here: argv, program, approval."""
    warnings: list[str] = msgspec.field(default_factory=list)


class Resolved(_Answer):
    """`case resolve`."""

    task_id: str
    revision: int
    hypothesis: Hypothesis
    warnings: list[str] = msgspec.field(default_factory=list)


class Leased(_Answer):
    """`case begin-change` (and `lease renew`, `lease release`)."""

    task_id: str
    revision: int
    status: str
    lease: LeaseView | None
    result: str
    lease_token: str | None
    """The lease token, returned once by the call that took the lease (null on a renewal or a
    release, over MCP, where the server keeps it, and in an agent host's session, which holds
    the lease itself); only its sha256 is stored."""
    session: str | None = None
    """The agent host's session that holds the lease (its actor name), when one does."""


class Verified(_Answer):
    """`case verify`."""

    task_id: str
    revision: int
    status: str
    batch: Batch
    receipts: list[Receipt]
    assessment: Assessment
    warnings: list[str]


class Asked(_Answer):
    """`case decision request` (and `answer`)."""

    task_id: str
    revision: int
    status: str
    paused_from: str | None
    created: bool
    decision: Decision
    warnings: list[str] = msgspec.field(default_factory=list)


class Completed(_Answer):
    """`case complete`."""

    task_id: str
    revision: int
    status: str
    assessment: Assessment
    acknowledged: str | None
    summary: str
    """The path of the case's summary.md, whole."""
    warnings: list[str]


class Closed(_Answer):
    """`case block`, `case unblock` and `case abort`."""

    task_id: str
    revision: int
    status: str
    reason: str
    withdrawn_decision: str | None
    resumes_in: str | None = None
    """Where `unblock` takes a blocked case back to (None once it is not blocked)."""


class Member(_Answer):
    """A file of a directory artifact."""

    path: str
    size: int
    sha256: str


class Skipped(_Answer):
    """What a directory capture left out, and why."""

    path: str
    reason: str


class Artifact(_Answer):
    """`case read-artifact`: a preview of a file (or of one member), or a directory's listing."""

    ref: str
    sensitive: bool
    kind: Literal["directory"] | None = None
    # A preview.
    encoding: Literal["utf-8", "base64"] | None = None
    content: str | None = None
    path: str | None = None
    size: int | None = None
    max_bytes: int | None = None
    bytes_returned: int | None = None
    truncated: bool | None = None
    # A listing.
    files: list[Member] | None = None
    count: int | None = None
    skipped: list[Skipped] | None = None
    walked: int | None = None


class Filters(_Answer):
    """The timeline's filters as applied."""

    kinds: list[str]
    actor: str | None
    since: str | None
    until: str | None


class Around(_Answer):
    """The anchor of a timeline and how many entries lie on either side of it."""

    id: str
    at: str
    before: int
    after: int
    matches_filters: bool | None = None


def _card_name(name: str) -> str:
    if name in {"from_phase", "to_phase"}:
        return name.removesuffix("_phase")
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class Card(msgspec.Struct, kw_only=True, rename=_card_name, forbid_unknown_fields=True):
    """One timeline entry: the head every card has, and the facts of its kind."""

    id: str
    kind: str
    at: str
    actor: str | None
    title: str
    anchor: bool | None = None
    # phase
    from_phase: str | None = None
    to_phase: str | None = None
    # evidence
    evidence_kind: str | None = None
    confidence: str | None = None
    tool: str | None = None
    origin: str | None = None
    """Who said it, as every surface shows it: `agent`, `human`, or `human (reported by
    agent-1 via mcp)` for a person's word an agent reported (docs/design/trust.md)."""
    sensitive: bool | None = None
    has_raw: bool | None = None
    # command
    operation: str | None = None
    # decision
    decision_id: str | None = None
    event: str | None = None
    options: int | None = None
    answer: str | None = None
    # receipt and batch
    status: str | None = None
    binding: str | None = None
    standing: str | None = None
    batch_id: str | None = None
    purpose: str | None = None
    requirement: str | None = None
    claim_id: str | None = None
    acknowledged: str | None = None
    """A receipt that passed only by acknowledgement: what was acknowledged (`drift`)."""
    receipts: int | None = None
    labels: list[str] | None = None
    """Freshness and decision-history labels, computed when shown (evidence and decisions)."""
    replica: str | None = None
    """The imported replica a ledger record comes from (absent: this machine's own)."""


class Timeline(_Answer):
    """`case timeline`."""

    task_id: str
    revision: int
    filters: Filters
    total: int
    returned: int
    limit: int
    anchor: Around | None
    next_cursor: str | None
    entries: list[Card]
    warnings: list[str]


class Omission(_Answer):
    """What a handoff tier left out, and the command that reads it."""

    tier: int
    what: str
    count: int
    note: str
    command: str | None


class Handoff(_Answer):
    """`case handoff`: the packet (its layout: docs/design/handoff.md) and its Markdown."""

    task_id: str
    revision: int
    tier: int
    tier_name: str
    compact: bool
    budget: int
    bytes: int
    json_bytes: int
    omitted: list[Omission]
    packet: dict[str, Any]
    markdown: str


class Brief(_Answer):
    """What earlier cases of this repository learned that matches a new case's goal."""

    cards: list[RecallCard]
    returned: int
    considered: int | None
    tokens: int
    budget: int
    skipped: int
    skipped_ids: list[str]
    truncated: bool
    index: str
    """`read`, or `unavailable` when the index could not be read (a warning says why)."""


class RejectedBefore(_Answer):
    """A new hypothesis that repeats one an earlier case rejected, with that case's card."""

    hypothesis: int
    hypothesis_id: str
    overlap: float
    card: RecallCard


class IndexState(_Answer):
    """Whether the recall index is current with the case files."""

    state: str
    path: str
    behind: int
    behind_cases: list[str]
    removed: int
    unreadable: list[list[str]]
    engine: str | None = None
    """The engine the index uses (absent when there is no index yet)."""


class RecallFilters(_Answer):
    """The filters a recall query ran with."""

    repo: str | None
    kinds: list[str]
    statuses: list[str]
    since: str | None
    until: str | None


class RecallBudget(_Answer):
    """How a `--budget` walk went: the top card is always kept, others only while they fit."""

    tokens: int
    used: int
    skipped: int
    skipped_ids: list[str]
    truncated: bool


class Recalled(_Answer):
    """`recall`."""

    query: str
    terms: list[str]
    filters: RecallFilters
    limit: int
    offset: int
    total: int
    returned: int
    next_cursor: str | None
    budget: RecallBudget | None
    cards: list[RecallCard]
    index: IndexState


class RecalledRecord(_Answer):
    """One card and the full record it stands for, read from its case."""

    id: str
    card: RecallCard
    record: Any


class RecalledRecords(_Answer):
    """`recall get`."""

    ids: list[str]
    returned: int
    records: list[RecalledRecord]


class ReportOmission(_Answer):
    """What a report's size tier left out, and the command that reads it."""

    what: str
    count: int
    command: str


class Reported(_Answer):
    """`case report`: the document (on stdout) or where it was written, its size and digests."""

    task_id: str
    format: Literal["html", "md"]
    comment: bool
    max_bytes: int
    bytes: int
    sha256: str
    """Of every byte before the document's last line (the line that states it)."""
    file_sha256: str
    verdict: Literal["verified", "partial", "failed", "unverified"]
    tier: int
    tier_name: str
    omitted: list[ReportOmission]
    generated_at: str
    path: str | None
    warnings: list[str]
    document: str | None
    """The document itself when no file was named."""


ReviewCode = Literal[
    "not_complete",
    "failed",
    "no_proof",
    "partial",
    "pending_decision",
    "contested_decision",
    "case_missing",
    "no_case",
    "integrity",
    "untrusted_proof",
    "verifier_redefined",
    "required_missing",
    "not_reproduced",
]


class ReviewCaseProblem(_Answer):
    """One reason a case does not let the branch through."""

    code: ReviewCode
    message: str


class ReviewProblem(ReviewCaseProblem):
    """A problem of the review, with the case it is about (None: `no_case`)."""

    task_id: str | None


class ReviewProvenance(_Answer):
    """Where a case's latest batch was committed (docs/design/report.md, the gate, step 4)."""

    origin: Literal["local", "remote", "bundle", "unknown"] | None
    """None when the case has no batch."""
    batch: str | None
    replica: str | None
    source: str | None
    """`remote:<name>` or `bundle:<file>` for a replica's proof."""
    commit: str | None
    fetched_at: str | None
    reproduced: bool
    """Whether `--reproduce` ran the proof again on the head commit and it passed."""


class ReviewRun(_Answer):
    """One verifier run again by `--reproduce`."""

    requirement: str
    status: str
    summary: str
    definition: str
    """The digest of the base commit's definition it ran with."""


class ReviewClaim(_Answer):
    """A named claim of the latest batch, judged by its contract in the reproduction."""

    claim_id: str | None
    status: str


class ReviewReproduction(_Answer):
    """What `--reproduce` ran for a case and what it saw."""

    ok: bool
    failed: bool
    runs: list[ReviewRun]
    claims: list[ReviewClaim]
    reason: str | None
    """Why nothing could run (the checkout failed), when so."""


class ReviewCase(_Answer):
    """A case that claims commits of the range, judged against the head commit."""

    task_id: str
    claimed_by: list[Literal["trailer", "branch"]]
    goal: str | None
    phase: str | None
    """None when the store does not hold the case (`case_missing`) or it failed its audit."""
    assessment: Literal["verified", "partial", "failed", "unverified"] | None
    currency: str | None
    provenance: ReviewProvenance | None
    reproduction: ReviewReproduction | None
    problems: list[ReviewCaseProblem]
    observed: Observed | None = None
    """What the agent's host recorded it doing, set against its claims (only on the machine the
    agent ran on: activity is not shared; docs/design/activity.md)."""


class ReviewPolicy(_Answer):
    """The level of proof the gate accepts, and where it was set."""

    accept: Literal["reproduced", "local", "remote", "any"]
    from_: Literal["flag", "base", "global", "default"] = msgspec.field(name="from")


class ReviewRedefined(_Answer):
    """A verifier whose definition differs between the base and head commits."""

    requirement: str
    base: str
    head: str


class ReviewSeen(_Answer):
    """An open case of the branch that no commit of the range names: listed, not judged."""

    task_id: str
    phase: str
    goal: str | None


class ReviewBase(_Answer):
    """The ref the commits merge into and its commit."""

    ref: str
    commit: str


class ReviewHead(ReviewBase):
    """The commit under review, its tree and the branch it names."""

    tree: str | None
    branch: str | None


class Review(_Answer):
    """`review`: the verdict for a branch (also the `data` of its exit-5 refusal)."""

    verdict: Literal["approve", "needs_verification", "request_changes"]
    summary: str
    base: ReviewBase
    head: ReviewHead
    merge_base: str
    commits: int
    policy: ReviewPolicy
    cases: list[ReviewCase]
    problems: list[ReviewProblem]
    redefined: list[ReviewRedefined]
    seen: list[ReviewSeen]
    warnings: list[str]
    format: Literal["text", "md"]
    document: str | None
    """The Markdown summary, with `--format md`."""


ANSWERS: dict[str, type[msgspec.Struct]] = {
    "case.open": Opened,
    "case.status": Status,
    "case.list": Listing,
    "case.evidence.add": Recorded,
    "case.note": Recorded,
    "case.read-evidence": EvidenceRead,
    "case.plan": Planned,
    "case.resolve": Resolved,
    "case.begin-change": Leased,
    "case.lease.renew": Leased,
    "case.lease.release": Leased,
    "case.verify": Verified,
    "case.decision.request": Asked,
    "case.decision.answer": Asked,
    "case.complete": Completed,
    "case.block": Closed,
    "case.abort": Closed,
    "case.unblock": Closed,
    "recall": Recalled,
    "recall.get": RecalledRecords,
    "case.read-artifact": Artifact,
    "case.timeline": Timeline,
    "case.handoff": Handoff,
    "case.report": Reported,
    "review": Review,
}
"""Command -> the type of its `data`. Commands not listed answer with `data` left open."""


def object_schema(type_: Any) -> dict[str, Any]:
    """A JSON Schema for a msgspec type with `type: object` at its root (as MCP requires).

    msgspec puts every struct under `$defs` and points the root at it with `$ref`; the root is
    replaced by the struct's own definition (refs stay valid: they resolve from the root).
    """
    schema = msgspec.json.schema(type_)
    defs: dict[str, Any] = schema.pop("$defs", {})
    ref = schema.get("$ref", "")
    root: dict[str, Any] = dict(defs[ref.rsplit("/", 1)[-1]]) if ref else schema
    rest = {name: value for name, value in defs.items() if f"#/$defs/{name}" != ref}
    if rest:
        root["$defs"] = rest
    return root


class Candidate(_Answer):
    """One id an ambiguous prefix begins, with its title (a case's goal) when known."""

    id: str
    title: str | None = None


class Ambiguity(_Answer):
    """A prefix that begins more than one id (`cortex.kernel.refs`)."""

    prefix: str
    total: int
    candidates: list[Candidate]


class Ambiguous(_Answer):
    """The `data` of a refusal for an ambiguous id prefix: the candidates to choose from."""

    ambiguous: Ambiguity


REFUSAL_DATA: tuple[type[msgspec.Struct], ...] = (Ambiguous,)
"""What a refusal may carry in `data` on any command (otherwise it is null)."""


def envelope_schema(command: str, action: type[msgspec.Struct]) -> dict[str, Any]:
    """The envelope `command` answers with, for a face whose next steps are `action`s.

    `data` is the command's answer type (open if it has none; null on a refusal) and `schema`
    the version of the contract.
    """
    answer = ANSWERS.get(command)
    data: Any = Any if answer is None else answer | None
    envelope = msgspec.defstruct(
        "Envelope",
        [
            ("schema", str),
            ("ok", bool),
            ("command", str),
            ("data", data),
            ("error", ErrorInfo | None),
            ("actions", list[action], msgspec.field(default_factory=list)),  # type: ignore[valid-type]
        ],
        kw_only=True,
    )
    built = object_schema(envelope)
    properties = built["properties"]
    if answer is not None:
        # A refusal's report (the candidates of an ambiguous prefix) is data too.
        for report in REFUSAL_DATA:
            extra = msgspec.json.schema(report)
            built.setdefault("$defs", {}).update(extra.pop("$defs", {}))
            properties["data"]["anyOf"].insert(-1, extra)
    properties["schema"] = {"const": SCHEMA, "description": "the version of the contract"}
    properties["command"] = {"const": command}
    built["title"] = f"cortex {command}"
    built["description"] = f"The envelope `{command}` answers with ({SCHEMA})."
    return built
