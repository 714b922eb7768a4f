r"""The unescaped reading of a text, and the way back from its redaction to the text as written.

Secrets are stored in escaped forms too: a JSON log kept in a raw blob (`"msg":"a\nTOKEN=v"`),
an error message quoting a bad value with `repr()`, a plan pretty-printed as JSON, a shell
command continued with a backslash-newline. `read_through` reads each escaped part of a text as
it means, has it redacted, and carries the result back onto the text as written: only masked
values change, every escape around them stays as it was.

The parts are read one by one: each quoted string (JSON's `"..."`, a repr's `'...'`) that holds
a backslash on its own, without its quotes, and the text between such strings. A string's
reading is its value, so a mask inside it can never reach its quotes or the document around
it; what is made of several strings (`"password": "v"`) is the redactor's own rules' business.

`unescape` decodes JSON's escapes (`\n \t \r \b \f \" \\ \/ \uXXXX`, surrogate
pairs included) and Python's (`\' \xXX \UXXXXXXXX`), and deletes a backslash-newline (a
shell line continuation: `abc\<newline>def` reads `abcdef`). Anything else after a backslash
is kept as written. Each character of a reading comes from one escape or one character of the
text (a continuation belongs to the character after it), which is what lets `remap` map back.

Imported only for text holding a backslash: most text never pays for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
}
_ESCAPE = re.compile(
    r"\\(?:u(?P<high>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<low>[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|u(?P<u>[0-9a-fA-F]{4})|U(?P<U>[0-9a-fA-F]{8})|x(?P<x>[0-9a-fA-F]{2})"
    r"|(?P<continued>\r?\n)|(?P<char>[ntrbf\"'\\/]))"
)
"""The escapes `unescape` decodes; a backslash before anything else is an ordinary character."""
# An escape `_ESCAPE` decodes (a superset: a surrogate pair's halves are found alone), found
# without backtracking (a run of backslashes is scanned once; an escaped escape, such as
# the `\\n` of a string inside a string, is found by its last backslash).
_TELLING = re.compile(r"""\\(?:[ntrbf/"']|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|U[0-9a-fA-F]{8}|\r?\n)""")
_MARKERS = re.compile(r"\[REDACTED\]|\[PRIVATE\]")
# A quoted string on one line (JSON's, or a repr's in either quote), or an opening quote and the
# rest of its line when it is never closed there: every quote starts a match that always
# succeeds, so a line full of stray quotes is scanned once, not once per quote.
_LITERAL = re.compile(
    r"""(?P<q>["'])(?:(?!(?P=q))[^\\\n]|\\[^\n]|\\(?=\n|\Z))*(?:(?P=q)|(?=\n)|\Z)"""
)
_QUOTES = "\"'\\"
_MISSES_MAX = 16
_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def _decode(match: re.Match[str]) -> str:
    """What one escape means; the escape itself when it means nothing we know."""
    char = match.group("char")
    if char is not None:
        return _SIMPLE[char]
    if match.group("continued") is not None:
        return ""
    for name in ("u", "x"):
        digits = match.group(name)
        if digits is not None:
            return chr(int(digits, 16))
    wide = match.group("U")
    if wide is not None:
        code = int(wide, 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)
    high, low = int(match.group("high"), 16), int(match.group("low"), 16)
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def has_escape(text: str) -> bool:
    """Whether `text` holds an escape whose reading can differ from it as written.

    A cheap look (one scan, no decoding) that spares text whose backslashes escape nothing
    `unescape` knows (a Windows path, a regex) or only other backslashes.
    """
    return _TELLING.search(text) is not None


def unescape(text: str) -> str:
    """`text` as it reads with its escapes decoded (module docstring)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(_decode, text)


def token_ends(text: str) -> list[int]:
    """Where each character of `unescape(text)` ends in `text`, after a leading 0.

    Character k of the reading is written as `text[ends[k]:ends[k + 1]]`.
    """
    ends = [0]
    pos = 0
    for match in _ESCAPE.finditer(text):
        ends.extend(range(pos + 1, match.start() + 1))
        decoded = _decode(match)
        if decoded == match.group(0):
            ends.extend(range(match.start() + 1, match.end() + 1))
        elif decoded:
            ends.append(match.end())
        # A continuation reads as nothing: it is written as part of the next character.
        pos = match.end()
    ends.extend(range(pos + 1, len(text) + 1))
    # ... or of the last one, when nothing follows it.
    ends[-1] = len(text)
    return ends


def read_through(
    text: str, redact: Callable[[str], str], worth_reading: Callable[[str], bool]
) -> str:
    """`text` with what `redact` masks in the reading of each escaped part (module docstring).

    A part for which `worth_reading` is false is not read (its reading would hide nothing).
    """
    out: list[str] = []
    done = 0
    for start, end, quote in _parts(text):
        written = text[start:end]
        if not worth_reading(written):
            continue
        decoded = unescape(written)
        if decoded == written:
            continue
        clean = redact(decoded)
        if clean != decoded:
            out += (text[done:start], remap(written, decoded, clean, quote))
            done = end
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def _parts(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, quote) of each part of `text` to read on its own.

    A part is the inside of a quoted string that holds a backslash (quote: its quote character),
    or the text between such strings (quote: "").
    """
    done = 0
    for match in _LITERAL.finditer(text):
        literal = match.group(0)
        if "\\" not in literal or len(literal) < 2 or literal[-1] != literal[0]:
            continue  # nothing escaped in it, or never closed: part of the text around it
        if "\\" in text[done : match.start()]:
            yield done, match.start(), ""
        yield match.start() + 1, match.end() - 1, match.group(0)[0]
        done = match.end()
    if "\\" in text[done:]:
        yield done, len(text), ""


def remap(written: str, decoded: str, redacted: str, quote: str = "") -> str:
    """`written` with the edits that turned `decoded` (its reading) into `redacted`.

    Text that survived redaction is copied as it was written, escapes and all; what redaction
    inserted (markers, and the quotes of a marker standing for a bare value) is escaped as the
    string it sits in needs (`quote` is that string's quote; "" outside any string). The result
    always reads as `redacted`.
    """
    ends = token_ends(written)
    out: list[str] = []
    done = 0
    for start, at, size in _blocks(decoded, redacted):
        if at > done:
            out.append(_escaped(redacted[done:at], quote))
        out.append(written[ends[start] : ends[start + size]])
        done = at + size
    if done < len(redacted):
        out.append(_escaped(redacted[done:], quote))
    return "".join(out)


def _escaped(inserted: str, quote: str) -> str:
    r"""Inserted text as it is written inside a string quoted with `quote` ("": no string).

    A lone surrogate (from a lone `\uD83D`) is written as its escape wherever it is: it
    cannot be stored as UTF-8.
    """
    out = []
    for char in inserted:
        if "\ud800" <= char <= "\udfff":
            out.append(f"\\u{ord(char):04x}")
        elif not quote:
            out.append(char)
        elif char in {quote, "\\"}:
            out.append("\\" + char)
        else:
            out.append(_CONTROL_ESCAPES.get(char, char))
    return "".join(out)


def _blocks(decoded: str, redacted: str) -> Iterator[tuple[int, int, int]]:
    """Runs `(i, j, n)` with `decoded[i:i+n] == redacted[j:j+n]`, in order, none overlapping.

    Redaction replaces spans with a marker (a bare value's marker gains quotes around it) and
    drops orphan `</private>` tags; everything else is kept. So the text between two markers of
    `redacted` is text of `decoded`, found from where the previous run ended (quotes that were
    inserted next to a marker are set aside first when that finds it earlier). A run that is not
    found is treated as inserted: the result still reads right, only its escaping may differ.
    """
    pos = 0
    chunk_start = 0
    misses = 0
    chunks = [*_MARKERS.finditer(redacted), None]
    for index, marker in enumerate(chunks):
        chunk_end = len(redacted) if marker is None else marker.start()
        chunk = redacted[chunk_start:chunk_end]
        if chunk and misses < _MISSES_MAX:
            found = _find(decoded, chunk, pos, first=index == 0, last=marker is None)
            if found is None:
                # Each miss scans the rest of the text: past a few, the rest counts as inserted.
                misses += 1
            else:
                at, lead, size = found
                yield at, chunk_start + lead, size
                pos = at + size
        if marker is not None:
            chunk_start = marker.end()


def _find(
    decoded: str, chunk: str, pos: int, *, first: bool, last: bool
) -> tuple[int, int, int] | None:
    """Where `chunk`, or its part between quotes inserted next to markers, is in `decoded`.

    Returns (position in decoded, offset of the part found in chunk, its length), or None.
    The first chunk cannot start with an inserted quote, nor the last end with one.
    """
    lead = 0 if first else len(chunk) - len(chunk.lstrip(_QUOTES))
    trail = 0 if last else len(chunk) - len(chunk.rstrip(_QUOTES))
    best: tuple[int, int, int] | None = None
    inner = chunk[lead : len(chunk) - trail]
    # The whole chunk holds the inner part at `lead`: it can rank first only where the inner
    # part first occurs, so only there is it looked for. Searched for anywhere, it scanned the
    # rest of the text for each marker that had a quote inserted beside it (quadratic: 2 MiB of
    # JSON-escaped `curl -u \"u:pw` took 36 s).
    first_inner = decoded.find(inner, pos) if inner else -1
    for offset, part in ((0, chunk), (lead, inner)):
        if not part:
            continue
        at = -1
        if last and decoded.endswith(part) and len(decoded) - len(part) >= pos:
            at = len(decoded) - len(part)  # the text after the last marker ends the text
        if at < 0 and (offset or part == inner):
            at = first_inner
        elif at < 0 and not inner:
            at = decoded.find(part, pos)  # quotes alone: nothing inside to look for first
        elif at < 0:
            start = first_inner - lead
            found = first_inner >= 0 and start >= pos and decoded.startswith(chunk, start)
            at = start if found else -1
        # Ranked by where the whole chunk would start: the earliest reading wins.
        if at >= 0 and (best is None or at - offset < best[0] - best[1]):
            best = (at, offset, len(part))
    if best is None:
        return None
    at, offset, size = best
    # A quote set aside may be the value's own, put back before its marker: take it along.
    while offset + size < len(chunk) and decoded[at + size : at + size + 1] == chunk[offset + size]:
        size += 1
    while offset and at > pos and decoded[at - 1] == chunk[offset - 1]:
        at, offset, size = at - 1, offset - 1, size + 1
    return at, offset, size
