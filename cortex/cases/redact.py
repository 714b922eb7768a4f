"""Redaction: an ordered pipeline of small pure functions over strings.

See docs/design/redaction.md for the promise and its limits. Each rule names cheap trigger
substrings; its regular expression is compiled on first use and run only when a trigger occurs,
so text without anything secret-looking costs a few substring checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache

REDACTED = "[REDACTED]"
PRIVATE = "[PRIVATE]"

StrRule = Callable[[str], str]


# <private> spans ----------------------------------------------------------------------------


@cache
def _private_tag() -> re.Pattern[str]:
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

_TOKEN_SHAPES: tuple[tuple[tuple[str, ...], str, int], ...] = (
    # PEM private keys (RSA, EC, OPENSSH, PGP ...), to the END line or, if it is missing, the end.
    (
        ("private key",),
        (
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
        re.DOTALL,
    ),
    # AWS access key ids.
    (
        ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "asca", "abia", "acca"),
        (
            r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA|ABIA|ACCA)[A-Z0-9]{16}"
            r"(?![A-Z0-9])"
        ),
        0,
    ),
    # GitHub: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained tokens.
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{22,255})",
        0,
    ),
    # GitLab personal, project and runner tokens.
    (("glpat-", "glrt-", "gldt-"), r"\bgl(?:pat|rt|dt)-[A-Za-z0-9_-]{20,}", 0),
    # Slack tokens and incoming-webhook URLs.
    (("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    (
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
        0,
    ),
    # Stripe secret, restricted and publishable keys, and webhook signing secrets.
    (
        ("_live_", "_test_", "whsec_"),
        r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{16,})",
        0,
    ),
    # OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
    (("sk-",), r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}", 0),
    # Google API keys.
    (("aiza",), r"\bAIza[0-9A-Za-z_-]{35}", 0),
    # npm access tokens.
    (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    # SendGrid API keys.
    (("sg.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", 0),
    # Hugging Face tokens.
    (("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b", 0),
    # JSON Web Tokens (the signature may be empty for alg "none").
    (("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", 0),
)

_ASSIGN_WORDS = (
    "secret",
    "token",
    "password",
    "passwd",
    "pwd",
    "api_key",
    "api-key",
    "apikey",
    "private_key",
    "private-key",
    "privatekey",
    "access_key",
    "access-key",
    "accesskey",
    "credential",
)


@cache
def _token_pattern(index: int) -> re.Pattern[str]:
    _, regex, flags = _TOKEN_SHAPES[index]
    return re.compile(regex, flags)


def redact_token_shapes(text: str) -> str:
    """Replace every known credential shape with the marker."""
    low = text.lower()
    for index, (triggers, _, _) in enumerate(_TOKEN_SHAPES):
        if any(t in low for t in triggers):
            # Compiled on first use only: most text never triggers most shapes.
            text = _token_pattern(index).sub(REDACTED, text)
            low = text.lower()
    return text


@cache
def _header_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    authorization = re.compile(
        r"(?i)(\bauthorization\s*[:=]\s*(?:(?:basic|bearer|token|digest|negotiate)\s+)?)"
        r"[^\s\"',;]+"
    )
    # A bearer token is long and, being random, contains a digit: "bearer authentication"
    # in prose is left alone.
    bearer = re.compile(r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*")
    url_password = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@\"']+:)[^/\s@\"']+(@)")
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


# Secret-named assignments ---------------------------------------------------------------------

_KEY = (
    r"[A-Za-z0-9_.-]*(?:secret|token|password|passwd|pwd|api[_-]?key|private[_-]?key"
    r"|access[_-]?key|credentials?)[A-Za-z0-9_.-]*"
)
# Values, most specific first: a JSON string escaped inside another string, a JSON/double-quoted
# string (with escapes), a single-quoted string.
_ESCAPED_DQ = r'\\"(?:(?!\\").)*\\"'
_DQ = r'"(?:[^"\\\n]|\\.)*"'
_SQ = r"'[^'\n]*'"
_NOT_SECRET_BARE = frozenset({"true", "false", "null", "none", "yes", "no", "on", "off"})
_STRONG_WORD = re.compile(r"secret|passw|pwd|key|credential")


@cache
def _assignment_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    quoted_key = re.compile(
        r"(?P<q>\\*[\"'])(?P<key>" + _KEY + r")(?P=q)(?P<sep>\s*[:=]\s*)"
        r"(?P<val>" + _ESCAPED_DQ + "|" + _DQ + "|" + _SQ + r"|[^\s,;}\]\[{\"'][^\s,;}\]]*)",
        re.IGNORECASE,
    )
    bare_key = re.compile(
        r"(?<![A-Za-z0-9_.\-\"'\\])(?P<key>" + _KEY + r")(?P<sep>[ \t]*(?P<op>[:=])[ \t]*)"
        r"(?P<val>" + _DQ + "|" + _SQ + r"|[^\s\"'{\[][^\n]*)?",
        re.IGNORECASE,
    )
    flag = re.compile(
        r"(?<![A-Za-z0-9_-])(?P<key>--?" + _KEY + r")(?P<sep>=|[ \t]+)"
        r"(?P<val>" + _DQ + "|" + _SQ + r"|[^\s\"'-][^\s]*)",
        re.IGNORECASE,
    )
    return quoted_key, bare_key, flag


def _mask_quoted(value: str) -> str:
    """Keep a quoted value's quotes (and escaping) and mask what is inside."""
    if value.startswith('\\"'):
        return '\\"' + REDACTED + '\\"'
    if value[:1] in {'"', "'"}:
        return value[0] + REDACTED + value[0]
    return ""


