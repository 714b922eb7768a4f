"""cortex.screen.ink: plain text into a pipe (no padding, no wrapping), rich's at a terminal."""

from __future__ import annotations

import io

from cortex.screen.ink import Console, Table, TerminalConsole, Text, cell_len, console_for


def plain(*objects: Text | Table | str) -> str:
    out = io.StringIO()
    Console(out).print(*objects)
    return out.getvalue()


def test_text_keeps_its_characters_and_styled_spans() -> None:
    line = Text("Opened ", style="bold green") + Text("task_1", style="bold")
    line += " in repo"
    line.append(Text("!", style="red"))
    assert line.plain == "Opened task_1 in repo!"
    assert line.spans == [(0, 7, "bold green"), (7, 13, "bold"), (21, 22, "red")]
    rich = line.to_rich()
    assert rich.plain == line.plain
    assert [(s.start, s.end, str(s.style)) for s in rich.spans] == line.spans


def test_a_grid_into_a_pipe_is_aligned_and_never_padded_or_wrapped() -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    long = "x" * 300
    table.add_row("goal", Text(long))
    table.add_row("workspace", Text("repo\nsecond line"))
    table.add_row("漢字", "wide")
    assert plain(table).splitlines() == [
        f"goal       {long}",
        "workspace  repo",
        "           second line",
        "漢字       wide",
    ]


def test_a_table_with_a_header_into_a_pipe() -> None:
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("ID")
    table.add_column("GOAL")
    table.add_row(Text("task_1"), Text("hello"))
    table.add_row(Text("t2"), Text("a longer goal"))
    assert plain(table) == "ID      GOAL\ntask_1  hello\nt2      a longer goal\n"


def test_text_and_tables_in_one_print_are_laid_out_as_rich_lays_them() -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column()
    table.add_column()
    table.add_row("goal", "fix it")
    assert plain(Text("a"), "b", table, Text("c")) == "a b\ngoal  fix it\nc\n"
    assert plain() == "\n"


def test_cell_length_counts_wide_and_combining_characters() -> None:
    assert cell_len("abc") == 3
    assert cell_len("漢字") == 4
    assert cell_len("e\u0301") == 1


def test_a_pipe_gets_the_plain_console_and_a_terminal_rich() -> None:
    assert type(console_for(io.StringIO())) is Console

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(console_for(Terminal()), TerminalConsole)


def test_at_a_terminal_rich_draws_the_same_characters() -> None:
    out = io.StringIO()
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("goal", Text("fix it", style="dim"))
    TerminalConsole(out, width=80, force_terminal=True, color_system=None).print(
        Text("Opened ", style="bold") + Text("task_1"), table
    )
    assert [line.rstrip() for line in out.getvalue().splitlines()] == [
        "Opened task_1",
        "goal  fix it",
    ]
