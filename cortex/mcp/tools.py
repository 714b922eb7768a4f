"""The MCP tool table: each tool's arguments, hints, and the kernel call it makes.

A tool calls the same kernel function as the matching CLI command and answers with the same
envelope (its `command` is the CLI's dotted name), so the two surfaces cannot drift apart. This
module does not import the MCP SDK: the schemas are generated from msgspec types, and the table
can be checked without a server.

What is deliberately not a tool: answering a decision (a person's act; agents ask, people
answer), `case trust` (approving a command must happen at a terminal), and the set-up commands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from cortex.kernel import defaults
from cortex.kernel.envelope import Envelope, Result
from cortex.kernel.errors import InvalidInputError

if TYPE_CHECKING:
    from cortex.kernel.kernel import Kernel

TaskId = Annotated[str, msgspec.Meta(description="the case's task id (task_...)")]
Actor = Annotated[
    str | None,
    msgspec.Meta(description="who is acting (default: $CORTEX_ACTOR of the server, else mcp)"),
]
Expect = Annotated[
    int | None,
    msgspec.Meta(description="refuse (exit 6) unless the case is still at this revision"),
]
Origin = Literal["agent", "human", "reviewer", "tool"]


class _Args(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Tool arguments: unknown fields are refused, like unknown CLI options."""


class OpenTask(_Args):
    """Arguments of cortex_open_task."""

    goal: Annotated[str, msgspec.Meta(description="what the task should achieve")]
    mode: Literal["change", "investigate", "review"] = defaults.MODE
    risk: Literal["low", "medium", "high"] = defaults.RISK
    surfaces: Annotated[
        list[str], msgspec.Meta(description="code|browser|terminal|artifact|secret")
    ] = msgspec.field(default_factory=list)
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
    kind: Annotated[str, msgspec.Meta(description="evidence kind")] = defaults.EVIDENCE_KIND
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
        list[str], msgspec.Meta(description="each 'statement :: how to disprove it'")
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
    hypothesis_id: Annotated[str, msgspec.Meta(description="hyp_...")]
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
        msgspec.Meta(description="who takes the lease (default: $CORTEX_ACTOR; one is required)"),
    ] = None
    ttl: Annotated[str | None, msgspec.Meta(description="90s, 15m, 1h (default 15m)")] = None


class Verify(_Args):
    """Arguments of cortex_verify."""

    task_id: TaskId
    claims: Annotated[list[str], msgspec.Meta(description="named claims, each 'ID=STATEMENT'")] = (
        msgspec.field(default_factory=list)
    )
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
        list[str], msgspec.Meta(description="2 to 16 answers, each 'ID=LABEL[|CONSEQUENCE]'")
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


class ReadEvidence(_Args):
    """Arguments of cortex_read_evidence."""

    task_id: TaskId
    evidence_id: Annotated[str, msgspec.Meta(description="ev_...")]


class ReadArtifact(_Args):
    """Arguments of cortex_read_artifact."""

    task_id: TaskId
    ref: Annotated[str, msgspec.Meta(description="case://<task>/raw/<raw id>")]
    max_bytes: Annotated[int | None, msgspec.Meta(description="default 32768, at most 131072")] = (
        None
    )
    allow_binary: bool = False
    path: Annotated[
        str | None,
        msgspec.Meta(description="a file inside a directory artifact; without it, the listing"),
    ] = None


class Timeline(_Args):
    """Arguments of cortex_timeline."""

    task_id: TaskId
    kinds: list[str] = msgspec.field(default_factory=list)
    actor: str | None = None
    since: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    until: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    anchor: Annotated[str | None, msgspec.Meta(description="an entry id or a date")] = None
    before: int | None = None
    after: int | None = None
    limit: int = defaults.TIMELINE_LIMIT
    cursor: Annotated[str | None, msgspec.Meta(description="nextCursor of the last page")] = None


class Handoff(_Args):
    """Arguments of cortex_handoff."""

    task_id: TaskId
    compact: bool = False


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
        list[str], msgspec.Meta(description="only these statuses (rejected, active, verified, ...)")
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


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """One MCP tool and the kernel call behind it."""

    name: str
    command: str
    description: str
    args: type[_Args]
    call: Callable[[Kernel, Any], Result]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


def _open(k: Kernel, a: OpenTask) -> Result:
    from cortex.kernel.open_case import open_case

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


