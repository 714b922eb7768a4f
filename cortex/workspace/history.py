"""The repository's history as git names it: commits, their trees and trailers, the remote.

What the reviewer's page and the merge gate read from git (docs/design/report.md): the tree of
a commit, the commits of `base..head` with their `Cortex-Case:` trailers, the merge base, and
the forge `remote.origin.url` points at. Every git process here is a reader, run with optional
locks off, so nothing under `.git` is written. A ref a caller gives is passed after
`--end-of-options`, so it can never be read as an option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from cortex.workspace.capture import Capture, digest_status

GIT_TIMEOUT = 30.0

_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
FORGES = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
    "codeberg.org": "codeberg",
}
"""The forges whose permalinks a report builds, by host name."""


class Forge(NamedTuple):
    """A known forge and the repository's path on it (`owner/name`; GitLab may nest groups)."""

    kind: str
    host: str
    path: str


class Commit(NamedTuple):
    """One commit of a range and the `Cortex-Case:` trailer values its message carries."""

    id: str
    trailers: tuple[str, ...]


def _git(
    argv: Sequence[str], root: str, env: Mapping[str, str], data: bytes | None = None
) -> bytes | None:
    """The output of a read-only git command, or None when it cannot run or fails."""
    from cortex.workspace.git import READ_ONLY, git_output

    return git_output(
        ["git", *argv],
        cwd=root,
        env={**env, **READ_ONLY, "LC_ALL": "C"},
        timeout=GIT_TIMEOUT,
        data=data,
    )


def is_object_id(text: str | None) -> bool:
    """Whether `text` is a whole SHA-1 or SHA-256 object id in lower-case hex."""
    return text is not None and _OBJECT_ID.fullmatch(text) is not None


def resolve(root: str, env: Mapping[str, str], ref: str) -> str | None:
    """The commit `ref` names (a branch, a tag, a sha, `HEAD~2`), or None."""
    if not ref or "\0" in ref or "\n" in ref:
        return None
    out = _git(["rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}"], root, env)
    text = None if out is None else out.decode("ascii", "replace").strip()
    return text if is_object_id(text) else None


def trees(root: str, env: Mapping[str, str], commits: Sequence[str]) -> dict[str, str]:
    """The tree id of each commit git knows, in one `cat-file --batch-check` (unknown: left out)."""
    wanted = [c for c in dict.fromkeys(commits) if is_object_id(c)]
    if not wanted:
        return {}
    query = "".join(f"{c}^{{tree}}\n" for c in wanted).encode()
    out = _git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], root, env, query)
    found: dict[str, str] = {}
    for commit, line in zip(
        wanted, (out or b"").decode("ascii", "replace").splitlines(), strict=False
    ):
        oid, _, kind = line.partition(" ")
        if kind == "tree" and is_object_id(oid):
            found[commit] = oid
    return found


def merge_base(root: str, env: Mapping[str, str], base: str, head: str) -> str | None:
    """The best common ancestor of two commits, or None (unrelated histories)."""
    if not (is_object_id(base) and is_object_id(head)):
        return None
    out = _git(["merge-base", base, head], root, env)
    text = None if out is None else out.decode("ascii", "replace").strip()
    return text if is_object_id(text) else None


def count_between(root: str, env: Mapping[str, str], base: str, head: str) -> int | None:
    """How many commits `base..head` holds, or None when git cannot say."""
    if not (is_object_id(base) and is_object_id(head)):
        return None
    out = _git(["rev-list", "--count", f"{base}..{head}"], root, env)
    text = None if out is None else out.decode("ascii", "replace").strip()
    return int(text) if text and text.isdigit() else None


def commits_between(root: str, env: Mapping[str, str], base: str, head: str) -> list[Commit] | None:
    """The commits of `base..head`, newest first, each with its `Cortex-Case:` trailer values.

    The caller bounds the count first (`count_between`).
    """
    if not (is_object_id(base) and is_object_id(head)):
        return None
    fmt = "--format=%H%x00%(trailers:key=Cortex-Case,valueonly,separator=%x00)%x01"
    out = _git(["log", "--no-color", fmt, f"{base}..{head}"], root, env)
    if out is None:
        return None
    found: list[Commit] = []
    for chunk in out.decode("utf-8", "replace").split("\x01"):
        fields = chunk.strip("\n").replace("\n", "\0").split("\0")
        if not fields or not is_object_id(fields[0]):
            continue
        values = tuple(v.strip() for v in fields[1:] if v.strip())
        found.append(Commit(fields[0], values))
    return found


