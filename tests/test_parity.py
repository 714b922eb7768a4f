"""Each face against the input structs; the command tables agree with each other.

Every registered use case declares one input struct (`cortex.kernel.inputs.REGISTRY`). Each of
its fields must be a CLI option (or positional argument) of the command, through the one alias
table, of the same kind, with the same default and requiredness; and an argument of the MCP tool
of the same type and default, unless the MCP face withholds it (`cortex.mcp.tools.WITHHELD`
or `WITHHELD_BY_COMMAND`, with its reason). Every CLI option and every MCP argument must fill a
field. What one face deliberately lacks is listed here with its reason; anything else is drift.
"""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest

from cortex.cli.commands import CONFIRMS, HANDLERS
from cortex.cli.grammar import COMMANDS, GLOBAL, Cmd, Opt
from cortex.cli.render import _RENDERERS
from cortex.kernel.inputs import ALIASES, REGISTRY, TaskOnly, use_case
from cortex.kernel.steps.evidence import Note
from cortex.kernel.views.timeline.page import Timeline
from cortex.mcp.tools import TOOLS, WITHHELD_BY_COMMAND, Tool, withheld

LAUNCHED = {
    "serve": "the launcher starts the MCP server; it has no envelope of its own",
    "studio": "the launcher hands the kernel to the studio, another face",
    "case.report": "the launcher hands the kernel to the report face, another face",
    "doctor": "the launcher runs doctor before any kernel exists: a broken config is a finding",
}
"""Commands the launcher (cortex/main.py) runs instead of a CLI handler."""

UNRENDERED = {
    "serve": "speaks the protocol on stdout, never an envelope",
}
"""Commands whose answer the CLI never renders as text."""

NOT_SERVED = {
    "case.show": "a screen for a person; agents read status, timeline and handoff",
    "case.decision.answer": "a person's act: agents ask, people answer (docs/design/mcp.md)",
    "case.decision.list": "status carries the pending decision an agent needs",
    "case.lease.renew": "begin_change renews the caller's own lease",
    "case.lease.release": "complete and abort release the lease",
    "case.audit": "an integrity check for people and CI, run from a shell",
    "case.attest": "a statement for CI to sign, produced from a shell",
    "case.trust": "approving a command must happen at a terminal",
    "case.metrics": "numbers for people",
    "case.sessions": "lists every repository on the machine; a server serves one",
    "case.overview": "totals for people",
    "config": "set-up, run from a shell",
    "init": "set-up, run from a shell",
    "doctor": "set-up, run from a shell",
    "setup.claude": "set-up, run from a shell",
    "setup.codex": "set-up, run from a shell",
    "serve": "is the server",
    "studio": "is another face",
    "completion": "shell completion for people at a terminal",
    "recall.reindex": "maintenance from a shell; every write through the server updates the index",
    "recall.rebuild": "maintenance from a shell",
    "case.decision.resolve": "a person's act at a terminal: only people settle a contest",
    "case.share": "sends a case to a remote, which cannot be recalled: a person or CI decides",
    "case.fetch": "talks to a remote and adopts another machine's state: run from a shell",
    "case.bundle": "writes a file where the caller stands; a server returns data",
    "case.trailer": "read by the prepare-commit-msg hook, which runs the CLI",
    "setup.git-trailer": "set-up, run from a shell",
    "case.report": "writes a file where the caller stands; agents read handoff and status",
    "case.prune": "abandons other agents' idle cases: a person or a scheduled job decides",
    "case.rm": "deletes a case for good: a person's act at a terminal",
    "case.forget": "removes a record for good: a person's act at a terminal",
    "adopt": "moves a store's cases: set-up, run from a shell",
    "recall.drop": "maintenance from a shell",
}
"""CLI commands with no MCP tool, and why."""

ONLY_CLI = {
    ("case.handoff", "output"): "writes a file where the caller stands; a server returns data",
    ("case.handoff", "format"): "says what --output writes",
    ("case.verify", "follow"): "prints output at a terminal; over MCP it is debug log entries",
}
"""CLI options that fill no input field: the face's own, used by its hook, and why."""

NOT_ON_CLI = {
    ("case.evidence.add", "raw"): "raw output as text; the CLI reads it from a file",
}
"""Input fields no CLI option fills, and why."""

GLOBAL_ARGUMENTS = {"workspace": "the CLI's global -C/--workspace, on every tool"}
"""MCP arguments every tool takes that stand for one of the CLI's global options."""


def _cli_arguments(cmd: Cmd) -> dict[str, Opt | None]:
    """dest -> Opt (None for a positional argument; a repeated, required one if variadic; an
    optional value for one that may be left out)."""
    found: dict[str, Opt | None] = {name: None for name, _ in cmd.positionals}
    for name, _ in cmd.positionals[len(cmd.positionals) - cmd.optional :]:
        found[name] = Opt(name, "")
    if cmd.variadic:
        name = cmd.positionals[-1][0]
        found[name] = Opt(name, "", kind="repeat", required=True)
    found.update({opt.dest: opt for opt in cmd.options})
    return found


