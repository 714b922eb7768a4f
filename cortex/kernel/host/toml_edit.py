"""Set one table of a TOML document by editing its text, so comments and layout elsewhere stay.

The one way Cortex edits a person's TOML (`setup codex`, `init`). The standard library reads
TOML but cannot write it, and rewriting a person's file from its parsed form would drop every
comment. So the edit is textual: the table's own lines are replaced when it has a `[a.b]`
header, or a new table is appended when it is absent. What makes that safe is the check at the
end: the new text must parse, and read back as the old document with exactly that table
changed; otherwise nothing is returned.
"""

from __future__ import annotations

import math
import re
import tomllib
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class UnsafeEditError(Exception):
    """The table is written in a form a textual edit cannot change safely; says why."""


def set_table(
    text: str, keys: tuple[str, ...], values: dict[str, Any], *, keep_others: bool = True
) -> str:
    """`text` with table `keys` holding `values`; raises UnsafeEditError.

    The table's other keys are kept, unless `keep_others` is false: then `values` is the whole
    table.
    """
    document = tomllib.loads(text)
    name = ".".join(keys)
    parent: Any = document
    for key in keys[:-1]:
        parent = parent.get(key, {}) if isinstance(parent, dict) else None
    old = parent.get(keys[-1]) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or (old is not None and not isinstance(old, dict)):
        raise UnsafeEditError(f"{name} would not be a table")
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    wanted_header = _nested(keys, {})
    # With no such table in the document, a line that looks like its header is inside a
    # multi-line string: appending the table is the edit, and the check below confirms it.
    ours = (
        []
        if old is None
        else [index for index, line in enumerate(lines) if _header(line) == wanted_header]
    )
    if len(ours) > 1:
        raise UnsafeEditError(f"[{name}] appears more than once")
    if ours:
        new_text = _replace_table(lines, ours[0], keys, values, newline, keep_others=keep_others)
    else:
        block = [f"[{'.'.join(_key(key) for key in keys)}]", *_assignments(values)]
        prefix = text
        if prefix and not prefix.endswith("\n"):
            prefix += newline
        if prefix:
            prefix += newline
        new_text = prefix + "".join(line + newline for line in block)
    expected = document
    table = expected
    for key in keys[:-1]:
        table = table.setdefault(key, {})
    table[keys[-1]] = {**(old or {}), **values} if keep_others else values
    try:
        readback = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:
        if old is not None and not ours:
            raise UnsafeEditError(
                f"{name} is written as an inline table or with dotted keys, which cannot be "
                "edited as text"
            ) from None
        raise UnsafeEditError(f"the edited file would not parse ({exc})") from None
    if not same(readback, expected):
        raise UnsafeEditError(f"the edit would change more than {name}")
    return new_text


def _nested(keys: tuple[str, ...], leaf: Any) -> Any:
    """`{k1: {k2: ... leaf}}`: what a header naming `keys` parses to."""
    for key in reversed(keys):
        leaf = {key: leaf}
    return leaf


def same(a: object, b: object) -> bool:
    """Whether two parsed TOML values are the same, for the read-back check.

    Like `==`, except that a NaN equals a NaN (a file holding one must still pass the check),
    and that types and the sign of zero count (`1` and `1.0`, `0.0` and `-0.0` differ in TOML).
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(value, b[key]) for key, value in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _header(line: str) -> dict[str, Any] | None:
    """What a line declares if it is a table header on its own, else None."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    try:
        # Parsing decides, so `[ a . "b" ]  # note` is recognised like `[a.b]`.
        return tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None


def _replace_table(
    lines: list[str],
    start: int,
    keys: tuple[str, ...],
    values: dict[str, Any],
    newline: str,
    *,
    keep_others: bool,
) -> str:
    """The table at `start` rewritten; the lines up to the next header are its body."""
    end = next((i for i in range(start + 1, len(lines)) if _header(lines[i]) is not None), None)
    end = len(lines) if end is None else end
    # Blank and comment lines right before the next header belong to what follows: keep them.
    body_end = end
    while body_end > start + 1 and lines[body_end - 1].strip()[:1] in {"", "#"}:
        body_end -= 1
    try:
        table: Any = tomllib.loads("".join(lines[start:body_end]))
        for key in keys:
            table = table[key]
        kept = {key: value for key, value in table.items() if key not in values}
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError):
        # A multi-line value holding a header-like line cut it short: the final check would
        # refuse anyway, this says why.
        raise UnsafeEditError("its table cannot be read on its own") from None
    header = lines[start] if lines[start].endswith("\n") else lines[start] + newline
    body = [line + newline for line in _assignments({**values, **kept} if keep_others else values)]
    return "".join([*lines[:start], header, *body, *lines[body_end:]])


def _assignments(table: dict[str, Any]) -> list[str]:
    return [f"{_key(key)} = {value_text(value)}" for key, value in table.items()]


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else string_text(key)


def string_text(value: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = ['"']
    for char in value:
        code = ord(char)
        if char in {'"', "\\"}:
            out.append("\\" + char)
        elif code < 0x20 or code == 0x7F:
            out.append(_SHORT_ESCAPES.get(char, f"\\u{code:04X}"))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def value_text(value: object) -> str:
    """A value tomllib returned, as TOML (the read-back check guards the result)."""
    from datetime import date, time

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return string_text(value)
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{_key(k)} = {value_text(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    raise UnsafeEditError(f"it holds a value of type {type(value).__name__}")


def remove_table(text: str, keys: tuple[str, ...]) -> str:
    """`text` without table `keys` (its header and its own lines); raises UnsafeEditError.

    Like `set_table`, the result must read back as the old document with exactly that table
    gone; a table written inline, with dotted keys, or with sub-tables of its own is refused.
    """
    document = tomllib.loads(text)
    name = ".".join(keys)
    parent: Any = document
    for key in keys[:-1]:
        parent = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or keys[-1] not in parent:
        return text
    lines = text.splitlines(keepends=True)
    wanted_header = _nested(keys, {})
    ours = [index for index, line in enumerate(lines) if _header(line) == wanted_header]
    if len(ours) != 1:
        raise UnsafeEditError(f"[{name}] is not written as one table of its own")
    start = ours[0]
    end = next((i for i in range(start + 1, len(lines)) if _header(lines[i]) is not None), None)
    end = len(lines) if end is None else end
    while end > start + 1 and lines[end - 1].strip()[:1] in {"", "#"}:
        end -= 1
    # The blank line that separated the table from what came before goes with it.
    if start > 0 and not lines[start - 1].strip():
        start -= 1
    new_text = "".join([*lines[:start], *lines[end:]])
    del parent[keys[-1]]
    try:
        readback = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:
        raise UnsafeEditError(f"the edited file would not parse ({exc})") from None
    # A parent only the removed header implied (`[mcp_servers]` never written) goes with it.
    if not parent and len(keys) > 1 and keys[0] not in readback:
        del document[keys[0]]
    if not same(readback, document):
        raise UnsafeEditError(f"the edit would change more than {name}")
    return new_text
