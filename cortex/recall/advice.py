"""What recall tells a case's writer unasked: the brief at `case open`, the plan warning.

docs/design/recall.md, "Budgets". The brief: rejected hypotheses and active decisions come
first; a contested decision comes with the evidence contesting it, so both sides are read
together, and a contest whose decision is no longer in force is left out (`brief_groups`);
the kernel (`cortex.kernel.recall.brief`) spends the token budget over these groups. The plan
warning: each new hypothesis that repeats one an earlier case rejected (`repeats`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortex.cases.bounds import BRIEF_TOKENS, RECALL_TERMS_MAX
from cortex.recall.cards import Card
from cortex.recall.index import Filters, Hit, Index
from cortex.recall.terms import content_terms, overlap

MATCH_OVERLAP = 0.6
"""Term overlap (Jaccard, common words left out) at which a hypothesis repeats a rejected one."""


def _priority(card: Card) -> bool:
    return (card.kind, card.status) in {("hypothesis", "rejected"), ("decision", "active")}


def brief_groups(index: Index, root: str, hits: list[Hit]) -> list[list[Hit]]:
    """Hits in brief order, each contested decision grouped with its open contests."""
    first = [hit for hit in hits if _priority(hit.card)]
    rest = [hit for hit in hits if not _priority(hit.card)]
    groups: list[list[Hit]] = []
    placed: set[str] = set()
    for hit in [*first, *rest]:
        card = hit.card
        if card.id in placed:
            continue
        if card.kind == "evidence" and card.status == "contest":
            decision = _contested(index, root, card)
            if decision is None or decision.card.id in placed:
                continue  # its decision is superseded, overturned or already shown
            hit = decision  # noqa: PLW2901 - the pair is led by its decision
        group = [hit]
        placed.add(hit.card.id)
        if hit.card.kind == "decision" and "[contested]" in hit.card.labels:
            for contest in _contests(index, root, hit.card.id):
                if contest.card.id not in placed:
                    group.append(contest)
                    placed.add(contest.card.id)
        groups.append(group)
    return groups


def _contested(index: Index, root: str, contest: Card) -> Hit | None:
    """The active decision of this store a contest names, if any."""
    target = contest.contests or ""
    for hit in index.by_ids([target]).get(target, []):
        if hit.store == root and hit.card.status == "active":
            return hit
    return None


def _contests(index: Index, root: str, decision_id: str) -> list[Hit]:
    """The open contests of a decision, as hits of this store."""
    ids = index.open_contests(root, decision_id)
    found = index.by_ids(ids)
    return [hit for i in ids for hit in found.get(i, []) if hit.store == root]


def brief_answer(
    kept: list[Card], skipped: list[Card], total: int | None, index: str, *, tokens: int = 0
) -> dict[str, Any]:
    """The brief as a case's `open` answers it: the cards kept, what was skipped, the budget."""
    return {
        "cards": kept,
        "returned": len(kept),
        "considered": total,
        "tokens": tokens,
        "budget": BRIEF_TOKENS,
        "skipped": len(skipped),
        "skippedIds": [card.id for card in skipped],
        "truncated": bool(skipped),
        "index": index,
    }


def repeats(
    index: Index, root: str, task_id: str, statements: Sequence[str]
) -> list[tuple[int, float, Hit]]:
    """Each rejected hypothesis of this store a statement repeats, `task_id`'s own left out.

    As (the statement's number, from 1; the overlap of their terms; the card's hit).
    """
    found: list[tuple[int, float, Hit]] = []
    filters = Filters(
        store=root, exclude_task=task_id, kinds=("hypothesis",), statuses=("rejected",)
    )
    for number, statement in enumerate(statements, 1):
        words = content_terms(statement)[:RECALL_TERMS_MAX]
        _, hits = index.search(words, filters, limit=10)
        for hit in hits:
            similarity = overlap(words, content_terms(hit.card.title))
            if similarity >= MATCH_OVERLAP:
                found.append((number, similarity, hit))
    return found
