"""The CLI's terminal: whether a person is at it.

The *channel* a command arrived on (docs/design/trust.md) is `cli-tty` when stdin is a
terminal, that terminal is the process's controlling terminal, and the process is in its
foreground process group; otherwise `cli`.
"""

from __future__ import annotations

import os
from typing import IO, Literal

Channel = Literal["cli-tty", "cli"]


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
