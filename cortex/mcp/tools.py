"""The MCP tool table: each tool's arguments, hints, and the kernel call it makes.

A tool calls the same kernel function as the matching CLI command and answers with the same
envelope (its `command` is the CLI's dotted name), so the two surfaces cannot drift apart. This
module does not import the MCP SDK: the schemas are generated from msgspec types, and the table
can be checked without a server.

What is deliberately not a tool: answering a decision (a person's act; agents ask, people
answer), `case trust` (approving a command must happen at a terminal), and the set-up commands.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from cortex.kernel import defaults
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import CortexError, InvalidInputError

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel

TaskId = Annotated[
    str,
    msgspec.Meta(
        description="the case's task id (task_...), a unique prefix of one (task_ and at least "
        "4 more characters), or @latest (the newest case of this workspace)"
    ),
]
Actor = Annotated[
    str | None,
    msgspec.Meta(description="who is acting (default: $CORTEX_ACTOR of the server, else mcp)"),
]
Expect = Annotated[
    int | None,
    msgspec.Meta(description="refuse (exit 6) unless the case is still at this revision"),
]
Origin = Literal["agent", "human", "reviewer", "tool"]
Workspace = Annotated[
    str | None,
    msgspec.Meta(
        description="run as if the server had started in this directory (relative to where it "
        "did), like the CLI's -C: it must exist and be readable"
    ),
]


class _Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Tool arguments: unknown fields are refused, like unknown CLI options.

    Every tool takes `workspace`, the CLI's `-C`: the directory the call runs in.
    """

    workspace: Workspace = None


