"""`cortex recall QUERY` and `cortex recall get ID...`: reading the index across cases.

Readers: they open the index read-only and the case files without a lock, and write nothing.
`recall` answers with cards only (docs/design/recall.md, "Search"), an exact total, a page and,
with `--budget`, what fits; it says whether the index is behind the case files and names the
command that repairs it. `get` answers with the full records of named cards, read from their
cases, all of them or none.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

import msgspec

from cortex.cases.bounds import (
    RECALL_BUDGET_MAX,
    RECALL_CURSOR_MAX,
    RECALL_GET_MAX,
    RECALL_LIMIT_MAX,
    RECALL_QUERY_MAX,
    RECALL_SUMMARY_MAX,
    RECALL_TERMS_MAX,
)
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import Decisions, Hypotheses
from cortex.cases.errors import ArgumentError, CortexError, InvalidInputError, NotFoundError
from cortex.cases.fsio import open_for_read
from cortex.cases.ids import is_id
from cortex.cases.records import Evidence, encode
from cortex.kernel import inputs
from cortex.kernel import recall as kernel_recall
from cortex.kernel.envelope import Action, Result
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel
from cortex.recall.budget import walk
from cortex.recall.cards import KINDS, STATUSES
from cortex.recall.index import Filters, Hit, RecallIndexError
from cortex.recall.terms import query_terms

_CURSOR = re.compile(r"([0-9]{1,9})\.([0-9a-f]{12})")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
CARD_PREFIXES = ("hyp", "dec", "ev", "task")
REINDEX = Action(command="cortex recall reindex", reason="bring the recall index up to date")


def _query(text: str) -> list[str]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > RECALL_QUERY_MAX:
        raise ArgumentError(f"{{query}} is {size} bytes, over {RECALL_QUERY_MAX}", "query")
    if _CONTROL.search(text):
        raise ArgumentError("{query} must not hold control characters", "query")
    words = query_terms(text)
    if not words:
        msg = "{query} has no searchable term: terms are letters a-z and digits"
        raise ArgumentError(msg, "query")
    if len(words) > RECALL_TERMS_MAX:
        msg = f"{{query}} has {len(words)} distinct terms, over {RECALL_TERMS_MAX}"
        raise ArgumentError(msg, "query")
    return words


def _choices(values: list[str], allowed: tuple[str, ...], name: str) -> tuple[str, ...]:
    for value in values:
        if value not in allowed:
            msg = f"{{{name}}} must be one of {', '.join(allowed)}, not {value[:40]!r}"
            raise ArgumentError(msg, name)
    return tuple(dict.fromkeys(values))


def _fingerprint(words: list[str], filters: Filters) -> str:
    return sha256_hex(encode([words, list(filters)]))[:12]


def _offset(cursor: str | None, fingerprint: str) -> int:
    if cursor is None:
        return 0
    match = _CURSOR.fullmatch(cursor) if len(cursor) <= RECALL_CURSOR_MAX else None
    if match is None:
        raise ArgumentError("{cursor} is not a cursor this command printed", "cursor")
    if match.group(2) != fingerprint:
        msg = "{cursor} belongs to another query or other filters; ask with the same ones"
        raise ArgumentError(msg, "cursor")
    return int(match.group(1))


def recall(
    kernel: Kernel,
    query: str,
    *,
    repo: str | None = None,
    kinds: list[str] | None = None,
    statuses: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = inputs.RECALL_LIMIT,
    cursor: str | None = None,
    budget: int | None = None,
) -> Result:
    """One page of cards matching `query`, best first (module docstring)."""
    words = _query(query)
    lower = upper = None
    if since is not None or until is not None:
        # Dates are parsed as `timeline` parses them; the module is loaded only when asked.
        from cortex.kernel.views.timeline.query import window

        lower, upper = window(since, until)
    if not 1 <= limit <= RECALL_LIMIT_MAX:
        raise ArgumentError(f"{{limit}} must be between 1 and {RECALL_LIMIT_MAX}", "limit")
    if budget is not None and not 1 <= budget <= RECALL_BUDGET_MAX:
        raise ArgumentError(f"{{budget}} must be between 1 and {RECALL_BUDGET_MAX}", "budget")
    if repo is not None and (not repo or len(repo) > 256 or _CONTROL.search(repo)):
        raise ArgumentError("{repo} must be a repository name or store id", "repo")
    filters = Filters(
        repo=repo,
        kinds=_choices(kinds or [], KINDS, "kind"),
        statuses=_choices(statuses or [], STATUSES, "status"),
        lower=lower,
        upper=upper,
    )
    fingerprint = _fingerprint(words, filters)
    offset = _offset(cursor, fingerprint)
    facts: dict[str, Any] = {
        "query": query,
        "terms": words,
        "filters": {
            "repo": repo,
            "kinds": list(filters.kinds),
            "statuses": list(filters.statuses),
            "since": since,
            "until": until,
        },
        "limit": limit,
        "offset": offset,
    }
    try:
        index = kernel_recall.open_read(kernel)
    except RecallIndexError as exc:
        raise kernel_recall.index_error(exc) from None
    if index is None:
        empty: dict[str, Any] = {
            "total": 0,
            "returned": 0,
            "nextCursor": None,
            "budget": None,
            "cards": [],
        }
        data = {**facts, **empty, "index": kernel_recall.state(kernel, None)}
        return Result(data=data, actions=[REINDEX])
    try:
        state = kernel_recall.state(kernel, index)
        total, hits = index.search(words, filters, limit=limit, offset=offset)
    except RecallIndexError as exc:
        raise kernel_recall.index_error(exc) from None
    finally:
        index.close()
    cards = kernel_recall.shown(kernel, hits)
    spent = None
    if budget is not None:
        result = walk([[card] for card in cards], lambda card: card.est_tokens, budget)
        spent = {
            "tokens": budget,
            "used": result.tokens,
            "skipped": len(result.skipped),
            "skippedIds": [card.id for card in result.skipped],
            "truncated": bool(result.skipped),
        }
        cards = result.kept
    end = offset + len(hits)
    data = {
        **facts,
        "total": total,
        "returned": len(cards),
        "nextCursor": f"{end}.{fingerprint}" if end < total else None,
        "budget": spent,
        "cards": cards,
        "index": state,
    }
    return Result(data=data, actions=[REINDEX] if state["state"] != "current" else [])


def get(kernel: Kernel, ids: list[str]) -> Result:
    """The full records of the named cards, read from their cases; one missing fails them all."""
    if not 1 <= len(ids) <= RECALL_GET_MAX:
        msg = f"{{id}} names {len(ids)} cards; give 1 to {RECALL_GET_MAX}"
        raise ArgumentError(msg, "id")
    for card_id in ids:
        if not any(is_id(card_id, prefix) for prefix in CARD_PREFIXES):
            shown = card_id if len(card_id) <= 80 else card_id[:80] + "..."
            raise ArgumentError(f"{{id}} {shown!r} is not a card id (hyp_, dec_, ev_, task_)", "id")
    wanted = list(dict.fromkeys(ids))
    try:
        index = kernel_recall.open_read(kernel)
        found = {} if index is None else index.by_ids(wanted)
    except RecallIndexError as exc:
        raise kernel_recall.index_error(exc) from None
    if index is not None:
        index.close()
    missing = [card_id for card_id in wanted if card_id not in found]
    if missing:
        raise NotFoundError(f"no card {', '.join(missing)} in the recall index")
    ambiguous = [card_id for card_id in wanted if len(found[card_id]) > 1]
    if ambiguous:
        raise InvalidInputError(f"{', '.join(ambiguous)} is in more than one store")
    hits = [found[card_id][0] for card_id in wanted]
    cards = kernel_recall.shown(kernel, hits)
    records = []
    for hit, card in zip(hits, cards, strict=True):
        records.append({"id": card.id, "card": card, "record": _record(kernel, hit)})
    return Result(data={"ids": wanted, "returned": len(records), "records": records})


def _record(kernel: Kernel, hit: Hit) -> Any:
    """The record a card stands for, read from its case now (NotFoundError if it is gone)."""
    card = hit.card
    store = kernel.reader(hit.store)
    gone = NotFoundError(f"{card.id} is in the index but no longer in case {card.task_id}")
    if card.kind == "evidence":
        case = store.read_case(card.task_id)
        record = store.find_records(case, "evidence", [card.id]).get(card.id)
        if record is None:
            raise gone
        return record
    if card.kind == "hypothesis":
        doc = store.read_snapshot(card.task_id, "hypotheses.json", Hypotheses)
        hypothesis = next((h for h in (doc.hypotheses if doc else []) if h.id == card.id), None)
        if hypothesis is None:
            raise gone
        cited = sorted({e for event in hypothesis.history for e in event.evidence})
        case = store.read_case(card.task_id)
        evidence = store.find_records(case, "evidence", cited)
        return {
            **msgspec.to_builtins(hypothesis),
            "evidence": [
                _shareable(evidence[e]) if e in evidence else {"id": e, "missing": True}
                for e in cited
            ],
        }
    if card.kind == "decision":
        decisions = store.read_snapshot(card.task_id, "decisions.json", Decisions)
        decision = next(
            (d for d in (decisions.decisions if decisions else []) if d.id == card.id), None
        )
        if decision is None:
            raise gone
        from cortex.kernel.human.decisions import rejected_options

        return {**msgspec.to_builtins(decision), "alreadyRejected": rejected_options(decision)}
    case = store.read_case(card.task_id)
    summary = b""
    try:
        fd = open_for_read(os.path.join(store.case_path(card.task_id), "summary.md"))
    except (CortexError, OSError):
        fd = None
    if fd is not None:
        try:
            summary = os.read(fd, RECALL_SUMMARY_MAX)
        except OSError:
            summary = b""
        finally:
            os.close(fd)
    return {
        "taskId": case.id,
        "goal": case.goal,
        "status": case.status,
        "outcome": case.status_reason,
        "workspace": case.workspace,
        "summary": summary.decode("utf-8", "replace"),
    }


def _shareable(record: Any) -> Any:
    if isinstance(record, Evidence) and record.sensitivity == "sensitive":
        return {"id": record.id, "sensitive": True}
    return record


class Recall(Input):
    """The input of `recall`."""

    query: Annotated[
        str, msgspec.Meta(description="words to look for (letters and digits; no query syntax)")
    ]
    repo: Annotated[
        str | None, msgspec.Meta(description="only cards of this repository or store")
    ] = None
    kinds: Annotated[
        list[str],
        msgspec.Meta(description="only these kinds: hypothesis|decision|outcome|evidence"),
    ] = msgspec.field(default_factory=list)
    statuses: Annotated[
        list[str],
        msgspec.Meta(
            description="only these: rejected|confirmed|active|superseded|overturned|verified|"
            "partial|failed|unverified|notable|contest|resolution"
        ),
    ] = msgspec.field(default_factory=list)
    since: Annotated[
        str | None, msgspec.Meta(description="created at or after: ISO date or time")
    ] = None
    until: Annotated[
        str | None, msgspec.Meta(description="created at or before: ISO date or time")
    ] = None
    limit: Annotated[int, msgspec.Meta(description="cards per page (at most 100)")] = (
        inputs.RECALL_LIMIT
    )
    cursor: Annotated[str | None, msgspec.Meta(description="nextCursor of the last page")] = None
    budget: Annotated[
        int | None,
        msgspec.Meta(description="keep cards within this many estimated tokens (top card always)"),
    ] = None


class RecallGet(Input):
    """The input of `recall get`."""

    ids: Annotated[list[str], msgspec.Meta(description="card ids (hyp_, dec_, ev_, task_), 1-100")]


def search(kernel: Kernel, given: Recall) -> Result:
    """`recall` for one input."""
    return recall(
        kernel,
        given.query,
        repo=given.repo,
        kinds=given.kinds,
        statuses=given.statuses,
        since=given.since,
        until=given.until,
        limit=given.limit,
        cursor=given.cursor,
        budget=given.budget,
    )


def fetch_cards(kernel: Kernel, given: RecallGet) -> Result:
    """`get` for one input."""
    return get(kernel, given.ids)
