"""Cards: what the index holds of a case, made from its committed records alone.

A card is small (a title of at most CARD_TITLE_MAX characters, a text of at most CARD_TEXT_MAX)
and never a body: the record it stands for is read from the case by id. The functions here are
pure: they take decoded records and return cards, so the same code serves the incremental
update, the full rebuild and the canonical view that `rebuild --verify` compares with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from cortex.cases.bounds import CARD_PATHS_MAX, CARD_TEXT_MAX, CARD_TITLE_MAX
from cortex.cases.records import CaseFile, Evidence
from cortex.recall.notable import notable
from cortex.recall.terms import joined, terms

if TYPE_CHECKING:
    # Types only: the brief at `case open` loads cards without the snapshot documents.
    from cortex.cases.documents import Decision, Hypothesis

KINDS = ("hypothesis", "decision", "outcome", "evidence")
STATUSES = (
    "rejected",
    "confirmed",
    "active",
    "superseded",
    "overturned",
    "verified",
    "partial",
    "failed",
    "unverified",
    "notable",
    "contest",
    "resolution",
)
ELLIPSIS = "\u2026"
_SPACE = re.compile(r"\s+")


class PathRef(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    """A file a card names and what it was when the record was made."""

    path: str
    blob: str | None = None
    head: str | None = None


class Card(msgspec.Struct, kw_only=True, rename="camel"):
    """One card (docs/design/recall.md, "Cards")."""

    id: str
    task_id: str
    store: str
    repository: str
    kind: str
    status: str
    title: str
    text: str
    created: str
    head: str | None = None
    paths: list[PathRef] = msgspec.field(default_factory=list)
    subject: str | None = None
    contests: str | None = None
    """For evidence contesting a decision: that decision's id."""
    labels: list[str] = msgspec.field(default_factory=list)
    """Labels derived from other records (superseded, contested); freshness is added when shown."""
    score: float | None = None
    est_tokens: int = 0


class Contest(msgspec.Struct, frozen=True):
    """Evidence disputing a decision (ids only: a sensitive contest is counted, never shown)."""

    evidence: str
    decision: str
    task: str
    created: str


class Closing(msgspec.Struct, frozen=True):
    """A person's resolution of a decision's contests."""

    evidence: str
    decision: str
    task: str
    created: str
    outcome: str
    responder: str
    contests: tuple[str, ...]


class Derived(msgspec.Struct):
    """What one case contributes to the index."""

    cards: list[Card]
    contests: list[Contest]
    closings: list[Closing]


