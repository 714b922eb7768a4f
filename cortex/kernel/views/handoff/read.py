"""Reading a case for its handoff: one consistent view, the evidence streamed, all redacted.

`gather` returns everything the fullest packet may hold, as plain values;
`cortex.kernel.views.handoff.packet` decides how much of it each tier keeps.
Reads only: no lock, no write.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

import msgspec

from cortex.cases.bounds import HANDOFF_CHILDREN_MAX, HANDOFF_EVIDENCE_MAX
from cortex.cases.documents import Decisions, Hypotheses, Hypothesis, Plan, Verification
from cortex.cases.errors import CortexError
from cortex.cases.records import CaseFile, Evidence
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore
from cortex.kernel.envelope import Data
from cortex.kernel.human.decisions import rejected_options
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import describe
from cortex.kernel.lifecycle import next_actions, pending
from cortex.kernel.provenance import shown


def gather(kernel: Kernel, store: CaseStore, case: CaseFile, documents: dict[str, Any]) -> Data:
    """Everything a full packet holds, as plain values, redacted once."""
    plan: Plan | None = documents.get("plan.json")
    hypotheses = documents.get("hypotheses.json") or Hypotheses()
    decisions: Decisions | None = documents.get("decisions.json")
    waiting = pending(decisions)
    steps = next_actions(case, decision=waiting)
    window, total, sensitive = _evidence_window(store, case)
    records = [record for record, _ in window]
    children, more_children = _children(store, case)
    from cortex.kernel.views.labels import evidence_labels

    found = evidence_labels(kernel, store, case, records, decisions.decisions if decisions else [])
    full: Data = {
        "generatedAt": kernel.now(),
        "identity": {**_identity(kernel, store, case), **_origin(documents)},
        "children": children,
        "moreChildren": more_children,
        "acceptanceCriteria": msgspec.to_builtins(case.acceptance_criteria),
        "plan": plan_view(plan),
        "hypotheses": [_hypothesis(h) for h in hypotheses.hypotheses if not h.retired],
        "retiredHypotheses": sum(1 for h in hypotheses.hypotheses if h.retired),
        "verification": _verification(kernel, case, documents.get("verification.json")),
        "decisions": decision_views(decisions, found),
        "lease": describe(case.change_lease, kernel.clock()),
        "evidence": {
            "total": total,
            "sensitive": sensitive,
            "shareable": total - sensitive,
            "records": [
                _evidence(record, found.get(record.id, []), origin) for record, origin in window
            ],
        },
        # The packet is a document: its next steps are command lines. The answer's own actions
        # keep the structured steps, which each face spells its own way.
        "nextActions": [{"command": a.command, "reason": a.reason} for a in steps],
        "steps": msgspec.to_builtins(steps),
        "warnings": store.debris(case),
    }
    redacted: Data = redact_all(full, kernel.redactor)
    return redacted


def _evidence_window(
    store: CaseStore, case: CaseFile
) -> tuple[list[tuple[Evidence, str | None]], int, int]:
    """The newest shareable records (newest first), the total and the sensitive count.

    The committed ledger is streamed: memory holds at most `HANDOFF_EVIDENCE_MAX` records,
    however long the case is.
    """
    newest: deque[tuple[Evidence, str | None]] = deque(maxlen=HANDOFF_EVIDENCE_MAX)
    total = sensitive = 0
    for record, origin in store.read_ledger_with_origin(case, "evidence"):
        if not isinstance(record, Evidence):  # read_ledger is typed for every ledger
            continue
        total += 1
        if record.sensitivity == "sensitive":
            sensitive += 1
            continue
        newest.append((record, origin))
    return list(reversed(newest)), total, sensitive


def _origin(documents: dict[str, Any]) -> Data:
    """Where a shared case's records came from (nothing for a case that imported none)."""
    index = documents.get("replicas.json")
    if index is None:
        return {}
    return {
        "replicas": {
            "local": index.local.replica,
            "inForce": index.in_force or index.local.replica,
            "imported": [
                {
                    "key": r.key,
                    "source": r.source,
                    "records": sum(s.count for s in r.ledgers.values()),
                    "forked": r.forked,
                }
                for r in index.replicas
            ],
            "conflicts": index.conflicts_total,
        }
    }


def _identity(kernel: Kernel, store: CaseStore, case: CaseFile) -> Data:
    if store is kernel.store:
        info = kernel.store_info
        where = {"id": info.id, "kind": info.kind, "root": info.root}
    else:
        where = {
            "id": os.path.basename(store.root),
            "kind": case.workspace.kind,
            "root": store.root,
        }
    return {
        "taskId": case.id,
        "goal": case.goal,
        "mode": case.mode,
        "risk": case.risk,
        "phase": case.status,
        "pausedFrom": case.paused_from,
        "statusReason": case.status_reason,
        "revision": case.revision,
        "openedBy": case.actor,
        "createdAt": case.created_at,
        "updatedAt": case.updated_at,
        "surfaces": list(case.surfaces),
        "workspace": msgspec.to_builtins(case.workspace),
        "store": where,
        "parentTaskId": case.parent_task_id,
        "counts": {name: state.count for name, state in sorted(case.ledgers.items())},
    }


