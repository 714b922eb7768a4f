"""What an agent host is told about this workspace's open cases, and whether a stop may pass.

Read-only (docs/design/hosts.md, sections 3 and 4): the SessionStart brief and the stop gate
read the same facts `status` does (`lifecycle.next_actions`, `assess`), for every open case
opened in this workspace, and capture the workspace once for all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

from cortex.cases.records import CaseFile
from cortex.kernel.activity.workspace_cases import GATED, open_cases
from cortex.kernel.envelope import Action, command_line
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import in_session, state
from cortex.kernel.lifecycle import next_actions, pending

if TYPE_CHECKING:
    from cortex.kernel.proof.assessment import Assessment
    from cortex.workspace.capture import Capture

ProofState = Literal["current", "stale", "none", "unbound", "unbindable"]
CHANGED_SHOWN = 5
"""Changed files named in a brief or a stop reason; the rest are counted."""
ACTIONS_SHOWN = 3


class Proof(msgspec.Struct, kw_only=True, rename="camel"):
    """Where a case's proof stands against the working tree now."""

    state: ProofState
    verdict: str | None = None
    """The latest batch's verdict (`assess`), when there is a batch."""
    batch: str | None = None
    changed: list[str] = msgspec.field(default_factory=list)
    """For stale proof: files that differ from the verified commit now (the first few)."""
    changed_total: int = 0
    reason: str | None = None


class LeaseView(msgspec.Struct, kw_only=True, rename="camel"):
    """The change lease as the brief shows it."""

    actor: str
    state: str
    expires_at: str
    ours: bool
    """Held through this call's host session (docs/design/hosts.md, section 5)."""


class CaseBrief(msgspec.Struct, kw_only=True, rename="camel"):
    """One open case, as the agent needs it to go on."""

    task_id: str
    goal: str
    status: str
    paused_from: str | None
    mode: str
    lease: LeaseView | None
    proof: Proof
    decision: dict[str, str] | None
    """A question waiting for a person: its id and text."""
    next: list[str]
    """The next commands `status` offers, as command lines."""
    hypotheses: list[str] = msgspec.field(default_factory=list)
    """Unresolved hypotheses (only for the case the session is on)."""


class Gate(msgspec.Struct, kw_only=True):
    """A stop to block: the case whose proof is not current, and the command that fixes it."""

    case: CaseBrief
    command: str


def _capture(kernel: Kernel, cases: list[tuple[CaseFile, dict[str, Any]]]) -> Capture | None:
    """One capture of the workspace for every case (they all share its tree), if any needs it."""
    from cortex.kernel.proof.live import live_capture

    for case, documents in cases:
        verification = documents.get("verification.json")
        if case.status in GATED or (verification is not None and verification.batches):
            return live_capture(kernel, case, writer=False)
    return None


def _proof(
    kernel: Kernel, case: CaseFile, documents: dict[str, Any], live: Capture | None
) -> tuple[Proof, Assessment | None]:
    from cortex.kernel.proof.assessment import assess

    doc = documents.get("verification.json")
    if live is None:
        return Proof(state="none"), None
    assessment = assess(case, doc, live)
    if not live.bound:
        return Proof(state="unbindable", reason=live.reason or live.tree_reason), assessment
    if assessment.batch_id is None:
        return Proof(state="none"), assessment
    if assessment.binding != "bound":
        return Proof(state="unbound", verdict=assessment.status, batch=assessment.batch_id,
                     reason="; ".join(assessment.reasons) or None), assessment  # fmt: skip
    currency = assessment.currency
    if currency is not None and currency.current:
        proof = Proof(state="current", verdict=assessment.status, batch=assessment.batch_id)
        return proof, assessment
    changed = _changed_since(kernel, case, doc, live)
    proof = Proof(
        state="stale",
        verdict=assessment.status,
        batch=assessment.batch_id,
        changed=changed[:CHANGED_SHOWN],
        changed_total=len(changed),
        reason=None if currency is None else currency.summary,
    )
    return proof, assessment


def _changed_since(kernel: Kernel, case: CaseFile, doc: Any, live: Capture) -> list[str]:
    """Files that differ now from the commit the latest batch ran at (the tree may hold more)."""
    from cortex.workspace.capture import committed_changes

    changed = set(live.changed)
    verified_at = doc.batches[-1].revision if doc is not None and doc.batches else None
    if verified_at and live.head and verified_at != live.head:
        moved = committed_changes(case.workspace.root, kernel.env, verified_at, live.head)
        changed |= set(moved or [])
    return sorted(changed)


def _lease(kernel: Kernel, case: CaseFile) -> LeaseView | None:
    lease = case.change_lease
    current = state(lease, kernel.clock())
    if lease is None or current != "active":
        return None
    return LeaseView(
        actor=lease.actor,
        state=current,
        expires_at=lease.expires_at,
        ours=in_session(kernel, case.id, lease),
    )


