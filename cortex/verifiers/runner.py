"""Run one configured command: no shell, own process group, a deadline, bounded output.

Both streams are read concurrently (a child blocked on a full stderr pipe would otherwise hang
the run). Each keeps its head and tail; the middle is counted and dropped. On the deadline the
whole process group is killed, so a test runner's children die with it.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

import msgspec

from cortex.cases.bounds import OUTPUT_HEAD, OUTPUT_TAIL

_SPACES = (b"\n", b" ", b"\t", b"\r")
_GRACE = 2.0
"""Seconds to wait for the pipes to close after the group was killed (escaped grandchildren)."""


class _Stream:
    """Head and tail of one stream, and how many bytes fell between them."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = OUTPUT_HEAD - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        if len(self.tail) > OUTPUT_TAIL:
            extra = len(self.tail) - OUTPUT_TAIL
            self.dropped += extra
            del self.tail[:extra]

    def text(self) -> bytes:
        if not self.dropped:
            return bytes(self.head + self.tail)
        # Cut only at whitespace: a secret split by a cut would be stored in part, and the
        # redactor can only recognise it whole. The partial words at both cuts are dropped too.
        cut = max(self.head.rfind(space) for space in _SPACES) + 1
        head = bytes(self.head[:cut])
        found = [i for i in (self.tail.find(space) for space in _SPACES) if i >= 0]
        tail = bytes(self.tail[min(found) + 1 :]) if found else b""
        omitted = self.dropped + (len(self.head) - cut) + (len(self.tail) - len(tail))
        marker = f"[... {omitted} bytes omitted ...]\n".encode()
        return head + marker + tail


class Run(msgspec.Struct, kw_only=True):
    """How a command ended."""

    exit_code: int | None
    """None when it never started or was killed at the deadline."""
    timed_out: bool = False
    spawn_error: str | None = None
    seconds: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""

    def transcript(self, argv: Sequence[str]) -> bytes:
        """The raw blob kept for the run."""
        import shlex

        if self.spawn_error is not None:
            ending = f"did not start: {self.spawn_error}"
        elif self.timed_out:
            ending = f"killed after {self.seconds:.1f} s (timeout)"
        else:
            ending = f"exit {self.exit_code} after {self.seconds:.2f} s"
        head = f"$ {shlex.join(argv)}\n{ending}\n--- stdout ---\n".encode()
        return head + self.stdout + b"\n--- stderr ---\n" + self.stderr


def run(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout: float) -> Run:
    """Run `argv` in `cwd` and wait at most `timeout` seconds."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return Run(exit_code=None, spawn_error=f"{exc.strerror or exc} ({argv[0]})")
    streams = {proc.stdout: _Stream(), proc.stderr: _Stream()}
    deadline = started + timeout
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for pipe in streams:
            assert pipe is not None  # noqa: S101 - PIPE was requested
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if not timed_out:
                    timed_out = True
                    _kill_group(proc)
                    deadline = time.monotonic() + _GRACE
                    continue
                break  # a grandchild escaped the group and keeps a pipe open: stop reading
            for key, _ in selector.select(min(remaining, 0.5)):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    streams[key.fileobj].feed(data)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
    for pipe in streams:
        if pipe is not None:
            pipe.close()
    if not timed_out:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
    if timed_out:
        proc.wait()
    out, err = (s.text() for s in streams.values())
    return Run(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        seconds=round(time.monotonic() - started, 3),
        stdout=out,
        stderr=err,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # contextlib costs an import; the group may already be gone.
    try:  # noqa: SIM105
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
