"""Human decisions: `decision request`, `decision answer`, `decision list`.

A request pauses the case (needs_human_decision, remembering where it was); an answer records
the choice, a `human_report` evidence record and the resumption, all in one commit, so a crash
leaves the pending state or the fully answered one (docs/design/lifecycle.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cortex.cases.bounds import (
    CLAIM_MAX,
    DECISIONS_MAX,
    IDENTIFIER_MAX,
    OPTION_CONSEQUENCE_MAX,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    OPTIONS_MIN,
    QUESTION_MAX,
)
from cortex.cases.documents import Decision, DecisionOption, Decisions
from cortex.cases.errors import ArgumentError, InvalidInputError, NotFoundError
from cortex.cases.ids import check_id, new_id
from cortex.cases.records import Evidence
from cortex.kernel import lifecycle, provenance, validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.kernel import Kernel

if TYPE_CHECKING:
    # Type only: readers (status) must not load the commit machinery.
    from cortex.cases.txn import Transaction


def pending(decisions: Decisions | None) -> Decision | None:
    """The decision the case is waiting for, if any."""
    if decisions is None:
        return None
    return next((d for d in decisions.decisions if d.status == "pending"), None)


def _options(specs: Sequence[str | tuple[str, str, str]], kernel: Kernel) -> list[DecisionOption]:
    if not OPTIONS_MIN <= len(specs) <= OPTIONS_MAX:
        raise ArgumentError(
            f"a decision needs {OPTIONS_MIN} to {OPTIONS_MAX} {{option}} values", "option"
        )
    options = []
    for spec in specs:
        if isinstance(spec, tuple):
            key, label, consequence = spec  # already apart (an MCP object): no `=` or `|` split
        else:
            key, sep, rest = spec.partition("=")
            if not sep:
                raise ArgumentError(
                    f"{{option}} must be 'id=label|consequence', not {spec!r}", "option"
                )
            label, _, consequence = rest.partition("|")
        option_id = validate.identifier(key.strip(), "option id", kernel.redactor, max_bytes=64)
        options.append(
            DecisionOption(
                id=option_id,
                label=validate.short_text(label, f"option {option_id} label", OPTION_LABEL_MAX),
                consequence=validate.text(
                    consequence,
                    f"option {option_id} consequence",
                    OPTION_CONSEQUENCE_MAX,
                    required=False,
                )
                or None,
            )
        )
    ids = [o.id for o in options]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("option ids must be unique")
    return options


def _signature(
    question: str, options: list[DecisionOption], kernel: Kernel | None
) -> tuple[str, list[tuple[str, str, str | None]]]:
    def clean(text: str | None) -> str | None:
        return text if kernel is None or text is None else kernel.redactor(text)

    return question, [(o.id, clean(o.label) or "", clean(o.consequence)) for o in options]


def request(
    kernel: Kernel,
    task_id: str,
    *,
    question: str,
    options: Sequence[str | tuple[str, str, str]],
    actor: str | None = None,
) -> Result:
    """Ask a person; the case pauses until they answer. The same request again is a no-op."""
    question = validate.text(question, "--question", QUESTION_MAX)
    choices = _options(options, kernel)
    who = kernel.actor(actor)
    store = kernel.writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.decision.request") as txn:
        doc = txn.snapshot("decisions.json", Decisions) or Decisions()
        waiting = pending(doc)
        if waiting is not None:
            # Stored text is redacted, so compare the request as it would be stored.
            asked = _signature(kernel.redactor(question), choices, kernel)
            if asked != _signature(waiting.question, waiting.options, None):
                msg = f"decision {waiting.id} is still pending; one decision at a time"
                raise GateRefusedError(msg, lifecycle.next_actions(txn.case, decision=waiting))
            # A retry of the same request coalesces onto the pending decision: nothing to write.
            txn.skip = True
            decision = waiting
        else:
            if len(doc.decisions) >= DECISIONS_MAX:
                raise InvalidInputError(f"a case may ask at most {DECISIONS_MAX} decisions")
            lifecycle.require(txn.case, lifecycle.PAUSED, doing="ask for a decision", txn=txn)
            decision = Decision(
                id=new_id("dec"),
                question=question,
                options=choices,
                requester=who,
                requested_at=kernel.now(),
            )
            doc.decisions.append(decision)
            txn.stage_snapshot("decisions.json", doc)
            lifecycle.move(txn, lifecycle.PAUSED, actor=who, now=kernel.now())
            txn.target = decision.id
    return _result(txn, decision, created=not txn.skip)


def answer(
    kernel: Kernel, task_id: str, decision_id: str, *, option: str, responder: str
) -> Result:
    """Record a person's answer and resume the case exactly where it paused."""
    check_id(decision_id, "dec", what="decision id")
    who = validate.identifier(responder, "--responder", kernel.redactor, max_bytes=IDENTIFIER_MAX)
    if kernel.redactor.looks_secret(option):
        raise ArgumentError("{answer} looks like a secret; answers are option ids", "answer")
    store = kernel.writable(task_id)
    now = kernel.now()
    with store.transaction(task_id, actor=who, operation="case.decision.answer") as txn:
        doc = txn.snapshot("decisions.json", Decisions)
        decision = next((d for d in (doc.decisions if doc else []) if d.id == decision_id), None)
        if doc is None or decision is None:
            raise NotFoundError(f"no decision {decision_id} in case {task_id}")
        if decision.status != "pending":
            msg = f"decision {decision_id} is {decision.status}; there is nothing to answer"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        chosen = next((o for o in decision.options if o.id == option), None)
        if chosen is None:
            valid = ", ".join(o.id for o in decision.options)
            raise ArgumentError(f"{{answer}} must be one of the options: {valid}", "answer")
        if _same_identity(who, decision.requester):
            msg = f"{who} asked this question and may not answer it; a person must"
            raise GateRefusedError(msg, lifecycle.next_actions(txn.case, decision=decision))
        resume_to = txn.case.paused_from
        if txn.case.status != lifecycle.PAUSED or resume_to is None:
            msg = f"the case is {txn.case.status}, not waiting for this decision"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        _record_answer(txn, decision, chosen, who, now, kernel=kernel)
        txn.stage_snapshot("decisions.json", doc)
        lifecycle.move(
            txn, resume_to, actor=who, now=now, reason=f"answered {decision.id}", answering=True
        )
        txn.target = decision.id
    return _result(txn, decision, created=False)


