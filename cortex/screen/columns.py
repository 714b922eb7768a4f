"""Which columns of a table fit a width, by priority: ids stay whole, the goal takes the rest.

A table of cases is read for its ids (what a person copies) and phases. When a row is wider
than the terminal, squeezing every column evenly cuts the id to a few characters; instead the
least important columns are left out, one at a time, and the one flexible column (the goal)
gets what is left, cut with an ellipsis. Off a terminal (a pipe, a file) nothing is left out
and nothing is cut: `fit` is given no width.

The CLI's tables (`case list`, `case sessions`) and the studio's board share this, so an
80-column terminal shows the same columns in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from cortex.screen.ink import Console, Table, Text

FLEX_MIN = 10
"""The narrowest the flexible column is drawn before a less important column is dropped."""


class Column(NamedTuple):
    """One column: its header, how important it is (0: always kept), whether it flexes."""

    name: str
    priority: int = 0
    flexible: bool = False


class Layout(NamedTuple):
    """The columns kept, in their order, and the width of each (the flexible one's included)."""

    kept: tuple[int, ...]
    widths: tuple[int, ...]


def fit(
    columns: Sequence[Column],
    natural: Sequence[int],
    width: int | None,
    *,
    gap: int = 2,
) -> Layout:
    """The columns to draw in `width` characters, given each column's natural (widest) width.

    Columns with the highest priority number go first; priority 0 is never dropped. The
    flexible column keeps at least `FLEX_MIN` (or its natural width, if narrower) while any
    column can still be dropped; after that it gets whatever is left, and is dropped itself
    only when nothing is left for it. `width` None means unlimited: everything at full width.
    """
    kept = list(range(len(columns)))
    if width is None:
        return Layout(tuple(kept), tuple(natural[i] for i in kept))
    flex = next((i for i, c in enumerate(columns) if c.flexible), None)

    def fixed(indices: list[int]) -> int:
        return sum(natural[i] for i in indices if i != flex) + gap * (len(indices) - 1)

    def wanted(indices: list[int]) -> int:
        if flex is None or flex not in indices:
            return fixed(indices)
        return fixed(indices) + min(natural[flex], FLEX_MIN)

    droppable = sorted(
        (i for i, c in enumerate(columns) if c.priority > 0 and i != flex),
        key=lambda i: (-columns[i].priority, -i),
    )
    while wanted(kept) > width and droppable:
        kept.remove(droppable.pop(0))
    widths = [natural[i] for i in kept]
    if flex is not None and flex in kept:
        room = width - fixed(kept)
        if room <= 0:
            kept.remove(flex)
            widths = [natural[i] for i in kept]
        else:
            widths[kept.index(flex)] = min(natural[flex], room)
    return Layout(tuple(kept), tuple(widths))


def print_table(console: Console, columns: Sequence[Column], rows: list[list[Text]]) -> None:
    """Print rows as a table that fits the terminal by priority; off a terminal, whole.

    Off a terminal every column and every goal is printed uncut, and no line is padded after
    its last cell (a pipe is read by programs).
    """
    natural = [
        max(len(column.name), *(row[index].cell_len for row in rows))
        for index, column in enumerate(columns)
    ]
    width = console.width if console.is_terminal else None
    layout = fit(columns, natural, width)
    table = Table(box=None, header_style="bold", pad_edge=False)
    for index, size in zip(layout.kept, layout.widths, strict=True):
        column = columns[index]
        table.add_column(
            column.name,
            width=size,
            no_wrap=True,
            overflow="ellipsis" if column.flexible else "crop",
        )
    for row in rows:
        table.add_row(*(row[index] for index in layout.kept))
    console.print(table)
