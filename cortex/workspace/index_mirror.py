"""A private copy of the repository's index that git may refresh, so a capture stays fast.

With `--no-optional-locks` git may not save the stat data it refreshes, so once files were
touched (a formatter, a checkout of the same content) every capture re-reads every file. A
copy in Cortex's state directory can be refreshed and kept (`mirror`); `.git` is never written.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping

from cortex.workspace.working_tree import CHUNK

_LOCK_ABANDONED = 600.0
"""Seconds after which a mirror's `.lock` is taken for a dead git's and removed."""


def _index_path(root: str, env: Mapping[str, str]) -> str | None:
    """The index git uses for the worktree at `root`, when we can tell without asking git."""
    if any(env.get(name) for name in ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE")):
        return None
    dot_git = os.path.join(root, ".git")
    try:
        info = os.lstat(dot_git)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return os.path.join(dot_git, "index")
    if not stat.S_ISREG(info.st_mode) or info.st_size > 4096:
        return None
    with open(dot_git, "rb") as handle:
        content = handle.read(4097)
    if not content.startswith(b"gitdir: "):
        return None
    target = os.fsdecode(content[len(b"gitdir: ") :].rstrip(b"\r\n").split(b"\0", 1)[0])
    return os.path.join(root, target, "index") if target else None


def mirror(root: str, env: Mapping[str, str], directory: str, *, create: bool = True) -> str | None:
    """A private copy of the repository's index that git may refresh, or None to use the real one.

    With `--no-optional-locks` git may not save the stat data it refreshes, so once files were
    touched (a formatter, a checkout of the same content) every capture re-reads every file.
    A copy in our state directory can be refreshed and kept. It is named after the identity of
    the index it copies (inode, size, mtime, ctime: git replaces its index by renaming a new
    file, so a new index is a new identity), and the copy keeps the original's mtime, which git's
    racy-entry check depends on. Any failure returns None: the real index then serves, unwritten.
    """
    import shutil

    source = _index_path(root, env)
    if source is None or _split(source):
        return None
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    temporary = None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        name = f"index-{info.st_ino}-{info.st_size}-{info.st_mtime_ns}-{info.st_ctime_ns}"
        target = os.path.join(directory, name)
        if os.path.isfile(target):
            return target
        if not create:
            return None
        from cortex.cases.fsio import make_private_dirs

        make_private_dirs(directory)
        temporary = os.path.join(directory, f".tmp-{os.getpid()}-{name}")
        out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(os.dup(fd), "rb") as reader, os.fdopen(out, "wb") as writer:
            shutil.copyfileobj(reader, writer, CHUNK)
        os.utime(temporary, ns=(info.st_atime_ns, info.st_mtime_ns))
        os.replace(temporary, target)
    except OSError:
        if temporary is not None:
            _unlink_quietly(temporary)
        return None
    finally:
        os.close(fd)
    for stale in os.listdir(directory):
        if stale.startswith("index-") and stale != name and not stale.endswith(".lock"):
            _unlink_quietly(os.path.join(directory, stale))
    lock = target + ".lock"
    try:
        # A git killed while saving the mirror leaves its lock; git then never saves it again.
        if time.time() - os.lstat(lock).st_mtime > _LOCK_ABANDONED:
            _unlink_quietly(lock)
    except OSError:
        pass
    return target


def _split(index: str) -> bool:
    """Whether the index may be split (`core.splitIndex`): a `sharedindex.*` lies beside it.

    A split index holds only a link to its shared part, which git reads from beside the index or
    from the git directory: a copy would not hold the entries it stands for, nor their
    assume-unchanged and skip-worktree flags, so the copy's identity would not name them.
    """
    try:
        names = os.listdir(os.path.dirname(index) or os.curdir)
    except OSError:
        return True
    return any(name.startswith("sharedindex.") for name in names)


def _unlink_quietly(path: str) -> None:
    try:  # noqa: SIM105 - contextlib is an import on the per-call path
        os.unlink(path)
    except OSError:
        pass
