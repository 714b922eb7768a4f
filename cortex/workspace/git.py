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
    Raises GitNotRunError when git cannot start or outlives `timeout`.
    """
    import subprocess
    import threading

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
        stdout, stderr = proc.communicate(data)
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # an exception (an interrupt) while git ran: do not leave it
            proc.kill()
            proc.wait()
    if expired:
        raise GitNotRunError(subprocess.TimeoutExpired(argv, timeout, stdout, stderr))
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


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
