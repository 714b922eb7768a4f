"""Input validation shared by every use case: refuse, never repair.

Each check raises InvalidInputError naming the field, so a caller learns exactly what to fix.
Nothing here rewrites a value except trimming surrounding whitespace from free text.
"""

from __future__ import annotations

import re
from typing import TypeVar, get_args

from cortex.cases.bounds import (
    CRITERIA_MAX,
    CRITERION_ID_MAX,
    CRITERION_STATEMENT_MAX,
    IDENTIFIER_MAX,
    LINE_NUMBER_MAX,
    LOCATION_PATH_MAX,
)
from cortex.cases.errors import ArgumentError, InvalidInputError
from cortex.cases.records import (
    Confidence,
    Criterion,
    EvidenceKind,
    Mode,
    Origin,
    Risk,
    Surface,
)
from cortex.cases.redact import Redactor, clip

_ALLOWED_CONTROLS = frozenset("\t\n\r")


def bad(field: str, rest: str) -> InvalidInputError:
    """The error `<field><rest>`; a field that is an argument (`--name`) is named per face.

    The CLI then names `--name` and the MCP server its tool argument (`ArgumentError`).
    """
    if field.startswith("--"):
        name = field[2:].replace("-", "_")
        return ArgumentError("{" + name + "}" + rest, name)
    return InvalidInputError(field + rest)


def _utf8_size(value: str, field: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise bad(field, " is not valid UTF-8") from None


def _check_controls(value: str, field: str, *, multiline: bool) -> None:
    for char in value:
        code = ord(char)
        if (code < 0x20 or code == 0x7F) and not (multiline and char in _ALLOWED_CONTROLS):
            what = "NUL" if code == 0 else f"control character U+{code:04X}"
            raise bad(field, f" contains a {what}")


def text(value: str, field: str, max_bytes: int, *, required: bool = True) -> str:
    """Free text (goal, claim, note): trimmed, bounded, no NUL or terminal control codes."""
    value = value.strip()
    if required and not value:
        raise bad(field, " must not be empty")
    size = _utf8_size(value, field)
    if size > max_bytes:
        raise bad(field, f" is {size} bytes, over the {max_bytes}-byte limit")
    _check_controls(value, field, multiline=True)
    return value


def short_text(value: str, field: str, max_bytes: int) -> str:
    """A one-line value such as a symbol or a URI."""
    value = text(value, field, max_bytes)
    _check_controls(value, field, multiline=False)
    return value


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_IDENTIFIER_CHARS = _ALNUM | frozenset("._:@/+-")


def identifier(
    value: str, field: str, redactor: Redactor, *, max_bytes: int = IDENTIFIER_MAX
) -> str:
    """A name chosen by the caller (actor, idempotency key, tool): refused, not rewritten."""
    size = _utf8_size(value, field)
    if not value or size > max_bytes:
        raise bad(field, f" must be 1 to {max_bytes} bytes")
    # A set lookup per character rather than a regex: compiling one costs more per call.
    if value[0] not in _ALNUM or not all(c in _IDENTIFIER_CHARS for c in value):
        rest = (
            f" {value!r} may contain only letters, digits and . _ : @ / + - "
            "and must start with a letter or digit"
        )
        raise bad(field, rest)
    if redactor.looks_secret(value):
        raise bad(field, " looks like a secret; choose a plain name")
    return value


_Word = TypeVar("_Word", bound=str)

# The words of each Literal, typed as that Literal, so `choice` can return what it checked.
MODES: tuple[Mode, ...] = get_args(Mode)
RISKS: tuple[Risk, ...] = get_args(Risk)
SURFACES: tuple[Surface, ...] = get_args(Surface)
EVIDENCE_KINDS: tuple[EvidenceKind, ...] = get_args(EvidenceKind)
ORIGINS: tuple[Origin, ...] = get_args(Origin)
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)


def shown(value: str, limit: int) -> str:
    """`value` cut to about `limit` characters between words, to quote in a message.

    A secret cut in half is no longer recognised by the redactor; a cut between words keeps
    whole tokens, which it redacts (cortex.cases.redact.clip).
    """
    return clip(value, limit)


def choice(value: str, field: str, allowed: tuple[_Word, ...]) -> _Word:
    """One of a fixed set of words, returned as the allowed word: the caller gets the Literal."""
    for option in allowed:
        if value == option:
            return option
    raise bad(field, f" must be one of {', '.join(allowed)}, not {value!r}")


def location_path(value: str, redactor: Redactor, *, directory: bool = False) -> str:
    """A repository-relative file path: no absolute, empty, `.` or `..` parts, no backslash.

    With `directory`, one trailing `/` is allowed and kept: it names a directory (a change
    boundary covering everything under it).
    """
    field = "--file"
    size = _utf8_size(value, field)
    if not value or size > LOCATION_PATH_MAX:
        raise bad(field, f" must be 1 to {LOCATION_PATH_MAX} bytes")
    _check_controls(value, field, multiline=False)
    if value.startswith("/") or re.match(r"^[A-Za-z]:", value):
        raise bad(field, " must be relative to the repository, not absolute")
    if "\\" in value:
        raise bad(field, " must use / as separator (no backslash)")
    parts = value.removesuffix("/").split("/") if directory else value.split("/")
    if any(part in {"", ".", ".."} for part in parts):
        raise bad(field, " must not have empty, '.' or '..' components")
    if redactor.looks_secret(value):
        raise bad(field, " looks like a secret")
    return value


def line_range(value: str) -> tuple[int, int]:
    """`N` or `N-M` with 1 <= N <= M."""
    match = re.fullmatch(r"([0-9]{1,9})(?:-([0-9]{1,9}))?", value)
    if not match:
        raise bad("--line", f" must be N or N-M, not {value!r}")
    start = int(match.group(1))
    end = int(match.group(2) or start)
    if not 1 <= start <= end <= LINE_NUMBER_MAX:
        raise bad("--line", f" {value!r} must satisfy 1 <= start <= end")
    return start, end


def criteria(specs: list[str], redactor: Redactor) -> list[Criterion]:
    """`id=statement` pairs: unique ids, bounded, at most CRITERIA_MAX of them."""
    if len(specs) > CRITERIA_MAX:
        raise InvalidInputError(f"at most {CRITERIA_MAX} acceptance criteria")
    result: list[Criterion] = []
    seen: set[str] = set()
    for spec in specs:
        key, sep, statement = spec.partition("=")
        if not sep:
            raise bad("--criterion", f" must be id=statement, not {spec!r}")
        key = identifier(key.strip(), "criterion id", redactor, max_bytes=CRITERION_ID_MAX)
        if key in seen:
            raise InvalidInputError(f"criterion id {key!r} is given twice")
        seen.add(key)
        result.append(
            Criterion(
                id=key,
                statement=text(statement, f"criterion {key}", CRITERION_STATEMENT_MAX),
            )
        )
    return result
