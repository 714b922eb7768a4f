"""The one function that decides what is proven (docs/design/verification.md §4).

Every surface (verify, status, complete, attest) calls `assess`; none reasons about receipts on
its own, so no view can show as verified what another would not.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from cortex.cases.documents import Receipt, Verification
from cortex.cases.records import CaseFile
from cortex.workspace.capture import Capture

Verdict = Literal["verified", "partial", "failed", "unverified"]


class ReceiptView(msgspec.Struct, kw_only=True, rename="camel"):
    """A receipt as the assessment sees it."""

    id: str
    purpose: str
    requirement: str | None
    claim_id: str | None
    status: str
    binding: str
    proof: bool
    """Bound, current (HEAD and digest equal the live workspace) and in the latest batch."""
    stale: bool


class Assessment(msgspec.Struct, kw_only=True, rename="camel"):
    """What the latest batch proves about the code as it is now."""

    status: Verdict
    batch_id: str | None = None
    binding: str | None = None
    live: str | None = None
    """Why there is no live capture to compare with (then nothing is proof)."""
    receipts: list[ReceiptView] = msgspec.field(default_factory=list)
    missing_requirements: list[str] = msgspec.field(default_factory=list)
    unproven_claims: list[str] = msgspec.field(default_factory=list)
    missing_criteria: list[str] = msgspec.field(default_factory=list)
    failed: list[str] = msgspec.field(default_factory=list)
    stale: list[str] = msgspec.field(default_factory=list)
    unbound: list[str] = msgspec.field(default_factory=list)
    reasons: list[str] = msgspec.field(default_factory=list)


def _label(receipt: Receipt) -> str:
    if receipt.purpose == "named_claim":
        return f"claim {receipt.claim_id}"
    return receipt.requirement or receipt.id


def assess(case: CaseFile, verification: Verification | None, live: Capture) -> Assessment:
    """Judge the latest batch of `verification` against the workspace captured in `live`."""
    if verification is None or not verification.batches:
        result = Assessment(status="unverified", reasons=["nothing has been verified yet"])
        result.missing_requirements = list(case.verification_required)
        result.missing_criteria = [c.id for c in case.acceptance_criteria]
        return result
    batch = verification.batches[-1]
    current = [r for r in verification.receipts if r.batch_id == batch.id]
    result = Assessment(
        status="unverified",
        batch_id=batch.id,
        binding=batch.binding,
        live=None if live.bound else (live.reason or "the workspace could not be captured"),
    )
    plan = case.snapshots.get("plan")
    replanned = batch.plan_sha256 != (plan.sha256 if plan else None)
    passing = False
    for receipt in current:
        bound = receipt.binding == "bound"
        stale = bound and (
            replanned
            or not (
                live.bound and (receipt.revision, receipt.dirty_digest) == (live.head, live.digest)
            )
        )
        proof = bound and not stale
        result.receipts.append(
            ReceiptView(
                id=receipt.id,
                purpose=receipt.purpose,
                requirement=receipt.requirement,
                claim_id=receipt.claim_id,
                status=receipt.status,
                binding=receipt.binding,
                proof=proof,
                stale=stale,
            )
        )
        if stale:
            result.stale.append(receipt.id)
        elif not bound:
            result.unbound.append(receipt.id)
        if proof and receipt.status == "failed":
            result.failed.append(_label(receipt))
        if proof and receipt.status == "passed":
            passing = True
    proven = {v.id for v in result.receipts if v.proof and v.status == "passed"}
    for requirement in case.verification_required:
        runs = [r for r in current if r.purpose == "verifier_run" and r.requirement == requirement]
        if not runs or any(r.id not in proven for r in runs):
            result.missing_requirements.append(requirement)
    for receipt in current:
        if receipt.purpose == "named_claim" and receipt.id not in proven:
            result.unproven_claims.append(receipt.claim_id or receipt.id)
    for criterion in case.acceptance_criteria:
        if not any(
            r.purpose == "named_claim"
            and r.claim_id == criterion.id
            and r.claim == criterion.statement
            and r.id in proven
            for r in current
        ):
            result.missing_criteria.append(criterion.id)
    result.status = _verdict(result, passing=passing)
    result.reasons = _reasons(result, batch.reasons)
    if replanned:
        result.reasons.insert(0, "the plan changed after the latest batch: verify again")
    return result


def _verdict(result: Assessment, *, passing: bool) -> Verdict:
    if result.failed:
        return "failed"
    if result.missing_requirements or result.unproven_claims or result.missing_criteria:
        return "partial" if passing else "unverified"
    return "verified" if passing else "unverified"


def _reasons(result: Assessment, batch_reasons: list[str]) -> list[str]:
    reasons: list[str] = []
    if result.live is not None:
        reasons.append(f"nothing counts as proof: {result.live}")
    if result.binding == "unbound":
        reasons.append("the latest batch is unbound: " + "; ".join(batch_reasons))
    if result.stale:
        reasons.append(
            f"{len(result.stale)} receipt(s) are stale: the code changed since they were made"
        )
    if result.failed:
        reasons.append("failed: " + ", ".join(result.failed))
    if result.missing_requirements:
        reasons.append(
            "required verifiers without a current pass: " + ", ".join(result.missing_requirements)
        )
    if result.unproven_claims:
        reasons.append("claims without a current pass: " + ", ".join(result.unproven_claims))
    if result.missing_criteria:
        reasons.append(
            "acceptance criteria without a current, exact, passing claim: "
            + ", ".join(result.missing_criteria)
        )
    return reasons
