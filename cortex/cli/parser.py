"""The argument parser: strict, so that a mistyped option is an error and never ignored.

argparse is used with three changes: no abbreviations (`--cla` is not `--claim`), a single-valued
option given twice is an error, and every parse error raises `UsageError` (exit 4 with the
envelope) instead of printing usage and exiting 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from cortex import __version__
from cortex.cases.errors import InvalidInputError


class UsageError(InvalidInputError):
    """The command line itself is wrong: unknown, duplicate or missing options."""


class StrictParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting on errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("exit_on_error", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing usage to stderr and exiting 2."""
        raise UsageError(f"{self.prog}: {message}")


class Once(argparse.Action):
    """Store a value, refusing a second occurrence of the option."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        """Record the option, or refuse it when it was already given."""
        given: set[str] = namespace.__dict__.setdefault("_given", set())
        if self.dest in given:
            parser.error(f"{option_string} is given more than once")
        given.add(self.dest)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def _flag(
    parser: argparse.ArgumentParser, *names: str, help_text: str, dest: str | None = None
) -> None:
    kwargs: dict[str, Any] = {"action": Once, "nargs": 0, "default": False, "help": help_text}
    if dest:
        kwargs["dest"] = dest
    parser.add_argument(*names, **kwargs)


def _common(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "--json", help_text="print exactly one JSON envelope on stdout")
    parser.add_argument(
        "-C", "--workspace", action=Once, metavar="DIR", help="run as if started in DIR"
    )


def _writer(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--actor", action=Once, help="who is acting (default: $CORTEX_ACTOR or cli)"
    )
    parser.add_argument(
        "--expect-revision",
        action=Once,
        type=int,
        metavar="N",
        help="fail with exit 6 unless the case is still at revision N",
    )


def build_parser() -> StrictParser:
    """The whole `cortex` command tree."""
    root = StrictParser(prog="cortex", description="A durable case file for every agent task.")
    root.add_argument("--version", action="version", version=f"cortex {__version__}")
    _flag(root, "--json", dest="top_json", help_text="print exactly one JSON envelope on stdout")
    root.add_argument("-C", "--workspace", action=Once, dest="top_workspace", metavar="DIR")
    groups = root.add_subparsers(dest="group", metavar="COMMAND", parser_class=StrictParser)
    groups.required = True
    case = groups.add_parser("case", help="open, record, inspect and audit task cases")
    commands = case.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=StrictParser)
    commands.required = True

    opener = commands.add_parser("open", help="open a case for a goal")
    opener.add_argument("goal", help="what the task should achieve")
    opener.add_argument("--mode", action=Once, default="change", help="change|investigate|review")
    opener.add_argument("--risk", action=Once, default="medium", help="low|medium|high")
    opener.add_argument(
        "--surface", action="append", help="code|browser|terminal|artifact|secret (repeatable)"
    )
    opener.add_argument(
        "--criterion", action="append", metavar="ID=STATEMENT", help="acceptance criterion"
    )
    opener.add_argument(
        "--idempotency-key",
        action=Once,
        metavar="KEY",
        help="a retry with the same key returns the same case",
    )
    opener.add_argument(
        "--actor", action=Once, help="who is acting (default: $CORTEX_ACTOR or cli)"
    )
    _common(opener)

    lister = commands.add_parser("list", help="cases in this workspace's store, newest first")
    lister.add_argument("--limit", action=Once, type=int, default=50, metavar="N")
    _common(lister)

    status = commands.add_parser("status", help="where a case stands")
    status.add_argument("task", help="task id")
    _common(status)

    evidence = commands.add_parser("evidence", help="record evidence")
    ev_commands = evidence.add_subparsers(
        dest="action", metavar="ACTION", parser_class=StrictParser
    )
    ev_commands.required = True
    add = ev_commands.add_parser("add", help="append one piece of evidence")
    add.add_argument("task", help="task id")
    add.add_argument("--claim", action=Once, required=True, help="what the evidence shows")
    add.add_argument("--kind", action=Once, default="observation", help="evidence kind")
    add.add_argument(
        "--source", action=Once, default="agent", metavar="TOOL", help="producing tool"
    )
    add.add_argument("--uri", action=Once, help="where the source can be found")
    add.add_argument("--origin", action=Once, default="agent", help="agent|human|reviewer|tool")
    add.add_argument("--file", action=Once, metavar="PATH", help="repository-relative file")
    add.add_argument("--line", action=Once, metavar="N[-M]", help="line or line range")
    add.add_argument("--symbol", action=Once, help="symbol the claim is about")
    add.add_argument("--confidence", action=Once, default="unknown", help="high|medium|low|unknown")
    _flag(add, "--sensitive", help_text="mark the record sensitive")
    add.add_argument(
        "--raw-file", action=Once, metavar="PATH", help="raw tool output to keep ('-' reads stdin)"
    )
    add.add_argument(
        "--derived-from", action="append", metavar="EV_ID", help="evidence this one builds on"
    )
    _writer(add)
    _common(add)

    note = commands.add_parser("note", help="add a free-text note to a case")
    note.add_argument("task", help="task id")
    note.add_argument("text", help="the note")
    note.add_argument("--origin", action=Once, default="agent", help="agent|human|reviewer|tool")
    _writer(note)
    _common(note)

    reader = commands.add_parser("read-evidence", help="print one evidence record in full")
    reader.add_argument("task", help="task id")
    reader.add_argument("evidence", help="evidence id")
    _common(reader)

    auditor = commands.add_parser("audit", help="check a case's integrity (read-only)")
    auditor.add_argument("task", help="task id")
    _common(auditor)
    return root


COMMAND_WORDS = {
    "case": {"open", "list", "status", "evidence", "note", "read-evidence", "audit"},
    "evidence": {"add"},
}


def command_name(argv: Sequence[str]) -> str:
    """The dotted command name (`case.evidence.add`) as far as argv spells it, for envelopes."""
    words: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in {"-C", "--workspace"}:
            skip = True
            continue
        if arg.startswith("-"):
            continue
        expected = COMMAND_WORDS.get(words[-1]) if words else {"case"}
        if expected is None or arg not in expected:
            break
        words.append(arg)
    return ".".join(words) or "cortex"
