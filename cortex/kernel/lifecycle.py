"""The phase machine: the one place that says which step may follow which.

Every command that changes a case's phase calls `move`, which checks the step against
`allowed` and appends the phase line to the same commit as case.json. A refused step is exit 5
with the steps that are allowed, as runnable commands (docs/design/lifecycle.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile, Mode, Phase, PhaseChange
from cortex.kernel.envelope import Action, step
from cortex.kernel.errors import GateRefusedError

if TYPE_CHECKING:
    # Type only: readers (status) must not load the commit machinery.
    from cortex.cases.documents import Decision, Decisions
    from cortex.cases.txn import Transaction
    from cortex.kernel.proof.assessment import Assessment

TERMINAL: frozenset[str] = frozenset({"complete", "blocked", "abandoned"})
"""Closed: no work goes on. Readers count these as closed; only `blocked` can be left again."""
FINAL: frozenset[str] = frozenset({"complete", "abandoned"})
"""Closed for good: nothing is ever written to the case again."""
PAUSED: Phase = "needs_human_decision"
BLOCKED: Phase = "blocked"
HELD = frozenset({PAUSED, BLOCKED})
"""Where a case waits to go back to `paused_from`: for a person's answer, or to be unblocked."""
GATED = frozenset({"changing", "verifying"})
"""Phases in which the code is being changed or checked: a stop needs current proof, and the
host's activity is recorded (docs/design/hosts.md, activity.md)."""
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


class Standing(msgspec.Struct, frozen=True, kw_only=True):
    """What the gates beyond the phase table will judge, as a reader sees it now.

    Given to `next_actions`, it makes the steps offered the ones their gates would accept
    (docs/design/lifecycle.md, "Next steps"): `complete` as the assessment allows it, `verify`
    only with a lease to verify under, and with the flags its own gates would ask for.
    """

    assessment: Assessment | None = None
    """The latest batch judged against the code as it is now (None: never verified)."""
    lease: str | None = None
    """The change lease's state now (`active`, `expired`, `released`; None: never taken)."""
    holder: str | None = None
    """Who holds the lease, when it is active."""
    changed: list[str] | None = None
    """The files the task changed since the case opened (None: not known)."""
    contracts: dict[str, str] = msgspec.field(default_factory=dict)
    """The contract each claim id was first used with (a claim id keeps its meaning)."""


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


def pending(decisions: Decisions | None) -> Decision | None:
    """The decision a case's decisions.json says it is waiting for, if any.

    Here, not in `cortex.kernel.human.decisions`, so that `status` reads it without loading the
    decision commands (tests/test_import_pin.py).
    """
    if decisions is None:
        return None
    return next((d for d in decisions.decisions if d.status == "pending"), None)


def pending_decision(txn: Transaction) -> Decision | None:
    """The decision a paused case waits for (read inside the transaction, so consistent)."""
    if txn.case.status != PAUSED:
        return None
    from cortex.cases.documents import Decisions

    return pending(txn.snapshot("decisions.json", Decisions))


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


def _claims(case: CaseFile, standing: Standing) -> dict[str, list[str]]:
    """`--claim` and `--contract` for every acceptance criterion, its statement filled in.

    Only the latest batch counts, so every verify of a case with criteria must claim them all.
    """
    if not case.acceptance_criteria:
        return {}
    required = list(case.verification_required)
    if not required or any(
        standing.contracts[c.id].partition("#")[0] not in required
        for c in case.acceptance_criteria
        if c.id in standing.contracts
    ):
        # A claim keeps its contract for the whole case, and a contract must name a verifier
        # the plan requires: with none, or after a re-plan dropped it, no claim can be made,
        # and a verify offered with one would be refused. Verify without claims instead.
        return {}
    choice = required[0] if len(required) == 1 else "<" + "|".join(required) + ">"
    return {
        "claim": [f"{c.id}={c.statement}" for c in case.acceptance_criteria],
        "contract": [
            f"{c.id}={standing.contracts.get(c.id, choice)}" for c in case.acceptance_criteria
        ],
    }


def _lease_step(case: CaseFile, standing: Standing, reason: str) -> Action:
    who = standing.holder if standing.lease == "active" and standing.holder else "<you>"
    return step("case.begin-change", reason, task=case.id, actor=who)


