"""`cortex case timeline`: a case's history as one ordered list of small cards.

A reader: it takes no lock and writes nothing. It reads case.json and the snapshots of one
revision (`read_view`), then streams each ledger up to the length that revision committed.
Memory stays bounded whatever the ledgers hold: one pass keeps only the entries the answer
shows (a heap the size of the page, or of each side of an anchor) plus exact counts.

Order is total: time, then the id's ULID, then the id (`timeline_cards.sort_key`). A page
ends with a cursor naming the last entry shown, so the next page starts strictly after it and
a walk through every page sees each entry exactly once, for the revision each page was read
at (entries committed in between appear on later pages only if they sort after the cursor).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Annotated, Any

import msgspec

from cortex.cases.bounds import (
    TIMELINE_AROUND_DEFAULT,
    TIMELINE_AROUND_MAX,
    TIMELINE_LIMIT_MAX,
)
from cortex.cases.documents import Decision, Decisions, Receipt, Verification
from cortex.cases.errors import ArgumentError, NotFoundError
from cortex.cases.records import CaseFile, Evidence
from cortex.cases.store import CaseStore
from cortex.kernel import inputs, validate
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.views.timeline import fast as timeline_fast
from cortex.kernel.views.timeline.cards import (
    ANSWER_SUFFIX,
    Context,
    Entry,
    Key,
    card,
    date_anchor,
    decision_entry,
    sort_key,
    stream,
)
from cortex.kernel.views.timeline.query import (
    ENTRY_PREFIXES,
    Query,
    canonical,
    entry_id,
    make_cursor,
    read_cursor,
    when,
    window,
)
from cortex.kernel.views.timeline.query import kinds as parse_kinds


class _Desc:
    """A key that sorts backwards, so `heapq` (a min-heap) can keep the smallest keys."""

    __slots__ = ("key",)

    def __init__(self, key: Key) -> None:
        self.key = key

    def __lt__(self, other: _Desc) -> bool:
        return other.key < self.key


class _Keep:
    """The `size` entries with the smallest (or largest) keys seen: O(size) memory."""

    def __init__(self, size: int, *, largest: bool = False) -> None:
        self.size = size
        self.largest = largest
        self._heap: list[tuple[Any, int, Entry]] = []
        self._seen = 0  # ties never compare entries (keys are unique unless a ledger is edited)

    def push(self, entry: Entry) -> None:
        if self.size == 0:
            return
        self._seen += 1
        item = (entry.key if self.largest else _Desc(entry.key), self._seen, entry)
        if len(self._heap) < self.size:
            heapq.heappush(self._heap, item)
            return
        # The heap's top is the worst entry kept: replace it only with a better one.
        worst = self._heap[0][0]
        better = entry.key > worst if self.largest else entry.key < worst.key
        if better:
            heapq.heapreplace(self._heap, item)

    def ordered(self) -> list[Entry]:
        return sorted((item[2] for item in self._heap), key=lambda entry: entry.key)


def timeline(
    kernel: Kernel,
    task_id: str,
    *,
    kinds: list[str] | None = None,
    actor: str | None = None,
    since: str | None = None,
    until: str | None = None,
    anchor: str | None = None,
    before: int | None = None,
    after: int | None = None,
    limit: int = inputs.TIMELINE_LIMIT,
    cursor: str | None = None,
) -> Result:
    """One page of a case's timeline, or the entries around an anchor (module docstring)."""
    lower, upper = window(since, until)
    query = Query(
        kinds=parse_kinds(kinds or []),
        actor=None if actor is None else validate.identifier(actor, "--actor", kernel.redactor),
        lower=lower,
        upper=upper,
    )
    if not 1 <= limit <= TIMELINE_LIMIT_MAX:
        raise ArgumentError(f"{{limit}} must be between 1 and {TIMELINE_LIMIT_MAX}", "limit")
    if anchor is not None and cursor is not None:
        msg = "{anchor} and {cursor} cannot be combined: a page follows a cursor or an anchor"
        raise ArgumentError(msg, "anchor", "cursor")
    if anchor is None and (before is not None or after is not None):
        raise ArgumentError(
            "{before} and {after} count entries around an {anchor}", "before", "after", "anchor"
        )
    for name, value in (("before", before), ("after", after)):
        if value is not None and not 0 <= value <= TIMELINE_AROUND_MAX:
            msg = "{%s} must be between 0 and %d" % (name, TIMELINE_AROUND_MAX)  # noqa: UP031
            raise ArgumentError(msg, name)
    task_id, store = kernel.find(task_id)  # whole, before a cursor is bound to it
    scope = query.scope(task_id)
    start = None if cursor is None else read_cursor(cursor, scope)
    anchored = None if anchor is None else entry_id(anchor)
    moment = ""  # the canonical time of a date anchor, checked before anything is read
    if anchor is not None and anchored is None:
        moment = canonical(when(anchor, "--anchor")[0])

    case, documents = store.read_view(task_id)
    entries = (e for e in stream(store, case, documents, query.effective_kinds) if query.matches(e))
    # Time-ordered ledgers are searched instead of streamed (timeline_fast; same answers).
    fast = timeline_fast.usable(case, query)
    view = timeline_fast.View(store, case, documents, query)
    around = None
    if anchor is None:
        if fast:
            total, shown, more = timeline_fast.page(view, start, limit)
        else:
            total, shown, more = _page(entries, start, limit)
    else:
        wanted = (
            TIMELINE_AROUND_DEFAULT if before is None else before,
            TIMELINE_AROUND_DEFAULT if after is None else after,
        )
        if anchored is not None:
            target = _find(store, case, documents, anchored)
            if fast:
                total, shown, around = timeline_fast.around(view, target, *wanted)
            else:
                total, shown, around = _around(entries, target, *wanted)
            around["matchesFilters"] = query.matches(target) and (
                target.kind in query.effective_kinds
            )
        elif fast:
            total, shown, around = timeline_fast.around_date(view, moment, wanted, anchor)
        else:
            total, shown, around = _around_date(entries, moment, *wanted, anchor)
        more = around["after"] > wanted[1]
    anchor_id = None if around is None else around["id"]
    context = _context(kernel, case, documents.get("verification.json"), shown)
    found = _labels(kernel, store, case, shown)
    cards = [
        {
            **card(entry, context),
            **({"anchor": True} if entry.id == anchor_id else {}),
            **({"labels": found[entry.record.id]} if found.get(entry.record.id) else {}),
        }
        for entry in shown
    ]
    return Result(
        data={
            "taskId": case.id,
            "revision": case.revision,
            "filters": {
                "kinds": list(query.kinds),
                "actor": query.actor,
                "since": since,
                "until": until,
            },
            "total": total,
            "returned": len(cards),
            "limit": limit,
            "anchor": around,
            "nextCursor": make_cursor(scope, shown[-1]) if more and shown else None,
            "entries": cards,
            "warnings": store.debris(case),
        }
    )


