"""Which repository a command runs in, and the store identity that follows from it.

Discovery runs in Python (docs/design/paths.md): spawning git costs more than the rest of an
`evidence add`. The rules followed are git's own: walk up from the working directory to the
first `.git` directory or `gitdir:` file (or a bare repository), never across a file-system
boundary, and follow `commondir` from a linked worktree's git dir to the shared one. When the
environment changes those rules (`GIT_DIR` and friends), git itself is asked.
"""

from __future__ import annotations

import os
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
"""Variables that change git's repository discovery; when set, we run `git rev-parse`."""

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
    if any(env.get(name) for name in GIT_ENV_OVERRIDES):
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


def _git_at(directory: str) -> tuple[str, str] | None:
    dotgit = os.path.join(directory, ".git")
    git_dir: str | None = None
    if os.path.isdir(dotgit):
        git_dir = dotgit
    elif os.path.isfile(dotgit):
        git_dir = _read_gitfile(dotgit)
    if git_dir is not None:
        common = _common_dir(git_dir)
        if common is not None:
            return directory, common
    # A bare repository (or a git dir entered directly).
    common = _common_dir(directory)
    if common is not None:
        return directory, common
    return None


def _read_gitfile(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            content = handle.read(4096).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    if not content.startswith("gitdir:"):
        return None
    target = content[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else None


def _common_dir(git_dir: str) -> str | None:
    """The realpath of the common dir if `git_dir` is a valid git directory (git's own test)."""
    if not os.path.lexists(os.path.join(git_dir, "HEAD")):
        return None
    common = git_dir
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as handle:
            pointer = handle.read(4096).decode("utf-8", "surrogateescape").strip()
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
    import subprocess

    try:
        proc = subprocess.run(
            [
                "git",
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
                "--is-bare-repository",
                "--show-toplevel",
            ],
            cwd=start,
            env=dict(env),
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) >= 2 and lines[1] == "true":
        return os.path.realpath(lines[0]), os.path.realpath(lines[0])
    if proc.returncode != 0 or len(lines) < 3:
        return None
    return os.path.realpath(lines[2]), os.path.realpath(lines[0])


def git_head(root: str, env: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """(branch, HEAD commit, warning) of the worktree at `root`; None where there is none.

    Used once per case (at open), so it asks git rather than reading refs by hand.
    """
    import subprocess

    def run(*args: str) -> str | None:
        proc = subprocess.run(
            ["git", *args],
            cwd=root,
            env=dict(env),
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
        if proc.returncode != 0:
            return None
        return proc.stdout.decode("utf-8", "surrogateescape").strip() or None

    try:
        branch = run("symbolic-ref", "-q", "--short", "HEAD")
        commit = run("rev-parse", "-q", "--verify", "HEAD^{commit}")
    except FileNotFoundError:
        return None, None, "git is not installed: branch and commit were not recorded"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, None, f"git failed ({exc}): branch and commit were not recorded"
    return branch, commit, None