def _children(store: CaseStore, case: CaseFile) -> tuple[list[Data], int]:
    """The first children with their own current phase; a child that cannot be read says why."""
    shown: list[Data] = []
    for child_id in case.child_task_ids[:HANDOFF_CHILDREN_MAX]:
        try:
            child = store.read_case(child_id)
        except CortexError as exc:
            shown.append({"taskId": child_id, "error": exc.message})
            continue
        shown.append({"taskId": child_id, "phase": child.status, "goal": child.goal})
    return shown, max(len(case.child_task_ids) - HANDOFF_CHILDREN_MAX, 0)


def plan_view(plan: Plan | None) -> Data | None:
    """The plan as handoff and report show it (None before the first plan)."""
    if plan is None:
        return None
    return {
        "planRevision": plan.plan_revision,
        "createdAt": plan.created_at,
        "actor": plan.actor,
        "reason": plan.reason,
        "changeBoundary": msgspec.to_builtins(plan.change_boundary),
        "verificationRequired": list(plan.verification_required),
        "uncertainty": plan.uncertainty,
        "evidenceId": plan.evidence_id,
    }


def _hypothesis(hypothesis: Hypothesis) -> Data:
    latest = hypothesis.history[-1] if hypothesis.history else None
    return {
        "id": hypothesis.id,
        "status": hypothesis.status,
        "statement": hypothesis.statement,
        "disproof": hypothesis.disproof,
        "supports": list(hypothesis.supports),
        "resolutions": len(hypothesis.history),
        "latest": None if latest is None else msgspec.to_builtins(latest),
    }


def _verification(kernel: Kernel, case: CaseFile, doc: Verification | None) -> Data:
    """The assessment `assess` gives (the only judge), with each receipt's own words added."""
    from cortex.kernel.proof.assessment import assess
    from cortex.kernel.proof.live import live_capture

    live = live_capture(kernel, case, writer=False)
    assessment = assess(case, doc, live)
    data: Data = msgspec.to_builtins(assessment)
    stored = {receipt.id: receipt for receipt in (doc.receipts if doc else [])}
    receipts: list[Data] = []
    for view in data["receipts"]:
        receipt = stored[view["id"]]
        view.update(
            {
                "claim": receipt.claim,
                "contract": receipt.contract,
                "tool": receipt.tool,
                "actor": receipt.actor,
                "timestamp": receipt.timestamp,
                "artifact": receipt.artifact,
                "evidence": list(receipt.evidence),
                "sensitive": receipt.sensitive,
                # A sensitive receipt's notes quote what made it sensitive: left out, counted.
                "notes": [] if receipt.sensitive else list(receipt.notes),
                "notesLeftOut": len(receipt.notes) if receipt.sensitive else 0,
            }
        )
        receipts.append(view)
    data["receipts"] = receipts
    data["bindingPossible"] = live.bound
    data["bindingReason"] = live.reason
    return data


def decision_views(decisions: Decisions | None, found: dict[str, list[str]]) -> list[Data]:
    """Pending first (the case waits on it), then the others newest first; with labels.

    Each carries the options it did not choose. The handoff and the report show them so.
    """
    items = decisions.decisions if decisions else []
    pending = [d for d in items if d.status == "pending"]
    others = [d for d in reversed(items) if d.status != "pending"]
    return [
        {
            **msgspec.to_builtins(d),
            "alreadyRejected": rejected_options(d),
            "labels": found.get(d.id, []),
        }
        for d in (*pending, *others)
    ]


def _evidence(record: Evidence, labels: list[str], replica: str | None = None) -> Data:
    location = record.location
    return {
        "id": record.id,
        "timestamp": record.timestamp,
        "kind": record.kind,
        "claim": record.claim,
        "confidence": record.confidence,
        "source": _source(record, replica),
        "location": None if location is None else msgspec.to_builtins(location),
        "rawRef": record.raw_ref,
        "derivedFrom": list(record.derived_from),
        "contests": record.contests,
        "labels": labels,
    }


def _source(record: Evidence, replica: str | None = None) -> Data:
    """Where a record came from, and, unless the agent said it itself, who said it.

    The channel fields are left out where they say nothing (not recorded, not claimed): a
    packet has a byte budget, and most records are an agent's own.
    """
    source: Data = msgspec.to_builtins(record.source)
    if source.get("via") is None:
        source.pop("via", None)
    if not source.get("claimedByAgent"):
        source.pop("claimedByAgent", None)
    origin = shown(record.source, replica)
    if origin != "agent":
        source["shown"] = origin
    if replica is not None:
        source["replica"] = replica  # recorded on another machine (docs/design/trust.md)
    return source


def redact_all(value: Any, redactor: Redactor) -> Any:
    """Plain `value` with every string redacted (and made writable as UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate cannot be written as UTF-8; show it as a replacement character.
            value = value.encode("utf-8", "replace").decode("utf-8")
        return redactor(value)
    if isinstance(value, list):
        return [redact_all(item, redactor) for item in value]
    if isinstance(value, dict):
        return {key: redact_all(item, redactor) for key, item in value.items()}
    return value
