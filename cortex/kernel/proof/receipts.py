"""What a verify batch records: a receipt per verifier run and per named claim, staged together.

`verify` runs the verifiers and decides whether the batch is bound; this module turns the runs
into the batch's evidence records, raw blobs and receipts inside the batch's one transaction, and
keeps the receipts of the last batches only. Nothing here decides a verdict (that is
`cortex.kernel.proof.assessment`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from cortex.cases.bounds import BATCHES_KEPT
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Batch, Purpose, Receipt, ReceiptStatus, Verification
from cortex.cases.ids import new_id
from cortex.cases.layout import raw_name, raw_ref
from cortex.cases.records import Evidence, Source
from cortex.verifiers.base import Outcome, Verifier, split

if TYPE_CHECKING:
    from cortex.cases.txn import Transaction


class Claim(msgspec.Struct, kw_only=True):
    """A named claim as given: `--claim ID=STATEMENT` with `--contract ID=REQ[#SELECTOR]`."""

    id: str
    statement: str
    requirement: str
    selector: str | None

    @property
    def contract(self) -> str:
        """The contract as stored."""
        return self.requirement + (f"#{self.selector}" if self.selector else "")


class Run(msgspec.Struct, kw_only=True):
    """One verifier run of the batch and what it reported."""

    requirement: str
    verifier: Verifier
    outcome: Outcome
    definition: str | None = None
    """The digest of the definition that ran (`cortex.verifiers.config.definition_digest`)."""


def stage_runs(
    txn: Transaction, batch: Batch, runs: list[Run], claims: list[Claim]
) -> list[Receipt]:
    """Stage each run's evidence and raw output, and return the batch's receipts."""
    now = batch.finished_at
    receipts: list[Receipt] = []
    statuses: dict[str, tuple[Outcome, list[str]]] = {}
    for run in runs:
        outcome = run.outcome
        evidence_ids: list[str] = []
        artifact = None
        sensitive = False
        digest = None
        if outcome.raw is not None:
            raw_id = new_id("raw")
            stored, sensitive = txn.stage_blob(raw_name(raw_id), outcome.raw)
            artifact = raw_ref(txn.task_id, raw_id)
            digest = sha256_hex(stored)
        status = _bind(outcome.status, batch)
        run_evidence = txn.append(
            "evidence",
            Evidence(
                id=new_id("ev"),
                timestamp=now,
                kind=outcome.evidence_kind,
                source=Source(tool=f"cortex-verify:{run.requirement}", actor=batch.actor),
                claim=f"[{status}] {outcome.summary}",
                confidence="high" if batch.binding == "bound" else "low",
                sensitivity="sensitive" if sensitive else "normal",
                raw_ref=artifact,
                raw_sha256=digest,
            ),
        )
        evidence_ids.append(run_evidence.id)
        for finding in outcome.findings:
            record = txn.append(
                "evidence",
                Evidence(
                    id=new_id("ev"),
                    timestamp=now,
                    kind=finding.kind,
                    source=Source(tool=f"cortex-verify:{run.requirement}", actor=batch.actor),
                    claim=finding.claim,
                    confidence=finding.confidence,
                    derived_from=[run_evidence.id],
                ),
            )
            evidence_ids.append(record.id)
        statuses[run.requirement] = (outcome, evidence_ids)
        receipts.append(
            _receipt(
                batch,
                purpose="verifier_run",
                requirement=run.requirement,
                claim=outcome.summary,
                tool=run.verifier.kind,
                version=run.verifier.version,
                status=status,
                evidence=evidence_ids,
                artifact=artifact,
                sensitive=sensitive,
                notes=[*outcome.notes, *_unbound_notes(outcome.status, status, batch)],
                failing=outcome.failing,
                failing_total=max(outcome.failing_total, len(outcome.failing)),
                acknowledged=outcome.acknowledged if status == "passed" else None,
                definition=run.definition,
            )
        )
    definitions = {run.requirement: run.definition for run in runs}
    for claim in claims:
        found = statuses.get(claim.requirement)
        acknowledged = None
        if found is None:
            raw_status: ReceiptStatus = "not_run"
            evidence: list[str] = []
            notes = [f"{claim.requirement} did not run in this batch"]
        else:
            outcome, evidence = found
            if claim.selector is None:
                raw_status = outcome.status
                notes = []
                # A claim resting on a run that passed by acknowledgement passed the same way.
                acknowledged = outcome.acknowledged
            else:
                raw_status = outcome.contracts.get(claim.selector, "not_run")
                notes = (
                    []
                    if claim.selector in outcome.contracts
                    else [f"{claim.requirement} did not report {claim.selector!r}"]
                )
        status = _bind(raw_status, batch)
        receipts.append(
            _receipt(
                batch,
                purpose="named_claim",
                requirement=claim.requirement,
                claim=claim.statement,
                claim_id=claim.id,
                contract=claim.contract,
                tool=split(claim.requirement)[0],
                status=status,
                evidence=evidence,
                notes=[*notes, *_unbound_notes(raw_status, status, batch)],
                acknowledged=acknowledged if status == "passed" else None,
                definition=definitions.get(claim.requirement),
            )
        )
    if not receipts:
        receipts.append(
            _receipt(
                batch,
                purpose="marker",
                claim="no verifier ran and no claim was made in this batch",
                tool="cortex",
                status="not_run",
                notes=["the plan requires no verifier; this marker masks any older proof"],
            )
        )
    return receipts


def _bind(status: ReceiptStatus, batch: Batch) -> ReceiptStatus:
    """An unbound batch cannot show that anything passed or failed on known code."""
    if batch.binding == "unbound" and status in ("passed", "failed"):
        return "inconclusive"
    return status


def _unbound_notes(raw: ReceiptStatus, status: ReceiptStatus, batch: Batch) -> list[str]:
    if raw == status:
        return []
    return [f"{raw} on code that was not stable during the run: " + "; ".join(batch.reasons)]


def _receipt(
    batch: Batch,
    *,
    purpose: Purpose,
    claim: str,
    tool: str,
    status: ReceiptStatus,
    requirement: str | None = None,
    claim_id: str | None = None,
    contract: str | None = None,
    version: str | None = None,
    evidence: list[str] | None = None,
    artifact: str | None = None,
    sensitive: bool = False,
    notes: list[str] | None = None,
    failing: list[str] | None = None,
    failing_total: int = 0,
    acknowledged: str | None = None,
    definition: str | None = None,
) -> Receipt:
    return Receipt(
        id=new_id("vr"),
        batch_id=batch.id,
        purpose=purpose,
        requirement=requirement,
        claim=claim,
        claim_id=claim_id,
        contract=contract,
        actor=batch.actor,
        tool=tool,
        verifier_version=version,
        status=status,
        evidence=evidence or [],
        artifact=artifact,
        sensitive=sensitive,
        notes=notes or [],
        revision=batch.revision,
        dirty_digest=batch.dirty_digest,
        binding=batch.binding,
        timestamp=batch.finished_at,
        tree=batch.tree,
        failing=list(failing or []),
        failing_total=failing_total,
        acknowledged=acknowledged,
        verifier_sha256=definition,
    )


def trim(doc: Verification) -> None:
    """Keep the receipts of the last BATCHES_KEPT batches only."""
    if len(doc.batches) <= BATCHES_KEPT:
        return
    doc.batches = doc.batches[-BATCHES_KEPT:]
    kept = {b.id for b in doc.batches}
    doc.receipts = [r for r in doc.receipts if r.batch_id in kept]
