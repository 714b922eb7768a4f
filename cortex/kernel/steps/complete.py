"""`cortex case complete`: finish a case on the strength of its proof, or say why not.

The assessment is recomputed under the case lock with a fresh capture of the workspace, so the
gate judges the code as it is at the commit (docs/design/verification.md §5).
"""

from __future__ import annotations

import os
from typing import Annotated

import msgspec

from cortex.cases.bounds import OUTCOME_MAX
from cortex.cases.documents import Verification
from cortex.cases.errors import ArgumentError, CortexError
from cortex.cases.records import CaseFile
from cortex.cases.store import CaseStore
from cortex.kernel import lifecycle, validate
from cortex.kernel.envelope import Result, step
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.inputs import Holder, Input, LeaseToken, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import check_holder, in_session, release_for_close, state
from cortex.kernel.proof.assessment import Assessment, ReceiptView, assess
from cortex.kernel.proof.live import live_capture

SUMMARY = "summary.md"


def complete(
    kernel: Kernel,
    task_id: str,
    *,
    outcome: str,
    accept_failed: str | None = None,
    verification_not_possible: str | None = None,
    actor: str | None = None,
    lease_token: str | None = None,
) -> Result:
    """Move a verified (or explicitly acknowledged) case to complete, writing summary.md."""
    outcome = validate.text(outcome, "--outcome", OUTCOME_MAX)
    if accept_failed is not None and verification_not_possible is not None:
        msg = "give {accept_failed} or {verification_not_possible}, not both"
        raise ArgumentError(msg, "accept_failed", "verification_not_possible")
    if accept_failed is not None:
        accept_failed = validate.text(accept_failed, "--accept-failed", OUTCOME_MAX)
    if verification_not_possible is not None:
        verification_not_possible = validate.text(
            verification_not_possible, "--verification-not-possible", OUTCOME_MAX
        )
    actor = kernel.acting(actor)
    who = kernel.actor(actor)
    task_id, store = kernel.find_writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.complete") as txn:
        case = txn.case
        lifecycle.require(case, "persisting", doing="complete", txn=txn)
        _no_open_child(store, case)
        lease = case.change_lease
        if actor is None and lease is not None and state(lease, kernel.clock()) == "active":
            # As for verify: without --actor, the one holding the lease is completing.
            who = txn.actor = lease.actor
        _no_other_holder(kernel, case, who, lease_token)
        doc = txn.snapshot("verification.json", Verification)
        assessment = assess(case, doc, live_capture(kernel, case))
        acknowledgement = _gate(case, assessment, accept_failed, verification_not_possible)
        now = kernel.now()
        # Built from redacted text (docs/design/redaction.md, "Derived artifacts"): quoting
        # prefixes every line with `> `, which would hide a key's body lines or a continued
        # line from a redaction of the whole.
        redact = kernel.redactor
        summary = _summary(
            case, assessment, redact(outcome), acknowledgement and redact(acknowledgement), who, now
        )
        txn.stage_blob(SUMMARY, summary.encode("utf-8"))
        release_for_close(txn, now)
        case.status_reason = outcome
        lifecycle.move(txn, "persisting", actor=who, now=now, reason="summary written")
        lifecycle.move(txn, "complete", actor=who, now=now, reason=assessment.status)
        txn.target = assessment.batch_id
    committed = txn.outcome
    from cortex.kernel.recall import after_commit

    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "status": committed.status,
            "assessment": assessment,
            "acknowledged": acknowledgement,
            "summary": os.path.join(store.case_path(task_id), SUMMARY),
            "warnings": [*txn.warnings, *after_commit(kernel, store, task_id)],
        }
    )


def _no_open_child(store: CaseStore, case: CaseFile) -> None:
    """A parent ends after its children: refuse while one is neither complete nor abandoned.

    A blocked child is on hold, not over (unblock resumes it), so it holds the parent too. A
    child that cannot be read holds it as well: nothing says it ended.
    """
    open_children: list[tuple[str, str]] = []
    for child_id in case.child_task_ids:
        try:
            phase = store.read_case(child_id).status
        except CortexError as exc:
            open_children.append((child_id, f"unreadable: {exc.message}"))
            continue
        if phase not in lifecycle.FINAL:
            open_children.append((child_id, phase))
    if not open_children:
        return
    listed = ", ".join(f"{child} ({phase})" for child, phase in open_children)
    msg = f"cannot complete: child case(s) still open: {listed}; complete or abort each first"
    actions = []
    for child, _ in open_children:
        actions.append(step("case.status", "see where the child case stands", task=child))
        actions.append(
            step("case.abort", "give the child case up (nothing is deleted)", task=child,
                 reason="<why>")
        )  # fmt: skip
    raise GateRefusedError(msg, actions)


