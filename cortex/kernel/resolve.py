"""`cortex case resolve`: record what became of a hypothesis, keeping its history."""

from __future__ import annotations

from cortex.cases.bounds import REASON_MAX, SUPPORTS_MAX
from cortex.cases.documents import Hypotheses, HypothesisEvent
from cortex.cases.errors import InvalidInputError, NotFoundError
from cortex.cases.ids import check_id
from cortex.cases.records import Evidence
from cortex.kernel import lifecycle, validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.kernel import Kernel

RESOLUTIONS = ("confirmed", "challenged", "rejected")


def resolve(
    kernel: Kernel,
    task_id: str,
    hypothesis_id: str,
    *,
    status: str,
    reason: str,
    evidence: list[str] | None = None,
    actor: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Confirm, challenge or reject a hypothesis; `confirmed` must cite existing evidence."""
    check_id(hypothesis_id, "hyp", what="hypothesis id")
    if status not in RESOLUTIONS:
        raise InvalidInputError(f"--status must be one of {', '.join(RESOLUTIONS)}, not {status!r}")
    reason = validate.text(reason, "--reason", REASON_MAX)
    cited = list(dict.fromkeys(check_id(e, "ev", what="--evidence id") for e in evidence or []))
    if len(cited) > SUPPORTS_MAX:
        raise InvalidInputError(f"at most {SUPPORTS_MAX} --evidence ids")
    who = kernel.actor(actor)
    store = kernel.writable(task_id)
    with store.transaction(
        task_id, actor=who, operation="case.resolve", expected_revision=expected_revision
    ) as txn:
        case = txn.case
        if case.status in lifecycle.TERMINAL or case.status == lifecycle.PAUSED:
            raise lifecycle.refusal(case, "cannot resolve a hypothesis", txn=txn)
        if status == "confirmed" and not cited:
            msg = "confirming a hypothesis needs the evidence that confirms it (--evidence ev_...)"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        doc = txn.snapshot("hypotheses.json", Hypotheses)
        target = next((h for h in (doc.hypotheses if doc else []) if h.id == hypothesis_id), None)
        if doc is None or target is None:
            raise NotFoundError(f"no hypothesis {hypothesis_id} in case {task_id}")
        if target.retired:
            msg = f"{hypothesis_id} was retired by a later plan; its status and history stay"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        found = store.find_records(case, "evidence", cited)
        absent = [e for e in cited if e not in found]
        if absent:
            raise NotFoundError(f"--evidence names evidence not in this case: {absent}")
        if status == "confirmed" and all(
            isinstance(record, Evidence) and record.kind == "plan" for record in found.values()
        ):
            # A plan states its hypotheses; citing it back is not evidence for them.
            msg = "a plan record cannot confirm a hypothesis; cite evidence that tested it"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        target.status = status  # type: ignore[assignment]  # checked against RESOLUTIONS
        target.history.append(
            HypothesisEvent(
                status=target.status, reason=reason, evidence=cited, actor=who, at=kernel.now()
            )
        )
        txn.stage_snapshot("hypotheses.json", doc)
        txn.target = hypothesis_id
    committed = txn.outcome
    from cortex.kernel.recall import after_commit

    warnings = after_commit(kernel, store, task_id)
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "hypothesis": target,
            "warnings": warnings,
        }
    )