def _status(k: Kernel, a: TaskOnly) -> Result:
    from cortex.kernel.views.status import status

    return status(k, a.task_id)


def _list(k: Kernel, a: ListTasks) -> Result:
    from cortex.kernel.views.status import list_cases

    return list_cases(k, limit=a.limit)


def _evidence(k: Kernel, a: RecordEvidence) -> Result:
    from cortex.kernel.evidence import add_evidence
    from cortex.kernel.raw_input import gather

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


def _note(k: Kernel, a: Note) -> Result:
    from cortex.kernel.evidence import add_note

    return add_note(
        k,
        a.task_id,
        text=a.text,
        origin=a.origin,
        contests=a.contests,
        actor=a.actor,
        expected_revision=a.expect_revision,
    )


def _plan(k: Kernel, a: PlanArgs) -> Result:
    from cortex.kernel.plan import plan

    return plan(
        k,
        a.task_id,
        hypotheses=a.hypotheses,
        supports=a.supports,
        files=a.files,
        symbols=a.symbols,
        boundary_reason=a.boundary_reason,
        verify=a.verify,
        uncertainty=a.uncertainty,
        reason=a.reason,
        actor=a.actor,
        expected_revision=a.expect_revision,
    )


def _resolve(k: Kernel, a: Resolve) -> Result:
    from cortex.kernel.resolve import resolve

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


def _begin_change(k: Kernel, a: BeginChange) -> Result:
    from cortex.kernel.lease import begin_change

    return begin_change(k, a.task_id, actor=a.actor, ttl=a.ttl)


def _verify(k: Kernel, a: Verify) -> Result:
    from cortex.kernel.verify import verify

    return verify(
        k,
        a.task_id,
        actor=a.actor,
        claims=a.claims,
        contracts=a.contracts,
        ack_drift=a.ack_drift,
        no_op=a.no_op,
    )


def _request(k: Kernel, a: RequestDecision) -> Result:
    from cortex.kernel.decisions import request

    return request(
        k, a.task_id, question=a.question, options=a.options, subject=a.subject, actor=a.actor
    )


def _complete(k: Kernel, a: Complete) -> Result:
    from cortex.kernel.complete import complete

    return complete(
        k,
        a.task_id,
        outcome=a.outcome,
        accept_failed=a.accept_failed,
        verification_not_possible=a.verification_not_possible,
        actor=a.actor,
    )


def _abort(k: Kernel, a: Abort) -> Result:
    from cortex.kernel.close import close

    return close(k, a.task_id, to="abandoned", reason=a.reason, actor=a.actor)


def _read_evidence(k: Kernel, a: ReadEvidence) -> Result:
    from cortex.kernel.evidence import read_evidence

    return read_evidence(k, a.task_id, a.evidence_id)


def _read_artifact(k: Kernel, a: ReadArtifact) -> Result:
    from cortex.kernel.views.artifact import read_artifact

    return read_artifact(
        k, a.task_id, a.ref, max_bytes=a.max_bytes, allow_binary=a.allow_binary, path=a.path
    )


def _timeline(k: Kernel, a: Timeline) -> Result:
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


def _handoff(k: Kernel, a: Handoff) -> Result:
    from cortex.kernel.views.handoff.packet import handoff

    return handoff(k, a.task_id, compact=a.compact)


def _recall(k: Kernel, a: Recall) -> Result:
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


def _recall_get(k: Kernel, a: RecallGet) -> Result:
    from cortex.kernel.views.recall import get

    return get(k, a.ids)


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


def spelling(tool: Tool) -> Callable[[str], str]:
    """How this tool's messages name an argument: by its own argument name."""
    fields = {field.name for field in msgspec.structs.fields(tool.args)}
    names = {ALIASES.get(field, field): field for field in fields}

    def spell(argument: str) -> str:
        return names.get(argument, argument)

    return spell


def object_schema(type_: Any) -> dict[str, Any]:
    """A JSON Schema for a msgspec type with `type: object` at its root, as MCP requires.

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


def output_schema() -> dict[str, Any]:
    """The envelope every tool answers with."""
    return object_schema(Envelope)


def decode_args(tool: Tool, arguments: Mapping[str, Any] | None) -> Any:
    """The tool's arguments as its msgspec type; a mismatch is bad input (exit 4)."""
    try:
        return msgspec.convert(dict(arguments or {}), type=tool.args)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(f"{tool.name}: {exc}") from None
