"""`review --reproduce`: a case's required verifiers run again on the head, as the base says.

docs/design/report.md, "The merge gate", step 8. A clean checkout of the head commit (outside
the repository, under the state root, removed afterwards) runs every verifier the case's plan
requires, with the base commit's definitions and this machine's command approval; the case's
named claims are judged by their contracts in that run. Nothing is written to the store: the
result lives only in the verdict.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cortex.cases.errors import CortexError
from cortex.cases.redact import clip
from cortex.kernel.envelope import Data
from cortex.verifiers.base import Context, Outcome, validated
from cortex.verifiers.config import definition_digest

if TYPE_CHECKING:
    from cortex.cases.documents import Verification
    from cortex.cases.records import CaseFile
    from cortex.kernel.config import Committed
    from cortex.kernel.kernel import Kernel


def _approver(kernel: Kernel):  # type: ignore[no-untyped-def]  # noqa: ANN202
    """The approval rule of verify, for this repository (a grant names it, not the copy)."""
    from cortex.kernel.proof import grants

    root = kernel.workspace.root
    cache: list[grants.Grants] = []

    def approve(name: str, argv: object) -> bool:
        if grants.env_approves(kernel.env):
            return True
        if not cache:
            cache.append(grants.load(kernel.env))
        return grants.granted(cache[0], root, name, list(argv))  # type: ignore[call-overload]

    return approve


def reproduce(
    kernel: Kernel,
    case: CaseFile,
    verification: Verification,
    *,
    head: str,
    tree: str | None,
    fork: str,
    base: Committed,
) -> Data:
    """Each required verifier run again on `head`; `ok` when all passed and so did every claim."""
    from cortex.workspace import checkout, history

    root, env = kernel.workspace.root, kernel.env
    batch = verification.batches[-1]
    changed = None
    if case.workspace.commit_before:
        changed = history.changed_between(root, env, case.workspace.commit_before, head)
    if changed is None:
        changed = history.changed_between(root, env, fork, head)
    result: Data = {"ok": False, "failed": False, "runs": [], "claims": [], "reason": None}
    try:
        directory = checkout.clean_checkout(
            root, env, head, os.path.join(kernel.state_root, "reproduce")
        )
    except checkout.CheckoutError as exc:
        result["reason"] = str(exc)
        return result
    try:
        context = Context(
            root=directory,
            env=env,
            case=case,
            start=history.commit_capture(directory, head, tree),
            verifiers=base.verifiers,
            approve=_approver(kernel),
            changed=changed,
            ack_drift="drift" in batch.acknowledged,
        )
        outcomes = {
            requirement: _run(requirement, context) for requirement in case.verification_required
        }
    finally:
        checkout.remove(directory)
    for requirement, outcome in outcomes.items():
        result["runs"].append(
            {
                "requirement": requirement,
                "status": outcome.status,
                "summary": kernel.redactor(clip(outcome.summary, 400)),
                "definition": definition_digest(requirement, base.verifiers),
            }
        )
    for receipt in verification.receipts:
        if receipt.batch_id != batch.id or receipt.purpose != "named_claim":
            continue
        requirement, _, selector = (receipt.contract or "").partition("#")
        ran = outcomes.get(requirement)
        status = "not_run"
        if ran is not None:
            status = ran.contracts.get(selector, "not_run") if selector else ran.status
        result["claims"].append({"claimId": receipt.claim_id, "status": status})
    statuses = [r["status"] for r in result["runs"]] + [c["status"] for c in result["claims"]]
    result["failed"] = "failed" in statuses
    result["ok"] = bool(statuses) and all(s == "passed" for s in statuses)
    if result["ok"] and all(name == "scope" for name in outcomes):
        # scope judges the case's own boundary, start commit and acknowledgements: all of it
        # the record's word, so running it again reproduces nothing the record did not choose.
        result["ok"] = False
        result["reason"] = (
            "the plan requires only scope, which checks the files changed against the case's "
            "own boundary: nothing that runs the code was reproduced"
        )
    return result


def _run(requirement: str, context: Context) -> Outcome:
    """One verifier's outcome; anything that keeps it from running is `blocked`, never a crash."""
    from cortex.verifiers.registry import resolve

    try:
        verifier = resolve(requirement)
        problem = verifier.check(requirement, context)
        if problem is not None:
            return Outcome(status="blocked", summary=f"{requirement}: {problem}")
        return validated(verifier.run(requirement, context))
    except CortexError as exc:
        return Outcome(status="blocked", summary=f"{requirement}: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - a broken verifier blocks, it does not crash the gate
        return Outcome(status="blocked", summary=f"{requirement}: the verifier failed ({exc})")
