"""Styled text that needs rich only when a terminal draws it: what the CLI's renderers build.

A renderer builds `Text` (characters with styled spans) and `Table`s and prints them on the
console `console_for` gives it. Into a pipe or a file that console writes the characters and
nothing else: no styles, no padding at the end of a line, no wrapping, and rich is never
imported (it costs 35-50 ms, more than the rest of a call; docs/benchmarks.md). At a terminal
the console hands each object to rich, converted, so people see what rich draws.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
    from rich.table import Table as RichTable
    from rich.text import Text as RichText


def cell_len(text: str) -> int:
    """Columns `text` takes on a terminal: wide East Asian characters two, combining marks 0."""
    if text.isascii():
        return len(text)
    import unicodedata

    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in {"W", "F"} else 1
    return width


class Text:
    """A string with styled spans (rich's style names), built by `+`, `+=` and `append`."""

    __slots__ = ("plain", "spans")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text
        self.spans: list[tuple[int, int, str]] = [(0, len(text), style)] if style and text else []

    def append(self, text: Text | str, style: str = "") -> Text:
        """Add `text` at the end (a `str` in `style`); returns self."""
        other = text if isinstance(text, Text) else Text(text, style)
        start = len(self.plain)
        self.plain += other.plain
        self.spans.extend((start + a, start + b, s) for a, b, s in other.spans)
        return self

    def __add__(self, other: Text | str) -> Text:
        joined = Text(self.plain)
        joined.spans = list(self.spans)
        return joined.append(other)

    def __iadd__(self, other: Text | str) -> Self:
        self.append(other)
        return self

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Text({self.plain!r})"

    def __len__(self) -> int:
        return len(self.plain)

    @property
    def cell_len(self) -> int:
        """Columns the text takes on a terminal."""
        return cell_len(self.plain)

    def to_rich(self) -> RichText:
        """The same text and styles as rich's `Text`, for a terminal."""
        from rich.text import Text as RichText

        text = RichText(self.plain)
        for start, end, style in self.spans:
            text.stylize(style, start, end)
        return text


class _Column:
    __slots__ = ("header", "no_wrap", "overflow", "style", "width")

    def __init__(
        self, header: str, style: str, no_wrap: bool, overflow: str, width: int | None
    ) -> None:
        self.header, self.style, self.no_wrap = header, style, no_wrap
        self.overflow, self.width = overflow, width


class Table:
    """Rows of cells in columns: a grid (no header) or a table with a header row.

    Into a pipe each column is as wide as its widest cell, columns are `gap` spaces apart, a
    line ends with its last character, and nothing is cut or wrapped (a cell's own line breaks
    continue under its column).
    """

    def __init__(
        self,
        *,
        box: None = None,
        header_style: str = "",
        pad_edge: bool = False,
        show_header: bool = True,
        padding: tuple[int, int] | int = (0, 1),
    ) -> None:
        del box, pad_edge  # what rich draws by default here: no box, no outer padding
        self.header_style = header_style
        self.show_header = show_header
        across = padding if isinstance(padding, int) else padding[1]
        self.gap = 2 * across if show_header else across
        self.columns: list[_Column] = []
        self.rows: list[list[Text]] = []

    @classmethod
    def grid(cls, *, padding: tuple[int, int] | int = 0) -> Table:
        """Columns with no header; `padding` (rows, columns) puts that many spaces between."""
        return cls(show_header=False, padding=padding)

    def add_column(
        self,
        header: str = "",
        *,
        style: str = "",
        no_wrap: bool = False,
        overflow: str = "fold",
        width: int | None = None,
    ) -> None:
        """A column; `style`, `no_wrap`, `overflow` and `width` matter only at a terminal."""
        self.columns.append(_Column(header, style, no_wrap, overflow, width))

    def add_row(self, *cells: Text | str) -> None:
        """A row, one cell a column."""
        self.rows.append([cell if isinstance(cell, Text) else Text(cell) for cell in cells])

    def lines(self) -> list[str]:
        """The table as plain lines, for a pipe."""
        rows = [[Text(column.header) for column in self.columns]] if self.show_header else []
        rows += self.rows
        split = [[cell.plain.split("\n") for cell in row] for row in rows]
        widths = [
            max((cell_len(part) for row in split for part in row[index]), default=0)
            for index in range(len(self.columns))
        ]
        out: list[str] = []
        for row in split:
            for depth in range(max((len(cell) for cell in row), default=1)):
                parts = [cell[depth] if depth < len(cell) else "" for cell in row]
                padded = (part + " " * (widths[i] - cell_len(part)) for i, part in enumerate(parts))
                line = (" " * self.gap).join(padded)
                out.append(line.rstrip())
        return out

    def to_rich(self) -> RichTable:
        """The same table as rich's, for a terminal."""
        from rich.table import Table as RichTable

        if self.show_header:
            table = RichTable(box=None, header_style=self.header_style, pad_edge=False)
        else:
            table = RichTable.grid(padding=(0, self.gap))
        for column in self.columns:
            table.add_column(
                column.header,
                style=column.style,
                no_wrap=column.no_wrap,
                overflow=column.overflow,  # type: ignore[arg-type]
                width=column.width,
            )
        for row in self.rows:
            table.add_row(*(cell.to_rich() for cell in row))
        return table


class Console:
    """Prints `Text`, `Table` and plain strings to a pipe or a file: characters only."""

    is_terminal = False
    width: int | None = None

    def __init__(self, file: IO[str]) -> None:
        self.file = file

    def print(self, *objects: Text | Table | str) -> None:
        """Text on one line, space-separated; a table on lines of its own, as rich prints."""
        lines: list[str] = []
        words: list[str] = []
        for thing in objects:
            if isinstance(thing, Table):
                if words:
                    lines.append(" ".join(words))
                    words = []
                lines.extend(thing.lines())
            else:
                words.append(str(thing))
        if words or not lines:
            lines.append(" ".join(words))
        self.file.write("".join(line + "\n" for line in lines))


class TerminalConsole(Console):
    """Prints through rich, for a person at a terminal: styles, and the terminal's width."""

    def __init__(self, file: IO[str], **options: Any) -> None:
        """`options` go to rich's console (a test gives `width` and `force_terminal`)."""
        from rich.console import Console as RichConsole

        super().__init__(file)
        self.rich: RichConsole = RichConsole(file=file, highlight=False, soft_wrap=True, **options)
        self.is_terminal = self.rich.is_terminal
        self.width = self.rich.width

    def print(self, *objects: Text | Table | str) -> None:
        """The objects as rich draws them."""
        self.rich.print(*_converted(objects))


def _converted(objects: Iterable[Any]) -> list[Any]:
    return [thing.to_rich() if isinstance(thing, Text | Table) else thing for thing in objects]


def console_for(stream: IO[str]) -> Console:
    """A plain console off a terminal (rich is not imported), rich's at one."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return TerminalConsole(stream) if terminal else Console(stream)
