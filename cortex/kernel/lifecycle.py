"""The phase machine: the one place that says which step may follow which.

Every command that changes a case's phase calls `move`, which checks the step against
`allowed` and appends the phase line to the same commit as case.json. A refused step is exit 5
with the steps that are allowed, as runnable commands (docs/design/lifecycle.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile, Mode, Phase, PhaseChange
from cortex.kernel.envelope import Action, step
from cortex.kernel.errors import GateRefusedError

if TYPE_CHECKING:
    # Type only: readers (status) must not load the commit machinery.
    from cortex.cases.documents import Decision
    from cortex.cases.txn import Transaction

TERMINAL: frozenset[str] = frozenset({"complete", "blocked", "abandoned"})
"""Closed: no work goes on. Readers count these as closed; only `blocked` can be left again."""
FINAL: frozenset[str] = frozenset({"complete", "abandoned"})
"""Closed for good: nothing is ever written to the case again."""
PAUSED: Phase = "needs_human_decision"
BLOCKED: Phase = "blocked"
HELD = frozenset({PAUSED, BLOCKED})
"""Where a case waits to go back to `paused_from`: for a person's answer, or to be unblocked."""
ORDER: tuple[Phase, ...] = (
    "new",
    "orienting",
    "investigating",
    "planned",
    "changing",
    "verifying",
    "persisting",
    "complete",
)
"""The main line, in order (used to tell whether a phase comes before another)."""

_FORWARD: dict[str, tuple[Phase, ...]] = {
    "new": ("orienting",),
    "orienting": ("investigating",),
    "investigating": ("planned",),
    "changing": ("verifying",),
    "persisting": ("complete",),
}


def allowed(mode: Mode, phase: Phase, paused_from: Phase | None = None) -> tuple[Phase, ...]:
    """The phases a case in `phase` may move to in one step."""
    if phase in FINAL:
        return ()
    if phase == BLOCKED:
        # Blocked is resumable: `unblock` returns to the phase it was blocked in, and nothing
        # else leaves it but giving the task up.
        return ((paused_from,) if paused_from is not None else ()) + ("abandoned",)
    exits: tuple[Phase, ...] = ("blocked", "abandoned")
    if phase == PAUSED:
        return ((paused_from,) if paused_from is not None else ()) + exits
    if phase == "planned":
        forward: tuple[Phase, ...] = ("changing",) if mode == "change" else ("verifying",)
    elif phase == "verifying":
        forward = ("persisting", "changing") if mode == "change" else ("persisting",)
    else:
        forward = _FORWARD[phase]
    return (*forward, PAUSED, *exits)


def before(phase: Phase, other: Phase) -> bool:
    """Whether `phase` comes before `other` on the main line."""
    return ORDER.index(phase) < ORDER.index(other)


def pending_decision(txn: Transaction) -> Decision | None:
    """The decision a paused case waits for (read inside the transaction, so consistent)."""
    if txn.case.status != PAUSED:
        return None
    from cortex.cases.documents import Decisions

    doc = txn.snapshot("decisions.json", Decisions)
    return next((d for d in (doc.decisions if doc else []) if d.status == "pending"), None)


def actions_for(txn: Transaction) -> list[Action]:
    """The next steps for the case of a transaction in progress (naming a pending decision)."""
    return next_actions(txn.case, decision=pending_decision(txn))


def require(
    case: CaseFile,
    to: Phase,
    *,
    doing: str,
    decision: Decision | None = None,
    answering: bool = False,
    unblocking: bool = False,
    txn: Transaction | None = None,
) -> None:
    """Refuse (exit 5, with the allowed steps) unless `case` may move to `to`.

    Leaving a pause for the phase it paused is a person's answer, and nothing else: any other
    command asking for that step (begin-change while paused in changing, say) is refused.
    Leaving `blocked` for the phase it was blocked in is `unblock`, and nothing else.
    """
    resuming = case.status in HELD and to == case.paused_from
    entitled = answering if case.status == PAUSED else unblocking
    if to in allowed(case.mode, case.status, case.paused_from) and (entitled or not resuming):
        return
    raise refusal(case, f"cannot {doing}", decision=decision, txn=txn)


def refusal(
    case: CaseFile,
    what: str,
    *,
    decision: Decision | None = None,
    txn: Transaction | None = None,
) -> GateRefusedError:
    """A gate refusal naming the phase, with what can be done instead.

    Given the transaction, a paused case's actions name the very decision to answer.
    """
    if decision is None and txn is not None:
        decision = pending_decision(txn)
    where = f"the case is {case.status}"
    if case.status == PAUSED:
        where += f" (paused in {case.paused_from}; a person must answer the pending decision)"
    elif case.status == BLOCKED and case.paused_from is not None:
        where += f" (in {case.paused_from}; unblock it to go on)"
    return GateRefusedError(f"{what}: {where}", next_actions(case, decision=decision))


