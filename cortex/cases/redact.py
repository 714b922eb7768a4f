"""Redaction: an ordered pipeline of small pure functions over strings.

See docs/design/redaction.md for the promise and its limits. Each rule names cheap trigger
substrings; its regular expression is compiled on first use and run only when a trigger occurs,
so text without anything secret-looking costs a few substring checks.

Long because: the rules and the order they run in are one pipeline, read top to bottom;
split, a rule could be read (or changed) without the rules before and after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, partial

REDACTED = "[REDACTED]"
PRIVATE = "[PRIVATE]"

StrRule = Callable[[str], str]


# <private> spans ----------------------------------------------------------------------------


# Each pattern is compiled once, on first use, by a cached wrapper around a plain builder: mutation
# testing (docs/testing.md) leaves decorated functions alone, so what matters is in the builder.


@cache
def _private_tag() -> re.Pattern[str]:
    return _build_private_tag()


def _build_private_tag() -> re.Pattern[str]:
    # A tag is `<private ...>` or `</private>`, any case, with whitespace and attributes. A tag
    # whose `>` never comes counts as an opening tag (fail closed: suppress the rest).
    return re.compile(r"<\s*(/?)\s*private\b([^>]*)(>|\Z)", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Replace each outermost `<private>` span with a marker; unclosed spans run to the end."""
    if "private" not in text.lower():
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for match in _private_tag().finditer(text):
        closing = match.group(1) == "/"
        self_closing = not closing and match.group(2).rstrip().endswith("/")
        if depth == 0:
            out.append(text[pos : match.start()])
        if closing:
            # An orphan closing tag is control markup, not content: drop it.
            depth = max(depth - 1, 0)
        elif not self_closing:
            if depth == 0:
                out.append(PRIVATE)
            depth += 1
        pos = match.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


# Literals -----------------------------------------------------------------------------------


def literal_rule(literals: Iterable[str]) -> StrRule:
    """A rule replacing each configured literal, longest first."""
    ordered = tuple(sorted({lit for lit in literals if lit}, key=len, reverse=True))

    def redact_literals(text: str) -> str:
        for literal in ordered:
            if literal in text:
                text = text.replace(literal, REDACTED)
        return text

    return redact_literals


# Token shapes ---------------------------------------------------------------------------------

_TOKEN_TRIGGERS: tuple[tuple[str, ...], ...] = (
    ("private key",),  # PEM private keys
    ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "asca", "abia", "acca"),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    (
        "glpat-",
        "gldt-",
        "glrt-",
        "glcbt-",
        "glptt-",
        "glft-",
        "glimt-",
        "glagent-",
        "gloas-",
        "glsoat-",
        "glffct-",
        "gr1348941",
    ),
    ("xox", "xapp-"),  # Slack tokens
    ("hooks.slack.com",),
    ("_live_", "_test_", "whsec_"),  # Stripe
    ("sk-",),  # OpenAI / Anthropic
    ("aiza",),  # Google API keys
    ("npm_",),
    ("sg.",),  # SendGrid
    ("hf_",),  # Hugging Face
    # Twilio API key SIDs. The trigger is case-sensitive (see `redact_token_shapes`): a lowercase
    # "sk" is in every other word ("task", "risk"), an uppercase "SK" is rare.
    ("SK",),
    ("shpat_", "shpss_", "shpca_", "shppa_"),  # Shopify
    ("pypi-age",),  # PyPI
    ("dop_v1_", "doo_v1_", "dor_v1_"),  # DigitalOcean
    ("gocspx-",),  # Google OAuth client secrets
    ("age-secret-key-1",),  # age
    ("accountkey=", "sharedaccesskey="),  # Azure connection strings
    ("sig=",),  # Azure shared access signatures
    ("eyj",),  # JSON Web Tokens
    ("cortex-lease-",),  # Cortex's own lease tokens (docs/design/trust.md)
)
"""Each token shape's triggers, in the order of the shapes in `_build_token_pattern`."""


@cache
def _token_pattern(index: int) -> re.Pattern[str]:
    return _build_token_pattern(index)


