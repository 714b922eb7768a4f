"""Human decisions: `decision request`, `decision answer`, `decision list`.

A request pauses the case (needs_human_decision, remembering where it was); an answer records
the choice, a `human_report` evidence record and the resumption, all in one commit, so a crash
leaves the pending state or the fully answered one (docs/design/lifecycle.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, NamedTuple

import msgspec

from cortex.cases.bounds import (
    CLAIM_MAX,
    DECISIONS_MAX,
    IDENTIFIER_MAX,
    OPTION_CONSEQUENCE_MAX,
    OPTION_LABEL_MAX,
    OPTIONS_MAX,
    OPTIONS_MIN,
    QUESTION_MAX,
    SUBJECT_MAX,
)
from cortex.cases.documents import Decision, DecisionOption, Decisions
from cortex.cases.errors import ArgumentError, InvalidInputError, NotFoundError
from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile, Evidence, Phase
from cortex.kernel import lifecycle, provenance, refs, validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Input, OptionArg, TaskId, TaskOnly
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import pending

if TYPE_CHECKING:
    # Type only: readers (status) must not load the commit machinery.
    from cortex.cases.txn import Transaction


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
    subject: str | None = None,
    actor: str | None = None,
) -> Result:
    """Ask a person; the case pauses until they answer. The same request again is a no-op.

    A `subject` says what the decision is about: once answered, it supersedes every earlier
    answered decision of this repository's cases on the same subject (docs/design/recall.md).
    """
    question = validate.text(question, "--question", QUESTION_MAX)
    choices = _options(options, kernel)
    if subject is not None:
        subject = validate.short_text(subject, "--subject", SUBJECT_MAX)
    who = kernel.actor(actor)
    task_id, store = kernel.find_writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.decision.request") as txn:
        doc = txn.snapshot("decisions.json", Decisions) or Decisions()
        waiting = pending(doc)
        if waiting is not None:
            # Stored text is redacted, so compare the request as it would be stored.
            asked = _signature(kernel.redactor(question), choices, kernel)
            stored_subject = None if subject is None else kernel.redactor(subject)
            if (
                asked != _signature(waiting.question, waiting.options, None)
                or stored_subject != waiting.subject
            ):
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
                subject=subject,
            )
            doc.decisions.append(decision)
            txn.stage_snapshot("decisions.json", doc)
            lifecycle.move(txn, lifecycle.PAUSED, actor=who, now=kernel.now())
            txn.target = decision.id
    return _result(txn, decision, created=not txn.skip)


class Confirmation(NamedTuple):
    """What a person is shown before an answer is recorded: the question and their choice."""

    task_id: str
    decision_id: str
    question: str
    option: str
    label: str
    consequence: str | None
    responder: str


Confirm = Callable[[Confirmation], "str | None"]
"""A face's confirmation at a person's terminal: what they typed back (None: no terminal)."""

NEED_A_PERSON = (
    "a person must answer decision {decision}: in Studio (cortex studio), or by running this "
    "command at an interactive terminal, which shows the question and asks for the option id "
    "to be typed; nothing was written"
)


def answer(
    kernel: Kernel,
    task_id: str,
    decision_id: str,
    *,
    option: str,
    responder: str,
    confirm: Confirm | None = None,
) -> Result:
    """Record a person's answer and resume the case exactly where it paused.

    A person must be present (docs/design/trust.md): the call comes from Studio, or `confirm`
    (the CLI at its controlling terminal) gets the option id typed back, or the machine's
    opt-in for unattended answers stands for one. Otherwise nothing is written (exit 5). The
    person is asked before the case lock is taken; the commit checks everything again.
    """
    refs.check(decision_id, "dec", what="decision id")
    who = validate.identifier(responder, "--responder", kernel.redactor, max_bytes=IDENTIFIER_MAX)
    if kernel.redactor.looks_secret(option):
        raise ArgumentError("{answer} looks like a secret; answers are option ids", "answer")
    task_id, store = kernel.find_writable(task_id)
    case, documents = store.read_view(task_id)
    seen = documents.get("decisions.json") or Decisions()
    decision_id = _whole(decision_id, seen, task_id)
    decision, chosen, _ = _answerable(case, seen, decision_id, option, who)
    unattended = _person(kernel, case, decision, chosen, who=who, confirm=confirm)
    now = kernel.now()
    with store.transaction(task_id, actor=who, operation="case.decision.answer") as txn:
        doc = txn.snapshot("decisions.json", Decisions) or Decisions()
        decision, chosen, resume_to = _answerable(txn.case, doc, decision_id, option, who)
        _record_answer(txn, decision, chosen, who, now, kernel=kernel, unattended=unattended)
        txn.stage_snapshot("decisions.json", doc)
        lifecycle.move(
            txn, resume_to, actor=who, now=now, reason=f"answered {decision.id}", answering=True
        )
        txn.target = decision.id
    from cortex.kernel.recall import after_commit

    return _result(txn, decision, created=False, warnings=after_commit(kernel, store, task_id))


def _whole(decision_id: str, doc: Decisions, task_id: str) -> str:
    """A decision id as given, or the whole id a unique prefix names among the case's decisions."""
    asked = {d.id: d.question for d in doc.decisions}
    return refs.among(
        decision_id,
        "dec",
        asked,
        argument="decision",
        noun="decisions",
        where=f"case {task_id}",
        title=lambda i: refs.short(asked[i]),
    )


