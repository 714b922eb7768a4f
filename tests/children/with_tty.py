"""Run a command with a given terminal as its controlling terminal (for `cortex case trust`).

Usage: with_tty.py TTY_PATH PROGRAM ARG...

Start it in a new session (`start_new_session=True`): opening the terminal as a session leader
without a controlling terminal makes it the controlling one, so `/dev/tty` in the program is
that terminal while its stdin and stdout stay whatever the parent gave it.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Open the terminal (acquiring it), then exec the program."""
    tty_path, program, *args = sys.argv[1:]
    fd = os.open(tty_path, os.O_RDWR)
    if os.getsid(0) != os.getpid():
        sys.stderr.write("with_tty.py must be started in a new session\n")
        sys.exit(2)
    os.close(fd)  # the terminal stays the session's controlling terminal
    os.execv(program, [program, *args])  # noqa: S606 - exec the given program, no shell


if __name__ == "__main__":
    main()
