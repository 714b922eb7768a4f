"""The strict parser of the command line grammar (`cortex.cli.grammar`), and `--help`.

Why not argparse: building argparse's tree for every call costs about 10 ms here (gettext
lookups, regex compilation, a shutil import), which is a quarter of an `evidence add`; and its
defaults are lenient where ours must be strict. Here an unknown option, a single-valued option
given twice, a missing value or a stray argument is a `UsageError` (exit 4 with the envelope);
options are never abbreviated; and a value may begin with `-` unless it is itself an option of
the command (so `--claim --json` is a missing value, while `--claim "-1 is wrong"` is a claim).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from cortex import __version__
from cortex.cli.grammar import COMMANDS, GLOBAL, GROUPS, Cmd, Opt
from cortex.kernel import inputs
from cortex.kernel.errors import InvalidInputError, option_spelling


class UsageError(InvalidInputError):
    """The command line itself is wrong: unknown, duplicate or missing options or arguments."""


class Parsed(msgspec.Struct):
    """A parsed command line."""

    command: Cmd
    values: dict[str, object]
    json: bool
    workspace: str | None
    quiet: bool = False


class HelpRequested(Exception):  # noqa: N818 - control flow, like SystemExit
    """`--help` or `--version`: print this text and exit 0."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


BY_WORDS = {cmd.words: cmd for cmd in COMMANDS}


def command_name(argv: Sequence[str]) -> str:
    """The dotted command name as far as argv spells it (for envelopes of parse errors)."""
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
        candidate = (*words, arg)
        if not any(cmd.words[: len(candidate)] == candidate for cmd in COMMANDS):
            break
        words.append(arg)
    return ".".join(words) or "cortex"


def _next_words(prefix: tuple[str, ...]) -> list[str]:
    return sorted(
        {
            cmd.words[len(prefix)]
            for cmd in COMMANDS
            if cmd.words[: len(prefix)] == prefix and len(cmd.words) > len(prefix)
        }
    )


def parse(argv: Sequence[str]) -> Parsed:
    """Parse a command line strictly; raises UsageError or HelpRequested."""
    args = list(argv)
    state = _State()
    words: list[str] = []
    command: Cmd | None = None
    index = 0
    while command is None:
        if index >= len(args):
            if not words and "json" not in state.values:
                # Bare `cortex` (or only -C DIR): the help, not an error.
                raise HelpRequested(_group_help(()))
            options = ", ".join(_next_words(tuple(words)))
            where = " ".join(["cortex", *words])
            raise UsageError(f"{where}: expected a command: {options}")
        arg = args[index]
        index += 1
        if arg in {"-h", "--help"}:
            raise HelpRequested(_group_help(tuple(words)))
        if arg == "help" and not words:
            raise HelpRequested(help_for([a for a in args[index:] if not a.startswith("-")]))
        if arg == "--version" and not words:
            raise HelpRequested(f"cortex {__version__}")
        if arg.startswith("-"):
            index = state.option(args, index, arg, GLOBAL, " ".join(["cortex", *words]))
            continue
        words.append(arg)
        command = BY_WORDS.get(tuple(words))
        if command is not None and index < len(args) and args[index] in _next_words(tuple(words)):
            # A longer command goes first: `recall get ...` is not `recall` looking for "get"
            # (which is written `cortex recall -- get`).
            command = None
            continue
        if command is None and not _next_words(tuple(words)):
            valid = ", ".join(_next_words(tuple(words[:-1])))
            where = " ".join(["cortex", *words[:-1]])
            raise UsageError(f"{where}: unknown command {arg!r} (expected one of: {valid})")
    prog = "cortex " + " ".join(command.words)
    allowed = (*command.options, *GLOBAL)
    positionals: list[str] = []
    only_positionals = False
    while index < len(args):
        arg = args[index]
        index += 1
        if only_positionals or not arg.startswith("-") or arg == "-":
            positionals.append(arg)
        elif arg == "--":
            only_positionals = True
        elif arg in {"-h", "--help"}:
            raise HelpRequested(command_help(command))
        else:
            index = state.option(args, index, arg, allowed, prog)
    if command.variadic and len(positionals) >= len(command.positionals):
        split = len(command.positionals) - 1
        positionals = [*positionals[:split], positionals[split:]]  # type: ignore[list-item]
    if len(positionals) > len(command.positionals):
        extra = positionals[len(command.positionals)]
        raise UsageError(f"{prog}: unexpected argument {extra!r}")
    if len(positionals) < len(command.positionals) - command.optional:
        missing = [name for name, _ in command.positionals[len(positionals) :]]
        raise UsageError(f"{prog}: missing argument(s): {', '.join(missing)}")
    values: dict[str, object] = dict(
        zip((n for n, _ in command.positionals), positionals, strict=False)
    )
    values.update({n: None for n, _ in command.positionals[len(positionals) :]})
    for opt in command.options:
        if opt.required and opt.dest not in state.values:
            raise UsageError(f"{prog}: {opt.name} is required")
        default = [] if opt.kind == "repeat" else (False if opt.kind == "flag" else opt.default)
        values[opt.dest] = state.values.get(opt.dest, default)
    workspace = state.values.get("workspace")
    assert workspace is None or isinstance(workspace, str)  # noqa: S101 - a value option is text
    return Parsed(
        command=command,
        values=values,
        json=bool(state.values.get("json", False)),
        workspace=workspace,
        quiet=bool(state.values.get("quiet", False)),
    )