class HypothesisArg(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A hypothesis as an object (beside the 'statement :: disproof' shorthand)."""

    statement: Annotated[str, msgspec.Meta(description="what you believe is true")]
    disproof: Annotated[str, msgspec.Meta(description="what would show it false")]
    supports: Annotated[
        list[str], msgspec.Meta(description="ids of the evidence behind it (ev_...)")
    ] = msgspec.field(default_factory=list)


class OptionArg(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A decision option as an object (beside the 'id=label|consequence' shorthand)."""

    id: Annotated[str, msgspec.Meta(description="the option id a person answers with")]
    label: str
    consequence: str | None = None


class ClaimArg(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A named claim as an object (beside the 'ID=STATEMENT' and 'ID=REQUIREMENT' shorthand)."""

    id: Annotated[str, msgspec.Meta(description="the claim id (an acceptance criterion's id)")]
    statement: Annotated[str, msgspec.Meta(description="for a criterion: its exact statement")]
    contract: Annotated[
        str, msgspec.Meta(description="what proves it: REQUIREMENT[#SELECTOR], e.g. pytest#id")
    ]


class OpenTask(_Args):
    """Arguments of cortex_open_task."""

    goal: Annotated[str, msgspec.Meta(description="what the task should achieve")]
    mode: Annotated[
        Literal["change", "investigate", "review"], msgspec.Meta(description=defaults.MODE_HELP)
    ] = defaults.MODE
    risk: Literal["low", "medium", "high"] = defaults.RISK
    surfaces: Annotated[list[str], msgspec.Meta(description=defaults.one_of(defaults.SURFACES))] = (
        msgspec.field(default_factory=list)
    )
    criteria: Annotated[
        list[str], msgspec.Meta(description="acceptance criteria, each 'ID=STATEMENT'")
    ] = msgspec.field(default_factory=list)
    idempotency_key: Annotated[
        str | None, msgspec.Meta(description="a retry with the same key returns the same case")
    ] = None
    parent: Annotated[str | None, msgspec.Meta(description="open as a child of this case")] = None
    actor: Actor = None
    no_recall: Annotated[
        bool, msgspec.Meta(description="leave out the brief of what earlier cases learned")
    ] = False


class TaskOnly(_Args):
    """A case, by task id."""

    task_id: TaskId


class ListTasks(_Args):
    """Arguments of cortex_list_tasks."""

    limit: Annotated[int, msgspec.Meta(description="at most this many cases, newest first")] = (
        defaults.LIST_LIMIT
    )


class RecordEvidence(_Args):
    """Arguments of cortex_record_evidence."""

    task_id: TaskId
    claim: Annotated[str, msgspec.Meta(description="what the evidence shows")]
    kind: Annotated[str, msgspec.Meta(description=defaults.one_of(defaults.EVIDENCE_KINDS))] = (
        defaults.EVIDENCE_KIND
    )
    source: Annotated[str, msgspec.Meta(description="the tool that produced it")] = (
        defaults.EVIDENCE_SOURCE
    )
    uri: Annotated[str | None, msgspec.Meta(description="where the source can be found")] = None
    origin: Origin = defaults.ORIGIN
    file: Annotated[str | None, msgspec.Meta(description="repository-relative file")] = None
    line: Annotated[str | None, msgspec.Meta(description="line or range, N or N-M")] = None
    symbol: Annotated[str | None, msgspec.Meta(description="symbol the claim is about")] = None
    confidence: Literal["high", "medium", "low", "unknown"] = defaults.CONFIDENCE
    sensitive: bool = False
    raw: Annotated[
        str | None,
        msgspec.Meta(description="raw tool output to keep (redacted, stored as a blob)"),
    ] = None
    raw_dir: Annotated[
        str | None,
        msgspec.Meta(
            description="a directory of raw output to keep, relative to the server's workspace "
            "(at most 100 files; symlinks are not followed)"
        ),
    ] = None
    derived_from: Annotated[list[str], msgspec.Meta(description="evidence ids this builds on")] = (
        msgspec.field(default_factory=list)
    )
    actor: Actor = None
    expect_revision: Expect = None
    contests: Annotated[
        str | None,
        msgspec.Meta(
            description="dispute this answered decision (dec_...); both stay [contested] "
            "until a person resolves it"
        ),
    ] = None


class Note(_Args):
    """Arguments of cortex_note."""

    task_id: TaskId
    text: Annotated[str, msgspec.Meta(description="the note")]
    origin: Origin = defaults.ORIGIN
    actor: Actor = None
    expect_revision: Expect = None
    contests: Annotated[
        str | None,
        msgspec.Meta(
            description="dispute this answered decision (dec_...); both stay [contested] "
            "until a person resolves it"
        ),
    ] = None


class PlanArgs(_Args):
    """Arguments of cortex_plan."""

    task_id: TaskId
    hypotheses: Annotated[
        list[str | HypothesisArg],
        msgspec.Meta(
            description="each {statement, disproof, supports} or 'statement :: how to disprove it'"
        ),
    ] = msgspec.field(default_factory=list)
    supports: Annotated[
        list[str], msgspec.Meta(description="evidence behind hypothesis N, 'N=EV,...'")
    ] = msgspec.field(default_factory=list)
    files: Annotated[
        list[str], msgspec.Meta(description="files the change may touch; 'dir/' covers a tree")
    ] = msgspec.field(default_factory=list)
    symbols: list[str] = msgspec.field(default_factory=list)
    boundary_reason: str | None = None
    verify: Annotated[
        list[str], msgspec.Meta(description="verifiers that must pass: pytest, command:NAME, ...")
    ] = msgspec.field(default_factory=list)
    uncertainty: str | None = None
    reason: Annotated[
        str | None, msgspec.Meta(description="why the plan changes (required to re-plan)")
    ] = None
    actor: Actor = None
    expect_revision: Expect = None


class Resolve(_Args):
    """Arguments of cortex_resolve."""

    task_id: TaskId
    hypothesis_id: Annotated[str, msgspec.Meta(description="hyp_..., or a unique prefix of one")]
    status: Literal["confirmed", "challenged", "rejected"]
    reason: str
    evidence: list[str] = msgspec.field(default_factory=list)
    actor: Actor = None
    expect_revision: Expect = None


class BeginChange(_Args):
    """Arguments of cortex_begin_change."""

    task_id: TaskId
    actor: Annotated[
        str | None,
        msgspec.Meta(description="who takes the lease (default: $CORTEX_ACTOR, else mcp)"),
    ] = None
    ttl: Annotated[str | None, msgspec.Meta(description="90s, 15m, 1h (default 15m)")] = None


class Verify(_Args):
    """Arguments of cortex_verify."""

    task_id: TaskId
    claims: Annotated[
        list[str | ClaimArg],
        msgspec.Meta(description="named claims, each {id, statement, contract} or 'ID=STATEMENT'"),
    ] = msgspec.field(default_factory=list)
    contracts: Annotated[
        list[str], msgspec.Meta(description="what each claim rests on, 'ID=REQUIREMENT[#SEL]'")
    ] = msgspec.field(default_factory=list)
    ack_drift: bool = False
    no_op: bool = False
    actor: Annotated[str | None, msgspec.Meta(description="default: the lease holder")] = None


class RequestDecision(_Args):
    """Arguments of cortex_request_decision."""

    task_id: TaskId
    question: str
    options: Annotated[
        list[str | OptionArg],
        msgspec.Meta(
            description="2 to 16 answers, each {id, label, consequence} or 'ID=LABEL[|CONSEQUENCE]'"
        ),
    ] = msgspec.field(default_factory=list)
    actor: Actor = None
    subject: Annotated[
        str | None,
        msgspec.Meta(description="what it decides; a later decision on the subject supersedes it"),
    ] = None


class Complete(_Args):
    """Arguments of cortex_complete."""

    task_id: TaskId
    outcome: Annotated[str, msgspec.Meta(description="what was done")]
    accept_failed: Annotated[
        str | None, msgspec.Meta(description="why to complete although verification failed")
    ] = None
    verification_not_possible: Annotated[
        str | None, msgspec.Meta(description="why nothing can be (fully) proven")
    ] = None
    actor: Annotated[str | None, msgspec.Meta(description="default: the lease holder")] = None


class Abort(_Args):
    """Arguments of cortex_abort_task."""

    task_id: TaskId
    reason: str
    actor: Actor = None


class Block(_Args):
    """Arguments of cortex_block."""

    task_id: TaskId
    reason: Annotated[str, msgspec.Meta(description="what blocks the task")]
    actor: Actor = None


class Unblock(_Args):
    """Arguments of cortex_unblock."""

    task_id: TaskId
    reason: Annotated[str, msgspec.Meta(description="what changed: why the case can go on")]
    actor: Actor = None


class Archive(_Args):
    """Arguments of cortex_archive and cortex_unarchive."""

    task_id: TaskId
    actor: Actor = None


class ReadEvidence(_Args):
    """Arguments of cortex_read_evidence."""

    task_id: TaskId
    evidence_id: Annotated[str, msgspec.Meta(description="ev_..., or a unique prefix of one")]


class ReadArtifact(_Args):
    """Arguments of cortex_read_artifact."""

    task_id: TaskId
    ref: Annotated[str, msgspec.Meta(description="case://<task>/raw/<raw id>")]
    max_bytes: Annotated[int, msgspec.Meta(description="at most 131072")] = defaults.PREVIEW_BYTES
    allow_binary: bool = False
    path: Annotated[
        str | None,
        msgspec.Meta(description="a file inside a directory artifact; without it, the listing"),
    ] = None


class Timeline(_Args):
    """Arguments of cortex_timeline."""

    task_id: TaskId
    kinds: Annotated[
        list[str],
        msgspec.Meta(description="phase|evidence|command|decision|receipt|batch|activity"),
    ] = msgspec.field(default_factory=list)
    actor: str | None = None
    since: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    until: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    anchor: Annotated[str | None, msgspec.Meta(description="an entry id or a date")] = None
    before: Annotated[
        int | None, msgspec.Meta(description="entries before the anchor (default 10)")
    ] = None
    after: Annotated[
        int | None, msgspec.Meta(description="entries after the anchor (default 10)")
    ] = None
    limit: int = defaults.TIMELINE_LIMIT
    cursor: Annotated[str | None, msgspec.Meta(description="nextCursor of the last page")] = None


class Handoff(_Args):
    """Arguments of cortex_handoff."""

    task_id: TaskId
    compact: bool = False


class Leases:
    """The lease tokens this server was given, by task id, for as long as it runs.

    A server is one stdio connection. What its own `cortex_begin_change` calls were given it
    keeps here, in memory only, and presents on its lease-bound calls; nothing else reaches
    them, so two servers started with the same actor name are two holders
    (docs/design/trust.md, "Lease tokens"). Calls run in worker threads, hence the lock.
    """

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, kernel: Kernel, ref: str) -> str | None:
        """The token this server holds for the lease of the case `ref` names, if any.

        Tokens are kept by whole task id; a prefix or `@latest` is made whole the way the call
        itself will make it (a reference that names nothing gets no token, and the call then
        says why).
        """
        with self._lock:
            if ref in self._tokens or not self._tokens:
                return self._tokens.get(ref)
        try:
            task_id, _ = kernel.find(ref)
        except CortexError:
            return None
        with self._lock:
            return self._tokens.get(task_id)

    def keep(self, task_id: str, token: str) -> None:
        """Hold the token a `begin_change` of this server was given."""
        with self._lock:
            self._tokens[task_id] = token

    def forget(self, task_id: str) -> None:
        """Drop the token of a lease that ended."""
        with self._lock:
            self._tokens.pop(task_id, None)


class Recall(_Args):
    """Arguments of cortex_recall."""

    query: Annotated[
        str, msgspec.Meta(description="words to look for (letters and digits; no query syntax)")
    ]
    repo: Annotated[
        str | None, msgspec.Meta(description="only cards of this repository or store")
    ] = None
    kinds: Annotated[
        list[str],
        msgspec.Meta(description="only these kinds: hypothesis|decision|outcome|evidence"),
    ] = msgspec.field(default_factory=list)
    statuses: Annotated[
        list[str],
        msgspec.Meta(
            description="only these: rejected|confirmed|active|superseded|overturned|verified|"
            "partial|failed|unverified|notable|contest|resolution"
        ),
    ] = msgspec.field(default_factory=list)
    since: Annotated[
        str | None, msgspec.Meta(description="created at or after: ISO date or time")
    ] = None
    until: Annotated[
        str | None, msgspec.Meta(description="created at or before: ISO date or time")
    ] = None
    limit: Annotated[int, msgspec.Meta(description="cards per page (at most 100)")] = (
        defaults.RECALL_LIMIT
    )
    cursor: Annotated[str | None, msgspec.Meta(description="nextCursor of the last page")] = None
    budget: Annotated[
        int | None,
        msgspec.Meta(description="keep cards within this many estimated tokens (top card always)"),
    ] = None


class RecallGet(_Args):
    """Arguments of cortex_recall_get."""

    ids: Annotated[list[str], msgspec.Meta(description="card ids (hyp_, dec_, ev_, task_), 1-100")]


class Review(_Args):
    """Arguments of cortex_review."""

    base: Annotated[
        str | None,
        msgspec.Meta(description="the branch the commits merge into (default: origin/HEAD, main "
                     "or master)"),
    ] = None  # fmt: skip
    head: Annotated[
        str | None, msgspec.Meta(description="the commit under review (default: HEAD)")
    ] = None


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP tool and the kernel call behind it (with the server's lease tokens)."""

    name: str
    command: str
    description: str
    args: type[_Args]
    call: Callable[[Kernel, Any, Leases], Result]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


def _open(k: Kernel, a: OpenTask, _held: Leases) -> Result:
    from cortex.kernel.steps.open_case import open_case

    return open_case(
        k,
        goal=a.goal,
        mode=a.mode,
        risk=a.risk,
        surfaces=a.surfaces,
        criteria=a.criteria,
        idempotency_key=a.idempotency_key,
        actor=a.actor,
        parent=a.parent,
        no_recall=a.no_recall,
    )


def _status(k: Kernel, a: TaskOnly, _held: Leases) -> Result:
    from cortex.kernel.views.status import status

    return status(k, a.task_id)


def _list(k: Kernel, a: ListTasks, _held: Leases) -> Result:
    from cortex.kernel.views.status import list_cases

    return list_cases(k, limit=a.limit)


def _evidence(k: Kernel, a: RecordEvidence, _held: Leases) -> Result:
    from cortex.kernel.steps.evidence import add_evidence
    from cortex.kernel.steps.raw_input import gather

    raw, tree = gather(k, raw=a.raw, raw_dir=a.raw_dir, confine=True)
    return add_evidence(
        k,
        a.task_id,
        claim=a.claim,
        kind=a.kind,
        tool=a.source,
        uri=a.uri,
        origin=a.origin,
        file=a.file,
        line=a.line,
        symbol=a.symbol,
        confidence=a.confidence,
        sensitive=a.sensitive,
        raw=raw,
        raw_tree=tree,
        derived_from=a.derived_from,
        contests=a.contests,
        actor=a.actor,
        expected_revision=a.expect_revision,
    )


def _note(k: Kernel, a: Note, _held: Leases) -> Result:
    from cortex.kernel.steps.evidence import add_note

    return add_note(
        k,
        a.task_id,
        text=a.text,
        origin=a.origin,
        contests=a.contests,
        actor=a.actor,
        expected_revision=a.expect_revision,
    )


def _plan(k: Kernel, a: PlanArgs, held: Leases) -> Result:
    from cortex.kernel.steps.plan import plan

    # An object hypothesis goes to the kernel whole (its text may hold ' :: '), its supports
    # as the shorthand for its position.
    hypotheses: list[str | tuple[str, str]] = []
    supports = list(a.supports)
    for index, item in enumerate(a.hypotheses, 1):
        if isinstance(item, HypothesisArg):
            hypotheses.append((item.statement, item.disproof))
            if item.supports:
                supports.append(f"{index}=" + ",".join(item.supports))
        else:
            hypotheses.append(item)
    return plan(
        k,
        a.task_id,
        hypotheses=hypotheses,
        supports=supports,
        files=a.files,
        symbols=a.symbols,
        boundary_reason=a.boundary_reason,
        verify=a.verify,
        uncertainty=a.uncertainty,
        reason=a.reason,
        actor=a.actor,
        expected_revision=a.expect_revision,
        lease_token=held.get(k, a.task_id),
    )


def _resolve(k: Kernel, a: Resolve, _held: Leases) -> Result:
    from cortex.kernel.steps.resolve import resolve

    return resolve(
        k,
        a.task_id,
        a.hypothesis_id,
        status=a.status,
        reason=a.reason,
        evidence=a.evidence,
        actor=a.actor,
        expected_revision=a.expect_revision,
    )


def _begin_change(k: Kernel, a: BeginChange, held: Leases) -> Result:
    from cortex.kernel.lease import begin_change

    result = begin_change(
        k, a.task_id, actor=a.actor, ttl=a.ttl, lease_token=held.get(k, a.task_id)
    )
    # The token stays with this server (for its connection), never with the client.
    token = result.data.get("leaseToken")
    if token:
        held.keep(result.data["taskId"], token)
    result.data["leaseToken"] = None
    return result


def _verify(k: Kernel, a: Verify, held: Leases) -> Result:
    from cortex.kernel.proof.verify import verify

    # A claim id has no `=`, so an object claim is the shorthand exactly.
    claims = [c if isinstance(c, str) else f"{c.id}={c.statement}" for c in a.claims]
    contracts = [f"{c.id}={c.contract}" for c in a.claims if isinstance(c, ClaimArg)]
    return verify(
        k,
        a.task_id,
        actor=a.actor,
        claims=claims,
        contracts=[*contracts, *a.contracts],
        ack_drift=a.ack_drift,
        no_op=a.no_op,
        lease_token=held.get(k, a.task_id),
    )


def _request(k: Kernel, a: RequestDecision, _held: Leases) -> Result:
    from cortex.kernel.human.decisions import request

    options = [o if isinstance(o, str) else (o.id, o.label, o.consequence or "") for o in a.options]
    return request(
        k, a.task_id, question=a.question, options=options, subject=a.subject, actor=a.actor
    )


def _complete(k: Kernel, a: Complete, held: Leases) -> Result:
    from cortex.kernel.steps.complete import complete

    result = complete(
        k,
        a.task_id,
        outcome=a.outcome,
        accept_failed=a.accept_failed,
        verification_not_possible=a.verification_not_possible,
        actor=a.actor,
        lease_token=held.get(k, a.task_id),
    )
    held.forget(result.data["taskId"])  # completing ended the lease
    return result


def _abort(k: Kernel, a: Abort, held: Leases) -> Result:
    from cortex.kernel.steps.close import close

    token = held.get(k, a.task_id)
    return close(k, a.task_id, to="abandoned", reason=a.reason, actor=a.actor, lease_token=token)


def _archive(k: Kernel, a: Archive, _held: Leases) -> Result:
    from cortex.kernel.retention.archive import archive

    return archive(k, a.task_id, actor=a.actor)


def _unarchive(k: Kernel, a: Archive, _held: Leases) -> Result:
    from cortex.kernel.retention.archive import unarchive

    return unarchive(k, a.task_id, actor=a.actor)


def _block(k: Kernel, a: Block, held: Leases) -> Result:
    from cortex.kernel.steps.close import close

    token = held.get(k, a.task_id)
    return close(k, a.task_id, to="blocked", reason=a.reason, actor=a.actor, lease_token=token)


def _unblock(k: Kernel, a: Unblock, held: Leases) -> Result:
    from cortex.kernel.steps.close import unblock

    token = held.get(k, a.task_id)
    return unblock(k, a.task_id, reason=a.reason, actor=a.actor, lease_token=token)


def _read_evidence(k: Kernel, a: ReadEvidence, _held: Leases) -> Result:
    from cortex.kernel.steps.evidence import read_evidence

    return read_evidence(k, a.task_id, a.evidence_id)


def _read_artifact(k: Kernel, a: ReadArtifact, _held: Leases) -> Result:
    from cortex.kernel.views.artifact import read_artifact

    return read_artifact(
        k, a.task_id, a.ref, max_bytes=a.max_bytes, allow_binary=a.allow_binary, path=a.path
    )


def _timeline(k: Kernel, a: Timeline, _held: Leases) -> Result:
    from cortex.kernel.views.timeline.page import timeline

    return timeline(
        k,
        a.task_id,
        kinds=a.kinds,
        actor=a.actor,
        since=a.since,
        until=a.until,
        anchor=a.anchor,
        before=a.before,
        after=a.after,
        limit=a.limit,
        cursor=a.cursor,
    )


def _handoff(k: Kernel, a: Handoff, _held: Leases) -> Result:
    from cortex.kernel.views.handoff.packet import handoff

    return handoff(k, a.task_id, compact=a.compact)


def _recall(k: Kernel, a: Recall, _held: Leases) -> Result:
    from cortex.kernel.views.recall import recall

    return recall(
        k,
        a.query,
        repo=a.repo,
        kinds=a.kinds,
        statuses=a.statuses,
        since=a.since,
        until=a.until,
        limit=a.limit,
        cursor=a.cursor,
        budget=a.budget,
    )


def _recall_get(k: Kernel, a: RecallGet, _held: Leases) -> Result:
    from cortex.kernel.views.recall import get

    return get(k, a.ids)


def _review(k: Kernel, a: Review, _held: Leases) -> Result:
    from cortex.kernel.views.review import review

    return review(k, base=a.base, head=a.head)


TOOLS: tuple[Tool, ...] = (
    Tool(
        name="cortex_open_task",
        command="case.open",
        description="Open a case for a task: its goal, mode, risk and acceptance criteria. "
        "Pass idempotency_key to make a retry return the same case.",
        args=OpenTask,
        call=_open,
    ),
    Tool(
        name="cortex_status",
        command="case.status",
        description="Where a case stands: phase, plan, lease, verification and next actions.",
        args=TaskOnly,
        call=_status,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_record_evidence",
        command="case.evidence.add",
        description="Append one piece of evidence (with optional raw output) to the ledger.",
        args=RecordEvidence,
        call=_evidence,
    ),
    Tool(
        name="cortex_note",
        command="case.note",
        description="Append a free-text note to a case.",
        args=Note,
        call=_note,
    ),
    Tool(
        name="cortex_plan",
        command="case.plan",
        description="Commit a plan: falsifiable hypotheses, the change boundary, the verifiers "
        "that must pass, and what is still uncertain. Re-planning needs a reason.",
        args=PlanArgs,
        call=_plan,
    ),
    Tool(
        name="cortex_resolve",
        command="case.resolve",
        description="Confirm, challenge or reject a hypothesis, citing evidence.",
        args=Resolve,
        call=_resolve,
    ),
    Tool(
        name="cortex_begin_change",
        command="case.begin-change",
        description="Take the change lease (or renew your own) and start changing code.",
        args=BeginChange,
        call=_begin_change,
    ),
    Tool(
        name="cortex_verify",
        command="case.verify",
        description="Run the plan's verifiers once. Receipts are bound to the exact code state "
        "they ran on; a later edit makes them stale.",
        args=Verify,
        call=_verify,
    ),
    Tool(
        name="cortex_request_decision",
        command="case.decision.request",
        description="Ask a person a bounded question; the case waits for the answer. "
        "An identical pending question is not asked twice.",
        args=RequestDecision,
        call=_request,
        idempotent=True,
    ),
    Tool(
        name="cortex_complete",
        command="case.complete",
        description="Finish a verified case and write its summary (or say why it cannot be "
        "verified). Releases the change lease.",
        args=Complete,
        call=_complete,
    ),
    Tool(
        name="cortex_abort_task",
        command="case.abort",
        description="Abandon a case and release its lease. Terminal: the case cannot be resumed. "
        "Nothing is deleted.",
        args=Abort,
        call=_abort,
        destructive=True,
    ),
    Tool(
        name="cortex_block",
        command="case.block",
        description="Put a case that cannot go on now on hold and release its lease; "
        "cortex_unblock resumes it where it was. Nothing is deleted.",
        args=Block,
        call=_block,
        destructive=True,
    ),
    Tool(
        name="cortex_archive",
        command="case.archive",
        description="Move a closed case out of listings and recall; nothing is deleted.",
        args=Archive,
        call=_archive,
        idempotent=True,
    ),
    Tool(
        name="cortex_unarchive",
        command="case.unarchive",
        description="Bring an archived case back.",
        args=Archive,
        call=_unarchive,
        idempotent=True,
    ),
    Tool(
        name="cortex_read_evidence",
        command="case.read-evidence",
        description="One evidence record in full.",
        args=ReadEvidence,
        call=_read_evidence,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_read_artifact",
        command="case.read-artifact",
        description="A bounded, redacted preview of raw output that the case cites.",
        args=ReadArtifact,
        call=_read_artifact,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_timeline",
        command="case.timeline",
        description="The case's phases, evidence, commands, decisions and receipts in time "
        "order, filtered and paged, with exact totals.",
        args=Timeline,
        call=_timeline,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_handoff",
        command="case.handoff",
        description="A bounded transfer packet for the next agent or a reviewer.",
        args=Handoff,
        call=_handoff,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_list_tasks",
        command="case.list",
        description="Cases in this workspace's store, newest first, with an exact total.",
        args=ListTasks,
        call=_list,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_unblock",
        command="case.unblock",
        description="Return a blocked case to the phase it was blocked in, with the reason it "
        "can go on (recorded on the phase change).",
        args=Unblock,
        call=_unblock,
    ),
    Tool(
        name="cortex_recall",
        command="recall",
        description="Cards of what earlier cases learned (rejected and confirmed hypotheses, "
        "decisions with the options they turned down, outcomes, notable evidence), best match "
        "first, with labels for stale, moved, superseded or contested ones. Cards only; read "
        "a full record with cortex_recall_get. Pass budget to bound the tokens.",
        args=Recall,
        call=_recall,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_recall_get",
        command="recall.get",
        description="The full records of named cards, all of them or none.",
        args=RecallGet,
        call=_recall_get,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="cortex_review",
        command="review",
        description="Whether the code of a branch (base..head) is the code its cases verified: "
        "approve, needs_verification or request_changes, with each case's problems. Never runs "
        "a verifier; anything but approve is an error whose data holds the verdict.",
        args=Review,
        call=_review,
        read_only=True,
        idempotent=True,
    ),
)

BY_NAME = {tool.name: tool for tool in TOOLS}

ALIASES: dict[str, str] = {
    "task_id": "task",
    "surfaces": "surface",
    "criteria": "criterion",
    "hypotheses": "hypothesis",
    "supports": "support",
    "files": "file",
    "symbols": "symbol",
    "hypothesis_id": "hypothesis",
    "claims": "claim",
    "contracts": "contract",
    "options": "option",
    "evidence_id": "evidence",
    "kinds": "kind",
    "statuses": "status",
    "ids": "id",
}
"""MCP argument -> the CLI option (or positional) it stands for, where the names differ.

Tool arguments are plural where they hold a list and name the id they hold; CLI options are
singular because each is repeated. Everything else has the same name on both faces (the kernel's
messages use the CLI's names, and each face spells them its own way); tests/test_parity.py
checks through this table that both faces take the same arguments with the same defaults.
"""


UNSPOKEN: dict[str, str] = {
    "lease_token": "this server presents only the tokens its own begin_change was given",
}
"""Kernel arguments no tool takes, named in messages by what stands for them here."""


def spelling(tool: Tool) -> Callable[[str], str]:
    """How this tool's messages name an argument: by its own argument name."""
    fields = {field.name for field in msgspec.structs.fields(tool.args)}
    names = {**UNSPOKEN, **{ALIASES.get(field, field): field for field in fields}}

    def spell(argument: str) -> str:
        return names.get(argument, argument)

    return spell


# Next steps -----------------------------------------------------------------------------------


class ToolAction(msgspec.Struct, kw_only=True):
    """A next step over MCP: a tool this server serves, its arguments, and why.

    `<...>` in an argument marks what the caller fills in; everything else can be sent as is.
    """

    tool: Annotated[str, msgspec.Meta(description="the tool to call")]
    arguments: Annotated[
        dict[str, Any], msgspec.Meta(description="its arguments; '<...>' marks what to fill in")
    ]
    reason: str


BY_COMMAND = {tool.command: tool for tool in TOOLS}

SUBSTITUTES: dict[str, str] = {
    "case.decision.list": "case.status",
    "case.lease.renew": "case.begin-change",
}
"""A step the CLI names that a tool covers here: status carries the pending decision, and
begin_change renews the caller's own lease. A step no tool covers (answering a decision, which
people do; trusting a command; set-up) is left out of an MCP answer."""


def _placeholder(value: object) -> bool:
    if isinstance(value, str):
        return value.startswith("<") and value.endswith(">")
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) and "<" in v for v in value)
    return False


