"""`cortex case show`: one screen for a person, built from one consistent snapshot.

Everything `status` says (the same function computes it, so the two never disagree), plus: a
phase stepper, the time spent in each phase, every hypothesis with its disproof path, and the
newest ledger records with exact totals. All of it comes from one `read_view`: one case.json
and the snapshots that match it, and ledgers read only up to the lengths that case.json
commits, so a commit landing meanwhile is either wholly in the view or not at all.

The newest records are found by reading each ledger backwards from its committed end
(`ledger.tail_lines`), so the cost follows the number shown, not the ledger's length; "newest"
is commit order (revision, then the id's ULID), which a wall clock stepping back cannot upset.
"""

from __future__ import annotations

import os
from typing import Any

from cortex.cases.bounds import SHOW_RECENT_MAX
from cortex.cases.documents import Decisions, Hypotheses
from cortex.cases.layout import ledger_file
from cortex.cases.ledger import parse_line, tail_lines
from cortex.cases.records import (
    LEDGER_TYPES,
    LEDGERS,
    CaseFile,
    Evidence,
    LedgerRecord,
    LedgerState,
)
from cortex.cases.store import CaseStore
from cortex.kernel.envelope import Result
from cortex.kernel.human.decisions import rejected_options
from cortex.kernel.inputs import TaskOnly
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import ORDER, PAUSED, TERMINAL
from cortex.kernel.views.labels import evidence_labels
from cortex.kernel.views.metrics import phase_times
from cortex.kernel.views.status import describe_case
from cortex.kernel.views.timeline.cards import Context, Entry, card, ledger_entry, title


def show(kernel: Kernel, task_id: str) -> Result:
    """The one-screen view of a case (see the module docstring)."""
    task_id, store = kernel.find(task_id)
    case, documents = store.read_view(task_id)
    described = describe_case(kernel, store, case, documents)
    times = phase_times(store, case, kernel.clock())
    visits: dict[str, int] = times["visits"]  # type: ignore[assignment]
    data: dict[str, Any] = dict(described.data)
    data["stepper"] = stepper(case, set(visits))
    data["time"] = times
    data["hypotheses"] = _hypotheses(documents.get("hypotheses.json"))
    decisions: Decisions | None = documents.get("decisions.json")
    data["recent"], shown = recent(store, case)
    found = evidence_labels(kernel, store, case, shown, decisions.decisions if decisions else [])
    for item in data["recent"]["items"]:
        if found.get(str(item["id"])):
            item["labels"] = found[str(item["id"])]
    data["decisions"] = _decisions(decisions, found)
    return Result(data=data, actions=described.actions)


def _decisions(doc: Decisions | None, found: dict[str, list[str]]) -> list[dict[str, object]]:
    """Every decision, newest first, with its subject, the options it did not choose, labels."""
    if doc is None:
        return []
    return [
        {
            "id": d.id,
            "status": d.status,
            "question": title(d.question),
            "subject": d.subject,
            "answer": d.answer,
            "alreadyRejected": rejected_options(d),
            "labels": found.get(d.id, []),
        }
        for d in reversed(doc.decisions)
    ]


def stepper(case: CaseFile, visited: set[str]) -> list[dict[str, str]]:
    """The main line of phases for this case's mode, each done, current, paused or to come.

    Only change tasks pass through `changing`. A paused case marks the phase it paused in; a
    blocked or abandoned case ends the line with that phase as its current one.
    """
    line: list[str] = [
        p for p in ORDER if p != "new" and (case.mode == "change" or p != "changing")
    ]
    current = case.paused_from if case.status == PAUSED else case.status
    # Off the main line (blocked, abandoned), what was visited is what is done.
    at = line.index(current) if current in line else None
    steps: list[dict[str, str]] = []
    for index, phase in enumerate(line):
        if phase == current:
            state = "paused" if case.status == PAUSED else "current"
        elif (index < at) if at is not None else (phase in visited):
            state = "done"
        else:
            state = "next"
        steps.append({"phase": phase, "state": state})
    if case.status in TERMINAL and case.status != "complete":
        steps = [s if s["state"] != "next" else {**s, "state": "skipped"} for s in steps]
        steps.append({"phase": case.status, "state": "current"})
    return steps


def _hypotheses(doc: Hypotheses | None) -> list[dict[str, object]]:
    if doc is None:
        return []
    return [
        {
            "id": h.id,
            "statement": h.statement,
            "disproof": h.disproof,
            "status": h.status,
            "retired": h.retired,
            "supports": h.supports,
            "planRevision": h.plan_revision,
        }
        for h in doc.hypotheses
    ]


def recent(store: CaseStore, case: CaseFile) -> tuple[dict[str, object], list[Evidence]]:
    """The newest SHOW_RECENT_MAX ledger records as timeline cards, newest first, and totals.

    Also the evidence records among them, for the labels `show` adds.
    """
    if "replicas" in case.snapshots:
        return _recent_merged(store, case)
    path = store.case_path(case.id)
    entries: list[tuple[tuple[int, str], Entry]] = []
    totals: dict[str, int] = {}
    for name in LEDGERS:
        state = case.ledgers.get(name) or LedgerState()
        totals[name] = state.count
        file = os.path.join(path, ledger_file(name))
        for line in tail_lines(file, state.bytes, SHOW_RECENT_MAX):
            record: LedgerRecord = parse_line(line, LEDGER_TYPES[name], where=ledger_file(name))
            entry = ledger_entry(name, record)
            entries.append(((record.revision, entry.key[1]), entry))
    entries.sort(key=lambda pair: pair[0], reverse=True)
    shown = [entry for _, entry in entries[:SHOW_RECENT_MAX]]
    # Ledger records only: receipts and batches, which need these, are not among them.
    context = Context(standing=lambda _receipt: "superseded", batch_sizes={})
    total = sum(totals.values())
    evidence = [entry.record for entry in shown if isinstance(entry.record, Evidence)]
    return {
        "limit": SHOW_RECENT_MAX,
        "returned": len(shown),
        "total": total,
        "totals": totals,
        "truncated": total > len(shown),
        "items": [card(entry, context) for entry in shown],
    }, evidence


def _recent_merged(store: CaseStore, case: CaseFile) -> tuple[dict[str, object], list[Evidence]]:
    """`recent` of a case that imported replicas: newest by (time, id) across all of them."""
    from cortex.cases.replicas import load_index, newest, totals

    index = load_index(store, case)
    assert index is not None  # noqa: S101 - case.json names the snapshot
    entries: list[tuple[tuple[str, str], Entry]] = []
    for name in LEDGERS:
        for record, origin in newest(store, case, name, SHOW_RECENT_MAX, index):
            entry = ledger_entry(name, record, origin)
            entries.append(((record.timestamp, entry.key[1]), entry))
    entries.sort(key=lambda pair: pair[0], reverse=True)
    shown = [entry for _, entry in entries[:SHOW_RECENT_MAX]]
    context = Context(standing=lambda _receipt: "superseded", batch_sizes={})
    counted = totals(store, case, index)
    total = sum(counted.values())
    evidence = [entry.record for entry in shown if isinstance(entry.record, Evidence)]
    return {
        "limit": SHOW_RECENT_MAX,
        "returned": len(shown),
        "total": total,
        "totals": counted,
        "truncated": total > len(shown),
        "items": [card(entry, context) for entry in shown],
    }, evidence


def show_case(kernel: Kernel, given: TaskOnly) -> Result:
    """`show` for one input."""
    return show(kernel, given.task_id)