def current_branch(root: str, env: Mapping[str, str]) -> str | None:
    """The branch checked out at `root` (None: detached, or git cannot say)."""
    out = _git(["symbolic-ref", "-q", "--short", "HEAD"], root, env)
    text = None if out is None else out.decode("utf-8", "replace").strip()
    return text or None


def branch_of(root: str, env: Mapping[str, str], ref: str) -> str | None:
    """The branch `ref` names: itself for a local branch, `x` for the remote-tracking `o/x`."""
    if not ref or ref.startswith("-") or "\0" in ref or "\n" in ref:
        return None
    for prefix, strip in (("refs/heads/", False), ("refs/remotes/", True)):
        name = ref.removeprefix(prefix)
        out = _git(["show-ref", "--verify", "-q", f"{prefix}{name}"], root, env)
        if out is not None:
            return name.split("/", 1)[1] if strip and "/" in name else name
    return None


def remote_url(root: str, env: Mapping[str, str], remote: str = "origin") -> str | None:
    """`remote.<remote>.url` as git's configuration says (None: no such remote)."""
    out = _git(["config", "--get", f"remote.{remote}.url"], root, env)
    text = None if out is None else out.decode("utf-8", "replace").strip()
    return text or None


_SCP = re.compile(r"(?:[^@/:]+@)?([A-Za-z0-9.-]+):(?!//)(.+)")
_URL = re.compile(r"(?:https|ssh|git)://(?:[^@/]+@)?([A-Za-z0-9.-]+)(?::[0-9]{1,5})?/(.+)")


def forge(url: str | None) -> Forge | None:
    """The known forge a remote URL names, from its host and repository path only.

    https, ssh (`ssh://git@host/o/r.git`) and scp (`git@host:o/r.git`) forms are read; user
    names, passwords, tokens and ports are dropped; every path component must be a plain name.
    Anything else is no forge (a report then writes locations as plain text).
    """
    if url is None or any(ord(c) < 0x21 or ord(c) > 0x7E for c in url):
        return None
    match = _URL.fullmatch(url) or _SCP.fullmatch(url)
    if match is None:
        return None
    host, path = match.group(1).lower(), match.group(2)
    kind = FORGES.get(host)
    if kind is None:
        return None
    path = path.strip("/").removesuffix(".git")
    parts = path.split("/")
    nested = kind == "gitlab"
    if len(parts) < 2 or (len(parts) > 2 and not nested) or len(parts) > 8:
        return None
    if not all(_NAME.fullmatch(p) and p not in {".", ".."} for p in parts):
        return None
    return Forge(kind, host, "/".join(parts))


def commit_capture(root: str, commit: str, tree: str | None) -> Capture:
    """A clean checkout of `commit` as a capture: what `assess` compares receipts with.

    HEAD is the commit, the digest is that of a work tree with nothing changed, and the tree
    id is the commit's own: a receipt is current for it exactly when it verified that code.
    """
    clean = digest_status(f"# branch.oid {commit}\0".encode(), root)
    clean.tree = tree
    clean.head_tree = tree
    if tree is None:
        clean.tree_reason = f"git does not know the tree of {commit[:12]}"
    return clean


def files_at(
    root: str, env: Mapping[str, str], commit: str, paths: Sequence[str], limit: int
) -> dict[str, bytes | None]:
    """The bytes of each path at `commit` (None: absent, not a file, or over `limit`)."""
    found: dict[str, bytes | None] = dict.fromkeys(paths)
    if not is_object_id(commit):
        return found
    request = "".join(f"{commit}:{path}\n" for path in paths).encode()
    out = _git(["cat-file", "--batch"], root, env, request)
    if out is None:
        return found
    at = 0
    for path in paths:
        end = out.index(b"\n", at)
        fields = out[at:end].split()
        at = end + 1
        if len(fields) != 3:  # "<name> missing"
            continue
        size = int(fields[2])
        data, at = out[at : at + size], at + size + 1
        if fields[1] == b"blob" and size <= limit:
            found[path] = data
    return found


def changed_between(root: str, env: Mapping[str, str], base: str, head: str) -> list[str] | None:
    """The paths that differ between two commits (None when git cannot say)."""
    if not (is_object_id(base) and is_object_id(head)):
        return None
    out = _git(["diff", "--name-only", "-z", "--no-renames", base, head, "--"], root, env)
    if out is None:
        return None
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
