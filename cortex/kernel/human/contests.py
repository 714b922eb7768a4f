"""`cortex case decision resolve`: a person settles the contests of a decision.

Evidence or a note may contest an answered decision (`--contests DEC`); both stay labelled
`[contested]` until a person resolves it here. The person confirms at the controlling terminal
(the CLI's `confirm`, as for `case trust`); there is no MCP tool, and nothing resolves a
contest by itself. The resolution is a `human_report` evidence record in the case holding the
decision, even a closed one (it moves no phase), listing the contests it closes
(docs/design/recall.md, "Decision history").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cortex.cases.bounds import CLAIM_MAX, IDENTIFIER_MAX, REASON_MAX
from cortex.cases.documents import Decisions
from cortex.cases.errors import ArgumentError, NotFoundError
from cortex.cases.ids import check_id, new_id
from cortex.cases.records import Evidence, Resolution
from cortex.kernel import provenance, validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input, TaskId
from cortex.kernel.kernel import Kernel

OUTCOMES = ("upheld", "overturned")

Confirm = Callable[[str, str, Sequence[str]], bool]
"""Asked with (decision id, outcome, the contests it closes); True only if a person agreed."""


def resolve_contest(
    kernel: Kernel,
    task_id: str,
    decision_id: str,
    *,
    outcome: str,
    reason: str,
    responder: str,
    confirm: Confirm | None,
) -> Result:
    """Record a person's resolution of every open contest of `decision_id` (module docstring)."""
    check_id(decision_id, "dec", what="decision id")
    if outcome not in OUTCOMES:
        msg = f"{{outcome}} must be upheld or overturned, not {outcome[:40]!r}"
        raise ArgumentError(msg, "outcome")
    reason = validate.text(reason, "--reason", REASON_MAX)
    who = validate.identifier(responder, "--responder", kernel.redactor, max_bytes=IDENTIFIER_MAX)
    store = kernel.writable(task_id)
    doc = store.read_snapshot(task_id, "decisions.json", Decisions) or Decisions()
    decision = next((d for d in doc.decisions if d.id == decision_id), None)
    if decision is None:
        raise NotFoundError(f"no decision {decision_id} in case {task_id}")
    if decision.status != "answered":
        raise GateRefusedError(f"{decision_id} is {decision.status}: only an answer is contested")
    from cortex.kernel.recall import after_commit, open_contests

    contests = open_contests(kernel, decision_id)
    if not contests:
        raise GateRefusedError(f"nothing contests {decision_id}; there is nothing to resolve")
    if confirm is None or not confirm(decision_id, outcome, contests):
        msg = (
            "resolving a contest needs a person at an interactive terminal who types the "
            "decision id; nothing was recorded"
        )
        raise GateRefusedError(msg)
    head = f"Resolved the contest of {decision_id} ({len(contests)} contest(s)): {outcome}. "
    room = CLAIM_MAX - len(head.encode())
    claim = head + reason.encode()[:room].decode("utf-8", "ignore")
    with store.transaction(task_id, actor=who, operation="case.decision.resolve") as txn:
        txn.append(
            "evidence",
            Evidence(
                id=new_id("ev"),
                timestamp=kernel.now(),
                kind="human_report",
                # Confirmed at the controlling terminal; shown as the responder's report unless
                # the command itself came from a person's terminal (docs/design/trust.md).
                source=provenance.source(
                    tool="cortex", actor=who, origin="human", person_present=kernel.person_present
                ),
                claim=claim,
                confidence="high",
                resolves=Resolution(decision=decision_id, outcome=outcome, contests=contests),  # type: ignore[arg-type]  # checked above
            ),
        )
        txn.target = decision_id
    record = txn.written["evidence"][0]
    return Result(
        data={
            "taskId": task_id,
            "revision": txn.outcome.revision,
            "decisionId": decision_id,
            "outcome": outcome,
            "contests": contests,
            "evidence": record,
            "warnings": [*txn.warnings, *after_commit(kernel, store, task_id)],
        }
    )


class ResolveContest(Input):
    """The input of `case decision resolve` (a person's act: the face asks them to confirm)."""

    task_id: TaskId
    decision_id: str
    outcome: str
    reason: str
    responder: str


def settle(kernel: Kernel, given: ResolveContest, *, confirm: Confirm | None) -> Result:
    """`resolve_contest` for one input; `confirm` is the face's question to the person."""
    return resolve_contest(
        kernel,
        given.task_id,
        given.decision_id,
        outcome=given.outcome,
        reason=given.reason,
        responder=given.responder,
        confirm=confirm,
    )
