"""Run one configured command: no shell, own process group, a deadline, bounded output.

Both streams are read concurrently (a child blocked on a full stderr pipe would otherwise hang
the run). Each keeps its head and tail; the middle is counted and dropped. On the deadline the
whole process group is killed, so a test runner's children die with it.

A caller that wants to see the run as it goes passes a `Watch` (the kernel's progress channel
does): it hears how long the command has run, the bytes that enter each stream's kept head as
they arrive, and at the end what is kept of each stream; and it can ask for the run to stop,
which kills the group and raises `Cancelled`, like Ctrl-C.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any, Protocol

import msgspec

from cortex.cases.bounds import OUTPUT_HEAD, OUTPUT_TAIL
from cortex.cases.redact import PRIVATE

_SPACES = (b"\n", b" ", b"\t", b"\r")
_GRACE = 2.0
"""Seconds to wait for the pipes to close after the group was killed (escaped grandchildren)."""


class Watch(Protocol):
    """Someone following a run: told as it goes, and able to stop it."""

    def running(self, elapsed: float, timeout: float) -> None:
        """The command has run `elapsed` of its `timeout` seconds (about 10 calls a second)."""
        ...

    def output(self, stream: str, data: bytes) -> None:
        """`data` has just entered the kept head of `stream` ("stdout" or "stderr")."""
        ...

    def kept(self, stream: str, data: bytes) -> None:
        """The run ended: `data` is what is kept of `stream` (its head, a marker, its tail)."""
        ...

    def stop_requested(self) -> bool:
        """Whether the caller asked the run to stop (a cancelled request)."""
        ...


class Cancelled(KeyboardInterrupt):
    # A stop, reported like Ctrl-C.
    """The caller asked the run to stop: the group was killed and nothing will be written."""

    exit_status = 130
    message = "cancelled: the verifier's process group was stopped and no receipt was written"


class _Stream:
    """Head and tail of one stream, and how many bytes fell between them."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        """Keep `data`; return the part of it that went into the head."""
        room = OUTPUT_HEAD - len(self.head)
        entered = b""
        if room > 0:
            entered = data[:room]
            self.head += entered
            data = data[room:]
        if not data:
            return entered
        self.tail += data
        if len(self.tail) > OUTPUT_TAIL:
            extra = len(self.tail) - OUTPUT_TAIL
            self.dropped += extra
            del self.tail[:extra]
        return entered

    def text(self) -> bytes:
        if not self.dropped:
            return bytes(self.head + self.tail)
        # Cut only at whitespace: a secret split by a cut would be stored in part, and the
        # redactor can only recognise it whole. The partial words at both cuts are dropped too.
        cut = max(self.head.rfind(space) for space in _SPACES) + 1
        head = bytes(self.head[:cut])
        # The tail starts at a line: a key's value runs to the end of its line (YAML, prose), so
        # the rest of a line whose key was cut away would be kept unredacted. A tail without a
        # line break (one long line) starts at a word.
        start = _line_start(self.tail)
        if start < 0:
            found = [i for i in (self.tail.find(space) for space in _SPACES) if i >= 0]
            start = min(found) if found else len(self.tail)
        tail = bytes(self.tail[start + 1 :])
        omitted = self.dropped + (len(self.head) - cut) + (len(self.tail) - len(tail))
        marker = f"[... {omitted} bytes omitted ...]\n".encode()
        return head + marker + _private_cut(tail)


def _line_start(tail: bytearray) -> int:
    r"""The line break before the first whole line of `tail`; -1 when it has no line break.

    A line continuing the one before it (a shell `\` continuation) is part of one command whose
    secret-named flag may sit on the line the cut dropped: the tail starts after it. A tail that
    is all continuations is dropped whole (its length).
    """
    at = tail.find(b"\n")
    if at < 0:
        return -1
    while at >= 0:
        before = at - 1
        if before >= 0 and tail[before] == ord("\r"):
            before -= 1
        if before < 0 or tail[before] != ord("\\"):
            return at
        at = tail.find(b"\n", at + 1)
    return len(tail)


_CLOSE_PRIVATE = re.compile(rb"<\s*/\s*private\b[^>]*(?:>|\Z)", re.IGNORECASE)
_OPEN_PRIVATE = re.compile(rb"<\s*private\b", re.IGNORECASE)


def _private_cut(tail: bytes) -> bytes:
    """A tail whose first `</private>` closes a span opened before the cut: private up to it.

    The redactor drops an orphan closing tag and keeps the text before it (in any other text
    that is right); here that text is the inside of a span whose opening was cut away.
    """
    close = _CLOSE_PRIVATE.search(tail)
    if close is None:
        return tail
    opening = _OPEN_PRIVATE.search(tail, 0, close.start())
    if opening is not None:
        return tail
    return PRIVATE.encode() + tail[close.end() :]


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


def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    watch: Watch | None = None,
) -> Run:
    """Run `argv` in `cwd` and wait at most `timeout` seconds, telling `watch` as it goes.

    The process group never outlives the call: it is killed when the command exits (so a
    background child cannot touch the tree after its verifier passed), at the deadline, and
    when cortex itself is interrupted (SIGINT, SIGTERM). If cortex is killed outright, the
    kernel kills the command (PR_SET_PDEATHSIG where available); its own children may then
    survive, which docs/design/verification.md lists as a limit.
    """
    started = time.monotonic()
    import threading

    # A preexec hook is unsafe with other threads running (the child could deadlock on a lock
    # one of them held at the fork); the MCP server runs calls in threads and kills running
    # groups itself when it is stopped (`kill_running`), so only the main thread uses it.
    main = threading.current_thread() is threading.main_thread()
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
            preexec_fn=_death_signal() if main else None,  # noqa: PLW1509 - see above
        )
    except OSError as exc:
        return Run(exit_code=None, spawn_error=f"{exc.strerror or exc} ({argv[0]})")
    _RUNNING.add(proc.pid)
    previous = _on_terminate()
    try:
        timed_out, streams = _collect(proc, started, timeout, watch)
    except _Terminated:
        _kill_group(proc)
        proc.wait()
        raise Terminated from None
    except BaseException:
        _kill_group(proc)
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        raise
    finally:
        _restore(previous)
        _RUNNING.discard(proc.pid)
    out, err = (s.text() for s in streams)
    if watch is not None:
        watch.kept("stdout", out)
        watch.kept("stderr", err)
    return Run(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        seconds=round(time.monotonic() - started, 3),
        stdout=out,
        stderr=err,
    )


def _collect(
    proc: subprocess.Popen[bytes], started: float, timeout: float, watch: Watch | None
) -> tuple[bool, list[_Stream]]:
    """Read both pipes until the command and its group are done, or the deadline passes."""
    deadline = started + timeout
    streams = {proc.stdout: _Stream(), proc.stderr: _Stream()}
    names = {proc.stdout: "stdout", proc.stderr: "stderr"}
    timed_out = False
    ended = False
    with selectors.DefaultSelector() as selector:
        for pipe in streams:
            assert pipe is not None  # noqa: S101 - PIPE was requested
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            if watch is not None:
                if watch.stop_requested():
                    raise Cancelled
                watch.running(time.monotonic() - started, timeout)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if not timed_out and not ended:
                    timed_out = True
                    _kill_group(proc)
                    deadline = time.monotonic() + _GRACE
                    continue
                break  # a grandchild escaped the group and keeps a pipe open: stop reading
            if not ended and _exited(proc):
                # The command is done: whatever it left running in its group goes with it.
                ended = True
                _kill_group(proc)
                deadline = min(deadline, time.monotonic() + _GRACE)
            for key, _ in selector.select(min(remaining, 0.1)):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if data:
                    entered = streams[key.fileobj].feed(data)  # type: ignore[index]
                    if watch is not None and entered:
                        watch.output(names[key.fileobj], entered)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
    for pipe in streams:
        if pipe is not None:
            pipe.close()
    if not timed_out:
        if not _exited(proc):
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        _kill_group(proc)  # before reaping: the group id cannot have been reused yet
    proc.wait()
    return timed_out, list(streams.values())


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the command exited, without reaping it (so its group id stays reserved)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # pragma: no cover - not Linux
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


_RUNNING: set[int] = set()
"""Process groups of the commands running now (their leaders' pids, which name the groups)."""


def kill_running() -> None:
    """Kill every running command's whole process group (a server stopping mid-run)."""
    for group in list(_RUNNING):
        try:  # noqa: SIM105 - contextlib costs an import
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _death_signal() -> Callable[[], None] | None:
    """A preexec hook that makes the kernel kill the command if cortex dies (Linux only).

    `prctl` is looked up here, in the parent: the hook that runs in the forked child only calls
    it, so nothing is imported or allocated between fork and exec.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    kill = int(signal.SIGKILL)

    def hook() -> None:
        prctl(1, kill)  # PR_SET_PDEATHSIG

    return hook


class _Terminated(Exception):  # noqa: N818 - a signal, not an error
    """SIGTERM arrived while a command ran (internal: turned into `Terminated` once cleaned up)."""


class Terminated(KeyboardInterrupt):
    """cortex was asked to stop (SIGTERM) during a run: reported like Ctrl-C, exit 143."""

    exit_status = 128 + signal.SIGTERM


_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers
"""A SIGTERM disposition that can be put back (`signal.signal` refuses None)."""


def _on_terminate() -> _Handler | None:
    """Turn SIGTERM into an exception for the duration of a run, so the group gets killed."""

    def handler(signum: int, frame: object) -> None:  # noqa: ARG001
        raise _Terminated

    try:
        # None here means the disposition was set outside Python: it cannot be put back.
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        return None


def _restore(previous: _Handler | None) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # contextlib costs an import; the group may already be gone.
    try:  # noqa: SIM105
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
