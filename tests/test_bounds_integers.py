"""Every integer a caller gives is bounded by its digits before it is converted (issue 18).

The options and arguments are read from the CLI's and the MCP server's own tables, so a new
integer option is covered without touching this file. An over-long integer is invalid input
(exit 4, one envelope, no traceback) on the command line, and an `isError` answer over MCP,
within a deadline: the server must never leave a client waiting.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Cli, base_env, make_repo, run_cortex
from mcp_kit import RawServer, envelope_of

from cortex.cases.bounds import INTEGER_DIGITS_MAX
from cortex.cli.grammar import COMMANDS
from cortex.mcp.tools import TOOLS

SIZES = [4_299, 4_301, 10_000, 100_000]
"""Digits: either side of Python's conversion limit (4,300), and far past it."""
MISSING_TASK = "task_01J00000000000000000000000"
ANSWER_WITHIN = 20.0
"""Seconds an MCP client may wait for any answer."""


def cli_options() -> list[Any]:
    """(command words, positional placeholders, option) for every integer option."""
    return [
        pytest.param(
            command.words,
            [MISSING_TASK if name == "task" else "x" for name, _ in command.positionals],
            option.name,
            id=f"{'-'.join(command.words)}{option.name}",
        )
        for command in COMMANDS
        for option in command.options
        if option.integer
    ]


def _is_integer(info: Any) -> bool:
    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    if isinstance(info, msgspec.inspect.UnionType):
        return any(_is_integer(member) for member in info.types)
    return isinstance(info, msgspec.inspect.IntType)


def _placeholder(name: str, info: Any) -> Any:
    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    if isinstance(info, msgspec.inspect.LiteralType):
        return info.values[0]
    if isinstance(info, msgspec.inspect.ListType):
        return []
    return MISSING_TASK if name == "task_id" else "x"


def mcp_arguments() -> list[Any]:
    """(tool, the integer argument, its required arguments) for every integer argument."""
    found = []
    for tool in TOOLS:
        info = msgspec.inspect.type_info(tool.args)
        assert isinstance(info, msgspec.inspect.StructType)
        required = {f.encode_name: _placeholder(f.name, f.type) for f in info.fields if f.required}
        found += [
            pytest.param(tool.name, f.encode_name, required, id=f"{tool.name}.{f.name}")
            for f in info.fields
            if _is_integer(f.type)
        ]
    return found


def test_the_tables_have_integer_options() -> None:
    """The lists below are not vacuous (the issue names these)."""
    assert len(cli_options()) >= 10
    assert len(mcp_arguments()) >= 9


# ---------------------------------------------------------------------------------------------
# The command line.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [pytest.param(sign + "9" * n, id=f"{sign}{n}") for sign in ("", "-") for n in SIZES],
)
@pytest.mark.parametrize(("words", "positionals", "option"), cli_options())
def test_an_overlong_integer_option_is_invalid_input(
    cli: Cli, words: tuple[str, ...], positionals: list[str], option: str, value: str
) -> None:
    out = cli(*words, *positionals, option, value)
    assert out.code == 4, out.stdout[:300]
    assert out.error_code == "invalid_input"
    message = out.envelope["error"]["message"]
    assert f"at most {INTEGER_DIGITS_MAX} digits" in message
    assert "9" * 100 not in message  # the number is counted, not quoted
    assert out.stderr == ""


@pytest.mark.process
@pytest.mark.parametrize("digits", [4_301, 100_000])
def test_an_overlong_integer_is_one_envelope_from_a_real_process(
    env: dict[str, str], repo: Path, digits: int
) -> None:
    """The reported crash: exit 1 and a ValueError traceback instead of an envelope."""
    proc = run_cortex(["case", "list", "--limit", "9" * digits, "--json"], env, repo)
    assert proc.returncode == 4, proc.stdout[:300]
    assert b"Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["error"]["code"] == "invalid_input"


def test_the_digit_bound_is_where_it_says(cli: Cli, task: str) -> None:
    """INTEGER_DIGITS_MAX digits reach the case (a revision conflict); one more does not."""
    at_bound = cli("case", "note", task, "x", "--expect-revision", "9" * INTEGER_DIGITS_MAX)
    assert at_bound.code == 6
    assert at_bound.error_code == "revision_conflict"
    over = cli("case", "note", task, "x", "--expect-revision", "9" * (INTEGER_DIGITS_MAX + 1))
    assert over.code == 4
    assert over.error_code == "invalid_input"


def test_a_negative_expected_revision_is_invalid_input(cli: Cli, task: str) -> None:
    """No case is ever at a negative revision: asking for one is bad input, not a conflict."""
    out = cli("case", "note", task, "x", "--expect-revision", "-1")
    assert out.code == 4
    assert out.error_code == "invalid_input"
    assert "-1" in out.envelope["error"]["message"]
    assert cli("case", "note", task, "x", "--expect-revision", "0").code == 6


@pytest.mark.parametrize("index", [*("9" * n for n in SIZES), "\u00b2", "\u0661"], ids=len)
def test_a_support_index_is_ascii_digits_bounded_before_conversion(
    cli: Cli, task: str, index: str
) -> None:
    """`--support N=ev_...` holds an integer in text: `²` used to reach int() and crash."""
    out = cli("case", "plan", task, "--hypothesis", "a :: b", "--support", f"{index}=ev_x")
    assert out.code == 4, out.stdout[:300]
    assert out.error_code == "invalid_input"
    assert out.stderr == ""