def _build_token_pattern(index: int) -> re.Pattern[str]:
    """The regular expression of token shape `index` (in a function: see `_private_tag`)."""
    shapes: tuple[tuple[str, int], ...] = (
        # PEM private keys (RSA, EC, OPENSSH, PGP ...), to the END line or, if it is missing,
        # the end of the text. A key never contains a quote, so a quote (with its escaping
        # backslashes) ends it too: a truncated key inside a JSON string is removed without
        # eating the string's end.
        (
            (
                r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[^\"]*?"
                r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?<!\\)(?=\\*\")|\Z)"
            ),
            0,
        ),
        # AWS access key ids.
        (
            (
                r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA|ABIA|ACCA)"
                r"[A-Z0-9]{16}(?![A-Z0-9])"
            ),
            0,
        ),
        # GitHub: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained tokens.
        (r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{22,255})", 0),
        # GitLab personal/project, deploy, runner, CI job, pipeline trigger, feed, incoming
        # mail, agent, OAuth application, SCIM and feature-flag tokens, and runner registration
        # tokens.
        (
            (
                r"\b(?:gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_-]{20,}"
                r"|GR1348941[A-Za-z0-9_-]{20,})"
            ),
            0,
        ),
        # Slack tokens (bot, user, app-level, refresh ...) and incoming-webhook URLs.
        (r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}", 0),
        (r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+", 0),
        # Stripe secret, restricted and publishable keys, and webhook signing secrets.
        (r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{16,})", 0),
        # OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
        (r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}", 0),
        # Google API keys.
        (r"\bAIza[0-9A-Za-z_-]{35}", 0),
        # npm access tokens.
        (r"\bnpm_[A-Za-z0-9]{36}\b", 0),
        # SendGrid API keys.
        (r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", 0),
        # Hugging Face tokens.
        (r"\bhf_[A-Za-z0-9]{30,}\b", 0),
        # Twilio API key SIDs.
        (r"\bSK[0-9a-fA-F]{32}\b", 0),
        # Shopify access tokens, shared secrets, custom-app and private-app tokens.
        (r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b", 0),
        # PyPI API tokens: a macaroon, whose base64 always starts `AgE`.
        (r"\bpypi-AgE[A-Za-z0-9_-]{50,}", 0),
        # DigitalOcean personal access, OAuth and refresh tokens.
        (r"\bdo[opr]_v1_[a-f0-9]{64}\b", 0),
        # Google OAuth client secrets.
        (r"\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])", 0),
        # age secret keys (Bech32, upper-case).
        (r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", 0),
        # Azure storage account keys and Service Bus / Event Hubs shared access keys in
        # connection strings, and the signature of a shared access signature (SAS): the value
        # only, so the rest of the string still says what it points at.
        (r"(?:(?<=AccountKey=)|(?<=SharedAccessKey=))[A-Za-z0-9+/]{20,}={0,2}", re.IGNORECASE),
        (r"(?<=[?&;]sig=)[A-Za-z0-9%+/=_-]{16,}", 0),
        # JSON Web Tokens (the signature may be empty for alg "none"). It starts at a token
        # boundary: after `-` or `_` every `eyJ` of a long run would be a start, each scanning
        # the rest of the run.
        (r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", 0),
        # Cortex lease tokens: the prefix, then 256 bits as 43 urlsafe base64 characters. A
        # bearer secret of an active lease, whoever pastes it where (docs/design/trust.md). A
        # run cut short is masked too, from 32 characters: what is left would be guessable.
        (r"cortex-lease-[A-Za-z0-9_-]{32,}", 0),
    )
    regex, flags = shapes[index]
    return re.compile(regex, flags)


# Triggers by shape, split into lowercase ones (looked for in the lowercased text) and others
# (looked for exactly as written, like Twilio's "SK").
_SHAPE_TRIGGERS = tuple(
    (
        tuple(t for t in triggers if t.islower()),
        tuple(t for t in triggers if not t.islower()),
    )
    for triggers in _TOKEN_TRIGGERS
)


_ANY_SHAPE_LOWER = tuple(sorted({t for triggers, _ in _SHAPE_TRIGGERS for t in triggers}))
_ANY_SHAPE_EXACT = tuple(sorted({t for _, triggers in _SHAPE_TRIGGERS for t in triggers}))
"""Every shape's triggers at once: text holding none of them skips the shapes one by one."""


def redact_token_shapes(text: str) -> str:
    """Replace every known credential shape with the marker."""
    low = text.lower()
    if not any(t in low for t in _ANY_SHAPE_LOWER) and not any(t in text for t in _ANY_SHAPE_EXACT):
        # No shape's trigger anywhere: one pass over the triggers instead of one a shape. Most
        # text (ids, times, claims) holds none, and a view redacts thousands of strings.
        return text
    for index, (lower, exact) in enumerate(_SHAPE_TRIGGERS):
        if any(t in low for t in lower) or (exact and any(t in text for t in exact)):
            # Compiled on first use only: most text never triggers most shapes.
            text = _token_pattern(index).sub(REDACTED, text)
            low = text.lower()
    return text


# What a cut left of a private-key block ------------------------------------------------------


@cache
def _pem_remnant_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    return _build_pem_remnant_patterns()


def _build_pem_remnant_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    end = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")
    body = re.compile(r"[A-Za-z0-9+/=]+\r?")
    return end, body


def redact_pem_remnants(text: str) -> str:
    """Mask what a cut left of a private-key block: an END line whose BEGIN line is gone.

    Output kept from its tail (a verifier's long output) can start inside a key. This runs
    after the token shapes, which take every whole block (and a BEGIN without its END), so an
    END line still here lost its BEGIN: it is masked with the base64 lines right above it (the
    key's body, the first perhaps cut mid-line), up to a line that is anything else.
    """
    if "private key" not in text.lower():
        return text
    end, body = _pem_remnant_patterns()
    out: list[str] = []
    done = 0
    for match in end.finditer(text):
        start = match.start()
        line = max(done, text.rfind("\n", done, start) + 1)
        if body.fullmatch(text, line, start) or line == start:
            start = line  # the END line itself, whatever precedes it on its line is body
            while start > done:
                above = max(done, text.rfind("\n", done, start - 1) + 1)
                if not body.fullmatch(text, above, start - 1):
                    break
                start = above
        out += (text[done:start], REDACTED)
        done = match.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


@cache
def _header_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    return _build_header_patterns()


def _build_header_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    # The header name may be a quoted key with a quoted value (`{"Authorization": "Basic ..."}`,
    # a Python dict). The value stops at a quote, a backslash or JSON punctuation, so an escaped
    # quote inside a JSON string stays whole and a bare JSON value (`null`) is never touched.
    authorization = re.compile(
        r"(?i)(\bauthorization(?:(?P<q>\\*[\"'])\s*[:=]\s*(?P=q)|\s*[:=]\s*"
        r"(?:(?!\\*\"\s*(?:[,:}\]]|$))\\*[\"'])?)"
        r"(?:(?:basic|bearer|token|digest|negotiate)\s+)?)"
        r"(?:\[REDACTED\]|[^\s\"',;\\{}\[\]]+)",
        re.MULTILINE,
    )
    # A bearer token is long and, being random, contains a digit: "bearer authentication"
    # in prose is left alone.
    bearer = re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*")
    # The user name may be empty (`redis://:pass@host`). A password runs to the last `@` before
    # the path, so one containing `@` is removed whole; or, holding no `@`, it may contain `/`
    # (`admin:Xy/9+a@db`), unless it is a port followed by a path (`host:8080/users/@me`).
    url_password = re.compile(
        r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@\"']*:)"
        r"(?:[^/\s\"'\\]+|(?![0-9]+/)[^@\s\"'\\]+)(@)"
    )
    return authorization, bearer, url_password


def redact_credentials(text: str) -> str:
    """Mask Authorization headers, bearer tokens and passwords embedded in URLs."""
    low = text.lower()
    if "authorization" in low:
        text = _header_patterns()[0].sub(lambda m: m.group(1) + REDACTED, text)
    if "bearer" in low:
        text = _header_patterns()[1].sub(lambda m: m.group(1) + REDACTED, text)
    if "://" in text and "@" in text:
        text = _header_patterns()[2].sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return text


# Command-line credentials ---------------------------------------------------------------------

# Tools that take a password in their own syntax rather than a secret-named flag. Only these
# commands are read: `-u` and `-p` mean other things elsewhere (`docker -u 1000:1000`, `ssh -p 22`).
_COMMAND_TRIGGERS = ("curl", "mysql", "mariadb", "sshpass")


_Options = dict[str, re.Pattern[str]]

# A quote followed by what follows a JSON string or a Python literal (`,` `:` `}` `]`) opens
# nothing: it ends the string the command is kept in (`{"cmd": "curl -u u:pw", "next": 1}`),
# and the password's word ends there rather than running on over the next key.
_OPENS = r"(?![ \t]*[,:}\]])"


def _word_part(bare: str, *, cut: bool = False) -> str:
    r"""One part of a shell word: quoted (`'...'`, `"..."`, `$'...'`), escaped (`\x`) or bare.

    Cut by the next tool's name, a quote still open at the cut ends there (`\Z`).
    """
    single, double = (r"(?:'|\Z)", r'(?:"|\Z)') if cut else ("'", '"')
    return (
        r"(?:\$'" + _OPENS + r"(?:\\.|[^'\\\n])*" + single
        + "|'" + _OPENS + r"[^'\n]*" + single
        + '|"' + _OPENS + r'(?:\\.|[^"\\\n])*' + double
        + r"|\\.|" + bare + ")"
    )  # fmt: skip


@cache
def _command_patterns() -> tuple[
    re.Pattern[str], re.Pattern[str], re.Pattern[str], _Options, _Options
]:
    return _build_command_patterns()


def _build_command_patterns() -> tuple[
    re.Pattern[str], re.Pattern[str], re.Pattern[str], _Options, _Options
]:
    # Any case: macOS and Windows find `CURL` or `curl.EXE` on a case-insensitive disk.
    tool = re.compile(
        r"\b(?:(?P<curl>curl)|(?P<mysql>mysql[a-z]*|mariadb(?:-[a-z]+)?)|(?P<sshpass>sshpass))\b",
        re.IGNORECASE,
    )
    # A command ends at a pipe, `;`, `&` or a line break outside quotes: its options are looked
    # for up to there (`-u 'admin:a|b'` is one command). A quote never closed is one character.
    command = re.compile(r"""(?:[^\n|;&'"]|'[^'\n]*'|"[^"\n]*"|['"])*""")
    # Bounded by the next tool's name, a quote still open there may close after it
    # (`-u 'u:a|curl b'`): it runs to the cut, so the `|` inside is not read as a pipe.
    command_to_cut = re.compile(r"""(?:[^\n|;&'"]|'[^'\n]*(?:'|\Z)|"[^"\n]*(?:"|\Z)|['"])*""")
    # One shell word: quoted and bare parts joined (`'a'"b"c`). A quote never closed ends it
    # (`bash -c "mysql -ppw"`: the quote is the outer string's), but where the next tool's name
    # cut the command (`-u 'u:a curl b'`) it runs to the cut: the rest is masked, not kept.
    # A backslash escapes the next character outside single quotes (`u:a\ b`, `"a\" b"`, and
    # `$'a\' b'`, where it is a quote's): the word runs on past it, as the shell reads it.
    closed = _word_part(r"""[^\s'"\\]""") + "+"
    cut = _word_part(r"""[^\s'"\\]""", cut=True) + "+"

    # An argv written as a list (`['curl', '-u', 'u:pw']`, a JSON array, a traceback's
    # command): an element ends at its own quote (`"u:a'b"` holds a `'`), and the next begins
    # after `', '`.
    element = r"""['"],[ \t]*['"]"""

    def options(word: str) -> _Options:
        option = r"(?<![\w-])(?P<head>"
        value = r"(?(list)(?:(?<=')[^'\n]*|[^\"\n]*)|" + word + ")"
        gap = r"(?:" + element + r"|[ \t]+)"
        return {
            # curl's `-u USER:PASSWORD` (in a cluster, `-su`, or attached, `-uUSER:...`),
            # `--user`, and the proxy's `-U`/`--proxy-user`: the password goes, the user stays.
            # Without a `:` curl prompts: nothing to mask. Before the `u` a cluster holds only
            # curl's flags that take no value (after `-d` the rest is the data: `-duser:1`);
            # neither `u` nor `U` is one, so a cluster is read once (`-uuu...` retried the scan
            # after each u: quadratic, 55 s for 128 KiB).
            "curl": re.compile(
                option + r"(?:-[0-46aBfgGiIjJklLMnNOpqRsSvVZ#]*[uU]|--(?:proxy-)?user)"
                r"(?:(?P<list>" + element + r")|=|[ \t]*))(?P<word>" + value + ")"
            ),
            # mysql's password is attached to `-p`; `-p NAME` prompts, NAME being the database.
            "mysql": re.compile(option + "-p)(?P<pw>" + word + ")"),
            # sshpass reads its options up to the command it runs: `ssh -p 22` after it is a
            # port. Before `-p` come only its other options (`-f FILE`, `-d FD`, `-P PROMPT`,
            # `-e`, `-v`), each matched once and for all.
            "sshpass": re.compile(
                r"\A(?P<head>(?:"
                + gap
                + r"(?:-[fdP](?:"
                + element
                + r"[^'\"\n]*|[ \t]*"
                + word
                + r")|-[evhV]+))*+"
                + gap
                + r"-p(?:(?P<list>"
                + element
                + r")|[ \t]*))"
                r"(?P<pw>" + value + ")"
            ),
        }

    return tool, command, command_to_cut, options(closed), options(cut)


def _open_quote(word: str) -> str:
    r"""The quote `word` ends inside of, as it was opened, or ''.

    A quote is opened as `'`, `"`, `$'`, or as an escaped `\"` of a command kept in a JSON
    string.
    """
    opened, at = "", 0
    while at < len(word):
        char = word[at]
        if opened == "'":  # nothing is escaped in single quotes
            opened = "" if char == "'" else opened
        elif char == "\\":
            pair = word[at : at + 2]
            if not opened and pair[1:] in ("'", '"'):
                opened = pair  # `\\"u:pw\\"`: a quote of the shell's, escaped for JSON
            elif pair == opened:
                opened = ""
            at += 1  # the escaped character is no quote
        elif not opened and char in "'\"":
            opened = "$'" if char == "'" and word[at - 1 : at] == "$" else char
        elif char == opened[-1:] and opened[:1] != "\\":
            opened = ""
        at += 1
    return opened


def _closing(opened: str) -> str:
    """What closes a quote opened as `opened` (`$'` closes with `'`, a bare word nothing)."""
    return opened.strip("$ ")


@cache
def _rest_of_quote(opened: str) -> re.Pattern[str]:
    # A quoted password's rest, to its closing quote or the line's end, read as it was opened.
    if opened == " ":  # a bare word the tool's name was glued into (`u:a-curl-b`, `a\ curl`)
        return re.compile(_word_part(r"""[^\s'"\\]""") + "*")
    # A quote of the other kind that ends the JSON string or Python literal the command is
    # kept in ends it too: the next key's quotes are not the password's.
    string_end = "(?<!\\\\)[\"'](?=[ \\t]*[,:}\\]])"
    body = {
        "'": r"""(?:[^'"\n]|"(?![ \t]*[,:}\]]))*""",
        "$'": r"""(?:\\.|[^'"\\\n]|"(?![ \t]*[,:}\]]))*""",
        '"': r"""(?:\\.|[^"'\\\n]|'(?![ \t]*[,:}\]]))*""",
    }.get(opened, r"(?:[^\\\n]|\\[^\n])*?(?=" + re.escape(opened) + "|" + string_end + r"|\n|\Z)")
    return re.compile(body + "(?P<close>" + re.escape(_closing(opened)) + ")?")


@cache
def _json_string_end() -> re.Pattern[str]:
    # A `"` followed by what follows a JSON string (`,` `:` `}` `]` or the line's end).
    return re.compile(r'"(?=[ \t]*(?:[,:}\]]|\r?$))', re.MULTILINE)


def _running(found: re.Match[str], *, at_cut: bool) -> tuple[str, bool]:
    """The quote the option's value is still inside where it ends (''), and if it is listed.

    Only a value cut by the next tool's name ends inside a quote; a listed value is an argv
    element's, whose quote is not in the value.
    """
    if "list" in found.re.groupindex and found["list"] is not None:
        # An element's quotes are its own, not the shell's: only its closing quote ends it.
        reaches_cut = at_cut and found.end() == len(found.string)
        return (found["list"][-1] if reaches_cut else ""), True
    value = found["word"] if "word" in found.re.groupindex else found["pw"]
    opened = _open_quote(value)
    if not opened and at_cut and value and found.end() == len(found.string):
        # Unquoted and up to the cut: the tool's name is glued into the word (`u:a-curl-b`,
        # `u:a\ curl\ b`), which goes on past it. " " stands for that bare rest.
        opened = " "
    return opened, False


def _mask_option(found: re.Match[str], *, at_cut: bool = False) -> str:
    """The option with its password masked: all of it, or for curl what follows the user's `:`."""
    running, listed = _running(found, at_cut=at_cut)
    # A value cut inside its quote goes on past the cut, to that quote: the caller drops the
    # rest, so an element's quote is put back here (a shell quote is dropped with its pair).
    closing = running if listed else ""
    if "word" not in found.re.groupindex:
        return found["head"] + REDACTED + closing
    word = found["word"]
    colon = word.find(":")  # curl splits at the first one: a user name holds none
    if not running and (colon < 0 or colon == len(word) - 1):
        return found[0]  # no password (curl asks for it) or an empty one
    # Cut before its `:` (`-u 'deploy curl:pw'`), the user runs on into the password: what
    # follows the cut is masked, the user's first words stay.
    kept = word if colon < 0 else word[: colon + 1]
    # A quote opened before the `:` (`'user:pass'`) closes after the password: it is closed
    # again, so the masked text stays balanced and what follows is read as before.
    open_quote = "" if listed else _open_quote(kept)
    if not running and word[colon + 1 :] == open_quote:
        return found[0]  # `-u 'user:'`: an empty password
    return found["head"] + kept + REDACTED + (closing or _closing(open_quote))


def _open_at_cut(pattern: re.Pattern[str], segment: str) -> str:
    """The quote a masked password is still inside where its command was cut, or ''."""
    last = None
    for last in pattern.finditer(segment):  # noqa: B007 - the last match is the one at the cut
        pass
    if last is None or last.end() != len(segment):
        return ""
    return _running(last, at_cut=True)[0]


@cache
def _sshpass_variable() -> re.Pattern[str]:
    # `sshpass -e` reads the password from $SSHPASS, set before it (`SSHPASS=pw sshpass -e`,
    # `export SSHPASS=pw`): its name exactly, as the environment spells it, so a version pin
    # (`apt-get install sshpass=1.09-1`) is kept.
    # Its value is one shell word, backslash escapes included (`SSHPASS="a\" b"`).
    return re.compile(r"(?<![\w-])(?P<head>SSHPASS=)" + _word_part(r"""[^\s'";&|\\]""") + "+")


def redact_command_credentials(text: str) -> str:
    """Mask the passwords of `curl -u U:PW`, `mysql -pPW`, `sshpass -p PW` and `SSHPASS=PW`.

    Each command is scanned once, from its tool's name to its end, so the cost stays linear.
    """
    low = text.lower()
    if not any(trigger in low for trigger in _COMMAND_TRIGGERS):
        return text
    if "SSHPASS=" in text:
        text = _sshpass_variable().sub(lambda m: m["head"] + REDACTED, text)
    tool, command, command_to_cut, closed, cut = _command_patterns()
    parts: list[str] = []
    done = 0
    carried: tuple[str, ...] = ()
    # Per quote, a span (from, line's end) known to hold no closing quote: found once, so many
    # passwords left open on one long line do not each read to its end again (quadratic).
    unclosed: dict[str, tuple[int, int]] = {}
    found = tool.search(text)
    while found:
        # A tool's options run to its command's end or to the next tool named (`a ~ b` joins two).
        after = tool.search(text, found.end())
        bound = after.start() if after else len(text)
        span = (command_to_cut if after else command).match(text, found.end(), bound)
        end = span.end() if span else found.end()
        options = cut if end == bound and after else closed
        at_cut = options is cut
        # A name that cut the command without ending it (`curl https://h/mysql/db -u u:pw`,
        # `mysql -e 'select curl' -ppw`) leaves it going on: the options of the tools it cut
        # are read here too. sshpass's are not: they only follow its own name.
        kind = found.lastgroup or "curl"
        kinds = (kind, *(other for other in carried if other not in (kind, "sshpass")))
        segment = text[found.end() : end]
        masked, quote = segment, ""
        for each in kinds:
            pattern = options[each]
            masked = pattern.sub(partial(_mask_option, at_cut=at_cut), masked)
            quote = quote or (_open_at_cut(pattern, segment) if at_cut else "")
        parts += (text[done : found.end()], masked)
        done = end
        # At most the three tools' options on any part of the text: the scan stays linear.
        carried = kinds if at_cut else ()
        if quote:
            # The tool named inside a quoted password (`-u 'u:a curl b'`) did not end it: the
            # rest of the password, to its closing quote, goes with what was masked.
            # Read up to the quote or the line's end, whichever comes first: a search to the
            # line's end each time would be quadratic on one long line of such passwords.
            if unclosed.get(quote, (len(text), 0))[0] <= end < unclosed[quote][1]:
                done = unclosed[quote][1]  # known: no closing quote up to the line's end
            else:
                rest = _rest_of_quote(quote).match(text, end)
                done = rest.end() if rest else end
                if rest and "close" in rest.re.groupindex and rest["close"] is None:
                    unclosed[quote] = (end, done)
            if quote in unclosed and unclosed[quote][0] <= end < unclosed[quote][1]:
                # Never closed on its line: a command kept in a JSON string (cut short, or
                # closed on a later line, `\n`) ends with that string, not with the document's
                # line, or the rest of the document would go with it.
                string_end = _json_string_end().search(text, end, done)
                done = string_end.start() if string_end else done
            after = tool.search(text, done)
        found = after
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


# Secret-named assignments ---------------------------------------------------------------------

_ASSIGN_WORDS = (
    "secret",
    "token",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "api_key",
    "api-key",
    "apikey",
    "api key",
    "private_key",
    "private-key",
    "privatekey",
    "private key",
    "access_key",
    "access-key",
    "accesskey",
    "access key",
    "credential",
    "auth",
)
"""Triggers of `redact_assignments`: some substring of every key it masks."""


_ESCAPED_BREAKS = ("\\n", "\\r", "\\t")
# Words that are no secret however long the rule says a value must be (`yes`, `no`, `on`, `off`
# are shorter than that already).
_NOT_SECRET_BARE = frozenset({"true", "false", "null", "none"})
_STRONG_WORDS = ("secret", "pass", "pwd", "key", "credential", "auth")
# Words that make a token-ish key a count (`max_tokens`, `token_limit`), whose numbers are spared.
_COUNT_WORDS = (
    "tokens", "max", "min", "num", "count", "limit", "budget", "len", "size", "ttl", "expir",
    "timeout",
)  # fmt: skip
# Plain substring checks, not regexes: this module is imported on every call, and compiling
# even these two alternations costs more than the checks save.


def _fragments() -> tuple[str, str, str, str, str, str, str, str]:
    """The pieces the assignment patterns are made of (in a function: see `_private_tag`).

    Returns the key, the two-word key, a quoted value, the guard against a string's end, and
    the bare values: a word, the rest of a line, a flag's value, a scalar after a quoted key.
    """
    # A key naming a secret: one of the words anywhere in it (`DB_PASSWORD`, `x-api-key`, but not
    # `tokenizer`), or `auth` as a whole segment (`auth`, `_auth`, `NPM_AUTH`, `basic-auth`; not
    # `author` or `oauth`). The key's parts are bounded (no real key is longer): unbounded, a
    # long run of key characters holding key words (`-token-token...`, a minified file)
    # backtracks quadratically.
    key = (
        r"(?:[A-Za-z0-9_.-]{0,80}(?:secret|token(?!i[sz])|passphrase|password|passwd|pwd"
        r"|api[_-]?key|private[_-]?key|access[_-]?key|credentials?)[A-Za-z0-9_.-]{0,80}"
        r"|(?:[A-Za-z0-9_.-]{0,80}[_.-])?auth(?![A-Za-z0-9])(?:[_.-][A-Za-z0-9_.-]{0,80})?)"
    )
    # In YAML and prose a key may be two words: `API Key: ...`, `Secret Key: ...`.
    spaced_key = r"(?:api|secret|private|access)[ ]key"
    # Quoted values, most specific first: a JSON string escaped inside another string (at any
    # depth: `\"v\"`, `\\\"v\\\"`, ...), a JSON or double-quoted string (with escapes), a
    # single-quoted string. None of them may contain an unescaped `"` that is not their own
    # quote, so a value inside a JSON string never runs across the string's end. A match stops
    # before the closing quote (a lookahead checks it is there), so that quote can still open
    # the next key, and one pass masks what two passes would.
    escaped_dq = r'(?P<escaped>\\{1,15}")(?:[^"\\\n]|\\[^"\n])*?(?=(?P=escaped))'
    dq = r'"(?:[^"\\\n]|\\.)*(?=")'
    sq = r"'(?:[^'\"\\\n]|\\[^'\n]|\\(?='))*(?=')"
    quoted = r"(?P<quoted>" + escaped_dq + "|" + dq + "|" + sq + ")"
    # A quote that closes the string a value sits in (a quote, with its escaping backslashes,
    # then JSON punctuation or the end of a line): no value starts at one, and a bare value ends
    # before one, so masking a value inside a JSON string never eats the string's end. It is
    # looked for only where a backslash run starts, so a long run of backslashes is scanned
    # once, not once per char.
    string_end = r'(?<!\\)\\*"(?=\s*(?:[,:}\]]|$))'
    not_at_string_end = r"(?!" + string_end + r")"
    # A bare value never runs past the end of the string it sits in: a word (env, shell, flags)
    # or the rest of the line (YAML, prose). Each match ends where its value ends, so the rest of
    # the line is scanned too. Env and YAML values never start with `[` or `{`: a marker is not
    # masked again, and a YAML list or mapping is not a scalar.
    word = r"(?![\[{])(?:(?!" + string_end + r")\S)+"
    line = r"(?![\[{\s])(?:(?!" + string_end + r")[^\n])+"
    # A flag's value may start with `[`, but not with a marker: a masked value is not masked
    # again (with what follows it, such as the `\n` that ends it in an escaped string).
    flag_word = r"(?!-|\[REDACTED\]|\[PRIVATE\])(?:(?!" + string_end + r")\S)+"
    # A bare value after a quoted key: a JSON, YAML or Python scalar (`12345678`, `null`).
    scalar = r"[^\s,;}\]\[{\"'\\][^\s,;}\]\"'\\]*"
    return key, spaced_key, quoted, not_at_string_end, word, line, flag_word, scalar


@cache
def _assignment_patterns() -> tuple[re.Pattern[str], ...]:
    return _build_assignment_patterns()


def _build_assignment_patterns() -> tuple[re.Pattern[str], ...]:
    key_text, spaced_key, quoted, not_at_string_end, word, line, flag_word, scalar = _fragments()

    def value(bare: str, guard: str = not_at_string_end) -> str:
        """The value group of an assignment: a quoted value, else the given bare form."""
        return guard + r"(?P<val>" + quoted + "|" + bare + ")"

    flags = re.IGNORECASE | re.MULTILINE
    quoted_key = re.compile(
        r"(?P<q>(?P<plain>\")|\\{1,15}\"|')(?P<key>"
        + key_text
        + r")(?P=q)(?P<sep>\s*[:=]\s*)"
        # After a real JSON key (`"key": `) a quote always opens the value, even `","`; after a
        # key quoted inside a string (`'key': `, `\\"key\\": `) it may close that string.
        + value(scalar, guard="(?(plain)|" + not_at_string_end + ")"),
        flags,
    )
    key = r"(?<![A-Za-z0-9_.\-\\])(?P<key>" + key_text + "|" + spaced_key + r")"
    # env and shell (`KEY=v`: a word) or YAML and prose (`key: v`: the rest of the line).
    bare_key = re.compile(
        key + r"(?P<sep>[ \t]*(?:(?P<eq>=)|:)[ \t]*)" + value("(?(eq)" + word + "|" + line + ")"),
        flags,
    )
    # A flag's value is any word that is not the next option (`--token --json` masks nothing).
    flag = re.compile(
        r"(?<![A-Za-z0-9_-])(?P<key>--?" + key_text + r")(?P<sep>=|[ \t]+)" + value(flag_word),
        flags,
    )
    # A flag and its value as two items of an argv list: `["--token", "v"]`, `['--token', 'v']`.
    argv = re.compile(
        r"(?<![A-Za-z0-9_-])(?P<key>--?" + key_text + r")(?P<q>\\*[\"'])(?P<sep>\s*,\s*(?P=q))"
        r"(?P<val>(?:[^-\"'\\\n]|\\[^\"'\n])(?:[^\"'\\\n]|\\[^\"'\n])*)(?=(?P=q))",
        flags,
    )
    return quoted_key, bare_key, flag, argv


def _mask_quoted(match: re.Match[str]) -> str:
    """A quoted value's opening quote (with its escaping) and the marker; "" for a bare value.

    The closing quote is not part of the match, so it stays where it is.
    """
    groups = match.groupdict()
    if groups.get("quoted") is None:
        return ""
    return (groups.get("escaped") or groups["quoted"][0]) + REDACTED


def _is_secret_bare(value: str, key: str) -> bool:
    # Inside an escaped string a bare value ends at an escaped line break or tab, as the string's
    # unescaped reading reads it: `max_tokens: 4096\\nnext` is the count 4096 (what follows was
    # read, and masked if it needed to be, in that reading).
    # The break may be escaped again, inside a string in a string: `4096\\\\n`.
    for escaped in _ESCAPED_BREAKS:
        value = value.split(escaped, 1)[0]
    stripped = value.rstrip("\\").strip()
    if len(stripped) < 4 or stripped.lower() in _NOT_SECRET_BARE:
        return False
    # `max_tokens: 4096` is a count, but `password: 12345678` is a PIN and `"token": 123456` a
    # one-time code: numbers are spared only for keys that count tokens and name nothing stronger.
    low_key = key.lower()
    numeric = stripped.lstrip("+-").replace(".", "", 1).isdigit()
    return not (
        numeric
        and "token" in low_key
        and any(word in low_key for word in _COUNT_WORDS)
        and not any(word in low_key for word in _STRONG_WORDS)
    )


def _is_record_id(key: str) -> bool:
    """Whether a key is a whole record id (`task_01J...`), which names no secret.

    About one id in 2,000 holds `PWD` (its base32 letters include P, W and D).
    """
    from cortex.cases.ids import PREFIXES, is_ulid  # ids uses this module's `clip`

    prefix, _, ulid = key.partition("_")
    return prefix in PREFIXES and is_ulid(ulid)


def _quoted_key_sub(match: re.Match[str]) -> str:
    quote = match.group("q")
    if _is_record_id(match.group("key")):
        return match.group(0)
    masked = _mask_quoted(match)
    if not masked:
        if not _is_secret_bare(match.group("val"), match.group("key")):
            return match.group(0)
        # A bare value after a quoted key is JSON, YAML or Python: a marker quoted like the key
        # keeps it parseable (and keeps an escaped JSON document inside a string escaped).
        masked = quote + REDACTED + quote
    return quote + match.group("key") + quote + match.group("sep") + masked


def _value_sub(match: re.Match[str]) -> str:
    """Mask the value of an env, YAML, flag or argv assignment; keep the key and separator."""
    if _is_record_id(match.group("key")):
        return match.group(0)
    head = match.group(0)[: match.start("val") - match.start()]
    masked = _mask_quoted(match)
    if masked:
        return head + masked
    if not _is_secret_bare(match.group("val"), match.group("key")):
        return match.group(0)
    return head + REDACTED


def _trigger_lines(text: str, low: str) -> list[tuple[int, int]]:
    """Spans of the lines holding a trigger word (adjacent lines merged), found with str.find.

    `auth` counts only as a whole segment, as in `_KEY`: the `Author:` lines of a git log are not
    worth a look.
    """
    if len(low) != len(text):
        # Lowercasing changed the length (a few non-ASCII letters): positions would not match.
        return [(0, len(text))]
    starts: set[int] = set()
    for word in _ASSIGN_WORDS:
        at = low.find(word)
        while at >= 0:
            after = at + len(word)
            if word != "auth" or not low[after : after + 1].isalnum():
                starts.add(low.rfind("\n", 0, at) + 1)
                # The line is in: skip its other occurrences (one look per line and word).
                after = low.find("\n", after)
                if after < 0:
                    break
            at = low.find(word, after)
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if spans and start == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def redact_assignments(text: str) -> str:
    """Mask values assigned to secret-named keys in env, YAML, JSON and CLI-flag form."""
    low = text.lower()
    if not any(word in low for word in _ASSIGN_WORDS):
        return text
    quoted_key, bare_key, flag, argv = _assignment_patterns()
    # A JSON key and its value, or an argv list, may be spread over lines: the whole text.
    text = quoted_key.sub(_quoted_key_sub, text)
    text = argv.sub(_value_sub, text)
    # Flags, env and YAML assignments never cross a newline, so they are looked for only on the
    # lines holding a trigger word: the same result as a whole-text pass, without trying a key
    # at every word of a large blob that mentions a secret word once.
    parts: list[str] = []
    done = 0
    for start, end in _trigger_lines(text, text.lower()):
        line = flag.sub(_value_sub, text[start:end])
        parts += (text[done:start], bare_key.sub(_value_sub, line))
        done = end
    parts.append(text[done:])
    return "".join(parts)


# Triggers of every rule, for a cheap look at whether any rule could change a text.
_ALL_TRIGGERS = tuple(
    dict.fromkeys(
        [
            *(t for lower, _ in _SHAPE_TRIGGERS for t in lower),
            "private",  # strip_private
            "authorization",  # redact_credentials
            "bearer",
            "://",
            *_COMMAND_TRIGGERS,  # redact_command_credentials
            *_ASSIGN_WORDS,  # redact_assignments
        ]
    )
)
_ALL_EXACT_TRIGGERS = tuple(t for _, exact in _SHAPE_TRIGGERS for t in exact)
# Escapes that can hide a trigger: one standing for any character, or `/`, or a continuation
# joining two halves; a continuation kept in a string is written escaped (`\\\n`).
_HIDING_ESCAPES = ("\\u", "\\x", "\\U", "\\/", "\\\n", "\\\r", "\\\\\\n", "\\\\\\r")


def _always(_text: str) -> bool:
    return True


# Quoting cut values -----------------------------------------------------------------------


CLIP_LOOK_AHEAD = 64 * 1024
"""How far past its cut `clip` reads for what makes the kept part a secret: more than a PEM
block of the largest RSA key (16384 bits: about 13 KiB)."""


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, ending in `...` when it had to be cut.

    Text is redacted after it is cut (a message quoting a value, a verifier's note), and a
    secret cut in two is no longer one the rules recognise, so its first part would be kept.
    The cut is never inside a word: the word it falls in is dropped whole.
    """
    if len(text) <= limit:
        return text
    # A secret known only by what lies past the cut (a PEM block's END line, the second half of
    # a continued line) is masked before cutting: cut first, its first part is kept unrecognised.
    # Only a look-ahead past the cut is read: the whole of a text with no size bound (an MCP
    # argument quoted in an error) cost seconds per MiB.
    window = text[: limit + CLIP_LOOK_AHEAD]
    if len(window) < len(text):
        # The look-ahead ends between words too: a word it would split is left out whole.
        start = len(window)
        while start and not window[start - 1].isspace():
            start -= 1
        window = window[:start]
    whole = len(window) == len(text)
    text = Redactor()(window)
    if whole and len(text) <= limit:
        return text
    end = max(limit - 3, 0)
    head = text[:end]
    if len(text) > end and head and not head[-1].isspace() and not text[end].isspace():
        head = head[: len(head) - len(head.split()[-1])]
    return head + "..."


# The pipeline -------------------------------------------------------------------------------


MAX_PASSES = 4
"""Passes of the pipeline over one text; in practice the second finds nothing left to mask."""

ESCAPE_LEVELS = 4
"""Levels of escaping read through: a JSON string inside a JSON string, four deep."""


class Redactor:
    """The ordered pipeline, with the configured literals bound in."""

    __slots__ = ("_escapable_literals", "_literals", "_rules")

    def __init__(self, literals: Iterable[str] = ()) -> None:
        self._literals = tuple(literal for literal in literals if literal)
        # A literal holding a character that JSON or repr() escapes may be written with any
        # escape in it: then every escaped part is worth reading (see `_reading_filter`).
        self._escapable_literals = any(
            not literal.isascii() or not literal.isprintable() or '"' in literal
            or "'" in literal or "\\" in literal
            for literal in self._literals
        )  # fmt: skip
        self._rules: tuple[StrRule, ...] = (
            strip_private,
            literal_rule(self._literals),
            redact_token_shapes,
            redact_pem_remnants,
            redact_credentials,
            redact_command_credentials,
            redact_assignments,
        )

    def __call__(self, text: str) -> str:
        r"""Return `text` with every secret removed, also where it is written escaped.

        Text holding a backslash is first read as it means (`cortex.cases.escapes`): a JSON
        string's `\n`, a repr's `\x1b`, a shell continuation. What that reading masks is
        carried back onto the text as written; then the rules run on the text itself.
        """
        if "\\" in text:
            text = self._through_escapes(text, ESCAPE_LEVELS)
        return self._passes(text)

    def _through_escapes(self, text: str, levels: int) -> str:
        """`text` with what the reading of its escaped parts masks masked, escapes kept."""
        from cortex.cases.escapes import has_escape, read_through

        if not has_escape(text):
            return text  # backslashes, but none escaping anything (a Windows path)
        worth_reading = self._reading_filter(text)
        if worth_reading is None:
            return text

        def redact_reading(decoded: str) -> str:
            if levels > 1 and "\\" in decoded:
                # Escaped again inside (a JSON document kept in a JSON string): level by level.
                decoded = self._through_escapes(decoded, levels - 1)
            return self._passes(decoded)

        return read_through(text, redact_reading, worth_reading)

    def _reading_filter(self, text: str) -> Callable[[str], bool] | None:
        r"""Which escaped parts of `text` are worth reading; None when none is.

        Reading a part costs a pipeline run, and most parts of a large JSON log hide nothing. A
        reading holds a rule's trigger (or a literal) only where the written part holds it too,
        or where an escape sits inside it: one that can stand for a letter, digit or `/`
        (`\u`, `\x`, `\U`, `\/`), or a continuation joining two halves. A literal with a
        character that JSON or repr() escapes may be written with any escape in it.
        """
        if self._escapable_literals:
            return _always
        # What occurs anywhere in the text: only these are then looked for, part by part.
        low = text.lower()
        lower = tuple(t for t in _ALL_TRIGGERS if t in low)
        exact = tuple(
            t for t in (*_ALL_EXACT_TRIGGERS, *_HIDING_ESCAPES, *self._literals) if t in text
        )
        if not lower and not exact:
            return None

        def worth_reading(written: str) -> bool:
            if any(t in written for t in exact):
                return True
            written_low = written.lower()
            return any(t in written_low for t in lower)

        return worth_reading

    def _passes(self, text: str) -> str:
        """The rules, run until a pass changes nothing.

        A mask can complete a pattern that an earlier rule could not see (`'k': 'PWD="...`
        becomes `'k': 'PWD=[REDACTED] '`, a quoted value), so the rules run again until a pass
        changes nothing: redacting the result again is then a no-op by construction. Text
        without secrets costs one pass.
        """
        for _ in range(MAX_PASSES):
            before = text
            for rule in self._rules:
                text = rule(text)
            if text == before:
                break
        return text

    def looks_secret(self, text: str) -> bool:
        """Whether redaction would change `text` (used to refuse secret-looking identifiers)."""
        return self(text) != text

    def redact_bytes(self, data: bytes) -> bytes:
        """Redact text inside arbitrary bytes, leaving bytes that are not UTF-8 untouched."""
        text = data.decode("utf-8", "surrogateescape")
        redacted = self(text)
        if redacted == text:
            return data
        return redacted.encode("utf-8", "surrogateescape")