@functools.cache
def _fields(args: type[_Args]) -> tuple[frozenset[str], frozenset[str]]:
    """A tool's argument names, and those that hold a list (computed once per tool)."""
    info = msgspec.inspect.type_info(args)
    assert isinstance(info, msgspec.inspect.StructType)  # noqa: S101 - tool args are structs
    lists = set()
    for field in info.fields:
        kind = field.type
        while isinstance(kind, msgspec.inspect.Metadata):
            kind = kind.type
        if isinstance(kind, msgspec.inspect.ListType):
            lists.add(field.name)
    return frozenset(f.name for f in info.fields), frozenset(lists)


def action_spelling(tool: Tool | None, given: Mapping[str, Any] | None) -> Callable[[Action], Any]:
    """How a call of `tool` with the arguments `given` writes a next step: as a tool call.

    The step's arguments are renamed to the tool's, and what the caller already gave is filled
    in: for a step that calls the same tool, every argument the caller gave that the step does
    not set (or marks `<...>`); for another tool, the `<...>` arguments the caller gave by the
    same name. `workspace` is always carried over.
    """
    given = dict(given or {})

    def spell(action: Action) -> ToolAction | None:
        operation = SUBSTITUTES.get(action.operation or "", action.operation or "")
        target = BY_COMMAND.get(operation)
        if target is None:
            return None
        fields, lists = _fields(target.args)
        names = {ALIASES.get(field, field): field for field in fields}
        arguments: dict[str, Any] = {}
        for name, value in action.arguments.items():
            field = names.get(name)
            if field is None:
                continue  # the tool standing in for this step takes no such argument
            listed = field in lists and not isinstance(value, list)
            arguments[field] = [value] if listed else value
        same = tool is not None and target.name == tool.name
        for field, value in given.items():
            if field not in fields:
                continue
            if (
                field == "workspace"
                or (same and field not in arguments)
                or (field in arguments and _placeholder(arguments[field]))
            ):
                arguments[field] = value
        return ToolAction(tool=target.name, arguments=arguments, reason=action.reason)

    return spell


