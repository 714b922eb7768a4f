"""Attacks on step 5 of the redaction pipeline (issue 27): a tool's name inside a password."""

from __future__ import annotations

import ast
import json
import time

import pytest

from cortex.cases.redact import REDACTED, Redactor

_PW = "FAKEpw" + "0" * 10  # the same made-up password as tests/test_redact.py's _CLI_PASSWORD


def _masked(command: str) -> str:
    masked = Redactor()(command.format(pw=_PW))
    assert "0000" not in masked, masked  # no piece of the password
    return masked


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl -u 'u:curl {pw}' x", "curl -u 'u:{r}' x"),
        ('curl -u "u:curl {pw}" x', 'curl -u "u:{r}" x'),
        ("curl -u 'deploy curl:{pw}' x", "curl -u 'deploy {r}' x"),
    ],
)
def test_a_password_that_starts_with_a_tool_name_is_masked(command: str, expected: str) -> None:
    """Attack: the tool's name right after the `:` left `'u:` at the cut, read as an empty
    password (or, with the `:` past the cut, as a user alone): nothing was masked."""
    assert _masked(command) == expected.format(r=REDACTED)


@pytest.mark.parametrize(
    "argv",
    [
        ["curl", "-u", "u:a curl {pw}", "x"],
        ["curl", "-u", "u:curl {pw}", "x"],
        ["curl", "-u", "u:a' curl {pw}", "x"],
        ["sshpass", "-p", "a curl {pw}", "ssh"],
    ],
)
def test_an_argv_element_holding_a_tool_name_is_masked_whole(argv: list[str]) -> None:
    """Attack: in an argv list the element's quote is not part of the value, so the cut fell in
    no quote the value held and the rest of the element was kept."""
    argv = [arg.format(pw=_PW) for arg in argv]
    for written, read in ((str(argv), ast.literal_eval), (json.dumps(argv), json.loads)):
        masked = Redactor()(written)
        assert "0000" not in masked, masked
        # Still a list of as many elements, each but the password's as it was.
        kept = read(masked)
        assert len(kept) == len(argv)
        assert [a for a in kept if REDACTED not in a] == [a for a in argv if _PW not in a]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl -u 'u:a|curl {pw}' x", "curl -u 'u:{r}' x"),
        ("curl -u 'u:a;curl {pw}' x", "curl -u 'u:{r}' x"),
        ('curl -u "u:a&curl {pw}" x', 'curl -u "u:{r}" x'),
    ],
)
def test_a_separator_before_the_tool_name_in_a_password_does_not_end_it(
    command: str, expected: str
) -> None:
    """Attack: bounded at the next tool, the password's quote looked unclosed, so the `|`
    before the tool ended the command and the password was not read at all."""
    assert _masked(command) == expected.format(r=REDACTED)


def test_the_command_after_a_password_holding_a_tool_name_is_still_read() -> None:
    """Attack: several tool names, of other tools, inside one password, then a real command."""
    masked = _masked("curl -u 'u:a mysql -p sshpass curl {pw}' x; mysql -p{pw} db")
    assert masked == f"curl -u 'u:{REDACTED}' x; mysql -p{REDACTED} db"
    assert Redactor()(masked) == masked


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


_HOSTILE_UNITS = {
    "passwords_holding_a_tool_on_one_line": "curl -u 'u:a curl b' ",
    "tool_at_a_password_start": "curl -u 'u:curl ",
    "separator_before_a_tool": "curl -u 'u:a|curl ",
    "argv_elements_holding_a_tool": "['curl', '-u', 'u:a' curl b'] ",
    "mixed_quotes_and_tools": "curl 'curl \"curl ",
    "sshpass_argv_cut": "['sshpass', '-p', 'a curl ",
    "unclosed_quotes": "curl -u '",
}


@pytest.mark.parametrize("unit", _HOSTILE_UNITS.values(), ids=_HOSTILE_UNITS.keys())
def test_passwords_cut_by_tool_names_cost_what_plain_ones_do(unit: str) -> None:
    """Attack: each password cut inside its quote looked for its line's end from the cut, on
    a line as long as the text (4 MiB on one line took 5 times plain commands' time)."""
    size = 1024 * 1024
    baseline = _repeat("curl -u u:pw x; ", size)
    hostile = _repeat(unit, size)
    started = time.perf_counter()
    Redactor()(baseline)
    plain = time.perf_counter() - started
    started = time.perf_counter()
    Redactor()(hostile)
    assert time.perf_counter() - started < 4 * plain + 0.5


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # A backslash escapes a space, or a quote inside "..." and $'...': the word goes on.
        ("curl -u u:a\\ {pw} x", "curl -u u:{r} x"),
        ('curl -u "u:a\\" {pw}" x; echo ok', 'curl -u "u:{r}" x; echo ok'),
        ("curl -u $'u:a\\' {pw}' x", "curl -u $'u:{r}' x"),
        ('mysql -p"a\\" {pw}" db', "mysql -p{r} db"),
        ('SSHPASS="a\\" {pw}" sshpass -e ssh h', "SSHPASS={r} sshpass -e ssh h"),
        # The same with a tool's name inside, and glued into a bare password.
        ('curl -u "u:a\\" curl {pw}" x', 'curl -u "u:{r}" x'),
        ("curl -u $'u:a\\' curl {pw}' x", "curl -u $'u:{r}' x"),
        ("curl -u u:a\\ curl\\ {pw} x", "curl -u u:{r} x"),
        ("curl -u u:a-curl-{pw} x", "curl -u u:{r} x"),
        ("mysql -pa/curl/{pw} db", "mysql -p{r} db"),
        ("curl -u deploy-curl-x:{pw} x", "curl -u deploy-{r} x"),
    ],
)
def test_a_password_is_one_word_across_backslash_escapes(command: str, expected: str) -> None:
    """Attack: the scan knew no backslash escape, so `\\ ` or `\\"` ended the password and its
    rest was kept; and a tool's name glued into a bare password cut it with no quote open."""
    masked = _masked(command)
    assert masked == expected.format(r=REDACTED)
    assert Redactor()(masked) == masked


@pytest.mark.parametrize(
    "command",
    [
        'curl -u "u:{pw}" x',
        'curl -u "u:a curl {pw}" x; echo ok',
        'curl -u "u:a\\" curl {pw}" x; echo ok',
    ],
)
def test_a_command_kept_in_a_json_string_stays_json(command: str) -> None:
    """Attack: written JSON-escaped, `\\"u:pw\\"` was closed again with a bare `"` after the mask,
    which ended the JSON string there: the document no longer parsed."""
    written = json.dumps({"command": command.format(pw=_PW)})
    masked = Redactor()(written)
    assert "0000" not in masked
    assert json.loads(masked) == {"command": Redactor()(command.format(pw=_PW))}
