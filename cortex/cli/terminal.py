"""The CLI's terminal: whether a person is at it, and asking them something there.

Two decisions rest on it (docs/design/trust.md). The *channel* a command arrived on is
`cli-tty` when stdin is a terminal, that terminal is the process's controlling terminal, and
the process is in its foreground process group; otherwise `cli`. A confirmation (`case trust`,
`decision answer`, and any later command a person must confirm) is read from the controlling
terminal, `/dev/tty`, never from stdin, so piped input cannot confirm anything.

Everything a prompt shows is passed through `safe` (no escape sequence of a case or a
repository is obeyed) and indented under a fixed heading, so text from a case cannot pose as
the prompt's own lines.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, Literal

Channel = Literal["cli-tty", "cli"]

ANSWER_MAX = 4096
"""The longest line read back from the terminal."""


def channel(stdin: IO[bytes] | None) -> Channel:
    """`cli-tty` if a person can be at this command's stdin (see the module docstring)."""
    try:
        fd = stdin.fileno() if stdin is not None else -1
    except (AttributeError, OSError, ValueError):
        return "cli"  # an in-memory stream, a closed one: no terminal
    if fd < 0 or not os.isatty(fd):
        return "cli"
    try:
        # ENOTTY when the terminal is not our controlling one; another group when in background.
        return "cli-tty" if os.tcgetpgrp(fd) == os.getpgrp() else "cli"
    except OSError:
        return "cli"


def ask(lines: Sequence[str], request: str) -> str | None:
    """Show `lines` and `request` at the controlling terminal; the line typed back, stripped.

    None when the process has no controlling terminal (nothing is shown then).
    """
    try:
        tty = open("/dev/tty", "r+b", buffering=0)  # noqa: SIM115 - closed below
    except OSError:
        return None
    with tty:
        from cortex.screen.text import safe

        shown = "".join(safe(line) + "\n" for line in lines) + safe(request)
        tty.write(shown.encode("utf-8", "backslashreplace"))
        answer = tty.readline(ANSWER_MAX).decode("utf-8", "replace")
    return answer.strip()


def indented(text: str | None, prefix: str = "    ") -> list[str]:
    """`text` as lines under a heading: each line indented, so none reads as the prompt's."""
    return [prefix + line for line in (text or "").splitlines() or [""]]
