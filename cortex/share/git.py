"""Running git: argv lists, no shell, bounded time, a fixed identity for the commits we make.

Every git process Cortex starts for sharing goes through `Git.run` (and so through the one
runner, `cortex.workspace.git`). The environment is the
caller's (credentials, config) with prompts off and messages in English (they are parsed), and
every commit Cortex makes has the author and committer `Cortex <cortex@invalid>`, so no user
name, e-mail or host name is in a shared object.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, Self

from cortex.cases.bounds import SHARE_GIT_TIMEOUT, SHARE_OBJECT_MAX
from cortex.share.errors import GitFailedError
from cortex.workspace.git import GitNotRunError, run_git, spawn_git

IDENTITY = {
    "GIT_AUTHOR_NAME": "Cortex",
    "GIT_AUTHOR_EMAIL": "cortex@invalid",
    "GIT_COMMITTER_NAME": "Cortex",
    "GIT_COMMITTER_EMAIL": "cortex@invalid",
}
_DROPPED = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")


class Git:
    """git in one repository, with the caller's environment."""

    def __init__(
        self, root: str, env: Mapping[str, str], *, timeout: float = SHARE_GIT_TIMEOUT
    ) -> None:
        self.root = root
        self.timeout = timeout
        base = {k: v for k, v in env.items() if k not in _DROPPED}
        self.env = {**base, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
        self.spawned = 0
        """Processes started (the benchmark reports it)."""

    def run(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        check: bool = True,
        identity: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `git ARGS` in the repository; raise GitFailedError on failure when `check`."""
        env = {**self.env, **IDENTITY} if identity else self.env
        self.spawned += 1
        try:
            proc = run_git(["git", *args], cwd=self.root, env=env, timeout=self.timeout, data=stdin)
        except GitNotRunError as exc:
            if exc.timed_out:
                msg = f"git {args[0]} ran for more than {self.timeout:g} s"
                raise GitFailedError(msg) from None
            raise GitFailedError(f"git cannot be run ({exc.strerror})") from None
        if check and proc.returncode != 0:
            raise GitFailedError(f"git {args[0]} failed: {message(proc.stderr)}")
        return proc

    def out(self, *args: str, stdin: bytes | None = None, identity: bool = False) -> str:
        """The stripped standard output of a git command that must succeed."""
        return self.run(args, stdin=stdin, identity=identity).stdout.decode().strip()

    def objects(self) -> CatFile:
        """A `git cat-file --batch` session (use as a context manager)."""
        return CatFile(self)


def message(stderr: bytes, limit: int = 600) -> str:
    """Git's error output as one short line (the caller redacts it before showing it)."""
    lines = [
        line.strip()
        for line in stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith("hint:")
    ]
    text = "; ".join(lines) or "no message"
    return text if len(text) <= limit else text[:limit] + "..."


class CatFile:
    """Objects read one by one through one long-lived `git cat-file --batch`."""

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._git.spawned += 1
            self._proc = spawn_git(
                ["git", "cat-file", "--batch"], cwd=self._git.root, env=self._git.env, feed=True
            )
        return self._proc

    def read(self, name: str) -> tuple[str, str, bytes] | None:
        """(object id, type, content) of `name` (an id, a ref, `REV:PATH`), or None if absent."""
        if "\n" in name or not name:
            return None
        proc = self._start()
        stdin, stdout = _pipes(proc)
        stdin.write(name.encode() + b"\n")
        stdin.flush()
        return self._answer(stdout)  # None for "<name> missing" or "ambiguous"

    def read_many(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """`read` for several names with one round trip (the requests are written at once)."""
        names = [n for n in names if n and "\n" not in n]
        if not names:
            return []
        proc = self._start()
        stdin, stdout = _pipes(proc)
        stdin.write("".join(n + "\n" for n in names).encode())
        stdin.flush()
        return [self._answer(stdout) for _ in names]

    def _answer(self, stdout: IO[bytes]) -> tuple[str, str, bytes] | None:
        header = stdout.readline()
        if not header:
            raise GitFailedError("git cat-file ended early")
        fields = header.split()
        if len(fields) != 3:
            return None
        oid, kind, size_text = (f.decode() for f in fields)
        size = int(size_text)
        if size > SHARE_OBJECT_MAX:
            stdout.read(size + 1)
            raise GitFailedError(f"object {oid} is {size} bytes, over {SHARE_OBJECT_MAX}")
        data = stdout.read(size)
        stdout.read(1)
        return oid, kind, data

    def blob(self, name: str) -> bytes | None:
        """The content of a blob (None when absent or not a blob)."""
        found = self.read(name)
        return found[2] if found is not None and found[1] == "blob" else None

    def close(self) -> None:
        """End the session."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=self._git.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    if proc.stdin is None or proc.stdout is None:
        raise GitFailedError("git cat-file has no pipes")
    return proc.stdin, proc.stdout