def _labels(
    kernel: Kernel, store: CaseStore, case: CaseFile, shown: list[Entry]
) -> dict[str, list[str]]:
    """Freshness and decision-history labels of the evidence and decisions on the page."""
    from cortex.kernel.views.labels import evidence_labels

    evidence = [e.record for e in shown if isinstance(e.record, Evidence)]
    decisions = [e.record for e in shown if isinstance(e.record, Decision)]
    if not evidence and not decisions:
        return {}
    return evidence_labels(kernel, store, case, evidence, decisions)


def _page(entries: Iterable[Entry], start: Key | None, limit: int) -> tuple[int, list[Entry], bool]:
    """Every matching entry counted; the first `limit` after `start` kept; whether more follow."""
    total = following = 0
    keep = _Keep(limit)
    for entry in entries:
        total += 1
        if start is not None and entry.key <= start:
            continue
        following += 1
        keep.push(entry)
    shown = keep.ordered()
    return total, shown, following > len(shown)


def _around(
    entries: Iterable[Entry], target: Entry, before: int, after: int
) -> tuple[int, list[Entry], dict[str, Any]]:
    """The anchor (shown whatever the filters) and up to `before`/`after` matching neighbours."""
    total = earlier = later = 0
    lower, upper = _Keep(before, largest=True), _Keep(after)
    for entry in entries:
        total += 1
        if entry.key < target.key:
            earlier += 1
            lower.push(entry)
        elif entry.key > target.key:
            later += 1
            upper.push(entry)
    facts = {"id": target.id, "at": target.at, "before": earlier, "after": later}
    return total, [*lower.ordered(), target, *upper.ordered()], facts


