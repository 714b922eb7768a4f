"""The one escape function of the report's HTML, and the escaping of its embedded data.

Every piece of text that reaches the page, in an element or in an attribute value, passes
through `text`: HTML's five special characters become entities, and every character that can
make text read differently from what it is (controls, NUL, bidirectional overrides, isolates
and marks, zero-width characters, separators, the byte-order mark, lone surrogates) becomes a
visible token such as `⟨U+202E⟩`. Tab and newline are kept: they are plain whitespace.
"""

from __future__ import annotations

import re

HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2069\ufeff\ud800-\udfff]"
)
"""What is shown as a token: C0 (but tab and newline), DEL, C1, the soft hyphen, the Arabic
letter mark, the Mongolian vowel separator, zero-width and directional marks, the line and
paragraph separators, the bidirectional embeddings and overrides (U+202A-202E), word joiner
to the isolates (U+2060-2069), the byte-order mark, and lone surrogates."""

_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def token(code: int) -> str:
    """The visible form of one hidden character."""
    return f"\u27e8U+{code:04X}\u27e9"


def _visible(match: re.Match[str]) -> str:
    return token(ord(match.group()))


def text(value: object) -> str:
    """`value` as HTML text, safe in an element and in a quoted attribute value."""
    shown = value if isinstance(value, str) else str(value)
    return HIDDEN.sub(_visible, shown.translate(_ENTITIES))


def visible(value: str) -> str:
    """`value` with hidden characters as tokens but no HTML entities (for Markdown cells)."""
    return HIDDEN.sub(_visible, value)


def json_data(value: object) -> str:
    r"""`value` as JSON to embed in `<script type="application/json">`.

    ASCII only (every other character, U+202E included, is a `\u` escape), and `<`, `>` and
    `&` are escaped too, so neither `</script>` nor `<!--` can appear inside the element.
    """
    import json

    encoded = json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
