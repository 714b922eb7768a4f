"""Which repository a command runs in, and the store identity that follows from it.

Discovery runs in Python (docs/design/paths.md): spawning git costs more than the rest of an
`evidence add`. The rules followed are git's own: walk up from the working directory to the
first `.git` directory or `gitdir:` file (or a bare repository), never across a file-system
boundary, and follow `commondir` from a linked worktree's git dir to the shared one. When the
environment changes those rules (`GIT_DIR` and friends), git itself is asked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Literal

import msgspec

from cortex.cases.digest import sha256_hex
from cortex.cases.errors import InvalidInputError

GIT_ENV_OVERRIDES = (
    "GIT_DIR",
    "GIT_COMMON_DIR",
    "GIT_WORK_TREE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
"""Variables that change git's repository discovery; when set (even empty), we run `git rev-parse`.

An empty `GIT_DIR`, `GIT_WORK_TREE` or `GIT_COMMON_DIR` makes git refuse to run at all, so
"set" means present, not non-empty.
"""

GIT_TIMEOUT = 10.0


class WorkspaceIdentity(msgspec.Struct, kw_only=True):
    """The workspace a command runs in."""

    kind: Literal["git", "directory"]
    root: str
    """The worktree root (or the bare repository, or the plain directory), as a realpath."""
    common_dir: str | None
    """Git's common dir (shared by all worktrees), as a realpath; None outside git."""
    store_id: str
    name: str
    note: str | None = None


def store_id_for(key_path: str, name: str) -> str:
    """`<name>-<12 hex of sha256(key_path)>`; the name is for people, the hash for uniqueness."""
    digest = sha256_hex(os.fsencode(key_path))[:12]
    return f"{_readable(name)}-{digest}"


_READABLE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _readable(name: str) -> str:
    cleaned = "".join(c if c in _READABLE else "-" for c in name).strip("-.")
    return cleaned[:64] or "workspace"


def discover(cwd: str, env: Mapping[str, str]) -> WorkspaceIdentity:
    """Identify the workspace containing `cwd`."""
    try:
        start = os.path.realpath(cwd, strict=True)
    except OSError as exc:
        msg = f"workspace directory {cwd!r} cannot be used ({exc.strerror})"
        raise InvalidInputError(msg) from None
    if not os.path.isdir(start):
        raise InvalidInputError(f"workspace {cwd!r} is not a directory")
    if any(name in env for name in GIT_ENV_OVERRIDES):
        found = _discover_with_git(start, env)
    else:
        found = _discover_in_python(start)
    if found is None:
        return WorkspaceIdentity(
            kind="directory",
            root=start,
            common_dir=None,
            store_id=store_id_for(start, os.path.basename(start) or "root"),
            name=os.path.basename(start) or "root",
            note="not a git repository: cases are keyed by this directory's path",
        )
    root, common = found
    name = _repository_name(common)
    return WorkspaceIdentity(
        kind="git", root=root, common_dir=common, store_id=store_id_for(common, name), name=name
    )


def _repository_name(common: str) -> str:
    base = os.path.basename(common)
    if base == ".git":
        return os.path.basename(os.path.dirname(common)) or "repository"
    return base.removesuffix(".git") or base


def _discover_in_python(start: str) -> tuple[str, str] | None:
    """(worktree root, realpath of the common dir), or None outside git."""
    directory = start
    device = os.stat(directory).st_dev
    while True:
        found = _git_at(directory)
        if found is _STOP:
            return None  # git refuses an unusable `.git` file rather than walking past it
        if found is not None:
            return found
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        try:
            if os.stat(parent).st_dev != device:
                return None  # git does not cross file-system boundaries by default
        except OSError:
            return None
        directory = parent


_STOP = ("", "")
"""`_git_at`'s answer for a `.git` file git would refuse: discovery ends there, outside git."""

_GITFILE_MAX = 1 << 20
"""git refuses a `.git` file larger than this (`read_gitfile_gently`)."""


