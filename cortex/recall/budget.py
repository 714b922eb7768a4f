"""Token budgets: which cards of an ordered list fit, the top one always (docs/design/recall.md).

The walk keeps the first group whatever it costs, then every later group that still fits, and
skips (and counts) a group that does not, going on with the next: one big card never ends the
walk for the small ones after it. A group is a card with what must be read with it (a contested
decision and the evidence contesting it), kept or skipped whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class Walk(Generic[T]):
    """What a budget walk kept and skipped, and the tokens the kept items take."""

    __slots__ = ("kept", "skipped", "tokens")

    def __init__(self, kept: list[T], skipped: list[T], tokens: int) -> None:
        self.kept = kept
        self.skipped = skipped
        self.tokens = tokens


def walk(
    groups: Sequence[Sequence[T]],
    cost: Callable[[T], int],
    budget: int | None,
    *,
    max_items: int | None = None,
) -> Walk[T]:
    """Keep groups in order within `budget` tokens and `max_items` items (None: no bound)."""
    kept: list[T] = []
    skipped: list[T] = []
    used = 0
    for index, group in enumerate(groups):
        price = sum(cost(item) for item in group)
        room = budget is None or used + price <= budget
        count = max_items is None or len(kept) + len(group) <= max_items
        if index == 0 or (room and count):
            if index == 0 and max_items is not None:
                group = group[: max(max_items, 1)]  # noqa: PLW2901 - the top group, bounded
                price = sum(cost(item) for item in group)
            kept.extend(group)
            used += price
        else:
            skipped.extend(group)
    return Walk(kept, skipped, used)
