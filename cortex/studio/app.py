"""The Textual application: the board, the detail pane, the status line and the answer dialog.

Loading happens in workers that hand the blocking kernel calls to a thread, so the screen stays
live while a slow git capture runs. One board load runs at a time; a refresh asked for
meanwhile (a tick, a key, a new search) runs once that one ends. A load that fails changes
nothing on the board but the status line.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from cortex.kernel import inputs
from cortex.screen.columns import Layout
from cortex.studio import view
from cortex.studio.data import Answered, Board, Decision, Detail, Failure, Source, choose

_CSS = """
#search { margin: 0 1; }
#board { height: 45%; }
#pane { height: 1fr; border-top: solid $primary; padding: 0 1; }
#status { height: auto; max-height: 3; padding: 0 1; background: $panel; }
AnswerScreen { align: center middle; }
#dialog {
    width: 90%; max-width: 110; height: auto; max-height: 90%;
    border: thick $warning; background: $surface; padding: 1 2;
}
#dialog OptionList { height: auto; max-height: 20; margin: 1 0; }
"""


class AnswerScreen(ModalScreen[str | None]):
    """The pending decision's options; choosing one dismisses with its id, escape with None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    AUTO_FOCUS = "#options"

    def __init__(self, task_id: str, decision: Decision) -> None:
        super().__init__()
        self.task_id = task_id
        self.decision = decision

    def compose(self) -> ComposeResult:
        """The question, the options, and how to choose."""
        with Vertical(id="dialog"):
            yield Static(view.question(self.decision), markup=False, id="question")
            yield OptionList(
                *(Option(view.option(o), id=o.id) for o in self.decision.options), id="options"
            )
            yield Static(
                Text("enter answers, recorded as studio · escape cancels", style="dim"),
                markup=False,
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Answer with the chosen option."""
        self.dismiss(event.option_id)

    def action_cancel(self) -> None:
        """Close without answering."""
        self.dismiss(None)


class _Table(DataTable[Text]):
    """The board's table: it tells the app when its size changes, to lay the columns out."""

    def __init__(self, resized: Callable[[], None], **options: Any) -> None:
        super().__init__(**options)
        self._resized = resized

    def on_resize(self, event: events.Resize) -> None:
        """A new width can fit more columns, or fewer."""
        del event
        self._resized()


class StudioApp(App[None]):
    """The live board."""

    TITLE = "cortex studio"
    CSS = _CSS
    ENABLE_COMMAND_PALETTE = False
    AUTO_FOCUS = "#board"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "search"),
        Binding("f", "toggle_active", "active only"),
        Binding("a", "answer", "answer"),
        Binding("r", "refresh", "refresh"),
        Binding("q", "quit", "quit"),
        Binding("escape", "leave_search", show=False),
    ]
    _MODAL_BLOCKED = frozenset({"search", "toggle_active", "answer", "refresh", "leave_search"})

    def __init__(
        self,
        source: Source,
        *,
        refresh: float = inputs.STUDIO_REFRESH,
        active: bool = False,
        repo: str | None = None,
        query: str | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.refresh_seconds = refresh
        self.answered: list[Answered] = []
        self.board: Board | None = None
        self.shown: Detail | None = None
        self.selected: str | None = None
        self.query_text: str | None = query
        self.active_only = active
        self.repo = repo
        """`--repo`: fixed for the session (the search box and `f` change the other two)."""
        self._layout: Layout | None = None
        """The columns the table holds now, and their widths (see `view.layout`)."""
        self.failure: tuple[float, str] | None = None
        self.notice: tuple[str, bool] | None = None
        self._drawn: tuple[tuple[str, tuple[Text, ...]], ...] = ()
        """What the table holds now: each case's id and cells."""
        # Held, not queried: a load or a highlight can finish while the app closes, after the
        # screen has dropped its children, and a query would then raise instead of a no-op.
        self.search = Input(
            placeholder="search goals and task ids (/ to search, enter or escape to go back)",
            max_length=inputs.QUERY_MAX,
            id="search",
        )
        self.table: DataTable[Text] = _Table(
            self.relayout, id="board", cursor_type="row", zebra_stripes=True
        )
        self.pane = Static(view.detail(None, selected=None), markup=False, id="detail")
        self.status_bar = Static(id="status", markup=False)
        self._loading = False
        self._again = False

    def compose(self) -> ComposeResult:
        """Search box, board, detail pane, status line, keys."""
        yield self.search
        yield self.table
        with VerticalScroll(id="pane"):
            yield self.pane
        yield self.status_bar
        yield Footer()

    def on_mount(self) -> None:
        """Set the columns up, load once, then on every tick."""
        self._set_columns(view.layout([], self._width()))
        if self.query_text:
            self.search.value = self.query_text  # `--query`, there to edit like a typed search
        self._draw_status()
        self.set_interval(self.refresh_seconds, self.action_refresh)
        self.action_refresh()

    def relayout(self) -> None:
        """Lay the columns out again for a new width (the id and phase always fit)."""
        if self.board is not None and self.table.is_attached:
            self._drawn = ()
            self._draw_rows(self.board)

    def _width(self) -> int:
        """Characters the board's columns may take.

        The terminal's width less the table's cell padding at both edges and a scrollbar.
        """
        return self.size.width - 2 - max(self.table.scrollbar_size_vertical, 2)

    def _set_columns(self, layout: Layout) -> None:
        self._layout = layout
        self.table.clear(columns=True)
        for index, width in zip(layout.kept, layout.widths, strict=True):
            name = view.COLUMNS[index]
            self.table.add_column(Text(name, style="bold"), width=width, key=name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the answer dialog is open, only it (and quit) takes keys."""
        del parameters
        return not (isinstance(self.screen, AnswerScreen) and action in self._MODAL_BLOCKED)

    # Loading.

    def action_refresh(self) -> None:
        """Reload the board now (also what every tick does)."""
        if self._loading:
            self._again = True
            return
        self._loading = True
        self.run_worker(self._load_board(), group="board")

    async def _load_board(self) -> None:
        try:
            again = True
            while again:
                self._again = False
                asked = (self.query_text, self.active_only)
                result = await asyncio.to_thread(
                    self.source.board,
                    query=asked[0],
                    active=asked[1],
                    selected=self.selected,
                    repo=self.repo,
                )
                if not self.table.is_attached:
                    return  # the app is closing: nothing left to draw on
                if asked != (self.query_text, self.active_only):
                    # The filters changed while this ran: its rows answer an old question.
                    self._again = True
                elif isinstance(result, Failure):
                    self.failure = (time.time(), result.message)
                    self._draw_status()
                else:
                    self._apply(result)
                again = self._again
        finally:
            self._loading = False

    def _apply(self, board: Board) -> None:
        self.board = board
        self.failure = None
        self._draw_rows(board)
        self.selected = choose(board.rows, self.selected)
        if board.detail is not None and board.detail.task_id == self.selected:
            self._show_detail(board.detail)
        else:
            self._draw_detail()
        self._draw_status()

    def _draw_rows(self, board: Board) -> None:
        table = self.table
        # Compared as drawn, not as loaded: idle seconds change on every load, their minutes
        # rarely, and an unchanged board is not redrawn.
        every = [view.cells(row) for row in board.rows]
        layout = view.layout(every, self._width())
        drawn = tuple(
            (row.task_id, tuple(cells[i] for i in layout.kept))
            for row, cells in zip(board.rows, every, strict=True)
        )
        previous, self._drawn = self._drawn, drawn
        if layout != self._layout:
            self._set_columns(layout)
            previous = ()
        elif _looks(drawn) == _looks(previous):
            return
        if previous and [key for key, _ in drawn] == [key for key, _ in previous]:
            # The same cases in the same order: update the lines that changed, in place, so
            # the cursor and the scroll position stay where the person left them.
            columns = list(table.columns)
            for (key, new), (_, old) in zip(drawn, previous, strict=True):
                if _looks(((key, new),)) != _looks(((key, old),)):
                    for column, cell in zip(columns, new, strict=True):
                        table.update_cell(key, column, cell)
            return
        table.clear()
        for key, cells in drawn:
            table.add_row(*cells, key=key)
        keep = choose(board.rows, self.selected)
        if keep is not None:
            table.move_cursor(row=table.get_row_index(keep))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Show the case under the cursor (reading where the cursor is now, not the event)."""
        del event
        table = self.table
        if not (table.is_attached and table.row_count):
            return
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        if key is None or key == self.selected:
            return
        self.selected = key
        self._draw_detail()
        self.run_worker(self._load_detail(key), group="detail", exclusive=True)

    async def _load_detail(self, task_id: str) -> None:
        shown = await asyncio.to_thread(self.source.detail, task_id)
        if task_id == self.selected and self.table.is_attached:
            self._show_detail(shown)
            self._draw_status()

    def _show_detail(self, shown: Detail) -> None:
        if shown.data is None and self.shown is not None and self.shown.task_id == shown.task_id:
            # The case was readable a moment ago: keep that view and say why it is not fresh.
            self.failure = (time.time(), shown.error or "the case cannot be read")
        else:
            self.shown = shown
        self._draw_detail()

    # Drawing.

    def _draw_detail(self) -> None:
        self.pane.update(view.detail(self.shown, selected=self.selected))

    def _draw_status(self) -> None:
        line = view.status(
            self.board,
            query=self.query_text,
            active=self.active_only,
            failure=self.failure,
            notice=self.notice,
            repo=self.repo,
        )
        self.status_bar.update(line)

    def _note(self, message: str, *, error: bool = False) -> None:
        self.notice = (message, error)
        self._draw_status()

    # Filters.

    def action_search(self) -> None:
        """Type to filter by goal or task id."""
        self.search.focus()

    def action_leave_search(self) -> None:
        """Back to the board."""
        self.table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as the person types."""
        self.query_text = event.value.strip() or None
        self._draw_status()
        self.action_refresh()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the search box goes back to the board."""
        del event
        self.action_leave_search()

    def action_toggle_active(self) -> None:
        """Show only cases that are not closed, or every case."""
        self.active_only = not self.active_only
        self._draw_status()
        self.action_refresh()

    # Answering: the board's only write.

    def action_answer(self) -> None:
        """Open the answer dialog for the selected case's pending decision."""
        shown = self.shown
        if self.selected is None:
            self._note("no case is selected", error=True)
        elif shown is None or shown.task_id != self.selected or shown.data is None:
            self._note(f"{self.selected} is not loaded yet; try again in a moment", error=True)
        elif shown.decision is None:
            self._note(f"{self.selected} is not waiting on a decision", error=True)
        else:

            def chosen(option: str | None) -> None:
                if option is None:
                    self._note("answer cancelled; nothing was written")
                else:
                    self.run_worker(self._answer(shown, option), group="answer")

            self.push_screen(AnswerScreen(shown.task_id, shown.decision), chosen)

    async def _answer(self, shown: Detail, option: str) -> None:
        decision_id = shown.decision.id if shown.decision else "?"
        self._note(f"answering {decision_id} of {shown.task_id} with {option}\u2026")
        outcome = await asyncio.to_thread(self.source.answer, shown, option)
        if isinstance(outcome, Failure):
            self._note(outcome.message, error=True)
        else:
            self.answered.append(outcome)
            self._note(
                f"answered {outcome.decision_id} with {outcome.option}: "
                f"{outcome.task_id} is {outcome.status}"
            )
        self.action_refresh()


def _looks(drawn: tuple[tuple[str, tuple[Text, ...]], ...]) -> list[object]:
    """What a person sees of some rows: ids, text and style (a Text compares only the text)."""
    return [(key, [(cell.plain, str(cell.style)) for cell in cells]) for key, cells in drawn]