def _around_date(
    entries: Iterable[Entry], moment: str, before: int, after: int, text: str
) -> tuple[int, list[Entry], dict[str, Any]]:
    """The first matching entry at or after `moment` as the anchor, and its neighbours."""
    total = earlier = later = 0
    lower, upper = _Keep(before, largest=True), _Keep(after + 1)
    for entry in entries:
        total += 1
        if entry.key[0] < moment:
            earlier += 1
            lower.push(entry)
        else:
            later += 1
            upper.push(entry)
    following = upper.ordered()
    _, facts = date_anchor(following, earlier, later, text)
    return total, [*lower.ordered(), *following], facts


def _find(store: CaseStore, case: CaseFile, documents: dict[str, Any], wanted: str) -> Entry:
    """The entry an anchor id names, looked up directly (a ledger line by its id, not a scan)."""
    prefix = wanted.partition("_")[0]
    ledger = ENTRY_PREFIXES[prefix]
    if ledger:
        kind = {"phases": "phase", "evidence": "evidence", "commands": "command"}[ledger]
        found = store.find_records(case, ledger, [wanted]).get(wanted)
        if found is not None:
            actor = found.source.actor if isinstance(found, Evidence) else found.actor
            return Entry(sort_key(found.timestamp, found.id), kind, actor, found)
    elif prefix == "dec":
        decisions: Decisions | None = documents.get("decisions.json")
        base = wanted.removesuffix(ANSWER_SUFFIX)
        answer = base != wanted
        for decision in decisions.decisions if decisions is not None else []:
            if decision.id == base and (decision.answered_at is not None or not answer):
                return decision_entry(decision, answer=answer)
    else:
        verification: Verification | None = documents.get("verification.json")
        if verification is not None:
            for batch in verification.batches if prefix == "vb" else []:
                if batch.id == wanted:
                    return Entry(sort_key(batch.finished_at, batch.id), "batch", batch.actor, batch)
            for receipt in verification.receipts if prefix == "vr" else []:
                if receipt.id == wanted:
                    key = sort_key(receipt.timestamp, receipt.id)
                    return Entry(key, "receipt", receipt.actor, receipt)
    raise NotFoundError(f"no timeline entry {wanted} in case {case.id}")


def _context(
    kernel: Kernel, case: CaseFile, verification: Verification | None, shown: list[Entry]
) -> Context:
    """Receipt standings (only if a receipt is shown: they cost a capture of the workspace)."""
    sizes: dict[str, int] = {}
    for receipt in verification.receipts if verification is not None else []:
        sizes[receipt.batch_id] = sizes.get(receipt.batch_id, 0) + 1
    standings: dict[str, str] = {}
    if verification is not None and any(entry.kind == "receipt" for entry in shown):
        from cortex.kernel.proof.assessment import assess
        from cortex.kernel.proof.live import live_capture

        assessment = assess(case, verification, live_capture(kernel, case, writer=False))
        for view in assessment.receipts:
            state = "current" if view.proof else ("stale" if view.stale else "unbound")
            standings[view.id] = state

    def standing(receipt: Receipt) -> str:
        # Only the latest batch counts (assessment.py); every older receipt is superseded.
        return standings.get(receipt.id, "superseded")

    return Context(standing=standing, batch_sizes=sizes)


class Timeline(Input):
    """The input of `case timeline`."""

    task_id: TaskId
    kinds: Annotated[
        list[str],
        msgspec.Meta(description="phase|evidence|command|decision|receipt|batch|activity"),
    ] = msgspec.field(default_factory=list)
    actor: str | None = None
    since: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    until: Annotated[str | None, msgspec.Meta(description="ISO date or time")] = None
    anchor: Annotated[str | None, msgspec.Meta(description="an entry id or a date")] = None
    before: Annotated[
        int | None, msgspec.Meta(description="entries before the anchor (default 10)")
    ] = None
    after: Annotated[
        int | None, msgspec.Meta(description="entries after the anchor (default 10)")
    ] = None
    limit: int = inputs.TIMELINE_LIMIT
    cursor: Annotated[str | None, msgspec.Meta(description="nextCursor of the last page")] = None


def page(kernel: Kernel, given: Timeline) -> Result:
    """`timeline` for one input."""
    return timeline(
        kernel,
        given.task_id,
        kinds=given.kinds,
        actor=given.actor,
        since=given.since,
        until=given.until,
        anchor=given.anchor,
        before=given.before,
        after=given.after,
        limit=given.limit,
        cursor=given.cursor,
    )
