"""`verify --follow`: a verifier's output, line by line, never more than its stored copy reveals.

The stored copy of a run is redacted as one text, and some secrets span lines (a PEM key, a
`<private>` span, a JSON key whose value is on the next line, `Authorization:` before a line
break). Redacting each line on its own would show the middle of such a secret, so `Lines` keeps
the text of its stream and shows a line only once it has *settled*:

- Whole lines only. A partial line is held back until its newline comes or the run ends.
- In context. The text so far (every complete line) is redacted as the store would redact it,
  twice, each time followed by a probe line a pattern left open would swallow (a long word with
  digits, and the same in quotes). A pattern still open at the end (an unterminated key, an
  unclosed span, a value to come on the next line) swallows a probe; the new lines are shown
  only when both probes come through untouched and the redacted text so far still begins with
  everything already shown. If a later redaction ever disagrees with what was shown, following
  stops for the rest of the run (a notice says so); nothing shown is ever taken back or added
  to unredacted. One rule reaches backwards instead: an END line of a private key whose BEGIN
  was cut off masks the base64 lines above it. So the text is also redacted followed by such an
  END line, and lines that line would mask wait until a line that is not key-like follows.
- Within what is kept. The runner hands over only the bytes that enter the stream's kept head
  (the first `OUTPUT_HEAD` bytes); the middle of a long output is dropped from the stored copy
  and so is never shown. When the run ends, the stored copy of the stream (head, omission
  marker, tail) is known, and what it holds beyond the lines already shown is shown then.
- Bounded. A line longer than `LINE_MAX` characters is cut, with the count of what was cut.

Judging costs two redactions of at most the head (8 KiB) while the run goes, at most once per
`SETTLE_INTERVAL`, and two of the stored copy (at most 32 KiB) at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cortex.cases.redact import Redactor

LINE_MAX = 400
"""Characters of one followed line that are shown."""

SETTLE_INTERVAL = 0.05
"""Seconds between two attempts to settle new lines while output streams in."""

_PROBES = ("cortexFollowProbe0123456789abcdefXYZ", '"cortexFollowProbe0123456789abcdefXYZ"')
"""Lines a pattern still open at the end of the text would swallow; no rule masks them alone."""

_END_PROBE = "-----END PRIVATE KEY-----"
"""A line that makes the lines right above it secret if they look like a key's body: the
redactor masks what a cut left of a key (an END line without its BEGIN) with the base64 lines
above it, so such lines are shown only once a line that is not one has followed them."""

STOPPED = "[follow stopped: the rest of this output is only in the stored copy]"


class Lines:
    """One stream's followed lines (see the module docstring)."""

    def __init__(self, redactor: Redactor, emit: Callable[[str], None]) -> None:
        self._redactor = redactor
        self._emit = emit
        self._raw = bytearray()
        self._judged = 0
        """Bytes of `_raw` (whole lines) whose redaction has been shown."""
        self._shown = ""
        """The redacted text shown so far (what every later redaction must begin with)."""
        self._pending = False
        self._last_try = float("-inf")
        self._stopped = False

    def feed(self, data: bytes, now: float) -> None:
        """Bytes the stream wrote (within its kept head)."""
        if self._stopped:
            return
        self._raw += data
        if b"\n" in data:
            self._pending = True
        self.settle(now)

    def settle(self, now: float) -> None:
        """Show the lines that have settled, at most once per `SETTLE_INTERVAL`."""
        if self._stopped or not self._pending or now - self._last_try < SETTLE_INTERVAL:
            return
        self._last_try = now
        end = self._raw.rfind(b"\n") + 1
        if end <= self._judged:
            self._pending = False
            return
        text = bytes(self._raw[:end]).decode("utf-8", "surrogateescape")
        settled = self._settled(text)
        if settled is None:
            return  # a pattern is still open: wait for more lines (or the end of the run)
        self._pending = False
        self._judged = end
        self._show(settled)

    def finish(self, kept: bytes) -> None:
        """The run ended and `kept` is the stored copy of the stream: show the rest of it."""
        if self._stopped:
            return
        if not kept.startswith(bytes(self._raw[: self._judged])):
            # Cannot happen with the runner's head: the shown lines are a prefix of what is kept.
            self._stop()
            return
        self._show(self._redactor(kept.decode("utf-8", "surrogateescape")))
        self._stopped = True

    def _settled(self, text: str) -> str | None:
        """The redaction of `text` if no line still to come could change it, else None."""
        results = set()
        for probe in _PROBES:
            out = self._redactor(text + probe)
            if not out.endswith("\n" + probe):
                return None
            results.add(out[: -len(probe)])
        if len(results) != 1:
            return None
        settled = results.pop()
        if not self._redactor(text + _END_PROBE).startswith(settled):
            return None  # the last lines would be a key's body if its END line came next
        return settled

    def _show(self, redacted: str) -> None:
        if not redacted.startswith(self._shown):
            self._stop()
            return
        new = redacted[len(self._shown) :]
        self._shown = redacted
        if not new:
            return
        lines = new.split("\n")
        if lines[-1] == "":
            lines.pop()
        for line in lines:
            self._emit(_bounded(line))

    def _stop(self) -> None:
        self._stopped = True
        self._emit(STOPPED)


def _bounded(line: str) -> str:
    text = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if len(text) <= LINE_MAX:
        return text
    return text[:LINE_MAX] + f"... [{len(text) - LINE_MAX} more characters]"
