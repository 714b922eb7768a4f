"""The one function that decides what is proven (docs/design/verification.md §4).

Every surface (verify, status, complete, attest) calls `assess`; none reasons about receipts on
its own, so no view can show as verified what another would not.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from cortex.cases.documents import Batch, Receipt, Verification
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
    """Bound, current (see `is_current`) and in the latest batch."""
    stale: bool
    failing: list[str] = msgspec.field(default_factory=list)
    """What failed, by name (failing test ids, files outside the boundary), the first few."""
    failing_total: int = 0
    """How many failed in all: `failing_total - len(failing)` were not named."""
    acknowledged: str | None = None
    """What was acknowledged for it to pass (`drift`): a pass by acknowledgement, shown as one."""
    contract: str | None = None
    """For a named claim: the run it rests on (`pytest#tests/a.py::test_b`, or a whole run)."""


class Currency(msgspec.Struct, kw_only=True, rename="camel"):
    """Why the latest bound batch is, or is not, current: the facts and one sentence."""

    rule: Literal["tree", "head_and_digest"]
    """`tree`: the tree ids decide (HEAD is provenance); `head_and_digest`: a batch without a
    tree id, current only while HEAD and the working state are as they were."""
    current: bool
    verified_head: str | None
    verified_tree: str | None
    uncommitted: bool | None
    """Whether the verified code differed from its HEAD's tree (None: not known)."""
    head: str | None
    """HEAD now."""
    tree: str | None
    """The workspace's tree id now (None: none could be named)."""
    committed: bool
    """HEAD moved since, and its commit holds exactly the verified code."""
    summary: str


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
    currency: Currency | None = None
    """For a bound latest batch: why its receipts are current or stale now."""
    acknowledged: list[str] = msgspec.field(default_factory=list)
    """Receipts of the latest batch that passed only by acknowledgement, as `scope (drift)`:
    they count as passes for the verdict (the caller accepted the drift on record), and every
    surface names them so none reads as a plain pass."""


def acknowledged(receipt: Receipt) -> str | None:
    """What a passed receipt was acknowledged for (`drift`), or None for a plain pass.

    A scope receipt written before the field existed says so only in its note.
    """
    if receipt.status != "passed":
        return None
    if receipt.acknowledged is not None:
        return receipt.acknowledged
    from cortex.verifiers.scope import ACK_NOTE

    return "drift" if ACK_NOTE in receipt.notes else None


def _label(receipt: Receipt) -> str:
    if receipt.purpose == "named_claim":
        return f"claim {receipt.claim_id}"
    return receipt.requirement or receipt.id


def is_current(revision: str | None, digest: str | None, tree: str | None, live: Capture) -> bool:
    """Whether code verified at (`revision`, `digest`, `tree`) is the code in `live` now.

    With a tree id, the tree ids decide: a commit of exactly that code keeps it current, any
    other change to what git would store does not. Without one (older receipts, or none could
    be named), HEAD and the digest must both be as they were.
    """
    if not live.bound:
        return False
    if tree is not None:
        return live.tree == tree
    return (revision, digest) == (live.head, live.digest)


def currency(batch: Batch, live: Capture) -> Currency:
    """The facts and the sentence `status` and `show` give for a bound batch."""
    current = is_current(batch.revision, batch.dirty_digest, batch.tree, live)
    moved = live.bound and live.head != batch.revision
    uncommitted = (
        None if batch.tree is None or batch.head_tree is None else batch.tree != batch.head_tree
    )
    committed = bool(current and moved and batch.tree is not None and live.head_tree == batch.tree)
    facts = Currency(
        rule="head_and_digest" if batch.tree is None else "tree",
        current=current,
        verified_head=batch.revision,
        verified_tree=batch.tree,
        uncommitted=uncommitted,
        head=live.head,
        tree=live.tree,
        committed=committed,
        summary="",
    )
    facts.summary = _summary(facts, live)
    return facts


def _short(commit: str | None) -> str:
    return (commit or "?")[:7]


def _summary(facts: Currency, live: Capture) -> str:
    verified = f"verified at {_short(facts.verified_head)}"
    if facts.uncommitted:
        verified += " with uncommitted changes"
    if facts.rule == "head_and_digest":
        if facts.current:
            return (
                f"{verified}; unchanged since (no tree id was recorded, so a commit will make "
                "it stale)"
            )
        return verified + "; HEAD or the work tree changed since (no tree id was recorded)"
    if not live.bound:
        return f"{verified}; the code cannot be compared now: {live.reason}"
    if facts.current and facts.committed:
        return f"{verified}; committed unchanged as {_short(live.head)}"
    if facts.current and live.head != facts.verified_head:
        return (
            f"{verified}; HEAD is now {_short(live.head)} and the work tree still holds exactly "
            "the verified code"
        )
    if facts.current:
        return verified + "; unchanged since"
    if live.tree is None:
        return f"{verified}; the code cannot be compared now: {live.tree_reason}"
    where = f"HEAD is now {_short(live.head)}, " if live.head != facts.verified_head else ""
    return (
        f"{verified}; the code changed since ({where}tree {_short(facts.verified_tree)} is now "
        f"{_short(live.tree)})"
    )


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
            replanned or not is_current(receipt.revision, receipt.dirty_digest, receipt.tree, live)
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
                failing=list(receipt.failing),
                failing_total=max(receipt.failing_total, len(receipt.failing)),
                acknowledged=acknowledged(receipt),
                contract=receipt.contract if receipt.claim_id else None,
            )
        )
        if proof and result.receipts[-1].acknowledged:
            result.acknowledged.append(f"{_label(receipt)} ({result.receipts[-1].acknowledged})")
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
    if batch.binding == "bound":
        result.currency = currency(batch, live)
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
    if result.acknowledged:
        reasons.append("passed only by acknowledgement: " + ", ".join(result.acknowledged))
    return reasons
