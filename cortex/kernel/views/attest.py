"""`cortex case attest`: the latest bound batch as an in-toto v1 Statement (test-result).

Unsigned: the statement says what was verified on which code; signing is the caller's
(docs/design/verification.md §6).
"""

from __future__ import annotations

from typing import Any

from cortex.cases.documents import Verification
from cortex.cases.errors import NotFoundError
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import TaskOnly
from cortex.kernel.kernel import Kernel
from cortex.kernel.proof.assessment import acknowledged, assess, is_current
from cortex.kernel.proof.live import live_capture

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://in-toto.io/attestation/test-result/v0.1"


def attest(kernel: Kernel, task_id: str) -> Result:
    """Build the statement for the latest batch; refused if that batch is not bound."""
    task_id, store = kernel.find(task_id)
    case, documents = store.read_view(task_id)
    doc: Verification | None = documents.get("verification.json")
    if doc is None or not doc.batches:
        raise NotFoundError(f"case {task_id} has no verification batch to attest")
    batch = doc.batches[-1]
    if batch.binding != "bound" or batch.revision is None or batch.dirty_digest is None:
        msg = f"the latest batch {batch.id} is unbound ({'; '.join(batch.reasons)}); "
        msg += "only a bound batch can be attested"
        raise GateRefusedError(msg, [])
    receipts = [r for r in doc.receipts if r.batch_id == batch.id]
    # A pass by acknowledgement (--ack-drift) is a warning, not a pass (verification.md §6).
    plain = [r for r in receipts if r.status == "passed" and acknowledged(r) is None]
    passed = [_name(r.requirement, r.claim_id) for r in plain]
    failed = [_name(r.requirement, r.claim_id) for r in receipts if r.status == "failed"]
    warned = [
        _name(r.requirement, r.claim_id)
        for r in receipts
        if r.status != "failed" and r not in plain
    ]
    result = "FAILED" if failed else ("WARNED" if warned or not passed else "PASSED")
    configuration: list[dict[str, Any]] = []
    plan = case.snapshots.get("plan")
    if plan is not None:
        configuration.append(
            {"name": f"case://{task_id}/plan.json", "digest": {"sha256": plan.sha256}}
        )
    subjects: list[dict[str, Any]] = [
        {"name": case.workspace.repository, "digest": {"gitCommit": batch.revision}}
    ]
    if batch.tree is not None:
        # The verified code as git names it: equal to `git rev-parse <commit>^{tree}` for any
        # commit of exactly that code, so a holder of the commit alone can check it.
        subjects.append({"name": "tree", "digest": {"gitTree": batch.tree}})
    subjects.append(
        {
            "name": "worktree",
            "digest": {"sha256": batch.dirty_digest.removeprefix("sha256:")},
            "annotations": {"cortexDigest": "cortex-worktree-v1", "head": batch.revision},
        }
    )
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "result": result,
            "configuration": configuration,
            "url": f"case://{task_id}/verification.json#{batch.id}",
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
        },
    }
    live = live_capture(kernel, case, writer=False)
    current = is_current(batch.revision, batch.dirty_digest, batch.tree, live)
    return Result(
        data={
            "taskId": task_id,
            "batchId": batch.id,
            "current": current,
            "assessment": assess(case, doc, live).status,
            "statement": statement,
        }
    )


def _name(requirement: str | None, claim_id: str | None) -> str:
    return f"claim:{claim_id}" if claim_id else (requirement or "marker")


def attest_case(kernel: Kernel, given: TaskOnly) -> Result:
    """`attest` for one input."""
    return attest(kernel, given.task_id)
