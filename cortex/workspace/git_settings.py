"""Which files decide how `git add` turns a work tree's bytes into blobs and modes, and their state.

The tree id of a capture depends on the listed files' bytes (which the digest covers) and on git's
settings: `core.autocrlf`, `core.fileMode`, filters, and the attributes files. The end capture of
a verify reuses the start capture's tree id only when this identity is unchanged too
(docs/design/verification.md §3). A stat per file and a read of each configuration file, no git
process: this runs on every verify.

A configuration can make git depend on files this list does not hold (`include.path`,
`includeIf`, whose `onbranch:` condition even turns on a branch switch; `core.attributesFile`)
or on a program's behaviour (a filter driver). Following them would mean reimplementing git's
rules, so such a configuration has no identity at all, and the tree id is always rebuilt.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping

from cortex.workspace.freshness import common_dir, git_dirs


def _git_dirs(root: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(the repository's git directory, its common directory), as git would find them."""
    git_dir = env.get("GIT_DIR")
    if git_dir is None:
        return git_dirs(root)  # a `.git` FIFO or device is no gitdir file: never a hang
    git_dir = os.path.join(root, git_dir)
    common = env.get("GIT_COMMON_DIR")
    return git_dir, os.path.join(git_dir, common) if common else common_dir(git_dir)


_UNFOLLOWED = re.compile(rb"include|attributesfile|filter|sparse", re.IGNORECASE)
"""What in a configuration file reaches beyond the files listed here: section and key names are
case-insensitive and cannot be split over lines, so a byte search finds every use (and, erring
towards a rebuild, the same words in a value or a comment). `sparse`: with sparse checkout on,
git clears the skip-worktree bit of each entry whose file is present as it reads the index, so
which entries status ignores depends on the work tree, not only on the index (`core.sparse*`,
`sparse.*`, `index.sparse`)."""

_ENV_CONFIG = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_KEY_")
"""The environment variables that carry configuration (`git -c`, `GIT_CONFIG_COUNT`): they
cannot change between two captures, but an `include.path` or a filter they set reaches a file
or a program that can, and a sparse checkout they turn on makes the index depend on the work
tree, as in a file."""


def files(root: str, env: Mapping[str, str]) -> list[tuple[str, bool]]:
    """Every file git may read its settings or attributes from, with whether it is configuration.

    For the repository at `root`; the others are attributes files.
    """
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [
        (os.path.join(xdg, "git", "config"), True),
        (os.path.join(xdg, "git", "attributes"), False),
        (env.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig"), True),
        ("/etc/gitattributes", False),
    ]
    found.append((env.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"), True))
    dirs = _git_dirs(root, env)
    if dirs is not None:
        git_dir, common = dirs
        found += [
            (os.path.join(common, "config"), True),
            (os.path.join(git_dir, "config.worktree"), True),
            (os.path.join(common, "info", "attributes"), False),
        ]
    return found


def identity(root: str, env: Mapping[str, str]) -> str | None:
    """The state of every settings file (inode, size, mtime, ctime in ns; '-' if absent), or None.

    None when a configuration file reaches further (`_UNFOLLOWED`): no state can be named.
    Git replaces a configuration file by renaming a new one (a new inode); an edit in place moves
    the ctime even when the mtime is put back. A configuration file is read through the very
    descriptor whose state is taken, so what was searched is what the identity names.
    """
    for name, value in env.items():
        if name.startswith(_ENV_CONFIG) and _UNFOLLOWED.search(os.fsencode(value)) is not None:
            return None
    parts = []
    for path, config in files(root, env):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            parts.append("-")
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                # A FIFO or a device may say something else to each reader (and what this one
                # read, git would not): no state can be named.
                return None
            if config and _reaches_further(fd):
                return None
        except OSError:
            return None  # unreadable now, perhaps not to git: nothing can be said of it
        finally:
            os.close(fd)
        parts.append(f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}")
    return "|".join(parts)


def _reaches_further(fd: int) -> bool:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return _UNFOLLOWED.search(b"".join(chunks)) is not None


def attributes_identity(root: str, paths: Iterable[bytes]) -> str:
    """The state of the `.gitattributes` in every folder above a listed path (or '-').

    git applies such a file whatever `.gitignore` says, and status does not list an ignored
    one, so the digest may never read it: a new or edited one must still change the identity.
    Only listed paths matter, as only they are hashed; a listed `.gitattributes` is also in the
    digest. `lstat`: git reads no symlinked `.gitattributes`, and replacing one is a new inode.
    """
    folders = {b""}
    for path in paths:
        names = path.rstrip(b"/").split(b"/")[:-1]
        for end in range(1, len(names) + 1):
            folders.add(b"/".join(names[:end]) + b"/")
    base = os.fsencode(root)
    parts: list[str] = []
    for folder in sorted(folders):
        try:
            info = os.lstat(os.path.join(base, folder + b".gitattributes"))
        except OSError:
            continue  # absent (or its folder is): a file that appears adds an entry
        stamp = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        parts.append(folder.decode("utf-8", "backslashreplace") + "=" + stamp)
    return ";".join(parts)