def _same_identity(a: str, b: str) -> bool:
    """Identities compare without case and trailing punctuation (`Agent-1.` is `agent-1`).

    Identities are not authenticated: the rule stops an agent answering its own question by
    accident or by a variant spelling, not a caller that names someone else.
    """

    def canonical(name: str) -> str:
        return name.casefold().rstrip("._-")

    return canonical(a) == canonical(b)


def _record_answer(
    txn: Transaction,
    decision: Decision,
    chosen: DecisionOption,
    who: str,
    now: str,
    *,
    kernel: Kernel,
) -> None:
    evidence_id = new_id("ev")
    # The choice first, and only the question shortened (by bytes), so the record always says
    # what the person chose, however long the question.
    head = f"Decision {decision.id} answered {chosen.id} ({chosen.label}): "
    room = CLAIM_MAX - len(head.encode())
    question = decision.question.encode()[:room].decode("utf-8", "ignore")
    claim = head + question
    txn.append(
        "evidence",
        Evidence(
            id=evidence_id,
            timestamp=now,
            kind="human_report",
            # A person's answer where one is present (a terminal, Studio); else a report of one.
            source=provenance.source(
                tool="cortex", actor=who, origin="human", person_present=kernel.person_present
            ),
            claim=claim,
            confidence="high",
        ),
    )
    decision.status = "answered"
    decision.answer = chosen.id
    decision.responder = who
    decision.answered_at = now
    decision.evidence_id = evidence_id


def withdraw_pending(txn: Transaction) -> str | None:
    """Closing a case withdraws its pending decision (for block and abort)."""
    doc = txn.snapshot("decisions.json", Decisions)
    waiting = pending(doc)
    if doc is None or waiting is None:
        return None
    waiting.status = "withdrawn"
    txn.stage_snapshot("decisions.json", doc)
    return waiting.id


def list_decisions(kernel: Kernel, task_id: str) -> Result:
    """Every decision of a case, oldest first."""
    store = kernel.locate(task_id)
    doc = store.read_snapshot(task_id, "decisions.json", Decisions) or Decisions()
    return Result(
        data={
            "taskId": task_id,
            "pending": pending(doc),
            "decisions": doc.decisions,
            "total": len(doc.decisions),
        }
    )


def _result(txn: Transaction, decision: Decision, *, created: bool) -> Result:
    case = txn.outcome
    return Result(
        data={
            "taskId": case.id,
            "revision": case.revision,
            "status": case.status,
            "pausedFrom": case.paused_from,
            "created": created,
            "decision": decision,
        },
        actions=lifecycle.next_actions(
            case, decision=decision if decision.status == "pending" else None
        ),
    )
