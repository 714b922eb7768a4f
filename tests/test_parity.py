"""The four command tables agree: the grammar, the handlers, the renderers and the MCP tools.

Every MCP argument must stand for a CLI option (or positional argument) of the same command,
through the one alias table in cortex/mcp/tools.py, with the same kind and the same default.
What one face deliberately lacks is listed below with its reason; anything else is drift.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cortex.cli.commands import HANDLERS
from cortex.cli.parser import COMMANDS, GLOBAL, Cmd, Opt
from cortex.cli.render import _RENDERERS
from cortex.mcp.tools import ALIASES, TOOLS, Note, Timeline, Tool

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
    "case.resolve": "served as cortex_resolve",
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
    ("case.evidence.add", "raw_file"): "a path or '-' for stdin; over MCP raw output is text",
    ("case.handoff", "output"): "writes a file where the caller stands; a server returns data",
    ("case.handoff", "format"): "says what --output writes",
    ("case.verify", "follow"): "prints output at a terminal; over MCP it is debug log entries",
    ("review", "format"): "says how the CLI prints the verdict; over MCP it is data",
    ("case.list", "archived"): "archived cases are for people; an agent lists the live ones",
    ("review", "reproduce"): "runs the base branch's commands: the person or CI job decides",
    ("review", "accept"): "the gate's policy is set by who runs it, never by the agent judged",
    **{
        (command, "lease_token"): "a server keeps the tokens its own begin_change was given"
        for command in (
            "case.plan",
            "case.begin-change",
            "case.verify",
            "case.complete",
            "case.block",
            "case.unblock",
            "case.abort",
        )
    },
}
"""CLI options that have no MCP argument, and why."""

GLOBAL_ARGUMENTS = {"workspace": "the CLI's global -C/--workspace, on every tool"}
"""MCP arguments every tool takes that stand for one of the CLI's global options."""

ONLY_MCP = {
    ("cortex_record_evidence", "raw"): "raw output as text; the CLI reads it from a file",
}
"""MCP arguments that stand for no CLI option, and why."""


def _cli_arguments(cmd: Cmd) -> dict[str, Opt | None]:
    """dest -> Opt (None for a positional argument; a repeated, required one if variadic)."""
    found: dict[str, Opt | None] = {name: None for name, _ in cmd.positionals}
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


def drift(tools: tuple[Tool, ...] = TOOLS) -> list[str]:
    """Every way an MCP tool's arguments differ from its CLI command's options."""
    by_name = {cmd.name: cmd for cmd in COMMANDS}
    found: list[str] = []
    for tool in tools:
        cmd = by_name.get(tool.command)
        if cmd is None:
            found.append(f"{tool.name}: runs {tool.command}, which is no CLI command")
            continue
        cli = _cli_arguments(cmd)
        info = msgspec.inspect.type_info(tool.args)
        assert isinstance(info, msgspec.inspect.StructType)
        mapped: set[str] = set()
        for field in info.fields:
            where = f"{tool.name}.{field.name}"
            if (tool.name, field.name) in ONLY_MCP or field.name in GLOBAL_ARGUMENTS:
                continue
            dest = ALIASES.get(field.name, field.name)
            if dest not in cli:
                found.append(f"{where}: no CLI option {dest!r} in {cmd.name}")
                continue
            mapped.add(dest)
            opt = cli[dest]
            if _kind(field.type) != _opt_kind(opt):
                found.append(f"{where}: {_kind(field.type)}, but the CLI's is {_opt_kind(opt)}")
            required = opt is None or opt.required
            if field.required != required:
                found.append(f"{where}: required={field.required}, the CLI's is {required}")
            default = (
                field.default_factory()
                if field.default_factory is not msgspec.NODEFAULT
                else field.default
            )
            if not field.required and default != _opt_default(opt):
                found.append(f"{where}: default {default!r}, the CLI's is {_opt_default(opt)!r}")
        found.extend(
            f"{cmd.name} {dest}: no MCP argument of {tool.name}"
            for dest in cli
            if dest not in mapped and (cmd.name, dest) not in ONLY_CLI
        )
    return found


def test_every_mcp_argument_is_a_cli_option_of_the_same_kind_and_default() -> None:
    assert drift() == []


class _DriftedTimeline(Timeline):
    limit: int = 49


class _DriftedNote(Note):
    expect_revision: str | None = None  # type: ignore[assignment]


def test_the_parity_check_catches_a_default_that_differs() -> None:
    """A test of the test: an MCP default unlike the CLI's (the old literal 50) is drift."""
    timeline = next(t for t in TOOLS if t.name == "cortex_timeline")
    changed = msgspec.structs.replace(timeline, args=_DriftedTimeline)
    assert drift((changed,)) == ["cortex_timeline.limit: default 49, the CLI's is 50"]


def test_the_parity_check_catches_a_kind_that_differs() -> None:
    note = next(t for t in TOOLS if t.name == "cortex_note")
    changed = msgspec.structs.replace(note, args=_DriftedNote)
    assert drift((changed,)) == ["cortex_note.expect_revision: value, but the CLI's is integer"]


def test_every_command_has_a_handler_and_every_handler_a_command() -> None:
    names = {cmd.name for cmd in COMMANDS}
    assert sorted(names - set(HANDLERS) - set(LAUNCHED)) == []
    assert sorted(set(HANDLERS) - names) == []
    assert sorted(set(HANDLERS) & set(LAUNCHED)) == []


def test_every_command_has_a_renderer() -> None:
    names = {cmd.name for cmd in COMMANDS}
    assert sorted(names - set(_RENDERERS) - set(UNRENDERED)) == []
    assert sorted(set(_RENDERERS) - names) == []


def test_every_command_is_served_or_says_why_not() -> None:
    served = {tool.command for tool in TOOLS}
    names = {cmd.name for cmd in COMMANDS}
    assert sorted(names - served - set(NOT_SERVED)) == []
    stale = sorted(set(NOT_SERVED) & served - {"case.resolve"})
    assert stale == [], "served now: remove from NOT_SERVED"
    assert sorted(set(NOT_SERVED) - names) == []


@pytest.mark.parametrize("entry", sorted(ONLY_CLI))
def test_each_cli_only_option_exists(entry: tuple[str, str]) -> None:
    command, dest = entry
    cmd = next(c for c in COMMANDS if c.name == command)
    assert dest in _cli_arguments(cmd)


def test_global_options_are_the_faces_own() -> None:
    """--json and --quiet are how the CLI prints; --workspace is where it runs, on every tool."""
    assert [opt.dest for opt in GLOBAL] == ["json", "workspace", "quiet"]
    for tool in TOOLS:
        fields = {f.name: f for f in msgspec.structs.fields(tool.args)}
        assert set(GLOBAL_ARGUMENTS) <= set(fields), tool.name
        assert fields["workspace"].default is None