def _kind(info: Any) -> str:
    """A msgspec type as the CLI kind it must match: flag, repeat, integer or value."""
    if isinstance(info, msgspec.inspect.Metadata):
        return _kind(info.type)
    if isinstance(info, msgspec.inspect.UnionType):
        kinds = {_kind(t) for t in info.types if not isinstance(t, msgspec.inspect.NoneType)}
        assert len(kinds) == 1, info
        return kinds.pop()
    if isinstance(info, msgspec.inspect.BoolType):
        return "flag"
    if isinstance(info, msgspec.inspect.ListType):
        return "repeat"
    if isinstance(info, msgspec.inspect.IntType):
        return "integer"
    return "value"


def _opt_kind(opt: Opt | None) -> str:
    if opt is None:
        return "value"
    if opt.kind == "value" and opt.integer:
        return "integer"
    return opt.kind


def _opt_default(opt: Opt | None) -> object:
    if opt is None or opt.kind == "value":
        return None if opt is None else opt.default
    return [] if opt.kind == "repeat" else False


def _default(field: Any) -> object:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _fields(struct: type[Any]) -> list[Any]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    return list(info.fields)


def cli_drift(command: str, struct: type[Any], cmd: Cmd) -> list[str]:
    """Every way the CLI command `cmd` differs from the input struct of `command`."""
    cli = _cli_arguments(cmd)
    found: list[str] = []
    mapped: set[str] = set()
    for field in _fields(struct):
        where = f"{command} {struct.__name__}.{field.name}"
        if (command, field.name) in NOT_ON_CLI:
            continue
        dest = ALIASES.get(field.name, field.name)
        if dest not in cli:
            found.append(f"{where}: no CLI option {dest!r}")
            continue
        mapped.add(dest)
        opt = cli[dest]
        if _kind(field.type) != _opt_kind(opt):
            found.append(f"{where}: {_kind(field.type)}, but the CLI's is {_opt_kind(opt)}")
        required = opt is None or opt.required
        if field.required != required:
            found.append(f"{where}: required={field.required}, the CLI's is {required}")
        if not field.required and _default(field) != _opt_default(opt):
            found.append(
                f"{where}: default {_default(field)!r}, the CLI's is {_opt_default(opt)!r}"
            )
    found.extend(
        f"{command} {dest}: a CLI option that fills no field of {struct.__name__}"
        for dest in cli
        if dest not in mapped and (command, dest) not in ONLY_CLI
    )
    return found


def mcp_drift(command: str, struct: type[Any], tool: Tool) -> list[str]:
    """Every way the tool's published arguments differ from the input struct of `command`."""
    published = {field.name: field for field in _fields(tool.args)}
    found: list[str] = []
    for field in _fields(struct):
        where = f"{tool.name}.{field.name}"
        if withheld(command, field.name):
            if field.name in published:
                found.append(f"{where}: withheld, yet published")
            elif field.required:
                found.append(f"{where}: withheld, yet required")
            continue
        argument = published.pop(field.name, None)
        if argument is None:
            found.append(f"{where}: no MCP argument")
            continue
        if argument.type != field.type:
            found.append(f"{where}: {argument.type!r}, but the input's is {field.type!r}")
        if argument.required != field.required or _default(argument) != _default(field):
            found.append(
                f"{where}: default {_default(argument)!r}, the input's {_default(field)!r}"
            )
    found.extend(
        f"{tool.name}.{name}: an MCP argument that fills no field of {struct.__name__}"
        for name in published
        if name not in GLOBAL_ARGUMENTS
    )
    return found


def drift(structs: dict[str, type[Any]] | None = None) -> list[str]:
    """Every way a face differs from a registered use case's input struct."""
    if structs is None:
        structs = {command: use_case(command)[0] for command in REGISTRY}
    by_name = {cmd.name: cmd for cmd in COMMANDS}
    tools = {tool.command: tool for tool in TOOLS}
    found: list[str] = []
    for command, struct in structs.items():
        cmd = by_name.get(command)
        if cmd is None:
            found.append(f"{command}: registered, but no CLI command")
        else:
            found.extend(cli_drift(command, struct, cmd))
        if command in tools:
            found.extend(mcp_drift(command, struct, tools[command]))
    found.extend(
        f"{tool.name}: runs {tool.command}, which is no registered use case"
        for tool in TOOLS
        if tool.command not in REGISTRY
    )
    return found


def test_every_input_field_is_a_cli_option_and_an_mcp_argument_of_the_same_kind() -> None:
    assert drift() == []


class _DriftedTimeline(Timeline):
    limit: int = 49