def _verify_step(case: CaseFile, standing: Standing, reason: str) -> Action:
    """`verify` as its gates will take it: under a lease, with `--no-op` or `--ack-drift`."""
    if case.mode == "change" and standing.lease != "active":
        state = standing.lease or "not taken"
        return _lease_step(case, standing, f"the change lease is {state}: take it to verify")
    arguments: dict[str, object] = {"task": case.id, **_claims(case, standing)}
    changed = standing.changed
    if case.mode == "change" and changed is not None:
        from cortex.verifiers.scope import drift

        outside = drift(changed, case.change_boundary.files) if case.change_boundary.files else []
        if not changed:
            reason = "nothing changed since the case opened: change the code first, or verify "
            reason += "with --no-op if no change is needed"
            arguments["no_op"] = True
        elif case.risk == "high" and outside:
            reason = f"a high-risk change touched {len(outside)} file(s) outside its boundary "
            reason += f"({', '.join(outside[:3])}): re-plan the boundary, or accept the drift"
            arguments["ack_drift"] = True
    return step("case.verify", reason, **arguments)


def _proof_steps(case: CaseFile, standing: Standing) -> list[Action]:
    """In `verifying`: what the assessment allows, the step that fixes it first."""
    task = case.id
    verdict = standing.assessment
    if verdict is None:
        return [_verify_step(case, standing, "verify: the case has no current proof")]
    if verdict.missing_criteria:
        missing = ", ".join(verdict.missing_criteria)
        why = f"prove the acceptance criteria ({missing}) with their claims; nothing "
        why += "acknowledges a missing criterion"
        return [_verify_step(case, standing, why)]
    if verdict.status == "verified":
        reason = "every requirement has a current, bound pass"
        return [step("case.complete", reason, task=task, outcome="<what was done>")]
    again = _verify_step(case, standing, f"verify again: the case is {verdict.status}")
    if verdict.status == "failed":
        finish = step(
            "case.complete",
            "complete despite the failure, on record",
            task=task,
            outcome="<what was done>",
            accept_failed="<why this is acceptable>",
        )
    else:
        finish = step(
            "case.complete",
            f"complete without proof ({verdict.status}), on record",
            task=task,
            outcome="<what was done>",
            verification_not_possible="<why>",
        )
    return [again, finish]


def next_actions(
    case: CaseFile, *, decision: Decision | None = None, standing: Standing | None = None
) -> list[Action]:
    """Runnable commands for every step allowed now (`<...>` marks what to fill in).

    With `standing`, only steps whose gates would accept them now, the one that makes progress
    first (`status`, `verify`); without it (a refusal inside a transaction), every step the
    phase table allows.
    """
    if standing is not None and case.status == "verifying":
        return _verifying(case, standing, decision)
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
            reason = "take the change lease before editing"
            if standing is not None:
                actions.append(_lease_step(case, standing, reason))
            else:
                actions.append(step("case.begin-change", reason, task=task, actor="<you>"))
        elif phase == "verifying":
            reason = "run the plan's verifiers; receipts bind to the code as it is"
            if standing is not None:
                actions.append(_verify_step(case, standing, reason))
            else:
                actions.append(step("case.verify", reason, task=task))
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


def _verifying(case: CaseFile, standing: Standing, decision: Decision | None) -> list[Action]:
    """`verifying` judged by its assessment: the proof steps, then repair, then the rest."""
    actions = _proof_steps(case, standing)
    verdict = standing.assessment
    failed = verdict is not None and verdict.status == "failed"
    # A missing claim is fixed by verify with the claim, not by changing the code.
    unproven = verdict is None or (verdict.status != "verified" and not verdict.missing_criteria)
    if case.mode == "change" and (failed or unproven):
        repair = _lease_step(case, standing, "repair what failed, then verify again")
        if failed:
            actions.insert(0, repair)
        else:
            actions.append(repair)
    rest = [
        a
        for a in next_actions(case, decision=decision)
        if a.operation not in {"case.complete", "case.begin-change", "case.verify"}
    ]
    # A lease step may already stand in for verify (no active lease): offer it once.
    seen: set[str] = set()
    unique = []
    for a in [*actions, *rest]:
        if a.command not in seen:
            seen.add(a.command)
            unique.append(a)
    return unique