def line(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters, cut at a word if it can be."""
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - len(ELLIPSIS)]
    space = cut.rfind(" ")
    if space >= len(cut) * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def estimate(text: str) -> int:
    """Estimated tokens: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def shown_line(card: Card) -> str:
    """The line a face prints for a card, which its `estTokens` counts: id, text, labels."""
    return " ".join([card.id, card.text, *card.labels])


def subject_key(subject: str | None) -> str:
    """A subject as compared: case and runs of spaces do not matter."""
    return " ".join((subject or "").split()).casefold()


def card_terms(card: Card) -> list[str]:
    """The terms a card is found by: its text and subject, and the words of its paths."""
    words = terms(card.text)
    if card.subject:
        words += terms(card.subject)
    for ref in card.paths:
        words += terms(ref.path)
    return words


def stored_terms(card: Card) -> tuple[str, int]:
    """The card's terms as the index stores them, and how many."""
    words = card_terms(card)
    return joined(words), len(words)


Redact = Callable[[str], str]


class _Base(NamedTuple):
    task_id: str
    store: str
    repository: str


class Source(msgspec.Struct):
    """A case's committed records, as far as cards need them."""

    case: CaseFile
    store_id: str
    hypotheses: list[Hypothesis]
    decisions: list[Decision]
    evidence: list[Evidence]
    """Every record that may make a card or a relation (notable, contests, resolutions)."""
    cited: dict[str, Evidence]
    """Evidence cited by a hypothesis's deciding resolution, by id."""
    verdict: str | None
    """For a completed case: the verdict it was completed on."""
    completed_at: str | None = None
    outcome_head: str | None = None
    boundary: list[str] = msgspec.field(default_factory=list)


def derive(source: Source, redact: Redact) -> Derived:
    """Every card and relation of one case (docs/design/recall.md, "Cards")."""
    case = source.case
    cards: list[Card] = []
    base = _Base(case.id, source.store_id, case.workspace.repository)
    answer_records = {d.evidence_id for d in source.decisions if d.evidence_id}
    for hypothesis in source.hypotheses:
        card = _hypothesis(hypothesis, source, redact, base)
        if card is not None:
            cards.append(card)
    cards.extend(
        _decision(decision, case, redact, base)
        for decision in source.decisions
        if decision.status == "answered" and decision.answer is not None
    )
    if case.status == "complete":
        cards.append(_outcome(source, redact, base))
    contests: list[Contest] = []
    closings: list[Closing] = []
    for record in source.evidence:
        if record.contests is not None:
            contests.append(Contest(record.id, record.contests, case.id, record.timestamp))
        if record.resolves is not None:
            closings.append(
                Closing(
                    evidence=record.id,
                    decision=record.resolves.decision,
                    task=case.id,
                    created=record.timestamp,
                    outcome=record.resolves.outcome,
                    responder=record.source.actor or "",
                    contests=tuple(record.resolves.contests),
                )
            )
        if notable(record) and record.id not in answer_records:
            cards.append(_evidence(record, redact, base))
    return Derived(cards=cards, contests=contests, closings=closings)


def _refs(records: Iterable[Evidence]) -> list[PathRef]:
    refs: list[PathRef] = []
    for record in records:
        location = record.location
        if location is None or location.file is None or record.sensitivity == "sensitive":
            continue
        ref = PathRef(path=location.file, blob=location.blob, head=location.head)
        if ref not in refs:
            refs.append(ref)
    return refs[:CARD_PATHS_MAX]


def _hypothesis(hypothesis: Hypothesis, source: Source, redact: Redact, base: _Base) -> Card | None:
    if hypothesis.status not in {"rejected", "confirmed"} or not hypothesis.history:
        return None
    deciding = next(
        (event for event in reversed(hypothesis.history) if event.status == hypothesis.status),
        hypothesis.history[-1],
    )
    cited = [source.cited[e] for e in deciding.evidence if e in source.cited]
    shareable = [record for record in cited if record.sensitivity != "sensitive"]
    statement = redact(hypothesis.statement)
    text = f"{hypothesis.status} hypothesis: {statement}. Why: {redact(deciding.reason)}."
    if deciding.evidence:
        text += " Evidence: " + ", ".join(deciding.evidence)
        if shareable:
            first = shareable[0]
            text += f' ("{redact(first.claim)}")'
        text += "."
    refs = _refs(shareable)
    head = next((ref.head for ref in refs if ref.head), source.case.workspace.commit_before)
    return Card(
        id=hypothesis.id,
        kind="hypothesis",
        status=hypothesis.status,
        title=line(statement, CARD_TITLE_MAX),
        text=line(text, CARD_TEXT_MAX),
        created=deciding.at,
        head=head,
        paths=refs,
        task_id=base.task_id,
        store=base.store,
        repository=base.repository,
    )


def _decision(decision: Decision, case: CaseFile, redact: Redact, base: _Base) -> Card:
    chosen = next((o for o in decision.options if o.id == decision.answer), None)
    question = redact(decision.question)
    text = "decision"
    if decision.subject:
        text += f" on {redact(decision.subject)}"
    text += f": {question} Chose {decision.answer}"
    if chosen is not None:
        text += f": {redact(chosen.label)}"
    text += "."
    others = [o for o in decision.options if o.id != decision.answer]
    if others:
        text += " " + rejected_alternatives(others, redact) + "."
    return Card(
        id=decision.id,
        kind="decision",
        status="active",
        title=line(question, CARD_TITLE_MAX),
        text=line(text, CARD_TEXT_MAX),
        created=decision.answered_at or decision.requested_at,
        head=case.workspace.commit_before,
        subject=None if decision.subject is None else redact(decision.subject),
        task_id=base.task_id,
        store=base.store,
        repository=base.repository,
    )


def rejected_alternatives(options: Iterable[object], redact: Redact) -> str:
    """`already rejected: label (id), ...` for the options a decision did not choose."""
    parts = [f"{redact(getattr(o, 'label', ''))} ({getattr(o, 'id', '')})" for o in options]
    return "already rejected: " + ", ".join(parts)


def _outcome(source: Source, redact: Redact, base: _Base) -> Card:
    case = source.case
    verdict = source.verdict or "unverified"
    outcome = redact(case.status_reason or "")
    text = f"outcome ({verdict}): {outcome}. Goal: {redact(case.goal)}."
    head = source.outcome_head or case.workspace.commit_before
    paths = [PathRef(path=p, head=head) for p in source.boundary if not p.endswith("/")]
    return Card(
        id=case.id,
        kind="outcome",
        status=verdict,
        title=line(outcome or redact(case.goal), CARD_TITLE_MAX),
        text=line(text, CARD_TEXT_MAX),
        created=source.completed_at or case.updated_at,
        head=head,
        paths=paths[:CARD_PATHS_MAX],
        task_id=base.task_id,
        store=base.store,
        repository=base.repository,
    )


def _evidence(record: Evidence, redact: Redact, base: _Base) -> Card:
    claim = redact(record.claim)
    if record.resolves is not None:
        status = "resolution"
        text = f"resolution of {record.resolves.decision} ({record.resolves.outcome}): {claim}"
    elif record.contests is not None:
        status = "contest"
        text = f"{record.kind} evidence contesting {record.contests}: {claim}"
    else:
        status = "notable"
        text = f"{record.kind} evidence: {claim}"
    refs = _refs([record])
    location = record.location
    return Card(
        id=record.id,
        kind="evidence",
        status=status,
        title=line(claim, CARD_TITLE_MAX),
        text=line(text, CARD_TEXT_MAX),
        created=record.timestamp,
        head=None if location is None else location.head,
        paths=refs,
        contests=record.contests,
        task_id=base.task_id,
        store=base.store,
        repository=base.repository,
    )
