"""A cortex command run in a pseudo-terminal, as a person's terminal runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time
from pathlib import Path

from stand_ins import leased

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Screen:
    """A command run in a pseudo-terminal, as a person's terminal would run it."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.chunks: list[tuple[float, bytes]] = []
        self.started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child
            os.chdir(cwd)
            # With the case's lease token, as the holder's shell has it (tests/stand_ins.py).
            leased_env = leased(env, args)
            os.execve(sys.executable, [sys.executable, "-m", "cortex", *args], leased_env)  # noqa: S606
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.status: int | None = None

    def read(self, until: float = 60.0, stop: str | None = None) -> str:
        """Collect output until the command ends (or `stop` shows up); return it, plain."""
        deadline = time.monotonic() + until
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                self.chunks.append((time.monotonic() - self.started, data))
                if stop is not None and stop in self.plain():
                    return self.plain()
        return self.plain()

    def plain(self, before: float | None = None) -> str:
        """What was written (up to `before` seconds in), with terminal controls removed."""
        data = b"".join(d for t, d in self.chunks if before is None or t <= before)
        return ANSI.sub("\n", data.decode("utf-8", "replace"))

    def when(self, text: str) -> float:
        """Seconds into the run at which `text` was first on the screen."""
        for at, _ in self.chunks:
            if text in self.plain(before=at):
                return at
        raise AssertionError(f"{text!r} never appeared")

    def wait(self) -> int:
        """The exit status."""
        self.read()
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.status = os.waitstatus_to_exitcode(status)
        return self.status


def terminal_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "TERM": "xterm-256color", "CORTEX_APPROVE_COMMANDS": "1"}