class _State:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def option(
        self, args: list[str], index: int, arg: str, allowed: Sequence[Opt], prog: str
    ) -> int:
        name, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        opt = next((o for o in allowed if name in {o.name, o.short}), None)
        if opt is None:
            raise UsageError(f"{prog}: unknown option {name!r} (see {prog} --help)")
        if opt.kind == "flag":
            if has_inline:
                raise UsageError(f"{prog}: {opt.name} takes no value")
            value: object = True
        else:
            if has_inline:
                value = inline
            else:
                if index >= len(args) or _is_option(args[index], allowed):
                    raise UsageError(f"{prog}: {opt.name} needs a value ({opt.metavar})")
                value = args[index]
                index += 1
            if opt.integer:
                value = _integer(str(value), opt.name, prog)
        if opt.kind == "repeat":
            repeated = self.values.setdefault(opt.dest, [])
            assert isinstance(repeated, list)  # noqa: S101 - only repeat options store lists
            repeated.append(value)
        elif opt.dest in self.values:
            raise UsageError(f"{prog}: {opt.name} is given more than once")
        else:
            self.values[opt.dest] = value
        return index


def _integer(text: str, name: str, prog: str) -> int:
    # int() also accepts fullwidth and other Unicode digits and "1_0"; the contract is ASCII.
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        raise UsageError(f"{prog}: {name} must be an integer, not {text!r}")
    # Counted before int() runs: past 4,300 digits it raises, and its cost grows with the square
    # of the length. The number itself is not quoted back: it may be a megabyte long.
    if len(digits) > inputs.INTEGER_DIGITS:
        msg = f"{prog}: {name} must be at most {inputs.INTEGER_DIGITS} digits, not {len(digits)}"
        raise UsageError(msg)
    return int(text)


def _is_option(token: str, allowed: Sequence[Opt]) -> bool:
    name = token.partition("=")[0] if token.startswith("--") else token
    return name in {"-h", "--help"} or any(name in {o.name, o.short} for o in allowed)


def spelling(command: Cmd) -> Callable[[str], str]:
    """How this command's messages name an argument: `--raw-file`, or `<task>` if positional."""
    names = {opt.dest: opt.name for opt in (*command.options, *GLOBAL)}
    names.update({name: f"<{name}>" for name, _ in command.positionals})

    def spell(argument: str) -> str:
        return names.get(argument) or option_spelling(argument)

    return spell


