"""What the board draws, as rich `Text`: never a markup string, never an unescaped control.

Goals, claims, questions and option labels are written by agents. Every such string goes
through `safe` (terminal controls and bidirectional overrides shown as escapes) and into a
`Text`, which Textual draws as it is: `[bold red]x[/]` in a goal is eleven characters on the
screen, not red text. Textual reads a plain `str` as markup, so nothing here hands it one.
"""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from cortex.screen import ink
from cortex.screen.columns import Column, Layout, fit
from cortex.screen.show import show as show_case
from cortex.screen.text import clean, safe
from cortex.studio.data import Board, Decision, Detail, Option, Row

GOAL_SHOWN = 60
"""Characters of a goal on the board; the detail pane shows all of it."""
LAYOUT = (
    Column("task"),
    Column("status"),
    Column("repo", priority=1),
    Column("decision", priority=2),
    Column("verdict", priority=3),
    Column("lease", priority=4),
    Column("idle", priority=5),
    Column("goal", flexible=True),
)
"""The board's columns by priority (cortex.screen.columns): at 80 columns the id and the phase
stay whole, the least important columns give way first, and the goal takes what is left."""
COLUMNS = tuple(column.name for column in LAYOUT)
FIXED = {"task": 31, "decision": 8, "verdict": 10, "idle": 4}
"""Widths of the columns whose text is bounded (an id, a phase, ...): a board whose idle times
tick over keeps its layout instead of being redrawn each minute."""
WIDEST = {"repo": 24, "lease": 16}
"""The most a repository or lease holder takes on the board (cut with an ellipsis beyond)."""

_STATUS_STYLE = {
    "needs_human_decision": "bold yellow",
    "changing": "cyan",
    "complete": "green",
    "blocked": "red",
    "abandoned": "dim",
    "unreadable": "bold red",
}
_VERDICT_STYLE = {"verified": "green", "partial": "yellow", "failed": "red"}


def _text(value: str | None, style: str = "") -> Text:
    return Text(safe(value or ""), style=style, no_wrap=True, overflow="ellipsis")


def idle(seconds: float | None) -> str:
    """How long a case has gone without an update, coarsely (a board redraws only on change)."""
    if seconds is None:
        return ""
    minutes = int(seconds) // 60
    if minutes < 1:
        return "<1m"
    if minutes < 60:
        return f"{minutes}m"
    if minutes < 48 * 60:
        return f"{minutes // 60}h"
    return f"{minutes // 1440}d"


def cells(row: Row) -> tuple[Text, ...]:
    """The board's cells for one case, in `COLUMNS` order."""
    if row.error is not None:
        blank = _text("")
        return (
            _text(row.task_id),
            _text(row.status, _STATUS_STYLE["unreadable"]),
            _text(row.repository),
            blank,
            blank,
            blank,
            blank,
            _text(row.error, "red"),
        )
    goal = row.goal if len(row.goal) <= GOAL_SHOWN else row.goal[: GOAL_SHOWN - 1] + "\u2026"
    return (
        _text(row.task_id),
        _text(row.status, _STATUS_STYLE.get(row.status, "")),
        _text(row.repository),
        _text("waiting" if row.pending else "", "bold yellow"),
        _text(row.verdict, _VERDICT_STYLE.get(row.verdict or "", "")),
        _text(row.lease),
        _text(idle(row.idle), "yellow" if row.stale else "dim"),
        _text(goal),
    )


def layout(rows: list[tuple[Text, ...]], width: int) -> Layout:
    """Which columns of `LAYOUT` the board draws in `width` characters, and how wide each is."""
    natural = []
    for index, column in enumerate(LAYOUT):
        fixed = FIXED.get(column.name)
        if fixed is not None:
            natural.append(max(fixed, len(column.name)))
            continue
        widest = max((row[index].cell_len for row in rows), default=0)
        cap = WIDEST.get(column.name, widest)
        natural.append(max(len(column.name), min(widest, cap)))
    return fit(LAYOUT, natural, max(width, 1))


class _Collector(ink.Console):
    """A console that keeps what is printed as rich renderables, for a pane to lay out later."""

    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.items: list[RenderableType] = []

    def print(self, *objects: Any) -> None:
        """Keep the objects, as rich's own."""
        self.items.extend(
            o.to_rich() if isinstance(o, ink.Text | ink.Table) else o for o in objects
        )


def detail(shown: Detail | None, *, selected: str | None) -> RenderableType:
    """The detail pane: `case show`'s view of the selected case, or why there is none."""
    if selected is None:
        return Text("No case to show: nothing matches the filters.", style="dim")
    if shown is None or shown.task_id != selected:
        return Text(f"Loading {safe(selected)}\u2026", style="dim")
    if shown.data is None:
        return Text(f"{safe(selected)} cannot be read: {safe(shown.error or '?')}", style="red")
    console = _Collector()
    if shown.decision is not None:
        console.print(Text("Waiting on a person: press a to answer.", style="bold yellow"))
    show_case(console, clean(shown.data))
    return Group(*console.items)


def question(decision: Decision) -> Text:
    """The question of the answer dialog."""
    return Text(safe(decision.id), style="bold") + Text("\n" + safe(decision.question))


def option(choice: Option) -> Text:
    """One choice of the answer dialog: id, label and consequence."""
    prompt = Text(safe(choice.id), style="bold") + Text(f"  {safe(choice.label)}")
    if choice.consequence:
        prompt += Text(f"\n    {safe(choice.consequence)}", style="dim")
    return prompt


def _clock(moment: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(moment))


def status(
    board: Board | None,
    *,
    query: str | None,
    active: bool,
    failure: tuple[float, str] | None,
    notice: tuple[str, bool] | None,
    repo: str | None = None,
) -> Text:
    """The status line: what is shown, when it was read, and what went wrong or was done."""
    line = Text()
    if board is None:
        line += Text("loading\u2026", style="dim")
    else:
        line += Text(f"{len(board.rows)} of {board.total} case(s) in {board.stores} store(s)")
        if board.truncated:
            line += Text(" (newest shown)", style="dim")
        line += Text(f" · read {_clock(board.at)}", style="dim")
    if repo:
        line += Text(" · repo ", style="cyan") + Text(safe(repo))
    if active:
        line += Text(" · active only", style="cyan")
    if query:
        line += Text(" · matching ", style="cyan") + Text(safe(query))
    if failure is not None:
        at, message = failure
        kept = " (showing the last good view)" if board is not None else ""
        line += Text(f" · refresh failed at {_clock(at)}{kept}: ", style="bold red")
        line += Text(safe(message), style="red")
    if notice is not None:
        message, is_error = notice
        line += Text(" · ") + Text(safe(message), style="bold red" if is_error else "green")
    return line