def _git_at(directory: str) -> tuple[str, str] | None:
    """(directory, common dir) if `directory` holds a repository, `_STOP`, or None to walk on.

    git's order (`setup_git_directory_gently_1`): a `.git` regular file must be a valid gitfile
    naming a git directory, else discovery stops; any other `.git` (a directory, or a symlink to
    one) counts only if it is a git directory; then `directory` itself may be one (bare).
    """
    dotgit = os.path.join(directory, ".git")
    if os.path.isfile(dotgit):
        git_dir = _read_gitfile(dotgit)
        common = None if git_dir is None else _common_dir(git_dir)
        return _STOP if common is None else (directory, common)
    if os.path.isdir(dotgit):
        common = _common_dir(dotgit)
        if common is not None:
            return directory, common
    # A bare repository (or a git dir entered directly).
    common = _common_dir(directory)
    if common is not None:
        return directory, common
    return None


def _read_small(path: str, limit: int) -> bytes:
    """Read at most `limit` bytes of a regular file; a FIFO or device is an OSError, not a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _read_gitfile(path: str) -> str | None:
    """The git dir a `.git` file names, read exactly as git reads it; None if git would refuse."""
    try:
        content = _read_small(path, _GITFILE_MAX + 1)
    except OSError:
        return None
    if len(content) > _GITFILE_MAX or not content.startswith(b"gitdir: "):
        return None
    # Only line endings are stripped; the path is a C string, so it ends at a NUL.
    target = content[len(b"gitdir: ") :].rstrip(b"\r\n").split(b"\0", 1)[0]
    if not target:
        return None
    # No normpath: `..` after a symlinked component must be resolved physically, as git does.
    return os.path.join(os.path.dirname(path), os.fsdecode(target))


_HEX = frozenset(b"0123456789abcdefABCDEF")


def _valid_head(path: str) -> bool:
    """Mirror git's `validate_headref`: a `refs/` symlink, `ref: refs/...`, or a hex object id."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):  # one syscall for the usual miss (no HEAD)
            return os.readlink(path).startswith("refs/")
        head = _read_small(path, 255).split(b"\0", 1)[0]
    except OSError:
        return False
    if head.startswith(b"ref:") and head[4:].lstrip(b" \t\n\v\f\r").startswith(b"refs/"):
        return True
    return len(head) >= 40 and all(byte in _HEX for byte in head[:40])


def _common_dir(git_dir: str) -> str | None:
    """The realpath of the common dir if `git_dir` is a valid git directory (git's own test)."""
    if not _valid_head(os.path.join(git_dir, "HEAD")):
        return None
    common = git_dir
    try:
        pointer = os.fsdecode(_read_small(os.path.join(git_dir, "commondir"), 4096).rstrip(b"\r\n"))
    except OSError:
        pointer = ""
    if pointer:
        common = os.path.join(git_dir, pointer)
    if not (
        os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
    ):
        return None
    return os.path.realpath(common)


def _discover_with_git(start: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    from cortex.workspace.git import GitNotRunError, run_git

    try:
        proc = run_git(
            [
                "git",
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
                "--absolute-git-dir",
                "--is-bare-repository",
                "--is-inside-work-tree",
                "--show-toplevel",
            ],
            cwd=start,
            env=env,
            timeout=GIT_TIMEOUT,
        )
    except GitNotRunError:
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 4:
        return None  # not a repository (or an unusable one): git printed nothing we can use
    common, git_dir, bare, inside_work_tree = lines[:4]
    if proc.returncode == 0 and len(lines) >= 5:
        return os.path.realpath(lines[4]), os.path.realpath(common)
    if bare == "true" or inside_work_tree != "true":
        # No worktree (a bare repository, or inside a git dir): `--show-toplevel` failed, and
        # the git dir is the root, as in the Python walk.
        return os.path.realpath(git_dir), os.path.realpath(common)
    return None


def git_head(root: str, env: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(branch, HEAD commit, warning) of the worktree at `root`; None where there is none.

    Used once per case (at open), so it asks git rather than reading refs by hand.
    """
    from cortex.workspace.git import GitNotRunError, run_git

    def run(*args: str) -> str | None:
        proc = run_git(["git", *args], cwd=root, env=env, timeout=GIT_TIMEOUT)
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", "surrogateescape").strip() or None

    try:
        branch = run("symbolic-ref", "-q", "--short", "HEAD")
        commit = run("rev-parse", "-q", "--verify", "HEAD^{commit}")
    except GitNotRunError as exc:
        if exc.missing:
            return None, None, "git is not installed: branch and commit were not recorded"
        return None, None, f"git failed ({exc}): branch and commit were not recorded"
    return branch, commit, None
