"""`cortex case resolve`: record what became of a hypothesis, keeping its history."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from cortex.cases.bounds import REASON_MAX, SUPPORTS_MAX
from cortex.cases.documents import Hypotheses, HypothesisEvent
from cortex.cases.errors import ArgumentError, NotFoundError, naming
from cortex.cases.records import Evidence
from cortex.kernel import lifecycle, refs, validate
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Expect, Input, TaskId
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
    refs.check(hypothesis_id, "hyp", what="hypothesis id")
    if status not in RESOLUTIONS:
        raise ArgumentError(
            f"{{status}} must be one of {', '.join(RESOLUTIONS)}, not {status!r}", "status"
        )
    reason = validate.text(reason, "--reason", REASON_MAX)
    cited = list(dict.fromkeys(refs.check(e, "ev", what="--evidence id") for e in evidence or []))
    if len(cited) > SUPPORTS_MAX:
        raise ArgumentError(f"at most {SUPPORTS_MAX} {{evidence}} ids", "evidence")
    who = kernel.actor(actor)
    task_id, store = kernel.find_writable(task_id)
    with store.transaction(
        task_id, actor=who, operation="case.resolve", expected_revision=expected_revision
    ) as txn:
        case = txn.case
        if case.status in lifecycle.TERMINAL or case.status == lifecycle.PAUSED:
            raise lifecycle.refusal(case, "cannot resolve a hypothesis", txn=txn)
        if status == "confirmed" and not cited:
            msg = "confirming a hypothesis needs the evidence that confirms it ({evidence} ev_...)"
            raise naming(GateRefusedError(msg, lifecycle.actions_for(txn)), "evidence")
        doc = txn.snapshot("hypotheses.json", Hypotheses)
        known = {h.id: h.statement for h in (doc.hypotheses if doc else [])}
        hypothesis_id = refs.among(
            hypothesis_id,
            "hyp",
            known,
            argument="hypothesis",
            noun="hypotheses",
            where=f"case {task_id}",
            title=lambda i: refs.short(known[i]),
        )
        target = next((h for h in (doc.hypotheses if doc else []) if h.id == hypothesis_id), None)
        if doc is None or target is None:
            raise NotFoundError(f"no hypothesis {hypothesis_id} in case {task_id}")
        if target.retired:
            msg = f"{hypothesis_id} was retired by a later plan; its status and history stay"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        cited = refs.evidence(store, case, cited, argument="evidence")
        found = store.find_records(case, "evidence", cited)
        absent = [e for e in cited if e not in found]
        if absent:
            raise naming(
                NotFoundError(f"{{evidence}} names evidence not in this case: {absent}"), "evidence"
            )
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


class Resolve(Input):
    """The input of `case resolve`."""

    task_id: TaskId
    hypothesis_id: Annotated[str, msgspec.Meta(description="hyp_..., or a unique prefix of one")]
    status: Literal["confirmed", "challenged", "rejected"]
    reason: str
    evidence: list[str] = msgspec.field(default_factory=list)
    actor: Actor = None
    expect_revision: Expect = None


def resolve_hypothesis(kernel: Kernel, given: Resolve) -> Result:
    """`resolve` for one input."""
    return resolve(
        kernel,
        given.task_id,
        given.hypothesis_id,
        status=given.status,
        reason=given.reason,
        evidence=given.evidence,
        actor=given.actor,
        expected_revision=given.expect_revision,
    )
