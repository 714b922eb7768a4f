"""Markdown that untrusted text cannot restructure.

Goals, claims, questions and verifier notes come from agents, tools and repositories. Put into
a Markdown document as they are, a claim could open a heading ("## Verification: verified"),
inject HTML or a link, start a table, or carry terminal escapes and bidirectional overrides that
make the text read differently from what it is. Every helper here returns text that renders as
exactly what was written:

- `inline`: one line of prose. Whitespace runs (newlines included) become one space, Markdown
  punctuation is backslash-escaped, and invisible or control characters are shown as escapes.
- `quote`: several lines of prose as a block quote, each line escaped like `inline`, so no line
  can leave the quote or become a heading inside it.
- `code`: a value that reads best verbatim (an id, a path, a command) as a code span whose fence
  is longer than any backtick run inside it; Markdown is not interpreted in a code span.

Nothing here reads the terminal: the CLI's own `safe` does the same for plain text output.
"""

from __future__ import annotations

import re

_INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
"""Controls (C0, DEL, C1), zero-width and bidirectional formatting characters."""

_SPECIAL = re.compile(r"[\\`*_\[\]<>#|~&!$]")
"""Punctuation that Markdown (CommonMark and GitHub's extensions) may interpret mid-line."""

_BLOCK_START = re.compile(r"^(\s*)([-+=]|\d{1,9}(?=[.)]))")
"""What a line may start with to become a list item, a setext underline or a thematic break."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape_line(line: str) -> str:
    escaped = _SPECIAL.sub(r"\\\g<0>", line)
    escaped = _BLOCK_START.sub(_block_start, escaped)
    # Escapes last: the backslash they introduce must not be doubled by the step above.
    return _INVISIBLE.sub(_visible, escaped)


def _block_start(match: re.Match[str]) -> str:
    indent, mark = match.group(1), match.group(2)
    if mark.isdigit():
        # `1.` or `1)` starts an ordered list: escaping the punctuation after the number stops it.
        return f"{indent}{mark}\\"
    return f"{indent}\\{mark}"


def inline(text: str) -> str:
    """`text` as one line of Markdown that renders as written."""
    return _escape_line(" ".join(text.split()))


def quote(text: str) -> list[str]:
    """`text` as block-quote lines; follow them with a blank line so nothing continues them."""
    lines = text.splitlines() or [""]
    return [f"> {_escape_line(line.rstrip())}".rstrip() for line in lines]


def code(text: str) -> str:
    """`text` as an inline code span (one line; controls shown as escapes)."""
    body = _INVISIBLE.sub(_visible, " ".join(text.split()))
    if not body:
        return "` `"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    # A span that starts or ends with a backtick needs a space to keep it off the fence.
    pad = " " if body[0] == "`" or body[-1] == "`" else ""
    return f"{fence}{pad}{body}{pad}{fence}"
