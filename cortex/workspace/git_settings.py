"""Which files decide how `git add` turns a work tree's bytes into blobs and modes, and their state.

The tree id of a capture depends on the listed files' bytes (which the digest covers) and on git's
settings: `core.autocrlf`, `core.fileMode`, filters, and the attributes files. The end capture of
a verify reuses the start capture's tree id only when this identity is unchanged too
(docs/design/verification.md §3). A stat per file, no git process: this runs on every verify.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def _git_dirs(root: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(the repository's git directory, its common directory), as git would find them."""
    git_dir = env.get("GIT_DIR")
    if git_dir is None:
        dot_git = os.path.join(root, ".git")
        if os.path.isdir(dot_git):
            git_dir = dot_git
        else:
            try:
                with open(dot_git, "rb") as handle:
                    line = handle.read(4096).split(b"\n", 1)[0]
            except OSError:
                return None
            if not line.startswith(b"gitdir: "):
                return None
            git_dir = os.path.join(root, os.fsdecode(line[len(b"gitdir: ") :].strip()))
    git_dir = os.path.join(root, git_dir)
    common = env.get("GIT_COMMON_DIR")
    if common is None:
        try:
            with open(os.path.join(git_dir, "commondir"), "rb") as handle:
                common = os.fsdecode(handle.read(4096).strip())
        except OSError:
            common = "."
    return git_dir, os.path.join(git_dir, common)


def files(root: str, env: Mapping[str, str]) -> list[str]:
    """Every file git may read its settings or attributes from, for the repository at `root`."""
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [
        os.path.join(xdg, "git", "config"),
        os.path.join(xdg, "git", "attributes"),
        env.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig"),
        "/etc/gitattributes",
    ]
    found.append(env.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"))
    dirs = _git_dirs(root, env)
    if dirs is not None:
        git_dir, common = dirs
        found += [
            os.path.join(common, "config"),
            os.path.join(git_dir, "config.worktree"),
            os.path.join(common, "info", "attributes"),
        ]
    return found


def identity(root: str, env: Mapping[str, str]) -> str:
    """The state of every settings file: inode, size, mtime and ctime in ns, or '-' if absent.

    Git replaces a configuration file by renaming a new one (a new inode); an edit in place moves
    the ctime even when the mtime is put back.
    """
    parts = []
    for path in files(root, env):
        try:
            info = os.stat(path)
        except OSError:
            parts.append("-")
            continue
        parts.append(f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}")
    return "|".join(parts)
