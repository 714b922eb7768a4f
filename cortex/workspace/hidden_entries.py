"""The index entries git status does not look at, and whether a capture may reuse their list.

Entries marked assume-unchanged or skip-worktree are promises about stat data, not content, so
git status never looks at their files; `git ls-files -v` names them and the capture digests
their files itself (docs/design/verification.md §1). Verify's end capture may take the start
capture's list when both read the same private index copy, unchanged (§3): `index_state`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping

from cortex.workspace.git import READ_ONLY, git_output
from cortex.workspace.working_tree import CHUNK, GIT_TIMEOUT

FLAGGED = re.compile(rb"(?:^|\0)([a-zS]) ([^\0]+)")
"""`git ls-files -v` entries git status does not look at: assume-unchanged (lower case) and
skip-worktree (`S`, `s`)."""


def index_state(path: str | None) -> str | None:
    """The index copy at `path` and its identity (inode, size, mtime, ctime), or None.

    None also when some process holds the copy open for writing, or it cannot be told: the
    kernel stamps a shared writable mapping with the time only at the write that dirties its
    page, so a process that mapped the copy earlier can change its bytes later without moving
    its identity. Nothing ever writes the copy in place (git and `index_mirror` rename a new
    file over it), so a writer is never legitimate. Without one at the start of W0, each later
    change needs a new open, whose first write (through `write` or a new mapping) stamps it.
    """
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not _unwritten(fd):
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    return f"{path}|{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def _unwritten(fd: int) -> bool:
    """Whether no process holds the file open for writing, a writable mapping included.

    A read lease is refused (EAGAIN) exactly when it is; it is released at once. Where leases
    do not exist (not Linux, or `fs.leases-enable` off) nothing can be said: False.
    """
    import fcntl

    setlease = getattr(fcntl, "F_SETLEASE", None)
    if setlease is None:
        return False
    try:
        fcntl.fcntl(fd, setlease, fcntl.F_RDLCK)
    except OSError:
        return False
    fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
    return True


def any_flag(listing: bytes) -> bool:
    """Whether `ls-files -v -z` lists any entry that is not plain cached (H) or unmerged (M).

    Counting is C-speed; the regex that finds which ones costs ~10 ms on 50k entries, so it
    only runs when there is something to find (rarely).
    """
    records = listing.count(b"\0")
    plain = listing.count(b"\0H ") + listing.count(b"\0M ") + listing.startswith((b"H ", b"M "))
    return plain != records


def staged_entries(base: list[str], root: str, env: Mapping[str, str]) -> dict[bytes, bytes] | None:
    """Path -> `mode object` for every index entry (only needed when some are hidden: rare)."""
    output = git_output(
        [*base, "ls-files", "-s", "-z"], cwd=root, env={**env, **READ_ONLY}, timeout=GIT_TIMEOUT
    )
    if output is None:
        return None
    entries: dict[bytes, bytes] = {}
    for record in output.split(b"\0"):
        info, tab, path = record.partition(b"\t")
        if tab:
            mode, blob, _stage = info.split(b" ")
            entries[path] = mode + b" " + blob
    return entries


def differs_from_index(path: bytes, fields: bytes) -> bool:
    """Whether a hidden entry's file differs from its index entry (for scope's changed files).

    Hashes the file as a git blob; a file that a filter or line-ending conversion would store
    differently counts as changed, which errs towards reporting drift, never towards hiding it.
    """
    import hashlib

    parts = fields.split(b" ")
    tag, mode, blob = parts[0], parts[1], parts[2]
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return tag not in (b"S", b"s")  # absent is what skip-worktree means
    except OSError:
        return True
    algorithm = hashlib.sha256 if len(blob) == 64 else hashlib.sha1
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(path))
        digest = algorithm(b"blob " + str(len(target)).encode() + b"\0" + target)
        return mode != b"120000" or digest.hexdigest().encode() != blob
    if not stat.S_ISREG(info.st_mode):
        return True
    actual = b"100755" if info.st_mode & 0o111 else b"100644"
    digest = algorithm(b"blob " + str(info.st_size).encode() + b"\0")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return True
    size = 0
    try:
        while chunk := os.read(fd, CHUNK):  # streamed: a hidden file may be huge
            digest.update(chunk)
            size += len(chunk)
    except OSError:
        return True
    finally:
        os.close(fd)
    # A file that changed size while being read is a change (and its header was wrong).
    return size != info.st_size or actual != mode or digest.hexdigest().encode() != blob
