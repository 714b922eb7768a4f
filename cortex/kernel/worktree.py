"""The workspace capture: HEAD and a digest of the working state (docs/design/verification.md §1).

One `git status --porcelain=v2 -z` lists every path that differs from HEAD, the index or the
work tree, with the modes and blob ids git already knows; we add the bytes and mode of each
listed path as it is on disk. Nothing is written to `.git`, nothing is redacted or capped.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping

import msgspec

from cortex.cases.digest import _sha256

DIGEST_VERSION = b"cortex-worktree-v1"
GIT_TIMEOUT = 120.0
"""A 50k-file tree with a stale index takes about a second; a minute or two is a hung git."""
SLOW_CAPTURE = 1.0
"""Seconds after which a capture adds the stale-index warning."""
_CHUNK = 1 << 20

_STATUS = (
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--no-renames",
    "--branch",
    "--no-ahead-behind",
    "--ignore-submodules=none",
)


class Capture(msgspec.Struct, kw_only=True):
    """The state of a workspace at one moment, or why it could not be bound."""

    head: str | None = None
    branch: str | None = None
    digest: str | None = None
    """`sha256:<hex>` over the listed paths; None when nothing could be bound."""
    reason: str | None = None
    """Why there is no digest (not a git repository, no commit yet, git failed)."""
    changed: list[str] = msgspec.field(default_factory=list)
    """Paths that differ from HEAD (relative, `/`-separated; undecodable bytes escaped)."""
    seconds: float = 0.0
    warning: str | None = None

    @property
    def bound(self) -> bool:
        """Whether this capture can bind a receipt."""
        return self.digest is not None and self.head is not None

    def same_state(self, other: Capture) -> bool:
        """Whether two captures saw the same HEAD and work tree."""
        return self.bound and other.bound and (self.head, self.digest) == (other.head, other.digest)


def capture(root: str, env: Mapping[str, str], *, exclude: str | None = None) -> Capture:
    """Capture the workspace at `root`; `exclude` is a directory (the case store) to leave out."""
    import subprocess

    started = time.monotonic()
    git_env = dict(env)
    git_env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        proc = subprocess.run(
            ["git", *_STATUS],
            cwd=root,
            env=git_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        return Capture(reason="git is not installed, so the code state cannot be bound")
    except subprocess.TimeoutExpired:
        return Capture(reason=f"git status did not finish within {GIT_TIMEOUT:.0f} s")
    except OSError as exc:
        return Capture(reason=f"git could not run ({exc.strerror})")
    if proc.returncode != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = first[0] if first else f"exit {proc.returncode}"
        if "not a git repository" in detail:
            return Capture(reason="the workspace is not a git repository")
        return Capture(reason=f"git status failed: {detail[:300]}")
    result = digest_status(proc.stdout, root, exclude=exclude)
    result.seconds = round(time.monotonic() - started, 4)
    if result.seconds > SLOW_CAPTURE:
        result.warning = (
            f"capturing the work tree took {result.seconds:.1f} s, probably because git's index "
            "is stale (files touched since git last saved it); cortex never writes .git, so run "
            "`git update-index --refresh` (or any plain `git status`) once to make it fast again"
        )
    return result


def digest_status(output: bytes, root: str, *, exclude: str | None = None) -> Capture:
    """The capture for one `git status --porcelain=v2 -z` output (see module docstring)."""
    head: str | None = None
    branch: str | None = None
    entries: list[tuple[bytes, bytes]] = []
    prefix = _exclusion(root, exclude)
    for record in output.split(b"\0"):
        if not record:
            continue
        if record.startswith(b"# "):
            key, _, value = record[2:].partition(b" ")
            if key == b"branch.oid" and value != b"(initial)":
                head = value.decode("ascii", "replace")
            elif key == b"branch.head" and value != b"(detached)":
                branch = value.decode("utf-8", "surrogateescape")
            continue
        fields, path = _split(record)
        if prefix is not None and (path == prefix[:-1] or path.startswith(prefix)):
            continue
        entries.append((path, fields))
    if head is None:
        return Capture(branch=branch, reason="the repository has no commit yet (HEAD is unborn)")
    entries.sort()
    digest = _sha256(DIGEST_VERSION + b"\0" + head.encode() + b"\0")
    root_bytes = os.fsencode(root)
    changed: list[str] = []
    for path, fields in entries:
        state = _disk_state(os.path.join(root_bytes, path))
        for part in (path, fields, state):
            digest.update(len(part).to_bytes(8, "big") + part)
        changed.append(path.decode("utf-8", "backslashreplace"))
    return Capture(head=head, branch=branch, digest="sha256:" + digest.hexdigest(), changed=changed)


def _split(record: bytes) -> tuple[bytes, bytes]:
    """(fields, path) of one porcelain v2 record; the path is the last, space-free-split field.

    Ordinary (`1`) records have 8 fields before the path, unmerged (`u`) 10, untracked (`?`)
    and ignored (`!`) 1. Paths may contain spaces, so split a fixed number of times.
    """
    kind = record[:1]
    count = {b"1": 8, b"u": 10}.get(kind, 1)
    parts = record.split(b" ", count)
    if len(parts) <= count:
        msg = f"unexpected git status record {record[:80]!r}"
        raise ValueError(msg)
    return b" ".join(parts[:count]), parts[count]


def _exclusion(root: str, exclude: str | None) -> bytes | None:
    if exclude is None:
        return None
    relative = os.path.relpath(exclude, root)
    if relative == os.curdir or relative.startswith(os.pardir):
        return None
    return os.fsencode(relative.replace(os.sep, "/")) + b"/"


def _disk_state(path: bytes) -> bytes:
    """What is at `path` now: its type, executable bit and content digest (no size cap)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return b"missing"
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return b"link:" + str(_sha256(os.readlink(path)).hexdigest()).encode()
    if stat.S_ISDIR(mode):
        return b"dir"
    if not stat.S_ISREG(mode):
        return b"special:" + oct(stat.S_IFMT(mode)).encode()
    executable = b"x" if mode & 0o111 else b"-"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    digest = _sha256(b"")
    try:
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    finally:
        os.close(fd)
    return b"file:" + executable + b":" + str(digest.hexdigest()).encode()


def committed_changes(root: str, env: Mapping[str, str], base: str, head: str) -> list[str] | None:
    """Paths changed between two commits (for scope), or None when git cannot say."""
    import subprocess

    if base == head:
        return []
    try:
        proc = subprocess.run(
            [
                "git",
                "-c",
                "core.quotePath=false",
                "diff",
                "--no-ext-diff",
                "--no-renames",
                "--name-only",
                "-z",
                base,
                head,
                "--",
            ],
            cwd=root,
            env={**env, "GIT_OPTIONAL_LOCKS": "0"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [p.decode("utf-8", "backslashreplace") for p in proc.stdout.split(b"\0") if p]
