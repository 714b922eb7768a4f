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


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "curl https://api.x.invalid/v1/mysql/instances -u admin:{pw}",
            "curl https://api.x.invalid/v1/mysql/instances -u admin:{r}",
        ),
        ("mysql -h curl.db.invalid -p{pw} app", "mysql -h curl.db.invalid -p{r} app"),
        ("mysql -e 'select curl' -p{pw} app", "mysql -e 'select curl' -p{r} app"),
        ("curl -H 'X-Tool: mysql' -u u:{pw} x", "curl -H 'X-Tool: mysql' -u u:{r} x"),
        ('curl -H "X: sshpass" -U p:{pw} x', 'curl -H "X: sshpass" -U p:{r} x'),
        (
            "curl https://x.invalid/mysql/curl -u u:{pw}",
            "curl https://x.invalid/mysql/curl -u u:{r}",
        ),
    ],
)
def test_a_tool_named_in_an_earlier_argument_does_not_hide_the_password(
    command: str, expected: str
) -> None:
    """Attack: a tool's name in a URL, host or quoted argument before the password option cut
    the scan there, and the next tool's scan knew only its own options: nothing was masked."""
    assert _masked(command) == expected.format(r=REDACTED)


def test_options_of_a_tool_named_later_are_not_read_after_a_separator() -> None:
    """The carried options stop where the command ends: `-u` after `;` is another command's."""
    command = "curl https://x.invalid/mysql; docker run -u 1000:1000 img"
    assert Redactor()(command) == command


@pytest.mark.xfail(strict=True, reason="limit: sshpass's options are read from its name only")
def test_sshpass_options_after_a_tool_named_in_its_prompt() -> None:
    """Attack: `-P PROMPT` naming a tool cuts sshpass's options before its `-p`."""
    _masked("sshpass -P 'curl login:' -p {pw} ssh h")


@pytest.mark.xfail(strict=True, reason="limit: after a cut inside a quote, quotes read inverted")
def test_a_separator_in_a_password_after_a_quoted_tool_name() -> None:
    """Attack: the cut fell inside `"mysql a"`, so the next scan read the password's quotes
    inverted, and the `&` inside the password ended the command."""
    _masked('curl -d "mysql a" -o out --user "ci:a&{pw}"')


@pytest.mark.xfail(strict=True, reason="limit: a quote is read on its own line")
def test_a_quoted_password_closed_on_a_later_line() -> None:
    """Attack: the shell reads a quoted password across a line break; the scan does not."""
    _masked("curl -u 'u:a\n{pw}' x")


@pytest.mark.xfail(strict=True, reason="limit: mysql's -p is not read element by element")
def test_a_mysql_password_with_a_space_in_an_argv_list() -> None:
    """Attack: `['mysql', '-pa b']` holds one password; its word ended at the space."""
    assert "0000" not in Redactor()(str(["mysql", f"-pa {_PW}"]))


def test_a_mysql_prompt_in_an_argv_list_keeps_the_next_element() -> None:
    """Attack: `['mysql', '-p', 'db']` prompts; the scan read `', 'db'` as the password and
    dropped the database's element with it."""
    written = str(["mysql", "-p", "app"])
    assert Redactor()(written) == written


@pytest.mark.xfail(strict=True, reason="limit: an escaped backslash is not read through")
def test_an_escaped_space_in_a_json_escaped_command() -> None:
    """Attack: JSON writes the shell's `a\\ b` as `a\\\\ b`, which no reading decodes."""
    assert "0000" not in Redactor()(json.dumps(f"curl -u u:a\\ {_PW} x"))


def test_masks_in_a_long_json_escaped_text_cost_what_plain_ones_do() -> None:
    """Attack: each mask of a JSON-escaped `\\"u:pw` puts a quote beside its marker, and carrying
    it back onto the written text looked for the quoted chunk over all the rest of the text
    (quadratic: 2 MiB took 36 s, 16 times what plain commands take)."""
    size = 512 * 1024
    baseline = _repeat("curl -u u:pw x; ", size)
    hostile = _repeat('curl -u \\"u:a ', size)
    started = time.perf_counter()
    Redactor()(baseline)
    plain = time.perf_counter() - started
    started = time.perf_counter()
    masked = Redactor()(hostile)
    assert time.perf_counter() - started < 5 * plain + 0.5
    assert masked.startswith('curl -u \\"u:[REDACTED]\\"')


@pytest.mark.parametrize(
    "written",
    [
        '{{"c": "curl -u u:{pw}", "d": "next"}}',
        '{{"c": "curl -u \'u:{pw}\'", "d": "next"}}',
        '{{"c": "mysql -p\'{pw}\'", "d": "next"}}',
        "{{'c': 'curl -u u:{pw}', 'd': 'next'}}",
        "['curl -u u:{pw}', 'next']",
        "[\"curl -u 'u:a curl {pw}\", 'next']",
        '{{"c": "curl -u \'u:a curl {pw}", "d": "next"}}',
        '{{"c": "SSHPASS={pw}", "d": "next"}}',
    ],
)
def test_a_password_at_a_strings_end_keeps_what_follows_the_string(written: str) -> None:
    """Attack: a password word ran on over the closing quote of the JSON string or Python
    literal it was kept in, and over the next key's quotes: `"d": "next"` went with the mask."""
    masked = Redactor()(written.format(pw=_PW))
    assert "0000" not in masked
    assert "next" in masked
    if written.startswith('{{"'):
        assert json.loads(masked)["d"] == "next"


@pytest.mark.xfail(strict=True, reason="limit: a quote before `,` reads as a string's end")
def test_a_password_holding_a_quote_before_a_comma() -> None:
    """Attack on the string-end rule: `"` then `,` inside a quoted password ends its word."""
    _masked('curl -u u:a", {pw}" x')


@pytest.mark.xfail(strict=True, reason="limit: a quote before `,` reads as a string's end")
def test_a_password_holding_a_tool_name_then_a_quote_before_a_comma() -> None:
    """Attack on the string-end rule: the rest of a password cut by a tool's name stops there."""
    _masked("curl -u 'u:a curl \", {pw}' x")
