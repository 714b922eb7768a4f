r"""What a file a record names was then, and whether it still is: blob ids and freshness labels.

At write time (`evidence add --file`) the record keeps the git blob id of the working file and
the HEAD commit, both computed in Python (no git process, no `hashlib`): the blob id is
`sha1("blob <size>\\0" + content)`, as git hashes a file in a SHA-1 repository, and HEAD is read
from the refs. When a record is shown, `labels` compares each path with the work tree now; only
a missing path needs git, to look for a rename since the recorded HEAD
(docs/design/recall.md, "Freshness").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from cortex.cases.bounds import FRESHNESS_FILE_MAX, FRESHNESS_PATHS_MAX
from cortex.cases.digest import sha1

GIT_TIMEOUT = 10.0
_HEX = frozenset("0123456789abcdef")
_REF_HOPS = 5
_SMALL = 4096


class Ref(NamedTuple):
    """A path a record names, and what it was when the record was made."""

    path: str
    blob: str | None
    head: str | None


TOO_BIG = "too-big"
"""`blob_id`'s answer for a file over FRESHNESS_FILE_MAX: it exists but is not hashed."""


def blob_id(root: str, path: str) -> str | None:
    """The git blob id of `root/path` as it is now; None when there is no such file.

    A symlink is hashed as git stores it (its target); a directory or anything else that is not
    a regular file counts as absent. A file over FRESHNESS_FILE_MAX gives `TOO_BIG`.
    """
    full = os.path.join(root, path)
    try:
        info = os.lstat(full)
    except (OSError, ValueError):
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            data = os.fsencode(os.readlink(full))
        except OSError:
            return None
    elif stat.S_ISREG(info.st_mode):
        if info.st_size > FRESHNESS_FILE_MAX:
            return TOO_BIG
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
                if sum(map(len, chunks)) > FRESHNESS_FILE_MAX:
                    return TOO_BIG
        except OSError:
            return None
        finally:
            os.close(fd)
        data = b"".join(chunks)
    else:
        return None
    # `sha1` loads its module when called: `status` reads HEAD here on every call, no blob.
    digest = sha1(b"blob %d\0" % len(data))  # git's object id, not a secret
    digest.update(data)
    return str(digest.hexdigest())


def _read_small(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _SMALL).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _object_id(text: str) -> str | None:
    value = text.strip()
    if len(value) in {40, 64} and set(value) <= _HEX:
        return value
    return None


def git_dirs(root: str) -> tuple[str, str] | None:
    """(the worktree's git dir, the common dir) of the worktree at `root`, read in Python."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        git_dir = dot
    else:
        content = _read_small(dot)
        if content is None or not content.startswith("gitdir: "):
            return None
        git_dir = os.path.join(root, content[len("gitdir: ") :].strip())
    return git_dir, common_dir(git_dir)


def common_dir(git_dir: str) -> str:
    """The common dir a linked worktree's git dir points to (`commondir`), else the git dir."""
    pointer = _read_small(os.path.join(git_dir, "commondir"))
    return os.path.join(git_dir, pointer.strip()) if pointer and pointer.strip() else git_dir


def _packed(common: str, ref: str) -> str | None:
    content = _read_packed(os.path.join(common, "packed-refs"))
    for line in content.splitlines():
        if line.endswith(" " + ref):
            return _object_id(line.split(" ", 1)[0])
    return None