def move(
    txn: Transaction,
    to: Phase,
    *,
    actor: str,
    now: str,
    reason: str | None = None,
    answering: bool = False,
    unblocking: bool = False,
) -> PhaseChange:
    """Check and make one step, in the transaction's commit (case.json and phases.jsonl).

    Entering `blocked` remembers in `paused_from` where the case goes back to when unblocked:
    the phase it was in, or, blocked while waiting on a decision (which block withdraws), the
    phase that decision paused.
    """
    case = txn.case
    require(case, to, doing=f"move to {to}", answering=answering, unblocking=unblocking, txn=txn)
    record = PhaseChange(
        id=new_id("ph"),
        timestamp=now,
        from_phase=case.status,
        to_phase=to,
        actor=actor,
        reason=reason,
    )
    if to == PAUSED:
        case.paused_from = case.status
    elif to == BLOCKED:
        case.paused_from = case.paused_from if case.status == PAUSED else case.status
    elif case.status in HELD:
        case.paused_from = None
    case.status = to
    txn.append("phases", record)
    return record


def _plan_step(case: CaseFile, reason: str, *, replan: bool) -> Action:
    arguments: dict[str, object] = {"task": case.id}
    if replan:
        arguments["reason"] = "<what changed>"
    arguments["hypothesis"] = ["<statement> :: <how to disprove it>"]
    arguments["uncertainty"] = "<what is still unknown>"
    if case.mode == "change":
        arguments["file"] = ["<path>"]
        arguments["boundary_reason"] = "<why these files>"
        arguments["verify"] = ["<verifier>"]
    return step("case.plan", reason, **arguments)


def next_actions(case: CaseFile, *, decision: Decision | None = None) -> list[Action]:
    """Runnable commands for every step allowed now (`<...>` marks what to fill in)."""
    task = case.id
    actions: list[Action] = []
    for phase in allowed(case.mode, case.status, case.paused_from):
        if case.status == BLOCKED and phase == case.paused_from:
            actions.append(
                step(
                    "case.unblock",
                    f"resume in {phase}, where the case was blocked",
                    task=task,
                    reason="<what changed>",
                )
            )
            actions.append(
                step(
                    "case.note",
                    "notes and evidence are still recorded while the case is blocked",
                    task=task,
                    text="<what happened>",
                )
            )
            continue
        if case.status == PAUSED and phase == case.paused_from:
            # Paused: the only way forward is a person's answer, whatever phase it resumes.
            if decision is None:
                actions.append(
                    step(
                        "case.decision.list",
                        "the case waits for a person: see the pending question",
                        task=task,
                    )
                )
                actions.append(
                    step(
                        "case.decision.answer",
                        "a person answers; the case resumes where it paused",
                        task=task,
                        decision="<decision>",
                        answer="<option>",
                        responder="<person>",
                    )
                )
            else:
                options = "|".join(option.id for option in decision.options)
                actions.append(
                    step(
                        "case.decision.answer",
                        f"a person answers: {decision.question[:120]}",
                        task=task,
                        decision=decision.id,
                        answer=f"<{options}>",
                        responder="<person>",
                    )
                )
            continue
        if phase == "investigating":
            actions.append(
                step(
                    "case.evidence.add",
                    "record what you find; the first evidence starts the investigation",
                    task=task,
                    claim="<what you found>",
                )
            )
        elif phase == "planned":
            actions.append(_plan_step(case, "commit to a plan before changing code", replan=False))
        elif phase == "changing":
            actions.append(
                step(
                    "case.begin-change",
                    "take the change lease before editing",
                    task=task,
                    actor="<you>",
                )
            )
        elif phase == "verifying":
            actions.append(
                step(
                    "case.verify",
                    "run the plan's verifiers; receipts bind to the code as it is",
                    task=task,
                )
            )
        elif phase == "persisting":
            actions.append(
                step(
                    "case.complete",
                    "finish the case on the strength of its current proof",
                    task=task,
                    outcome="<what was done>",
                )
            )
        elif phase == PAUSED:
            actions.append(
                step(
                    "case.decision.request",
                    "ask a person when the choice is theirs",
                    task=task,
                    question="<question>",
                    option=["a=<label>|<consequence>", "b=<label>|<consequence>"],
                )
            )
        elif phase == "blocked":
            actions.append(
                step(
                    "case.block",
                    "stop here when the task cannot go on",
                    task=task,
                    reason="<what blocks it>",
                )
            )
        elif phase == "abandoned":
            actions.append(
                step(
                    "case.abort",
                    "give the task up; nothing is deleted",
                    task=task,
                    reason="<why>",
                )
            )
    if "plan" in case.snapshots and case.status not in TERMINAL:
        actions.append(
            _plan_step(case, "re-plan (a new plan revision) when the picture changes", replan=True)
        )
    return actions
