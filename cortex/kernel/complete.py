"""`cortex case complete`: finish a case on the strength of its proof, or say why not.

The assessment is recomputed under the case lock with a fresh capture of the workspace, so the
gate judges the code as it is at the commit (docs/design/verification.md §5).
"""

from __future__ import annotations

from cortex.cases.bounds import OUTCOME_MAX
from cortex.cases.documents import Verification
from cortex.cases.errors import InvalidInputError
from cortex.cases.records import CaseFile
from cortex.kernel import lifecycle, validate
from cortex.kernel.assessment import Assessment, assess
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import release_for_close, state
from cortex.kernel.live import live_capture

SUMMARY = "summary.md"


def complete(
    kernel: Kernel,
    task_id: str,
    *,
    outcome: str,
    accept_failed: str | None = None,
    verification_not_possible: str | None = None,
    actor: str | None = None,
) -> Result:
    """Move a verified (or explicitly acknowledged) case to complete, writing summary.md."""
    outcome = validate.text(outcome, "--outcome", OUTCOME_MAX)
    if accept_failed is not None and verification_not_possible is not None:
        msg = "give --accept-failed or --verification-not-possible, not both"
        raise InvalidInputError(msg)
    if accept_failed is not None:
        accept_failed = validate.text(accept_failed, "--accept-failed", OUTCOME_MAX)
    if verification_not_possible is not None:
        verification_not_possible = validate.text(
            verification_not_possible, "--verification-not-possible", OUTCOME_MAX
        )
    actor = kernel.acting(actor)
    who = kernel.actor(actor)
    store = kernel.writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.complete") as txn:
        case = txn.case
        lifecycle.require(case, "persisting", doing="complete", txn=txn)
        lease = case.change_lease
        if actor is None and lease is not None and state(lease, kernel.clock()) == "active":
            # As for verify: without --actor, the one holding the lease is completing.
            who = txn.actor = lease.actor
        _no_other_holder(kernel, case, who)
        doc = txn.snapshot("verification.json", Verification)
        assessment = assess(case, doc, live_capture(kernel, case))
        acknowledgement = _gate(case, assessment, accept_failed, verification_not_possible)
        now = kernel.now()
        summary = _summary(case, assessment, outcome, acknowledgement, who, now)
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
            "summary": SUMMARY,
            "warnings": [*txn.warnings, *after_commit(kernel, store, task_id)],
        }
    )


def _no_other_holder(kernel: Kernel, case: CaseFile, who: str) -> None:
    """Completing releases the lease, so only its holder may complete while it is active."""
    lease = case.change_lease
    if lease is not None and lease.actor != who and state(lease, kernel.clock()) == "active":
        msg = f"the change lease is held by {lease.actor} until {lease.expires_at}; "
        msg += "only its holder completes the case while it is held"
        raise LeaseConflictError(msg)


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
                Action(
                    command=(
                        f"cortex case verify {task} --claim '<criterion id>=<exact statement>' "
                        "--contract '<criterion id>=<verifier>'"
                    ),
                    reason="prove each criterion with a named claim",
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
                    Action(
                        command=f"cortex case complete {task} --outcome '<...>' "
                        "--accept-failed '<why this is acceptable>'",
                        reason="complete despite the failure, on record",
                    ),
                    Action(command=f"cortex case verify {task}", reason="verify again"),
                ],
            )
        return f"accepted failed verification: {accept_failed}"
    if not_possible is None:
        raise GateRefusedError(
            f"the case is {verdict}, not verified: " + "; ".join(assessment.reasons),
            [
                Action(command=f"cortex case verify {task}", reason="produce current proof"),
                Action(
                    command=f"cortex case complete {task} --outcome '<...>' "
                    "--verification-not-possible '<why>'",
                    reason="complete without proof, on record",
                ),
            ],
        )
    return f"verification not possible ({verdict}): {not_possible}"


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
        f"- {f'claim {r.claim_id}' if r.claim_id else (r.requirement or r.id)}: {r.status}"
        + ("" if r.proof else (" (stale)" if r.stale else " (not proof)"))
        for r in assessment.receipts
    )
    lines.extend(f"- {_line(reason)}" for reason in assessment.reasons)
    if acknowledgement:
        lines += ["", "Acknowledged:", "", *_quoted(acknowledgement)]
    lines += ["", "## Goal", "", *_quoted(case.goal), "", "## Outcome", "", *_quoted(outcome)]
    return "\n".join(lines) + "\n"