def _answerable(
    case: CaseFile, doc: Decisions, decision_id: str, option: str, who: str
) -> tuple[Decision, DecisionOption, Phase]:
    """The pending decision, the chosen option and the phase to resume, or why not."""
    decision = next((d for d in doc.decisions if d.id == decision_id), None)
    if decision is None:
        raise NotFoundError(f"no decision {decision_id} in case {case.id}")
    waiting = pending(doc) if case.status == lifecycle.PAUSED else None
    if decision.status != "pending":
        msg = f"decision {decision_id} is {decision.status}; there is nothing to answer"
        raise GateRefusedError(msg, lifecycle.next_actions(case, decision=waiting))
    chosen = next((o for o in decision.options if o.id == option), None)
    if chosen is None:
        valid = ", ".join(o.id for o in decision.options)
        raise ArgumentError(f"{{answer}} must be one of the options: {valid}", "answer")
    if _same_identity(who, decision.requester):
        msg = f"{who} asked this question and may not answer it; a person must"
        raise GateRefusedError(msg, lifecycle.next_actions(case, decision=decision))
    if case.status != lifecycle.PAUSED or case.paused_from is None:
        msg = f"the case is {case.status}, not waiting for this decision"
        raise GateRefusedError(msg, lifecycle.next_actions(case, decision=waiting))
    return decision, chosen, case.paused_from


def _person(
    kernel: Kernel,
    case: CaseFile,
    decision: Decision,
    chosen: DecisionOption,
    *,
    who: str,
    confirm: Confirm | None,
) -> str | None:
    """Refuse unless a person is present; for an unattended answer, whom the opt-in names."""
    if kernel.via == "studio":
        return None  # the board's answer dialog is the person's confirmation
    if confirm is not None:
        asked = Confirmation(
            task_id=case.id,
            decision_id=decision.id,
            question=decision.question,
            option=chosen.id,
            label=chosen.label,
            consequence=chosen.consequence,
            responder=who,
        )
        typed = confirm(asked)
        if typed is not None:
            if typed != chosen.id:
                msg = (
                    f"the answer was not confirmed: {chosen.id} was not typed at the terminal; "
                    "nothing was written"
                )
                raise GateRefusedError(msg, [])
            return None
    from cortex.kernel.human.unattended import stands_for

    statement = stands_for(kernel.env)
    if statement is None:
        raise GateRefusedError(NEED_A_PERSON.format(decision=decision.id), [])
    return statement


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
    unattended: str | None,
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
            # A person confirmed it here (a terminal, Studio), or the machine's opt-in stands
            # for one: then the record is the responder's report, and shown so.
            source=provenance.source(
                tool="cortex",
                actor=who,
                origin="human",
                person_present=kernel.person_present and unattended is None,
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
    decision.answered_via = kernel.via
    decision.unattended = unattended


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
    """Every decision of a case, oldest first, with the options it did not choose and its labels.

    Labels (`(superseded by dec_...)`, `[contested]`) come from the recall index, which relates
    decisions across the cases of a repository; without an index there are none to give.
    """
    task_id, store = kernel.find(task_id)
    doc = store.read_snapshot(task_id, "decisions.json", Decisions) or Decisions()
    answered = [d.id for d in doc.decisions if d.status == "answered"]
    found: dict[str, list[str]] = {}
    if answered:
        from cortex.kernel.recall import relation_labels

        found = relation_labels(kernel, store, answered)
    return Result(
        data={
            "taskId": task_id,
            "pending": pending(doc),
            "decisions": [
                {
                    **msgspec.to_builtins(decision),
                    "alreadyRejected": rejected_options(decision),
                    "labels": found.get(decision.id, []),
                }
                for decision in doc.decisions
            ],
            "total": len(doc.decisions),
        }
    )


def rejected_options(decision: Decision) -> list[dict[str, str]]:
    """The options an answered decision did not choose (kept and shown: `already rejected`)."""
    if decision.status != "answered":
        return []
    return [{"id": o.id, "label": o.label} for o in decision.options if o.id != decision.answer]


def _result(
    txn: Transaction, decision: Decision, *, created: bool, warnings: list[str] | None = None
) -> Result:
    case = txn.outcome
    return Result(
        data={
            "taskId": case.id,
            "revision": case.revision,
            "status": case.status,
            "pausedFrom": case.paused_from,
            "created": created,
            "decision": decision,
            "warnings": warnings or [],
        },
        actions=lifecycle.next_actions(
            case, decision=decision if decision.status == "pending" else None
        ),
    )


class RequestDecision(Input):
    """The input of `case decision request`."""

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


def ask(kernel: Kernel, given: RequestDecision) -> Result:
    """`request` for one input."""
    options = [
        o if isinstance(o, str) else (o.id, o.label, o.consequence or "") for o in given.options
    ]
    return request(
        kernel,
        given.task_id,
        question=given.question,
        options=options,
        subject=given.subject,
        actor=given.actor,
    )


class AnswerDecision(Input):
    """The input of `case decision answer` (a person's act: the face asks them to confirm)."""

    task_id: TaskId
    decision_id: str
    answer: str
    responder: str


def answer_decision(kernel: Kernel, given: AnswerDecision, *, confirm: Confirm | None) -> Result:
    """`answer` for one input; `confirm` is the face's question to the person, if any."""
    return answer(
        kernel,
        given.task_id,
        given.decision_id,
        option=given.answer,
        responder=given.responder,
        confirm=confirm,
    )


def decisions_of(kernel: Kernel, given: TaskOnly) -> Result:
    """`list_decisions` for one input."""
    return list_decisions(kernel, given.task_id)
