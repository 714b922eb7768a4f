"""`audit` checks verification.json's receipts against their batches and the evidence ledger.

The snapshot digest already catches an edit of the file; these checks catch a writer that
produced an inconsistent batch in the first place (they are run on documents built here).
"""

from __future__ import annotations

from cortex.cases.documents import Batch, Receipt, Verification
from cortex.cases.findings import Collector
from cortex.cases.integrity import _audit_receipts


def batch(binding: str = "bound") -> Batch:
    return Batch(
        id="vb_01M8QJ6ZGK2P9Y1N9GCHEKDY5A",
        actor="agent",
        started_at="2026-12-01T00:00:00.000Z",
        finished_at="2026-12-01T00:00:01.000Z",
        binding=binding,  # type: ignore[arg-type]
        revision="a" * 40,
        dirty_digest="sha256:" + "b" * 64,
        case_revision=3,
    )


def receipt(**changes: object) -> Receipt:
    fields: dict[str, object] = {
        "id": "vr_01M8QJ6ZGK2P9Y1N9GCHEKDY5D",
        "batch_id": "vb_01M8QJ6ZGK2P9Y1N9GCHEKDY5A",
        "purpose": "verifier_run",
        "requirement": "command:unit",
        "claim": "unit ran",
        "actor": "agent",
        "tool": "command",
        "status": "passed",
        "evidence": ["ev_01M8QJ6ZGK2P9Y1N9GCHEKDY5B"],
        "revision": "a" * 40,
        "dirty_digest": "sha256:" + "b" * 64,
        "binding": "bound",
        "timestamp": "2026-12-01T00:00:01.000Z",
    }
    fields.update(changes)
    return Receipt(**fields)  # type: ignore[arg-type]


def codes(document: Verification, evidence: set[str]) -> list[str]:
    found = Collector()
    _audit_receipts(document, evidence, found)
    return [finding.code for finding in found.errors]


EVIDENCE = {"ev_01M8QJ6ZGK2P9Y1N9GCHEKDY5B"}


def test_a_consistent_batch_passes() -> None:
    """The baseline: nothing to report."""
    assert codes(Verification(batches=[batch()], receipts=[receipt()]), EVIDENCE) == []


def test_a_receipt_of_an_unknown_batch_is_reported() -> None:
    """Receipts belong to a kept batch."""
    document = Verification(batches=[], receipts=[receipt()])
    assert codes(document, EVIDENCE) == ["reference"]


def test_a_receipt_that_disagrees_with_its_batch_is_reported() -> None:
    """A bound receipt carries its batch's HEAD and digest."""
    document = Verification(batches=[batch()], receipts=[receipt(revision="c" * 40)])
    assert codes(document, EVIDENCE) == ["receipt_binding"]


def test_a_receipt_whose_tree_disagrees_with_its_batch_is_reported() -> None:
    """A bound receipt carries its batch's tree id too: currency is judged by it (issue 14)."""
    tree = "d" * 40
    document = Verification(batches=[batch()], receipts=[receipt(tree=tree)])
    assert codes(document, EVIDENCE) == ["receipt_binding"]
    agreeing = batch()
    agreeing.tree = tree
    assert codes(Verification(batches=[agreeing], receipts=[receipt(tree=tree)]), EVIDENCE) == []


def test_an_unbound_pass_is_reported() -> None:
    """An unbound batch cannot say passed or failed."""
    document = Verification(
        batches=[batch("unbound")], receipts=[receipt(binding="unbound", status="passed")]
    )
    assert codes(document, EVIDENCE) == ["receipt_binding"]


def test_a_receipt_citing_missing_evidence_is_reported() -> None:
    """Evidence ids on a receipt exist in the case."""
    document = Verification(batches=[batch()], receipts=[receipt()])
    assert codes(document, set()) == ["reference"]