# Schemas --------------------------------------------------------------------------------------


def _plain(node: Any) -> Any:
    """A schema without `anyOf: [T, null]` for optional arguments: their plain type T.

    Clients build inputs from the top-level `type` (the MCP Inspector does); an optional
    argument is one the caller leaves out, so `null` need not be published.
    """
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _plain(value) for key, value in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) == 1:
            node.pop("anyOf")
            if node.get("default", 0) is None:
                node.pop("default")
            node = {**rest[0], **node}
        else:
            node["anyOf"] = rest
            if node.get("default", 0) is None:
                node.pop("default")
    return node


def object_schema(type_: Any, *, plain: bool = False) -> dict[str, Any]:
    """`cortex.kernel.answers.object_schema`; `plain` publishes optional scalars plainly."""
    from cortex.kernel.answers import object_schema as schema_of

    root = schema_of(type_)
    result: dict[str, Any] = _plain(root) if plain else root
    return result


def input_schema(tool: Tool) -> dict[str, Any]:
    """What a tool takes: plain types, defaults shown, unknown arguments refused."""
    return object_schema(tool.args, plain=True)


def output_schema(tool: Tool) -> dict[str, Any]:
    """The envelope this tool answers with, `data` constrained by its command's answer type.

    Not published in `tools/list`: a result carries the envelope once, as text, and an output
    schema would oblige a second copy as `structuredContent` (docs/design/mcp.md). It is the
    contract the tests check every answer against, and `docs/schema/` publishes the CLI's.
    """
    from cortex.kernel.answers import envelope_schema

    return envelope_schema(tool.command, ToolAction)


_KINDS = {
    "int": "an integer",
    "str": "a string",
    "bool": "true or false",
    "array": "a list",
    "object": "an object",
    "float": "a number",
    "null": "null",
}


def _kind(text: str) -> str:
    return " or ".join(_KINDS.get(part.strip(), part.strip()) for part in text.split("|"))


def decode_args(tool: Tool, arguments: Mapping[str, Any] | None) -> Any:
    """The tool's arguments as its msgspec type; a mismatch is bad input (exit 4).

    JSON types are strict, on every tool: `"200"` is not the integer 200. The message names the
    argument and what it must be.
    """
    import re

    try:
        return msgspec.convert(dict(arguments or {}), type=tool.args)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = re.fullmatch(r"Expected `(.+?)`, got `(.+?)` - at `\$\.([A-Za-z_]+)(.*)`", text)
        if match is not None:
            wanted, got, name, where = match.groups()
            inside = f" (at {name}{where})" if where else ""
            wanted_text = _kind(wanted.replace("| null", "").replace("null |", ""))
            msg = f"{tool.name}: {name} must be {wanted_text}, not {_kind(got)}{inside}"
            raise InvalidInputError(msg) from None
        raise InvalidInputError(f"{tool.name}: {text}") from None
