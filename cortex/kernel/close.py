"""`cortex case block` and `cortex case abort`: end a case with a reason; nothing is deleted."""

from __future__ import annotations

from cortex.cases.bounds import REASON_MAX
from cortex.cases.records import Phase
from cortex.kernel import lifecycle, validate
from cortex.kernel.decisions import withdraw_pending
from cortex.kernel.envelope import Result
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import release_for_close


def close(
    kernel: Kernel, task_id: str, *, to: Phase, reason: str, actor: str | None = None
) -> Result:
    """Move a case to `blocked` or `abandoned`, releasing its lease and withdrawing a question."""
    reason = validate.text(reason, "--reason", REASON_MAX)
    who = kernel.actor(actor)
    store = kernel.writable(task_id)
    operation = "case.block" if to == "blocked" else "case.abort"
    with store.transaction(task_id, actor=who, operation=operation) as txn:
        now = kernel.now()
        lifecycle.require(txn.case, to, doing=f"move to {to}", txn=txn)
        withdrawn = withdraw_pending(txn)
        release_for_close(txn, now)
        txn.case.status_reason = reason
        lifecycle.move(txn, to, actor=who, now=now, reason=reason)
        txn.target = withdrawn
    committed = txn.outcome
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "status": committed.status,
            "reason": reason,
            "withdrawnDecision": withdrawn,
        }
    )
