"""Terminal-safe text: what the faces that draw on a terminal do to every string from a case.

Case text comes from agents, tools and repositories. Both the CLI and the studio pass it through
`safe` before it reaches a terminal, so no escape sequence in a claim or a goal is obeyed.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Terminal controls, and the bidirectional overrides that reorder how text reads."""


def safe(text: str) -> str:
    r"""Text with terminal control characters shown as escapes (ESC as `\x1b`), never obeyed.

    Case text comes from agents, tools and repositories: an escape sequence in it must not
    move the cursor, rewrite what was printed, or retitle the terminal.
    """
    return _CONTROLS.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: Any) -> Any:
    """Every string in plain data through `safe` (lists and dicts walked, other values kept)."""
    if isinstance(value, str):
        return safe(value)
    if isinstance(value, list):
        return [clean(item) for item in value]
    if isinstance(value, dict):
        return {key: clean(item) for key, item in value.items()}
    return value
