"""Timeline entries: every event of a case, streamed, and the small card each one shows as.

An entry comes from one of six places: the three ledgers (phase changes, evidence, commands),
`decisions.json` (a request and, once answered, an answer: two entries),
`verification.json` (batches and their receipts) and the host's activity (`activity.jsonl`).
Entries are streamed in storage order, not time order, so that a caller can keep only what it
will show; `key` gives the total order.

A card carries identifiers, a one-line title and a few facts, never a body: no raw output, no
full text of a long claim, and no text at all of a record marked sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, cast

from cortex.cases.activity import Activity
from cortex.cases.bounds import TIMELINE_TITLE_MAX
from cortex.cases.documents import Batch, Decision, Decisions, Receipt, Verification
from cortex.cases.errors import NotFoundError
from cortex.cases.records import CaseFile, Command, Evidence, PhaseChange
from cortex.cases.store import CaseStore
from cortex.kernel.proof.assessment import acknowledged
from cortex.kernel.provenance import shown

KINDS = ("phase", "evidence", "command", "decision", "receipt", "batch", "activity")
"""Entry kinds, in the order `--kind` lists them."""
ANSWER_SUFFIX = ":answer"
"""An answer shares its decision's id; this suffix keeps the two entries' ids distinct."""
SENSITIVE = "(sensitive)"
"""The title of a record marked sensitive: its text may hold what redaction missed."""
ELLIPSIS = "\u2026"

Key = tuple[str, str, str]
Record = Evidence | Command | PhaseChange | Decision | Receipt | Batch | Activity

_SPACE = re.compile(r"\s+")


class Entry(NamedTuple):
    """One event: its sort key, kind and actor (what filters look at), and its source."""

    key: Key
    kind: str
    actor: str | None
    record: Record
    answer: bool = False
    replica: str | None = None
    """The imported replica a ledger record comes from (None: this machine's own)."""

    @property
    def id(self) -> str:
        """The entry id (a record id; a decision's answer adds `:answer`)."""
        return self.key[2]

    @property
    def at(self) -> str:
        """When it happened, as the record says."""
        return self.key[0]


def sort_key(at: str, entry_id: str) -> Key:
    """Time, then the id's ULID, then the id itself: a total order.

    Timestamps have millisecond precision, so one commit's records often share one. Their ids
    are ULIDs minted in the order the records were made, which puts a phase change before the
    evidence that caused it and both before the commit's audit line; comparing whole ids would
    sort them by prefix instead. The full id breaks the remaining ties (an answer and its
    request in one millisecond), so no two entries share a key.
    """
    return (at, entry_id.partition("_")[2][:26], entry_id)


def stream(
    store: CaseStore, case: CaseFile, documents: dict[str, Any], kinds: frozenset[str]
) -> Iterator[Entry]:
    """Every entry of the kinds asked for, as of `case`'s revision; ledgers read lazily.

    A ledger is read only up to the length `case` records as committed, so a commit landing
    meanwhile is not half seen; a kind not asked for is not read at all.
    """
    if "phase" in kinds:
        for line, origin in store.read_ledger_with_origin(case, "phases"):
            phase = cast("PhaseChange", line)
            key = sort_key(phase.timestamp, phase.id)
            yield Entry(key, "phase", phase.actor, phase, replica=origin)
    if "evidence" in kinds:
        for line, origin in store.read_ledger_with_origin(case, "evidence"):
            evidence = cast("Evidence", line)
            key = sort_key(evidence.timestamp, evidence.id)
            yield Entry(key, "evidence", evidence.source.actor, evidence, replica=origin)
    if "command" in kinds:
        for line, origin in store.read_ledger_with_origin(case, "commands"):
            command = cast("Command", line)
            key = sort_key(command.timestamp, command.id)
            yield Entry(key, "command", command.actor, command, replica=origin)
    if "decision" in kinds:
        decisions: Decisions | None = documents.get("decisions.json")
        for decision in decisions.decisions if decisions is not None else []:
            yield decision_entry(decision, answer=False)
            if decision.answered_at is not None:
                yield decision_entry(decision, answer=True)
    if "activity" in kinds:
        # What the agent's host saw it do (docs/design/activity.md): local to this machine.
        from cortex.cases import activity

        for record in activity.read(store.case_path(case.id), case.id).records:
            yield Entry(sort_key(record.timestamp, record.id), "activity", record.actor, record)
    verification: Verification | None = documents.get("verification.json")
    if verification is None:
        return
    if "batch" in kinds:
        for batch in verification.batches:
            yield Entry(sort_key(batch.finished_at, batch.id), "batch", batch.actor, batch)
    if "receipt" in kinds:
        for receipt in verification.receipts:
            key = sort_key(receipt.timestamp, receipt.id)
            yield Entry(key, "receipt", receipt.actor, receipt)


LEDGER_KINDS = {"phases": "phase", "evidence": "evidence", "commands": "command"}
"""The entry kind of each ledger's lines."""


def ledger_entry(
    name: str, record: Evidence | Command | PhaseChange, replica: str | None = None
) -> Entry:
    """The entry of one ledger line (`replica`: the imported replica it comes from)."""
    actor = record.source.actor if isinstance(record, Evidence) else record.actor
    key = sort_key(record.timestamp, record.id)
    return Entry(key, LEDGER_KINDS[name], actor, record, replica=replica)


def decision_entry(decision: Decision, *, answer: bool) -> Entry:
    """The request entry of a decision, or its answer entry."""
    if answer:
        key = sort_key(decision.answered_at or "", decision.id + ANSWER_SUFFIX)
        return Entry(key, "decision", decision.responder, decision, answer=True)
    key = sort_key(decision.requested_at, decision.id)
    return Entry(key, "decision", decision.requester, decision)


def date_anchor(
    following: list[Entry], earlier: int, later: int, text: str
) -> tuple[Entry, dict[str, object]]:
    """The anchor of `--anchor DATE` (the first entry at or after it) and the facts shown.

    `following` holds the matching entries at or after the date, in order; `earlier` and
    `later` count the matching entries before it and from it on.
    """
    if not following:
        raise NotFoundError(f"no timeline entry at or after {text!r} matches the filters")
    target = following[0]
    facts = {
        "id": target.id,
        "at": target.at,
        "before": earlier,
        "after": later - 1,
        "matchesFilters": True,
    }
    return target, facts


def title(text: str) -> str:
    """`text` on one line, at most TIMELINE_TITLE_MAX characters, cut at a word if it can be."""
    line = _SPACE.sub(" ", text).strip()
    if len(line) <= TIMELINE_TITLE_MAX:
        return line
    cut = line[: TIMELINE_TITLE_MAX - len(ELLIPSIS)]
    space = cut.rfind(" ")
    # A word boundary near the end reads better; a long unbroken run (a path, a hash) is cut
    # where the limit falls rather than losing most of the title.
    if space >= len(cut) * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


class Context(NamedTuple):
    """What cards need beyond their own record."""

    standing: Callable[[Receipt], str]
    """A receipt's standing now: current, stale, unbound or superseded."""
    batch_sizes: dict[str, int]
    """Receipts per batch id."""


def card(entry: Entry, context: Context) -> dict[str, object]:
    """The card of one entry (see the module docstring for what is never in it)."""
    head: dict[str, object] = {
        "id": entry.id,
        "kind": entry.kind,
        "at": entry.at,
        "actor": entry.actor,
    }
    if entry.replica is not None:
        head["replica"] = entry.replica
    record = entry.record
    if isinstance(record, PhaseChange):
        text = f"{record.from_phase or 'start'} -> {record.to_phase}"
        text += f": {record.reason}" if record.reason else ""
        return {**head, "title": title(text), "from": record.from_phase, "to": record.to_phase}
    if isinstance(record, Evidence):
        sensitive = record.sensitivity == "sensitive"
        return {
            **head,
            "title": SENSITIVE if sensitive else title(record.claim),
            "evidenceKind": record.kind,
            "confidence": record.confidence,
            "tool": record.source.tool,
            "origin": shown(record.source, entry.replica),
            "sensitive": sensitive,
            "hasRaw": record.raw_ref is not None,
        }
    if isinstance(record, Command):
        text = record.operation + (f" {record.target}" if record.target else "")
        return {**head, "title": title(text), "operation": record.operation}
    if isinstance(record, Decision):
        return {**head, **_decision(record, answer=entry.answer)}
    if isinstance(record, Receipt):
        return {**head, **_receipt(record, context)}
    if isinstance(record, Activity):
        return {**head, **_activity(record)}
    return {**head, **_batch(record, context)}


def _activity(record: Activity) -> dict[str, object]:
    """A tool call the host reported: what ran or was edited, and how it ended."""
    text = record.command if record.command is not None else ", ".join(record.files)
    ended = "failed" if record.failed else ("exit " + str(record.exit) if record.exit else "ok")
    if record.runner is not None:
        ended = f"{record.runner} {record.outcome or '?'}: {record.summary or '-'}"
    facts: dict[str, object] = {
        "title": title(f"{record.tool}: {text} ({ended})"),
        "tool": record.tool,
        "exit": record.exit,
        "failed": record.failed,
    }
    if record.runner is not None:
        facts.update(runner=record.runner, outcome=record.outcome)
    if record.outside:
        facts["outside"] = record.outside
    return facts


def _decision(decision: Decision, *, answer: bool) -> dict[str, object]:
    facts: dict[str, object] = {"decisionId": decision.id, "status": decision.status}
    if not answer:
        return {
            "title": title(decision.question),
            **facts,
            "event": "request",
            "options": len(decision.options),
        }
    labels = {option.id: option.label for option in decision.options}
    chosen = decision.answer or "?"
    text = f"answered {chosen}" + (f": {labels[chosen]}" if chosen in labels else "")
    return {"title": title(text), **facts, "event": "answer", "answer": decision.answer}


def _receipt(receipt: Receipt, context: Context) -> dict[str, object]:
    text = (
        receipt.claim if receipt.claim_id is None else f"claim {receipt.claim_id}: {receipt.claim}"
    )
    return {
        "title": SENSITIVE if receipt.sensitive else title(text),
        "status": receipt.status,
        "binding": receipt.binding,
        "standing": context.standing(receipt),
        "batchId": receipt.batch_id,
        "purpose": receipt.purpose,
        "requirement": receipt.requirement,
        "claimId": receipt.claim_id,
        "sensitive": receipt.sensitive,
        # A pass by acknowledgement is its own state here too (absent for every other receipt).
        **({"acknowledged": ack} if (ack := acknowledged(receipt)) else {}),
    }


def _batch(batch: Batch, context: Context) -> dict[str, object]:
    size = context.batch_sizes.get(batch.id, 0)
    text = f"{batch.binding} batch of {size} receipt{'' if size == 1 else 's'}"
    text += f": {'; '.join(batch.reasons)}" if batch.reasons else ""
    return {"title": title(text), "binding": batch.binding, "receipts": size}
