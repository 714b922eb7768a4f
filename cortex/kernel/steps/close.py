"""`cortex case block`, `unblock` and `abort`: stop a case with a reason; nothing is deleted.

A blocked case is on hold, not over: it keeps the phase it was blocked in (`pausedFrom`), takes
notes and evidence, and `unblock` returns it there. An abandoned case is closed for good.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from cortex.cases.bounds import REASON_MAX
from cortex.cases.records import CaseFile, Phase, PhaseChange
from cortex.kernel import lifecycle, validate
from cortex.kernel.envelope import Result
from cortex.kernel.human.decisions import withdraw_pending
from cortex.kernel.inputs import Actor, Input, LeaseToken, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import check_holder, in_session, release_for_close, state


def _stopper(kernel: Kernel, case: CaseFile, actor: str | None, token: str | None) -> str:
    """Who stops the case; refused (exit 6) while someone else holds its active lease.

    Only the holder (its name with its token, or a caller of the host session that took it) or a
    person at a terminal may block, unblock or abort a case whose lease is active
    (docs/design/trust.md, lease tokens and host sessions): otherwise another agent could end the
    lease by blocking the case, unblock it and take the lease itself.
    """
    lease = case.change_lease
    now = kernel.clock()
    if lease is None or state(lease, now) != "active" or kernel.person_present:
        return kernel.actor(actor)
    who = lease.actor if actor is None else kernel.actor(actor)  # the holder, by default
    check_holder(lease, who, token, now, session=in_session(kernel, case.id, lease))
    return who


def close(
    kernel: Kernel,
    task_id: str,
    *,
    to: Phase,
    reason: str,
    actor: str | None = None,
    lease_token: str | None = None,
    expected_revision: int | None = None,
) -> Result:
    """Move a case to `blocked` or `abandoned`, releasing its lease and withdrawing a question.

    `expected_revision`: only the revision the caller judged (`prune` abandons the state it
    found idle, never one written to since; a later revision is `revision_conflict`).
    """
    reason = validate.text(reason, "--reason", REASON_MAX)
    task_id, store = kernel.find_writable(task_id)
    who = _stopper(kernel, store.read_case(task_id), actor, lease_token)
    operation = "case.block" if to == "blocked" else "case.abort"
    with store.transaction(
        task_id, actor=who, operation=operation, expected_revision=expected_revision
    ) as txn:
        _stopper(kernel, txn.case, actor, lease_token)  # again, under the lock
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
            "resumesIn": committed.paused_from if committed.status == lifecycle.BLOCKED else None,
        },
        actions=lifecycle.next_actions(committed),
    )


def unblock(
    kernel: Kernel,
    task_id: str,
    *,
    reason: str,
    actor: str | None = None,
    lease_token: str | None = None,
) -> Result:
    """Return a blocked case to the phase it was blocked in, the reason on its phase line."""
    reason = validate.text(reason, "--reason", REASON_MAX)
    task_id, store = kernel.find_writable(task_id)
    who = _stopper(kernel, store.read_case(task_id), actor, lease_token)
    with store.transaction(task_id, actor=who, operation="case.unblock") as txn:
        case = txn.case
        _stopper(kernel, case, actor, lease_token)  # again, under the lock
        if case.status != lifecycle.BLOCKED:
            raise lifecycle.refusal(case, "cannot unblock a case that is not blocked", txn=txn)
        if case.paused_from is None:
            # Blocked by a release that did not remember where: the phase line that entered it.
            case.paused_from = _blocked_in(list(store.read_ledger(case, "phases")))
        back = case.paused_from
        if back is None:
            raise lifecycle.refusal(case, "cannot tell which phase to return to", txn=txn)
        case.status_reason = None
        lifecycle.move(txn, back, actor=who, now=kernel.now(), reason=reason, unblocking=True)
    committed = txn.outcome
    return Result(
        data={
            "taskId": task_id,
            "revision": committed.revision,
            "status": committed.status,
            "reason": reason,
            "withdrawnDecision": None,
            "resumesIn": None,
        },
        actions=lifecycle.next_actions(committed),
    )


def _blocked_in(phases: list[object]) -> Phase | None:
    """The phase a case was in when it was blocked, from its phase lines (newest last).

    Blocked while waiting on a decision, it goes back to the phase the decision paused.
    """
    lines = [line for line in phases if isinstance(line, PhaseChange)]
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].to_phase != lifecycle.BLOCKED:
            continue
        source = lines[index].from_phase
        if source == lifecycle.PAUSED:
            earlier = [
                line.from_phase for line in lines[:index] if line.to_phase == lifecycle.PAUSED
            ]
            return earlier[-1] if earlier else None
        return source
    return None


class Abort(Input):
    """The input of `case abort`."""

    task_id: TaskId
    reason: str
    actor: Actor = None
    lease_token: LeaseToken = None


class Block(Input):
    """The input of `case block`."""

    task_id: TaskId
    reason: Annotated[str, msgspec.Meta(description="what blocks the task")]
    actor: Actor = None
    lease_token: LeaseToken = None


class Unblock(Input):
    """The input of `case unblock`."""

    task_id: TaskId
    reason: Annotated[str, msgspec.Meta(description="what changed: why the case can go on")]
    actor: Actor = None
    lease_token: LeaseToken = None


def abort(kernel: Kernel, given: Abort) -> Result:
    """`close` to abandoned, for one input."""
    return close(
        kernel,
        given.task_id,
        to="abandoned",
        reason=given.reason,
        actor=given.actor,
        lease_token=given.lease_token,
    )


def block(kernel: Kernel, given: Block) -> Result:
    """`close` to blocked, for one input."""
    return close(
        kernel,
        given.task_id,
        to="blocked",
        reason=given.reason,
        actor=given.actor,
        lease_token=given.lease_token,
    )


def resume(kernel: Kernel, given: Unblock) -> Result:
    """`unblock` for one input."""
    return unblock(
        kernel, given.task_id, reason=given.reason, actor=given.actor, lease_token=given.lease_token
    )
