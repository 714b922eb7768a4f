"""`cortex case status` and `cortex case list`: read-only views that never lock or write."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from cortex.cases.bounds import LIST_LIMIT_MAX
from cortex.cases.documents import Hypotheses, Plan, Verification
from cortex.cases.errors import ArgumentError, CortexError
from cortex.cases.records import LEDGERS, CaseFile, LedgerState
from cortex.cases.store import CaseStore
from cortex.kernel import inputs
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input, TaskOnly
from cortex.kernel.kernel import Kernel, StoreInfo
from cortex.kernel.lease import describe, state
from cortex.kernel.lifecycle import Standing, next_actions, pending

if TYPE_CHECKING:
    from cortex.kernel.proof.assessment import Assessment
    from cortex.workspace.capture import Capture


def store_info_of(kernel: Kernel, store: CaseStore, case: CaseFile) -> StoreInfo:
    """The store `case` was read from, as `status` and `metrics` show it."""
    if store is kernel.store:
        return kernel.store_info
    note = None
    if case.workspace.kind == "directory":
        note = "not a git repository: cases are keyed by the directory's path"
    return StoreInfo(
        id=os.path.basename(store.root), kind=case.workspace.kind, root=store.root, note=note
    )


def counts(case: CaseFile) -> dict[str, int]:
    """Committed record counts of the local replica, from the snapshot (no ledger scan).

    `status` counts a case with imported replicas across all of them (`_counts`).
    """
    return {name: (case.ledgers.get(name) or LedgerState()).count for name in LEDGERS}


def _head(case: CaseFile, live: Capture | None) -> str | None:
    """The commit HEAD names in the case's workspace now (None outside git, or unreadable).

    The capture's, if one was taken; else read from the refs, without a git process.
    """
    if live is not None and live.head is not None:
        return live.head
    if case.workspace.kind != "git":
        return None
    from cortex.workspace.freshness import head_commit

    return head_commit(case.workspace.root)


def _counts(store: CaseStore, case: CaseFile, documents: dict[str, Any]) -> dict[str, int]:
    """The header's record counts: every replica's records once each, once the case has any.

    A fetched case's records are mostly another machine's: counting only the local replica
    would say `0 evidence` beside an activity list of nine.
    """
    index = documents.get("replicas.json")
    if index is None:
        return counts(case)
    from cortex.cases.replicas import totals

    return totals(store, case, index)


def status(kernel: Kernel, task_id: str) -> Result:
    """Where one case stands, as of its latest committed revision, and what can be done next."""
    task_id, store = kernel.find(task_id)
    case, documents = store.read_view(task_id)
    return describe_case(kernel, store, case, documents)


def describe_case(
    kernel: Kernel, store: CaseStore, case: CaseFile, documents: dict[str, Any]
) -> Result:
    """`status` of one snapshot (`read_view`'s pair), so a bigger view can build on the same one."""
    plan = documents.get("plan.json")
    hypotheses = documents.get("hypotheses.json") or Hypotheses()
    waiting = pending(documents.get("decisions.json"))
    verification, live = _verification(kernel, case, documents.get("verification.json"))
    unresolved = [
        {"id": h.id, "statement": h.statement, "status": h.status}
        for h in hypotheses.hypotheses
        if not h.retired and h.status in {"open", "challenged"}
    ]
    return Result(
        data={
            "taskId": case.id,
            "goal": case.goal,
            "status": case.status,
            "pausedFrom": case.paused_from,
            "statusReason": case.status_reason,
            "mode": case.mode,
            "risk": case.risk,
            "actor": case.actor,
            "revision": case.revision,
            "createdAt": case.created_at,
            "updatedAt": case.updated_at,
            "workspace": case.workspace,
            "head": _head(case, live),
            "store": store_info_of(kernel, store, case),
            "counts": _counts(store, case, documents),
            "surfaces": case.surfaces,
            "acceptanceCriteria": case.acceptance_criteria,
            "lease": describe(case.change_lease, kernel.clock()),
            "pendingDecision": waiting,
            "plan": _plan_summary(plan),
            **verification,
            "unresolvedHypotheses": unresolved,
            "parentTaskId": case.parent_task_id,
            "children": _children(store, case),
            **_replicas(documents),
            **_observed(store, case, documents),
            "warnings": store.debris(case),
        },
        actions=next_actions(
            case,
            decision=waiting,
            standing=standing(kernel, case, documents, verification["verification"], live),
        ),
    )


def standing(
    kernel: Kernel,
    case: CaseFile,
    documents: dict[str, Any],
    assessment: Assessment | None,
    live: Capture | None,
) -> Standing:
    """What the gates will judge, so the next steps offered are ones they accept.

    The changed files matter only where `verify` is offered to a change task (changing,
    verifying); only there does status capture the workspace when it has not already.
    """
    lease = case.change_lease
    now = kernel.clock()
    changed = None
    if case.mode == "change" and case.status in {"changing", "verifying"}:
        from cortex.kernel.proof.live import changed_files, live_capture

        changed = changed_files(kernel, case, live or live_capture(kernel, case, writer=False))
    doc: Verification | None = documents.get("verification.json")
    return Standing(
        assessment=assessment,
        lease=state(lease, now),
        holder=lease.actor if lease is not None else None,
        changed=changed,
        contracts={key: terms.contract for key, terms in (doc.claims if doc else {}).items()},
    )


def _observed(store: CaseStore, case: CaseFile, documents: dict[str, Any]) -> dict[str, Any]:
    """`observed`: what the host recorded the agent doing (only where it recorded anything)."""
    # One stat on the per-call path. The capture hook makes the lock before it forks its
    # writer, so a record still being written is waited for by `observed`, not missed.
    if not os.path.exists(os.path.join(store.case_path(case.id), "activity.lock")):
        return {}
    from cortex.kernel.views.claims import observed

    found = observed(store, case, documents)
    return {} if found is None else {"observed": found}


def _replicas(documents: dict[str, Any]) -> dict[str, Any]:
    """`replicas`: where the case's imported replicas came from (only once it imported any)."""
    index = documents.get("replicas.json")
    if index is None:
        return {}
    from cortex.cases.replicas import origins

    return {"replicas": origins(index)}


def _verification(
    kernel: Kernel, case: CaseFile, doc: Verification | None
) -> tuple[dict[str, Any], Capture | None]:
    """`verification` and `binding`: the latest batch judged now, and whether binding works here.

    `verification` is None for a case never verified; `binding` says whether receipts can be
    bound to code in this workspace at all, and if not, why. The capture taken, if any, comes
    back too, so the next steps are judged on the same one.

    Only a case with receipts, or one opened before its repository had a commit, pays for
    capturing the workspace; a plain directory is known unbindable without asking git.
    """
    verified = doc is not None and bool(doc.batches)
    if case.workspace.kind != "git" and not verified:
        reason = "the workspace is not a git repository, so no receipt can be bound to code"
        return {"verification": None, "binding": {"possible": False, "reason": reason}}, None
    if not verified and case.workspace.commit_before is not None:
        return {"verification": None, "binding": {"possible": True, "reason": None}}, None
    from cortex.kernel.proof.assessment import assess
    from cortex.kernel.proof.live import live_capture

    live = live_capture(kernel, case, writer=False)
    binding = {"possible": live.bound, "reason": live.reason}
    if doc is None or not verified:
        return {"verification": None, "binding": binding}, live
    assessment: Assessment = assess(case, doc, live)
    return {"verification": assessment, "binding": binding}, live


def _plan_summary(plan: Plan | None) -> dict[str, object] | None:
    if plan is None:
        return None
    return {
        "planRevision": plan.plan_revision,
        "createdAt": plan.created_at,
        "hypotheses": len(plan.hypotheses),
        "changeBoundary": plan.change_boundary,
        "verificationRequired": plan.verification_required,
        "uncertainty": plan.uncertainty,
        "evidenceId": plan.evidence_id,
    }


def _children(store: CaseStore, case: CaseFile) -> list[dict[str, object]]:
    """Each child's own, current phase (a child that cannot be read is listed, not hidden)."""
    children: list[dict[str, object]] = []
    for child_id in case.child_task_ids:
        try:
            child = store.read_case(child_id)
        except CortexError as exc:
            children.append(
                {"taskId": child_id, "error": {"code": exc.code, "message": exc.message}}
            )
            continue
        children.append({"taskId": child_id, "status": child.status, "goal": child.goal})
    return children


def list_cases(kernel: Kernel, *, limit: int = inputs.LIST_LIMIT, archived: bool = False) -> Result:
    """The cases of the current workspace's store (or its archive), newest first, counted."""
    if not 1 <= limit <= LIST_LIMIT_MAX:
        raise ArgumentError(f"{{limit}} must be between 1 and {LIST_LIMIT_MAX}", "limit")
    store = kernel.store
    if archived:
        from cortex.cases.retention import archive_root

        store = kernel.reader(archive_root(kernel.cases_root))
    ids = store.list_ids()
    items: list[dict[str, object]] = []
    for task_id in ids[:limit]:
        try:
            case = store.read_case(task_id)
        except CortexError as exc:
            # A damaged case is listed, never hidden: the listing must not look healthier
            # than the store is.
            items.append({"taskId": task_id, "error": {"code": exc.code, "message": exc.message}})
            continue
        items.append(
            {
                "taskId": case.id,
                "goal": case.goal,
                "status": case.status,
                "mode": case.mode,
                "revision": case.revision,
                "createdAt": case.created_at,
                "updatedAt": case.updated_at,
                "evidence": counts(case)["evidence"],
            }
        )
    return Result(
        data={
            "store": kernel.store_info,
            "total": len(ids),
            "limit": limit,
            "truncated": len(ids) > limit,
            "items": items,
            "archived": archived,
        }
    )


class ListTasks(Input):
    """The input of `case list`."""

    limit: Annotated[int, msgspec.Meta(description="at most this many cases, newest first")] = (
        inputs.LIST_LIMIT
    )
    archived: bool = False


def status_of(kernel: Kernel, given: TaskOnly) -> Result:
    """`status` for one input."""
    return status(kernel, given.task_id)


def list_tasks(kernel: Kernel, given: ListTasks) -> Result:
    """`list_cases` for one input."""
    return list_cases(kernel, limit=given.limit, archived=given.archived)