def test_setup_keeps_a_json_number_of_any_length_exactly(cli: Cli, repo: Path) -> None:
    """README: Claude Code's JSON numbers are never converted, so their length is no hazard."""
    number = "9" * 100_000
    path = repo / ".mcp.json"
    path.write_text('{"x": ' + number + "}")
    cli.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + cli.env["PATH"]  # pipx-like
    out = cli("setup", "claude")
    assert out.code == 0, out.stdout[:300]
    assert f'"x": {number}' in path.read_text()


# ---------------------------------------------------------------------------------------------
# The MCP server: one server answers every call, each within ANSWER_WITHIN seconds.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    tmp = tmp_path_factory.mktemp("bounds-mcp")
    env = base_env(tmp)
    repo = make_repo(tmp / "repo", env)
    with (tmp / "serve-stderr.txt").open("ab") as errlog:
        started = RawServer(repo, env, errlog)
        try:
            yield started
        finally:
            started.stop()
    assert "Traceback" not in (tmp / "serve-stderr.txt").read_text(errors="replace")


def raw_call(server: RawServer, name: str, arguments: dict[str, Any], extra: str) -> int:
    """Send a tools/call whose arguments end with `extra` (JSON text json.dumps cannot make)."""
    parts = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in arguments.items()] + [extra]
    ident = server.new_id()
    line = (
        f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/call", "params": '
        f'{{"name": {json.dumps(name)}, "arguments": {{{", ".join(parts)}}}}}}}'
    )
    server.send(line.encode())
    return ident


@pytest.mark.process
@pytest.mark.parametrize("digits", SIZES)
@pytest.mark.parametrize(("name", "field", "required"), mcp_arguments())
def test_an_overlong_integer_argument_is_answered_with_an_error(
    server: RawServer, name: str, field: str, required: dict[str, Any], digits: int
) -> None:
    ident = raw_call(server, name, required, f'"{field}": {"9" * digits}')
    reply = server.wait_for(ident, ANSWER_WITHIN)
    assert reply is not None, f"no answer within {ANSWER_WITHIN} s"
    envelope, status = envelope_of(reply, server)
    assert status == 4
    assert reply["result"]["isError"] is True
    assert envelope["error"]["code"] == "invalid_input"
    assert f"{INTEGER_DIGITS_MAX} digits" in envelope["error"]["message"]


@pytest.mark.process
def test_a_negative_expected_revision_is_invalid_input_over_mcp(server: RawServer) -> None:
    opened = server.call("cortex_open_task", {"goal": "negative revision"})
    task = envelope_of(opened)[0]["data"]["taskId"]
    reply = server.call("cortex_note", {"task_id": task, "text": "x", "expect_revision": -1})
    envelope, status = envelope_of(reply)
    assert status == 4
    assert envelope["error"]["code"] == "invalid_input"


@pytest.mark.process
@pytest.mark.parametrize("number", ["9" * 4_301, "-" + "9" * 4_301, "9" * 5_000 + ".5"])
def test_other_requests_with_an_overlong_number_get_a_protocol_error(
    server: RawServer, number: str
) -> None:
    """Not a tool call: the SDK's own error for bad parameters, never silence."""
    ident = server.new_id()
    params = f'{{"cursor": {number}}}'
    line = f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/list", "params": {params}}}'
    server.send(line.encode())
    reply = server.wait_for(ident, ANSWER_WITHIN)
    assert reply is not None, f"no answer within {ANSWER_WITHIN} s"
    assert reply["error"]["code"] == -32602


@pytest.mark.process
def test_an_unreadable_request_with_an_overlong_id_does_not_stop_the_server(
    server: RawServer,
) -> None:
    """No answer can carry an id the SDK cannot read, but the server must keep serving, and it
    must not answer under a different id (the number cut short where the search for it ends)."""
    huge = "9" * 5_000
    for line in [
        f'{{"jsonrpc": "2.0", "id": {huge}, "method": "ping"}}',
        f'{{"jsonrpc": "2.0", "id": {huge}, "method": "tools/call", "params": {{}}}}',
        # Too deep to parse, so the id is looked for in the text after the nesting.
        '{"jsonrpc": "2.0", "method": "tools/call", "params": {"a": '
        + "[" * 1_500
        + "]" * 1_500
        + f'}}, "id": {huge}}}',
    ]:
        server.send(line.encode())
    reply = server.wait_for(server.request("ping", {}), ANSWER_WITHIN)
    assert reply is not None
    assert reply["result"] == {}
    assert server.proc.poll() is None
    server.wait_for("none", 3)  # a call's answer can come after the ping's: collect stragglers
    # An id no reply can name is answered with a null id (JSON-RPC 2.0), never another id.
    assert all(ident is None or abs(ident) < 10**INTEGER_DIGITS_MAX for ident in server.replies)


@pytest.mark.process
@pytest.mark.parametrize("digits", SIZES)
def test_a_support_index_over_mcp_is_invalid_input(server: RawServer, digits: int) -> None:
    opened = server.call("cortex_open_task", {"goal": "support index"})
    task = envelope_of(opened)[0]["data"]["taskId"]
    arguments = {"task_id": task, "hypotheses": ["a :: b"], "supports": ["9" * digits + "=ev_x"]}
    reply = server.wait_for(server.start_call("cortex_plan", arguments), ANSWER_WITHIN)
    assert reply is not None, f"no answer within {ANSWER_WITHIN} s"
    envelope, status = envelope_of(reply)
    assert status == 4
    assert envelope["error"]["code"] == "invalid_input"