def _is_secret_bare(value: str, key: str) -> bool:
    stripped = value.strip()
    if len(stripped) < 4 or stripped.lower() in _NOT_SECRET_BARE:
        return False
    # `max_tokens: 4096` is a count, but `password: 12345678` is a PIN: numbers are spared only
    # for keys that are about tokens and nothing stronger.
    low_key = key.lower()
    numeric = stripped.replace(".", "", 1).isdigit()
    return not (numeric and "token" in low_key and not _STRONG_WORD.search(low_key))


def _quoted_key_sub(match: re.Match[str]) -> str:
    value = match.group("val")
    masked = _mask_quoted(value)
    if not masked:
        if not _is_secret_bare(value, match.group("key")):
            return match.group(0)
        # A bare value after a quoted key is JSON or YAML: a quoted marker keeps it parseable.
        masked = '"' + REDACTED + '"'
    return match.group("q") + match.group("key") + match.group("q") + match.group("sep") + masked


def _bare_key_sub(match: re.Match[str]) -> str:
    value = match.group("val")
    if value is None:
        return match.group(0)
    masked = _mask_quoted(value)
    if not masked:
        if match.group("op") == "=":
            # env and shell: the value ends at whitespace; what follows is the next word.
            word, _, rest = value.partition(" ")
            if not _is_secret_bare(word, match.group("key")):
                return match.group(0)
            return match.group("key") + match.group("sep") + REDACTED + (" " + rest if rest else "")
        # YAML and prose: the value runs to the end of the line.
        if not _is_secret_bare(value, match.group("key")):
            return match.group(0)
        masked = REDACTED
    return match.group("key") + match.group("sep") + masked


def _flag_sub(match: re.Match[str]) -> str:
    value = match.group("val")
    masked = _mask_quoted(value)
    if not masked:
        if not _is_secret_bare(value, match.group("key")):
            return match.group(0)
        masked = REDACTED
    return match.group("key") + match.group("sep") + masked


def redact_assignments(text: str) -> str:
    """Mask values assigned to secret-named keys in env, YAML, JSON and CLI-flag form."""
    low = text.lower()
    if not any(word in low for word in _ASSIGN_WORDS):
        return text
    quoted_key, bare_key, flag = _assignment_patterns()
    text = quoted_key.sub(_quoted_key_sub, text)
    text = flag.sub(_flag_sub, text)
    return bare_key.sub(_bare_key_sub, text)


# The pipeline -------------------------------------------------------------------------------


class Redactor:
    """The ordered pipeline, with the configured literals bound in."""

    __slots__ = ("_rules",)

    def __init__(self, literals: Iterable[str] = ()) -> None:
        self._rules: tuple[StrRule, ...] = (
            strip_private,
            literal_rule(literals),
            redact_token_shapes,
            redact_credentials,
            redact_assignments,
        )

    def __call__(self, text: str) -> str:
        """Return `text` with every secret removed."""
        for rule in self._rules:
            text = rule(text)
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
