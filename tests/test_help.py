"""The help says what may be given (issue 29).

Two agents guessed evidence kinds (`code`, `reproduction`) because `evidence add --help` did not
list them, and the refused call swallowed the piped output they had to make again. Every option
that takes one of a fixed set of values lists the whole set, in `--help` and in the MCP tool's
schema; the sets are read here from the code that checks them, so help and checks cannot drift.
"""

from __future__ import annotations

import io
from typing import Any, get_args

import pytest

from cortex.cli.grammar import COMMANDS
from cortex.cli.parser import command_help
from cortex.kernel import validate
from cortex.kernel.host.setup import Scope
from cortex.kernel.human import contests
from cortex.kernel.steps import resolve
from cortex.kernel.steps.evidence import RESERVED_KINDS
from cortex.kernel.views import review
from cortex.kernel.views.timeline import cards as timeline_cards
from cortex.main import main
from cortex.mcp.schemas import input_schema
from cortex.mcp.tools import ALIASES, TOOLS
from cortex.recall import cards as recall_cards

ENUMERATED: dict[tuple[str, str], tuple[str, ...]] = {
    ("case.open", "--mode"): validate.MODES,
    ("case.open", "--risk"): validate.RISKS,
    ("case.open", "--surface"): validate.SURFACES,
    ("case.evidence.add", "--kind"): tuple(
        k for k in validate.EVIDENCE_KINDS if k not in RESERVED_KINDS
    ),
    ("case.evidence.add", "--origin"): validate.ORIGINS,
    ("case.evidence.add", "--confidence"): validate.CONFIDENCES,
    ("case.note", "--origin"): validate.ORIGINS,
    ("case.resolve", "--status"): resolve.RESOLUTIONS,
    ("case.timeline", "--kind"): timeline_cards.KINDS,
    ("recall", "--kind"): recall_cards.KINDS,
    ("recall", "--status"): recall_cards.STATUSES,
    ("case.decision.resolve", "--outcome"): contests.OUTCOMES,
    ("review", "--format"): review.FORMATS,
    ("setup.claude", "--scope"): get_args(Scope),
    ("setup.codex", "--scope"): get_args(Scope),
    ("case.handoff", "--format"): ("markdown", "json"),
    ("case.report", "--format"): ("html", "md"),
}
"""(command, option) -> every value the code accepts for it."""

BY_NAME = {command.name: command for command in COMMANDS}


def option_help(command: str, option: str) -> str:
    """The option's line of `cortex <command> --help`, with any continuation."""
    text = command_help(BY_NAME[command])
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [option])
    shown = [lines[start]]
    shown += [line for line in lines[start + 1 :] if line.startswith(" " * 30)]
    return " ".join(shown)


def words(text: str) -> set[str]:
    for mark in "|,:;()[]":
        text = text.replace(mark, " ")
    return set(text.split())


@pytest.mark.parametrize(("command", "option"), sorted(ENUMERATED))
def test_every_enumerated_value_is_in_the_help(command: str, option: str) -> None:
    shown = words(option_help(command, option))
    missing = [value for value in ENUMERATED[command, option] if value not in shown]
    assert missing == [], f"cortex {command.replace('.', ' ')} --help lacks {missing}"


def _property(tool: Any, field: str) -> dict[str, Any]:
    properties: dict[str, Any] = input_schema(tool)["properties"]
    return dict(properties[field])


def test_every_enumerated_value_is_in_the_mcp_schemas() -> None:
    """Each tool argument standing for such an option lists them: an enum, or its description."""
    checked = 0
    for tool in TOOLS:
        for field in input_schema(tool)["properties"]:
            option = "--" + ALIASES.get(field, field).replace("_", "-")
            values = ENUMERATED.get((tool.command, option))
            if values is None:
                continue
            checked += 1
            schema = _property(tool, field)
            listed = set(schema.get("enum") or schema.get("items", {}).get("enum") or [])
            listed |= words(schema.get("description", ""))
            missing = [value for value in values if value not in listed]
            assert missing == [], f"{tool.name}.{field} lacks {missing}"
    assert checked >= 8, "the table matched too few tool arguments"


def test_the_mode_says_what_each_mode_allows_later() -> None:
    shown = option_help("case.open", "--mode")
    for mode in validate.MODES:
        assert f"{mode}:" in shown or f"{mode} and" in shown or f"and {mode}:" in shown, mode
    assert "begin-change" in shown
    assert "no change step" in shown


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env={"PATH": "/usr/bin:/bin"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_help_for_a_word_of_a_command_shows_that_command() -> None:
    """`cortex help verify` was an error; it now shows `cortex case verify`'s help."""
    code, out, err = run("help", "verify")
    assert code == 0, err
    assert "cortex help verify: see cortex case verify" in out
    assert "usage: cortex case verify <task>" in out
    code, out, err = run("help", "list")
    assert code == 4
    assert "cortex case list" in err
    assert "cortex case decision list" in err
    code, _, err = run("help", "no-such-thing")
    assert code == 4
    assert "cortex help lists them" in err