def _option_line(opt: Opt) -> str:
    names = f"{opt.short}, {opt.name}" if opt.short else opt.name
    if opt.kind != "flag":
        names += f" {opt.metavar}"
    suffix = f" (default: {opt.default})" if opt.kind == "value" and opt.default is not None else ""
    suffix += " (repeatable)" if opt.kind == "repeat" else ""
    suffix += " (required)" if opt.required else ""
    lines = _wrap(f"{opt.help}{suffix}", _HELP_WIDTH)
    return "\n".join([f"  {names:<28} {lines[0]}", *(" " * 31 + line for line in lines[1:])])


_HELP_WIDTH = 69
"""Columns of an option's help text: with its 31-column indent, lines of at most 100."""


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` (unless one word is longer).

    Broken at spaces, and inside a long list of choices after a `|`: never inside a name.
    """
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        pieces = [word]
        if len(word) > width and "|" in word:
            parts = word.split("|")
            pieces = [part + "|" for part in parts[:-1]] + [parts[-1]]
        for index, piece in enumerate(pieces):
            joint = "" if index else " "  # the pieces of one word join without a space
            if line and len(line) + len(joint) + len(piece) > width:
                lines.append(line)
                line = piece
            else:
                line = f"{line}{joint}{piece}" if line else piece
    lines.append(line)
    return lines


def command_help(command: Cmd) -> str:
    """Help text for one command."""
    required = len(command.positionals) - command.optional
    usage = " ".join(
        [
            "cortex",
            *command.words,
            *(
                f"<{n}>" if i < required else f"[<{n}>]"
                for i, (n, _) in enumerate(command.positionals)
            ),
            *(["..."] if command.variadic else []),
            "[options]",
        ]
    )
    lines = [f"usage: {usage}", "", command.help]
    if command.positionals:
        lines += ["", "arguments:", *(f"  {n:<28} {h}" for n, h in command.positionals)]
    lines += ["", "options:", *(_option_line(o) for o in (*command.options, *GLOBAL))]
    lines.append(f"  {'-h, --help':<28} show this help")
    return "\n".join(lines)


def help_for(words: Sequence[str]) -> str:
    """`cortex help [WORDS...]`: a command's help, a group's, or everything's.

    Words that end one command only (`help verify`) show that command (`case verify`).
    """
    command = BY_WORDS.get(tuple(words))
    if command is not None:
        return command_help(command)
    if words and not _next_words(tuple(words)):
        where = " ".join(words)
        ending = [c for c in COMMANDS if c.words[-len(words) :] == tuple(words)]
        if len(ending) == 1:
            full = " ".join(ending[0].words)
            return f"cortex help {where}: see cortex {full}\n\n" + command_help(ending[0])
        if ending:
            shown = ", ".join("cortex " + " ".join(c.words) for c in ending)
            raise UsageError(f"cortex help: {where!r} is more than one command: {shown}")
        raise UsageError(f"cortex help: no command {where!r} (cortex help lists them)")
    return _group_help(tuple(words))


def _group_help(prefix: tuple[str, ...]) -> str:
    lines = ["usage: " + " ".join(["cortex", *prefix, "<command> ..."])]
    under = [c for c in COMMANDS if c.words[: len(prefix)] == prefix]
    grouped = {name for _, names in GROUPS for name in names}
    sections = [
        (title, [c for name in names for c in under if c.name == name]) for title, names in GROUPS
    ]
    sections.append(("other", [c for c in under if c.name not in grouped]))
    for title, commands in sections:
        if commands:
            lines += ["", f"{title}:"]
            lines += [f"  {' '.join(c.words):<28} {c.help}" for c in commands]
    lines += ["", "global options:", *(_option_line(o) for o in GLOBAL)]
    if not prefix:
        lines.append(f"  {'--version':<28} print the version")
    lines += [
        "",
        "cortex <command> --help (or cortex help <command>) lists its options and defaults.",
    ]
    return "\n".join(lines)
