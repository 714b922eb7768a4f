"""Running the `git` program: the one place Cortex starts it (argv lists, never a shell).

Each takes the whole command line, `git` first (the capture builds it with the options all its
commands share). `run_git` runs one command to its end and returns what it printed, whatever
its exit status; a git that cannot be started or outlives its timeout raises `GitNotRunError`,
whose message is the operating system's (or the timeout's), so each caller says it in its own
words.
`git_output` is the common read-only case: the output of a command that succeeded, or None.
`spawn_git` starts a long-lived git the caller talks to through pipes (`cat-file --batch`).

Each caller passes its own environment (read-only callers add `GIT_OPTIONAL_LOCKS=0`, which
keeps git from refreshing, that is writing, the index), its working directory and its time
bound. `subprocess` is imported inside the functions: the modules on the per-call path
(`identity`, `freshness`) import this one only when they run git.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence

READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0"}
"""Added to the environment of a command that must not write `.git` (no index refresh)."""


class GitNotRunError(Exception):
    """git could not be started, or ran out of time; the message is the underlying error's."""

    def __init__(self, cause: OSError | subprocess.TimeoutExpired) -> None:
        super().__init__(str(cause))
        self.cause = cause

    @property
    def missing(self) -> bool:
        """Whether the program (or the working directory) does not exist."""
        return isinstance(self.cause, FileNotFoundError)

    @property
    def timed_out(self) -> bool:
        """Whether git ran for longer than its time bound (and was killed)."""
        return not isinstance(self.cause, OSError)

    @property
    def strerror(self) -> str | None:
        """The operating system's words for a start that failed (None for a timeout)."""
        return self.cause.strerror if isinstance(self.cause, OSError) else None


def run_git(
    argv: Sequence[str | bytes],
    *,
    cwd: str | None,
    env: Mapping[str, str],
    timeout: float,
    data: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` (`git` and its arguments) to its end, its output captured; `data` is its input.

    Without `data` git's input is closed, never inherited: under `cortex serve` this process's
    input is the MCP stream, and a byte git read from it would be a request lost.
    Raises GitNotRunError when git cannot start or outlives `timeout`, including when a child it
    started (an alias, a filter) still holds its output open then. Whatever happens, git is
    killed and reaped and the pipes are closed before this returns or raises.
    """
    import subprocess
    import threading
    import time

    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise GitNotRunError(exc) from None
    # A watchdog, not `communicate(timeout=...)`: with a timeout, Popen polls for the exit with
    # sleeps that overshoot it by up to a millisecond, on every git a capture runs.
    expired: list[bool] = []

    def expire() -> None:
        if proc.poll() is None:
            expired.append(True)
            proc.kill()

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        # Not `communicate()`: a child git starts (an alias, a filter) may outlive it holding
        # its output open, and killing git would not end that read; this one stops at the bound.
        stdout, stderr, finished = _exchange(proc, data, time.monotonic() + timeout)
        if finished:
            proc.wait()  # the watchdog ends a git that closed its output but keeps running
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # an exception (an interrupt), or the bound: do not leave it
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if expired or not finished:
        raise GitNotRunError(subprocess.TimeoutExpired(argv, timeout, stdout, stderr))
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _exchange(
    proc: subprocess.Popen[bytes], data: bytes | None, deadline: float
) -> tuple[bytes, bytes, bool]:
    """Feed `data` and read both outputs to their end, or until `deadline` (then not finished).

    As `communicate()` does, through one selector, so neither side can fill a pipe and stall.
    """
    import select
    import selectors
    import time

    assert proc.stdout is not None  # noqa: S101 - run_git opened both as pipes
    assert proc.stderr is not None  # noqa: S101
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    pending = memoryview(data or b"")
    with selectors.PollSelector() as selector:
        if proc.stdin is not None:
            if pending:
                selector.register(proc.stdin, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for key, _ in selector.select(remaining):
                if key.fileobj is proc.stdin:
                    try:
                        pending = pending[os.write(key.fd, pending[: select.PIPE_BUF]) :]
                    except BrokenPipeError:
                        pending = pending[:0]  # git stopped reading: what it read is its input
                    if not pending:
                        selector.unregister(key.fileobj)
                        proc.stdin.close()
                elif chunk := os.read(key.fd, 1 << 16):
                    chunks[key.fd].append(chunk)
                else:
                    selector.unregister(key.fileobj)
        finished = not selector.get_map()
    out, err = (b"".join(chunks[stream.fileno()]) for stream in (proc.stdout, proc.stderr))
    return out, err, finished


def git_output(
    argv: Sequence[str | bytes],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    data: bytes | None = None,
) -> bytes | None:
    """The standard output of a git command that succeeded; None when it failed or never ran."""
    try:
        proc = run_git(argv, cwd=cwd, env=env, timeout=timeout, data=data)
    except GitNotRunError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def spawn_git(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    feed: bool,
    errors: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `argv` with its output on a pipe; its input a pipe when it is `feed`, else closed.

    Its error output is a pipe with `errors`, else discarded. The caller owns the process (it
    reads, kills and reaps it); a start that fails raises OSError, as `subprocess.Popen` does.
    """
    import subprocess

    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if errors else subprocess.DEVNULL,
    )