def _read_packed(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(64 * 1024 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""


def head_commit(root: str) -> str | None:
    """The commit HEAD names in the worktree at `root`, from the refs; None if unknown.

    Loose refs, `packed-refs` and symbolic refs are followed; an unborn branch, a reftable
    repository or anything unexpected is None (the record then traces no renames).
    """
    dirs = git_dirs(root)
    if dirs is None:
        return None
    git_dir, common = dirs
    content = _read_small(os.path.join(git_dir, "HEAD"))
    for _ in range(_REF_HOPS):
        if content is None:
            return None
        if not content.startswith("ref:"):
            return _object_id(content)
        ref = content[4:].strip()
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            return None
        content = _read_small(os.path.join(git_dir, ref))
        if content is None:
            content = _read_small(os.path.join(common, ref))
        if content is None:
            return _packed(common, ref)
    return None


def _git(argv: list[str], root: str, env: Mapping[str, str]) -> tuple[int, bytes] | None:
    """(exit status, stdout) of a read-only git command; None when git cannot be run."""
    from cortex.workspace.git import READ_ONLY, GitNotRunError, run_git

    try:
        proc = run_git(["git", *argv], cwd=root, env={**env, **READ_ONLY}, timeout=GIT_TIMEOUT)
    except GitNotRunError:
        return None
    return proc.returncode, proc.stdout


def renames(root: str, env: Mapping[str, str], head: str) -> dict[str, str] | str:
    """Old path -> new path for every rename from `head` to the work tree, or why not known.

    The work tree side includes what the index knows, so a staged `git mv` counts; a plain `mv`
    of an untracked destination is a deletion. Optional locks are off: nothing under `.git` is
    written. The answer is a reason string when git cannot say ("git unavailable", or "head
    1a2b3c4 unknown").
    """
    if not _object_id(head):
        return f"head {head[:7]} unknown"
    argv = [
        *("-c", "core.quotePath=false", "diff", "--no-ext-diff", "--name-status", "-z", "-M"),
        *("--diff-filter=RD", "--end-of-options", head, "--"),
    ]
    done = _git(argv, root, env)
    if done is None:
        return "git unavailable"
    code, out = done
    if code != 0:
        known = _git(["cat-file", "-e", f"{head}^{{commit}}"], root, env)
        if known is not None and known[0] != 0:
            return f"head {head[:7]} unknown"
        return "git unavailable"
    fields = out.split(b"\0")
    found: dict[str, str] = {}
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index]
        if status.startswith(b"R") and index + 2 < len(fields):
            old = fields[index + 1].decode("utf-8", "surrogateescape")
            found[old] = fields[index + 2].decode("utf-8", "surrogateescape")
            index += 3
        else:
            index += 2
    return found


def _short(value: str) -> str:
    return value[:7]


def labels(root: str | None, env: Mapping[str, str], refs: Sequence[Ref]) -> list[str | None]:
    """One freshness label per ref (None: the file is as the record saw it), computed now.

    At most FRESHNESS_PATHS_MAX distinct paths are checked; refs past them are labelled
    unchecked. A label never stands in for the record: callers show both.
    """
    if not refs:
        return []
    if root is None or not os.path.isdir(root):
        return ["[freshness unknown: workspace gone]"] * len(refs)
    checked: dict[str, str | None] = {}
    for ref in refs:
        if ref.path not in checked and len(checked) < FRESHNESS_PATHS_MAX:
            checked[ref.path] = blob_id(root, ref.path)
    traced: dict[str, dict[str, str] | str] = {}
    shown: list[str | None] = []
    for ref in refs:
        if ref.path not in checked:
            shown.append("[freshness unchecked: too many paths]")
            continue
        now = checked[ref.path]
        if now is not None:
            changed = now != TOO_BIG and ref.blob is not None and now != ref.blob
            since = ref.head or ref.blob or ""
            shown.append(f"[changed since {_short(since)}]" if changed else None)
            continue
        if ref.head is None:
            shown.append(f"[stale: missing {ref.path}; no commit to trace renames from]")
            continue
        if ref.head not in traced:
            traced[ref.head] = renames(root, env, ref.head)
        found = traced[ref.head]
        if isinstance(found, str):
            shown.append(f"[stale: missing {ref.path}; {found}]")
        elif ref.path in found:
            shown.append(f"[moved: {ref.path} -> {found[ref.path]}]")
        else:
            shown.append(f"[stale: missing {ref.path}]")
    return shown