def _no_other_holder(kernel: Kernel, case: CaseFile, who: str, token: str | None) -> None:
    """Completing releases the lease: only its holder (name and token) completes while active."""
    lease = case.change_lease
    if lease is not None and lease.actor != who and state(lease, kernel.clock()) == "active":
        msg = f"the change lease is held by {lease.actor} until {lease.expires_at}; "
        msg += "only its holder completes the case while it is held"
        raise LeaseConflictError(msg)
    check_holder(lease, who, token, kernel.clock(), session=in_session(kernel, case.id, lease))


def _quoted(text: str) -> list[str]:
    return [f"> {line}" for line in text.splitlines() or [""]]


def _line(text: str) -> str:
    return " ".join(text.split())


def _gate(
    case: CaseFile,
    assessment: Assessment,
    accept_failed: str | None,
    not_possible: str | None,
) -> str | None:
    task = case.id
    if assessment.missing_criteria:
        msg = "acceptance criteria are not proven (no current, exact, passing claim): "
        msg += ", ".join(assessment.missing_criteria)
        msg += "; nothing acknowledges a missing criterion"
        raise GateRefusedError(
            msg,
            [
                step(
                    "case.verify",
                    "prove each criterion with a named claim",
                    task=task,
                    claim=["<criterion id>=<exact statement>"],
                    contract=["<criterion id>=<verifier>"],
                )
            ],
        )
    verdict = assessment.status
    if verdict == "verified":
        return None
    if verdict == "failed":
        if accept_failed is None:
            raise GateRefusedError(
                "verification failed: " + "; ".join(assessment.reasons),
                [
                    step(
                        "case.complete",
                        "complete despite the failure, on record",
                        task=task,
                        outcome="<...>",
                        accept_failed="<why this is acceptable>",
                    ),
                    step("case.verify", "verify again", task=task),
                ],
            )
        return f"accepted failed verification: {accept_failed}"
    if not_possible is None:
        raise GateRefusedError(
            f"the case is {verdict}, not verified: " + "; ".join(assessment.reasons),
            [
                step("case.verify", "produce current proof", task=task),
                step(
                    "case.complete",
                    "complete without proof, on record",
                    task=task,
                    outcome="<...>",
                    verification_not_possible="<why>",
                ),
            ],
        )
    return f"verification not possible ({verdict}): {not_possible}"


def _shown(receipt: ReceiptView) -> str:
    """A receipt's status in summary.md: a pass by acknowledgement is never a plain `passed`."""
    if receipt.acknowledged and receipt.status == "passed":
        return f"passed by acknowledgement of {receipt.acknowledged}"
    return receipt.status


def _summary(  # noqa: PLR0917
    case: CaseFile,
    assessment: Assessment,
    outcome: str,
    acknowledgement: str | None,
    who: str,
    now: str,
) -> str:
    """summary.md: the kernel's facts first; what people wrote follows, quoted line by line.

    Quoting keeps text from the caller (a goal, an outcome) from posing as a heading of its own,
    such as a forged "Verification: verified".
    """
    lines = [
        f"# {case.id}",
        "",
        f"Completed by {_line(who)} at {now}. Mode {case.mode}, risk {case.risk}.",
        "",
        f"## Verification: {assessment.status}",
        "",
    ]
    if assessment.batch_id:
        lines.append(f"Latest batch {assessment.batch_id} ({assessment.binding}).")
        lines.append("")
    lines.extend(
        f"- {f'claim {r.claim_id}' if r.claim_id else (r.requirement or r.id)}: {_shown(r)}"
        + ("" if r.proof else (" (stale)" if r.stale else " (not proof)"))
        for r in assessment.receipts
    )
    lines.extend(f"- {_line(reason)}" for reason in assessment.reasons)
    if acknowledgement:
        lines += ["", "Acknowledged:", "", *_quoted(acknowledgement)]
    lines += ["", "## Goal", "", *_quoted(case.goal), "", "## Outcome", "", *_quoted(outcome)]
    return "\n".join(lines) + "\n"


class Complete(Input):
    """The input of `case complete`."""

    task_id: TaskId
    outcome: Annotated[str, msgspec.Meta(description="what was done")]
    accept_failed: Annotated[
        str | None, msgspec.Meta(description="why to complete although verification failed")
    ] = None
    verification_not_possible: Annotated[
        str | None, msgspec.Meta(description="why nothing can be (fully) proven")
    ] = None
    actor: Holder = None
    lease_token: LeaseToken = None


def complete_case(kernel: Kernel, given: Complete) -> Result:
    """`complete` for one input."""
    return complete(
        kernel,
        given.task_id,
        outcome=given.outcome,
        accept_failed=given.accept_failed,
        verification_not_possible=given.verification_not_possible,
        actor=given.actor,
        lease_token=given.lease_token,
    )
