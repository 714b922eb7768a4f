"""What a use case takes: the shared input shapes, every optional default, and the registry.

Each use case a face can call declares one input struct (`Input`) beside its function, and the
function takes `(kernel, input)`. This module holds what those structs share: the base, the
annotated scalars (`TaskId`, `Actor`, `Expect`), the object forms of a hypothesis, an option and
a claim, the defaults of optional arguments, and `REGISTRY`, the command name -> struct and
function table both faces call through (docs/design/inputs.md). It imports msgspec and the case
format's bounds and literal types only: every call loads it.

The CLI's grammar shows the defaults in `--help`, the MCP server publishes them in its input
schemas, and the use cases apply them when an in-process caller leaves an argument out, so a
default cannot differ between the faces (tests/test_parity.py checks each face against the
structs). The values themselves are bounds and live with their limits in `cortex.cases.bounds`.
(With the few limits a face applies while a person types, such as the board's search box.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import msgspec

from cortex.cases.bounds import (
    INTEGER_DIGITS_MAX,
    LIST_LIMIT_DEFAULT,
    PREVIEW_DEFAULT,
    RECALL_LIMIT_DEFAULT,
    SESSIONS_LIMIT_DEFAULT,
    SESSIONS_QUERY_MAX,
    STUDIO_REFRESH_DEFAULT,
    STUDIO_REFRESH_MAX,
    STUDIO_REFRESH_MIN,
    STUDIO_ROWS_MAX,
    TIMELINE_LIMIT_DEFAULT,
)
from cortex.cases.records import Confidence, EvidenceKind, Mode, Origin, Risk, Surface

if TYPE_CHECKING:
    from collections.abc import Callable

    from cortex.kernel.envelope import Result
    from cortex.kernel.kernel import Kernel

LIST_LIMIT = LIST_LIMIT_DEFAULT
"""`case list`: cases per answer."""
TIMELINE_LIMIT = TIMELINE_LIMIT_DEFAULT
"""`case timeline`: entries per page."""
SESSIONS_LIMIT = SESSIONS_LIMIT_DEFAULT
"""`case sessions`: cases per answer."""
PREVIEW_BYTES = PREVIEW_DEFAULT
"""`case read-artifact`: bytes of a preview."""
MODE: Mode = "change"
RISK: Risk = "medium"
EVIDENCE_KIND: EvidenceKind = "observation"
EVIDENCE_SOURCE = "agent"
"""`evidence add --source`: the tool that produced the evidence."""
ORIGIN: Origin = "agent"
CONFIDENCE: Confidence = "unknown"

INTEGER_DIGITS = INTEGER_DIGITS_MAX
"""Digits an integer argument may have; checked before it is converted, on every face."""

STUDIO_REFRESH = STUDIO_REFRESH_DEFAULT
"""`cortex studio --refresh`: seconds between two refreshes of the board."""
STUDIO_REFRESH_RANGE = (STUDIO_REFRESH_MIN, STUDIO_REFRESH_MAX)
STUDIO_ROWS = STUDIO_ROWS_MAX
"""Rows the board asks `sessions` for."""
QUERY_MAX = SESSIONS_QUERY_MAX
"""Characters of a `sessions --query` (the board's search box stops there as one types)."""
RECALL_LIMIT = RECALL_LIMIT_DEFAULT
"""`recall`: cards per page."""

# Choices a face lists in its help and schemas (tests/test_help.py checks them against the
# checks that enforce them).

RESERVED_KINDS = frozenset({"plan"})
"""Evidence kinds only the kernel writes: a `plan` record always carries the plan's blob."""
EVIDENCE_KINDS: tuple[str, ...] = tuple(
    kind for kind in get_args(EvidenceKind) if kind not in RESERVED_KINDS
)
"""The kinds `evidence add` takes."""
MODES: tuple[str, ...] = get_args(Mode)
RISKS: tuple[str, ...] = get_args(Risk)
SURFACES: tuple[str, ...] = get_args(Surface)
ORIGINS: tuple[str, ...] = get_args(Origin)
CONFIDENCES: tuple[str, ...] = get_args(Confidence)
MODE_HELP = (
    "change: take the change lease (begin-change) and edit code within the plan's boundary, "
    "proven by its verifiers; investigate and review: no change step, the plan goes straight "
    "to verify"
)
"""What each mode allows later, for `case open --mode` and its MCP argument."""


def one_of(values: tuple[str, ...]) -> str:
    """`a|b|c`, as help and schema descriptions list a fixed set of values."""
    return "|".join(values)


# The shapes every input shares ----------------------------------------------------------------


class Input(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A use case's input: unknown fields are refused, like unknown CLI options.

    Field names are the MCP argument names; the CLI reaches each through `ALIASES`. A field's
    description (`msgspec.Meta`) is what the MCP schema publishes.
    """


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
Holder = Annotated[str | None, msgspec.Meta(description="default: the lease holder")]
Expect = Annotated[
    int | None,
    msgspec.Meta(description="refuse (exit 6) unless the case is still at this revision"),
]
OriginArg = Literal["agent", "human", "reviewer", "tool"]
Contests = Annotated[
    str | None,
    msgspec.Meta(
        description="dispute this answered decision (dec_...); both stay [contested] "
        "until a person resolves it"
    ),
]
LeaseToken = str | None
"""The change lease's token: the CLI's `--lease-token` or $CORTEX_LEASE_TOKEN, the MCP
server's held token. No face publishes it as an argument of a tool."""


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


class Nothing(Input):
    """The input of a use case that takes none."""


class TaskOnly(Input):
    """A case, by task id: the input of the use cases that need nothing else."""

    task_id: TaskId


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
    "decision_id": "decision",
    "record_id": "id",
    "all_cases": "all",
    "bundle_file": "bundle",
}
"""Input field -> the CLI option (or positional) it stands for, where the names differ.

Fields are plural where they hold a list and name the id they hold (as the MCP arguments are);
CLI options are singular because each is repeated. Everything else has the same name on both
faces (the kernel's messages use the CLI's names, and each face spells them its own way);
tests/test_parity.py checks each face against the structs through this table.
"""


# The registry ---------------------------------------------------------------------------------

REGISTRY: dict[str, str] = {
    "case.open": "cortex.kernel.steps.open_case:OpenTask:open_task",
    "case.status": "cortex.kernel.views.status:TaskOnly:status_of",
    "case.list": "cortex.kernel.views.status:ListTasks:list_tasks",
    "case.evidence.add": "cortex.kernel.steps.evidence:RecordEvidence:record_evidence",
    "case.note": "cortex.kernel.steps.evidence:Note:note",
    "case.read-evidence": "cortex.kernel.steps.evidence:ReadEvidence:read_one",
    "case.plan": "cortex.kernel.steps.plan:PlanArgs:plan_case",
    "case.resolve": "cortex.kernel.steps.resolve:Resolve:resolve_hypothesis",
    "case.begin-change": "cortex.kernel.lease:BeginChange:take",
    "case.verify": "cortex.kernel.proof.verify:Verify:verify_case",
    "case.decision.request": "cortex.kernel.human.decisions:RequestDecision:ask",
    "case.complete": "cortex.kernel.steps.complete:Complete:complete_case",
    "case.abort": "cortex.kernel.steps.close:Abort:abort",
    "case.block": "cortex.kernel.steps.close:Block:block",
    "case.unblock": "cortex.kernel.steps.close:Unblock:resume",
    "case.archive": "cortex.kernel.retention.archive:Archive:archive_case",
    "case.unarchive": "cortex.kernel.retention.archive:Archive:unarchive_case",
    "case.read-artifact": "cortex.kernel.views.artifact:ReadArtifact:preview",
    "case.timeline": "cortex.kernel.views.timeline.page:Timeline:page",
    "case.handoff": "cortex.kernel.views.handoff.packet:Handoff:packet",
    "recall": "cortex.kernel.views.recall:Recall:search",
    "recall.get": "cortex.kernel.views.recall:RecallGet:fetch_cards",
    "review": "cortex.kernel.views.review:Review:review_branch",
    "case.show": "cortex.kernel.views.show:TaskOnly:show_case",
    "case.lease.renew": "cortex.kernel.lease:RenewLease:renew_lease",
    "case.lease.release": "cortex.kernel.lease:ReleaseLease:release_lease",
    "case.decision.answer": "cortex.kernel.human.decisions:AnswerDecision:answer_decision",
    "case.decision.list": "cortex.kernel.human.decisions:TaskOnly:decisions_of",
    "case.decision.resolve": "cortex.kernel.human.contests:ResolveContest:settle",
    "case.audit": "cortex.kernel.views.audit:TaskOnly:audit_report",
    "case.attest": "cortex.kernel.views.attest:TaskOnly:attest_case",
    "case.trust": "cortex.kernel.host.trust:Trust:trust_verifier",
    "config": "cortex.kernel.host.show_config:Nothing:show",
    "init": "cortex.kernel.host.init:Init:init_workspace",
    "setup.claude": "cortex.kernel.host.setup:SetupClaude:setup_claude",
    "setup.codex": "cortex.kernel.host.setup:SetupCodex:setup_codex",
    "setup.git-trailer": "cortex.kernel.host.trailer_hook:TrailerHook:install_hook",
    "case.metrics": "cortex.kernel.views.metrics:Metrics:metrics_of",
    "case.sessions": "cortex.kernel.views.sessions:Sessions:list_sessions",
    "case.overview": "cortex.kernel.views.sessions:Nothing:totals",
    "recall.reindex": "cortex.kernel.recall:Nothing:reindex",
    "recall.rebuild": "cortex.kernel.recall:Rebuild:rebuild",
    "case.prune": "cortex.kernel.retention.archive:Prune:prune_idle",
    "case.rm": "cortex.kernel.retention.archive:Remove:remove_case",
    "case.forget": "cortex.kernel.retention.forget:Forget:forget_record",
    "adopt": "cortex.kernel.host.adopt:Adopt:adopt_store",
    "recall.drop": "cortex.kernel.host.storage:Drop:drop_index",
    "case.share": "cortex.kernel.share:Share:share",
    "case.fetch": "cortex.kernel.share:Fetch:fetch",
    "case.bundle": "cortex.kernel.share:Bundle:bundle",
    "case.trailer": "cortex.kernel.views.trailer:Trailer:trailers",
}
"""Command (the CLI's dotted name, an envelope's `command`) -> "module:Struct:function".

Strings, not objects: a call imports only its own use case's module (tests/test_import_pin.py).
The function takes `(kernel, input)` and returns the command's `Result`; the few a person must
confirm also take the face's `confirm` (a question at a terminal, or None where nobody can be
asked). `completion` is not registered: it is the CLI's own.
"""


UseCase = tuple[type[Input], "Callable[[Kernel, Any], Result]"]


def use_case(command: str) -> UseCase:
    """The input struct and the function of `command`, imported now (KeyError if unknown)."""
    module_name, struct, function = REGISTRY[command].split(":")
    # `__import__` with a fromlist returns the module itself, with nothing more to load.
    module = __import__(module_name, fromlist=[function])
    return getattr(module, struct), getattr(module, function)
