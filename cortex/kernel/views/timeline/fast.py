"""The timeline's answers for a case whose ledgers are all time-ordered, without a full scan.

Each function returns exactly what its counterpart in `page.py` returns from streaming
every entry (tests compare the two on the same cases), but reads only: the snapshot entries
(decisions, batches, receipts: small and already in memory), a binary search per ledger for
each time boundary, byte counts for exact totals, and the few lines it shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from typing import Any, NamedTuple

from cortex.cases.records import CaseFile, LedgerState
from cortex.cases.store import CaseStore
from cortex.kernel.views.timeline.cards import LEDGER_KINDS, Entry, Key, date_anchor, stream
from cortex.kernel.views.timeline.index import OrderedLedger
from cortex.kernel.views.timeline.query import Query

SNAPSHOT_KINDS = frozenset({"decision", "batch", "receipt", "activity"})
"""Kinds read whole and sorted in memory (activity is bounded: activity.RECORDS_MAX)."""


class View(NamedTuple):
    """One read of a case (`read_view`) and the validated filters."""

    store: CaseStore
    case: CaseFile
    documents: dict[str, Any]
    query: Query


def usable(case: CaseFile, query: Query) -> bool:
    """Whether every ledger the query reads is marked ordered (else stream, as before).

    A case that imported replicas streams its merged view (docs/design/sharing.md).
    """
    if "replicas" in case.snapshots:
        return False
    for name, kind in LEDGER_KINDS.items():
        state = case.ledgers.get(name) or LedgerState()
        if kind in query.effective_kinds and state.count and not state.ordered:
            return False
    return True


class _Sources:
    """The ledgers a query reads, each with its time window as a byte range, plus snapshots."""

    def __init__(self, view: View, stack: ExitStack) -> None:
        store, case, documents, query = view
        path = store.case_path(case.id)
        self.query = query
        self.ledgers: list[tuple[OrderedLedger, int, int]] = []
        for name, kind in LEDGER_KINDS.items():
            if kind not in query.effective_kinds:
                continue
            state = case.ledgers.get(name) or LedgerState()
            ledger = stack.enter_context(OrderedLedger(path, name, state, query.actor))
            start = ledger.at_time(query.lower) if query.lower is not None else 0
            stop = ledger.at_time(query.upper)
            self.ledgers.append((ledger, start, max(start, stop)))
        kinds = query.effective_kinds & SNAPSHOT_KINDS
        self.snapshot = sorted(
            (e for e in stream(store, case, documents, kinds) if query.matches(e)),
            key=lambda entry: entry.key,
        )

    def total(self) -> int:
        return len(self.snapshot) + sum(ledger.count(a, b) for ledger, a, b in self.ledgers)


def page(view: View, start: Key | None, limit: int) -> tuple[int, list[Entry], bool]:
    """`timeline._page`: the total, the first `limit` entries after `start`, whether more follow."""
    with ExitStack() as stack:
        sources = _Sources(view, stack)
        candidates = [e for e in sources.snapshot if start is None or e.key > start]
        for ledger, a, b in sources.ledgers:
            if start is None:
                candidates += ledger.forward(a, b, limit + 1)
                continue
            _, run_stop, run = ledger.split(start, a, b)
            candidates += [e for e in run if e.key > start]
            candidates += ledger.forward(max(run_stop, a), b, limit + 1)
        candidates.sort(key=lambda entry: entry.key)
        return sources.total(), candidates[:limit], len(candidates) > limit


def around(
    view: View, target: Entry, before: int, after: int
) -> tuple[int, list[Entry], dict[str, Any]]:
    """`timeline._around`: the anchor and its matching neighbours, with exact counts."""
    with ExitStack() as stack:
        sources = _Sources(view, stack)
        lower = [e for e in sources.snapshot if e.key < target.key]
        upper = [e for e in sources.snapshot if e.key > target.key]
        earlier, later = len(lower), len(upper)
        total = len(sources.snapshot)
        for ledger, a, b in sources.ledgers:
            run_start, run_stop, run = ledger.split(target.key, a, b)
            below = [e for e in run if e.key < target.key]
            above = [e for e in run if e.key > target.key]
            left, right = ledger.count(a, run_start), ledger.count(run_stop, b)
            earlier += left + len(below)
            later += right + len(above)
            total += left + right + len(run)
            lower += below + ledger.backward(a, run_start, before)
            upper += above + ledger.forward(run_stop, b, after)
        facts = {"id": target.id, "at": target.at, "before": earlier, "after": later}
        shown = [*_last(lower, before), target, *_first(upper, after)]
        return total, shown, facts


def around_date(
    view: View, moment: str, counts: tuple[int, int], text: str
) -> tuple[int, list[Entry], dict[str, Any]]:
    """`timeline._around_date`: the first matching entry at or after `moment`, and neighbours."""
    before, after = counts
    with ExitStack() as stack:
        sources = _Sources(view, stack)
        lower = [e for e in sources.snapshot if e.key[0] < moment]
        upper = [e for e in sources.snapshot if e.key[0] >= moment]
        earlier, later = len(lower), len(upper)
        for ledger, a, b in sources.ledgers:
            split = min(max(ledger.at_time(moment), a), b)
            earlier += ledger.count(a, split)
            later += ledger.count(split, b)
            lower += ledger.backward(a, split, before)
            upper += ledger.forward(split, b, after + 1)
        following = _first(upper, after + 1)
        _, facts = date_anchor(following, earlier, later, text)
        return earlier + later, [*_last(lower, before), *following], facts


def _first(entries: Iterable[Entry], n: int) -> list[Entry]:
    return sorted(entries, key=lambda entry: entry.key)[:n]


def _last(entries: Iterable[Entry], n: int) -> list[Entry]:
    ordered = sorted(entries, key=lambda entry: entry.key)
    return ordered[max(0, len(ordered) - n) :] if n else []