def _describe(
    kernel: Kernel, case: CaseFile, documents: dict[str, Any], live: Capture | None
) -> CaseBrief:
    from cortex.kernel.views.status import standing

    proof, assessment = _proof(kernel, case, documents, live)
    waiting = pending(documents.get("decisions.json"))
    actions = next_actions(
        case, decision=waiting, standing=standing(kernel, case, documents, assessment, live)
    )
    return CaseBrief(
        task_id=case.id,
        goal=case.goal,
        status=case.status,
        paused_from=case.paused_from,
        mode=case.mode,
        lease=_lease(kernel, case),
        proof=proof,
        decision=None if waiting is None else {"id": waiting.id, "question": waiting.question},
        next=[_for_session(kernel, action) for action in actions[:ACTIONS_SHOWN]],
    )


def _for_session(kernel: Kernel, action: Action) -> str:
    """A next step as a host session runs it: the session is the actor, so `--actor <you>` goes."""
    if kernel.host_session is None or "actor" not in action.arguments or action.operation is None:
        return action.command
    arguments = {k: v for k, v in action.arguments.items() if k != "actor"}
    return command_line(action.operation, arguments)


def _focus(briefs: list[CaseBrief], hint: str | None) -> CaseBrief | None:
    """The case the session is on: the one it holds the lease of, else `hint`, else the newest."""
    for brief in briefs:
        if brief.lease is not None and brief.lease.ours:
            return brief
    for brief in briefs:
        if brief.task_id == hint:
            return brief
    return briefs[0] if briefs else None


def brief(kernel: Kernel, *, hint: str | None = None, recall: bool = True) -> dict[str, Any]:
    """Every open case of this workspace, the one the session is on first and in full.

    `hint` names the case the session was on before a compaction (the hook face keeps it).
    Empty (`cases` is []) when no case is open: a host is then told nothing at all.
    """
    cases = open_cases(kernel)
    if not cases:
        return {"cases": [], "focus": None, "recall": None}
    live = _capture(kernel, cases)
    briefs = [_describe(kernel, case, documents, live) for case, documents in cases]
    focus = _focus(briefs, hint)
    result: dict[str, Any] = {"focus": None, "recall": None}
    if focus is not None:
        result["focus"] = focus.task_id
        documents = next(docs for case, docs in cases if case.id == focus.task_id)
        focus.hypotheses = _unresolved(documents)
        if recall and kernel.config.recall_brief:
            from cortex.kernel.recall import brief as recall_brief
            from cortex.recall.cards import shown_line

            found, _warnings = recall_brief(kernel, focus.task_id, focus.goal)
            result["recall"] = [shown_line(card) for card in found.get("cards") or []]
        briefs.remove(focus)
        briefs.insert(0, focus)
    result["cases"] = briefs
    return result


def _unresolved(documents: dict[str, Any]) -> list[str]:
    hypotheses = documents.get("hypotheses.json")
    if hypotheses is None:
        return []
    return [
        f"{h.id}: {h.statement}"
        for h in hypotheses.hypotheses
        if not h.retired and h.status in {"open", "challenged"}
    ]


def stop_gate(kernel: Kernel, *, edited_since: set[str] | None = None) -> Gate | None:
    """The first case whose proof a stop must wait for, or None to let the stop through.

    A case gates when it is changing or verifying, its lease is this session's or nobody's
    (another session's change is not this one's to prove), and its proof is missing or stale.
    `edited_since`, for a subagent, is the set of cases it edited files for since their latest
    verification: only those gate its stop.
    """
    cases = [(c, d) for c, d in open_cases(kernel) if c.status in GATED]
    if edited_since is not None:
        cases = [(c, d) for c, d in cases if c.id in edited_since]
    cases = [(c, d) for c, d in cases if _ours(kernel, c)]
    if not cases:
        return None
    live = _capture(kernel, cases)
    for case, documents in cases:
        described = _describe(kernel, case, documents, live)
        if described.proof.state == "none" and not _changed(kernel, case, live):
            continue  # nothing changed yet: there is nothing to prove
        if described.proof.state in {"none", "unbound", "stale"}:
            return Gate(case=described, command=_fix(described))
    return None


def _ours(kernel: Kernel, case: CaseFile) -> bool:
    """Whether the change is this session's to prove: its lease (active or ended) was its own.

    A case with no lease at all is anyone's; another session's lease, or one a caller outside
    any session took (a person, CI), is not.
    """
    lease = case.change_lease
    return lease is None or in_session(kernel, case.id, lease)


def _changed(kernel: Kernel, case: CaseFile, live: Capture | None) -> bool:
    if live is None or not live.bound:
        return True  # cannot tell: the proof decides
    from cortex.kernel.proof.live import changed_files

    changed = changed_files(kernel, case, live)
    return changed is None or bool(changed)


def _fix(case: CaseBrief) -> str:
    """The command that makes progress: the verify `status` offers, else its first step."""
    for command in case.next:
        if command.startswith("cortex case verify "):
            return command
    return case.next[0] if case.next else f"cortex case status {case.task_id}"