class _DriftedNote(Note):
    expect_revision: str | None = None  # type: ignore[assignment]


class _PublishedToken(Note):
    lease_token: str | None = None


def test_the_parity_check_catches_a_default_that_differs() -> None:
    """A test of the test: an input default unlike the CLI's (the old literal 50) is drift."""
    assert drift({"case.timeline": _DriftedTimeline}) == [
        "case.timeline _DriftedTimeline.limit: default 49, the CLI's is 50",
        "cortex_timeline.limit: default 50, the input's 49",
    ]


def test_the_parity_check_catches_a_kind_that_differs() -> None:
    found = drift({"case.note": _DriftedNote})
    assert found[0] == "case.note _DriftedNote.expect_revision: value, but the CLI's is integer"
    assert found[1].startswith("cortex_note.expect_revision: ")


def test_the_parity_check_catches_a_field_a_face_cannot_fill() -> None:
    """A field with no CLI option (note has no --lease-token) is drift; the MCP face withholds
    it, as it withholds every lease token."""
    assert drift({"case.note": _PublishedToken}) == [
        "case.note _PublishedToken.lease_token: no CLI option 'lease_token'"
    ]


def test_the_parity_check_catches_an_option_that_fills_nothing() -> None:
    assert drift({"case.handoff": TaskOnly}) == [
        "case.handoff compact: a CLI option that fills no field of TaskOnly",
        "cortex_handoff.compact: an MCP argument that fills no field of TaskOnly",
    ]


def test_every_withheld_argument_is_an_input_field() -> None:
    for command, field in WITHHELD_BY_COMMAND:
        assert field in use_case(command)[0].__struct_fields__, (command, field)


def test_every_command_has_a_use_case_or_a_handler() -> None:
    names = {cmd.name for cmd in COMMANDS}
    run = set(HANDLERS) | set(REGISTRY)
    assert sorted(names - run - set(LAUNCHED)) == []
    assert sorted(run - names) == []
    assert sorted(run & set(LAUNCHED)) == []


def test_every_command_has_a_renderer() -> None:
    names = {cmd.name for cmd in COMMANDS}
    assert sorted(names - set(_RENDERERS) - set(UNRENDERED)) == []
    assert sorted(set(_RENDERERS) - names) == []


def test_every_command_is_served_or_says_why_not() -> None:
    served = {tool.command for tool in TOOLS}
    names = {cmd.name for cmd in COMMANDS}
    assert sorted(names - served - set(NOT_SERVED)) == []
    stale = sorted(set(NOT_SERVED) & served)
    assert stale == [], "served now: remove from NOT_SERVED"
    assert sorted(set(NOT_SERVED) - names) == []


@pytest.mark.parametrize("entry", sorted(ONLY_CLI))
def test_each_cli_only_option_exists(entry: tuple[str, str]) -> None:
    command, dest = entry
    cmd = next(c for c in COMMANDS if c.name == command)
    assert dest in _cli_arguments(cmd)


@pytest.mark.parametrize("entry", sorted(NOT_ON_CLI))
def test_each_field_the_cli_leaves_out_is_a_field_no_option_fills(entry: tuple[str, str]) -> None:
    """A stale exemption would hide drift: the field must exist and the CLI must lack it."""
    command, field = entry
    assert field in use_case(command)[0].__struct_fields__
    cmd = next(c for c in COMMANDS if c.name == command)
    assert ALIASES.get(field, field) not in _cli_arguments(cmd)


@pytest.mark.parametrize("entry", sorted(ONLY_CLI))
def test_each_cli_only_option_fills_no_field(entry: tuple[str, str]) -> None:
    """An option that became a field must leave ONLY_CLI, or its exemption hides nothing."""
    command, dest = entry
    fields = use_case(command)[0].__struct_fields__
    assert all(ALIASES.get(field, field) != dest for field in fields)


def test_the_cli_asks_for_every_use_case_that_takes_a_confirmation() -> None:
    """A use case with a `confirm` keyword is a person's act: the CLI must have a question for it
    in CONFIRMS (the keyword has no default, so the call fails without one), and no tool serves
    it (the MCP face never passes one)."""
    asking = {
        command
        for command in REGISTRY
        if "confirm" in inspect.signature(use_case(command)[1]).parameters
    }
    assert sorted(asking) == sorted(CONFIRMS)
    assert sorted(asking & {tool.command for tool in TOOLS}) == []


def test_global_options_are_the_faces_own() -> None:
    """--json and --quiet are how the CLI prints; --workspace is where it runs, on every tool."""
    assert [opt.dest for opt in GLOBAL] == ["json", "workspace", "quiet"]
    for tool in TOOLS:
        fields = {f.name: f for f in msgspec.structs.fields(tool.args)}
        assert set(GLOBAL_ARGUMENTS) <= set(fields), tool.name
        assert fields["workspace"].default is None
