"""The workspace capture: HEAD, a digest and the tree id of the working state (verification.md §1).

One `git status --porcelain=v2 -z` lists every path that differs from HEAD, the index or the
work tree, with the modes and blob ids git already knows; we add the bytes and mode of each
listed path as it is on disk. The same listing gives the working state's git tree id (§1.1):
HEAD's tree with the listed paths as `git add -A` would store them, hashed by
`git hash-object` (without `-w`) and rebuilt along those paths from trees `git cat-file`
reads (`cortex.workspace.working_tree`). Nothing is written to `.git`, nothing is redacted or
capped; a repository's index may be read through a private copy (`index_mirror`).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from cortex.cases.digest import sha256
from cortex.cases.redact import clip
from cortex.workspace import git_settings, hidden_entries, index_mirror, working_tree
from cortex.workspace.git import READ_ONLY, GitNotRunError, git_output, run_git, spawn_git
from cortex.workspace.working_tree import (
    CHUNK,
    DISK_DIR,
    DISK_EXECUTABLE,
    DISK_LINK,
    DISK_MISSING,
    DISK_REGULAR,
    GIT_TIMEOUT,
    Helpers,
    NoTreeError,
    Seen,
    hashed,
)

if TYPE_CHECKING:
    import subprocess

DIGEST_VERSION = b"cortex-worktree-v1"
SLOW_CAPTURE = 1.0
"""Seconds after which a capture adds the stale-index warning."""

_PINNED = (
    # A repository's configuration must not decide what counts as a change: no fsmonitor (it
    # runs a command and lets git trust another process's list of changes), ctime and full stat
    # data always compared, names compared exactly.
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "core.trustctime=true",
    "-c",
    "core.checkStat=default",
    "-c",
    "core.ignorecase=false",
)
_STATUS = (
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
    tree: str | None = None
    """The working state's git tree id, what `git add -A && git write-tree` would give; None
    when it cannot be named exactly (`tree_reason` says why): it is never guessed."""
    head_tree: str | None = None
    """HEAD's own tree id; equal to `tree` when nothing is uncommitted."""
    tree_reason: str | None = None
    settings: str | None = None
    """The state of git's settings files when the capture began (`git_settings.identity`) and
    of the `.gitattributes` above its listed paths; None when it cannot be named."""
    index: str | None = None
    """The private index copy git read and its state when the capture ended (`hidden_entries`)."""
    hidden: list[tuple[bytes, bytes]] = msgspec.field(default_factory=list)
    """The entries git status does not look at, as `digest_status` takes them."""

    @property
    def bound(self) -> bool:
        """Whether this capture can bind a receipt."""
        return self.digest is not None and self.head is not None

    def same_state(self, other: Capture) -> bool:
        """Whether two captures saw the same HEAD, work tree and tree id."""
        return (
            self.bound
            and other.bound
            and (self.head, self.digest, self.tree) == (other.head, other.digest, other.tree)
        )


def capture(
    root: str,
    env: Mapping[str, str],
    *,
    exclude: str | None = None,
    mirror_dir: str | None = None,
    refresh: bool = True,
    depth: int = 0,
    same_as: Capture | None = None,
) -> Capture:
    """Capture the workspace at `root`; `exclude` is a directory (the case store) to leave out.

    With `mirror_dir`, git works on a private copy of the index kept there (`index_mirror`),
    which it may refresh; `.git` is still never written. Without `refresh` (readers), an
    existing copy is used as it is and nothing at all is written.

    `same_as` is an earlier capture (verify's W0): when this one's digest and git's settings
    equal its, its tree id is taken instead of rebuilt (verification.md §3); otherwise, and
    always for what is returned, this is a capture like any other.
    """
    import subprocess

    started = time.monotonic()
    if not os.path.isdir(root):
        return Capture(reason=f"the workspace directory {root} does not exist")
    if not os.path.lexists(os.path.join(root, ".git")) and not env.get("GIT_DIR"):
        bare = all(os.path.exists(os.path.join(root, n)) for n in ("HEAD", "objects", "refs"))
        if bare:
            return Capture(reason="the workspace is a bare repository: there is no work tree")
        return Capture(reason="the workspace is not a git repository")
    settings = git_settings.identity(root, env)
    if same_as is not None and (
        same_as.tree is None
        or settings is None
        or same_as.settings is None
        or not same_as.settings.startswith(settings + "|")
    ):
        same_as = None
    git_env = dict(env)
    # The work tree is the case's, whatever core.worktree or GIT_WORK_TREE say.
    base = ["git", f"--work-tree={root}", *_PINNED]
    mirror = None
    if mirror_dir is not None and not os.path.lexists(os.path.join(root, ".gitmodules")):
        # With optional locks on, git would also refresh (write) each dirty submodule's own
        # index under .git/modules: repositories with submodules never use the mirror.
        mirror = index_mirror.mirror(root, env, mirror_dir, create=refresh)
    if mirror is not None:
        git_env["GIT_INDEX_FILE"] = mirror
    writes_mirror = mirror is not None and refresh
    if not writes_mirror:
        git_env["GIT_OPTIONAL_LOCKS"] = "0"
        base.insert(1, "--no-optional-locks")
    helpers: Helpers | None = None
    # W0's list of hidden entries serves when git reads the same index copy, unchanged, before
    # and after this status (verification.md §3); otherwise `ls-files -v` lists them again.
    # Without a copy there is no state to compare (None is every such capture's): always listed.
    index_before = hidden_entries.index_state(mirror)
    known = None
    if same_as is not None and index_before is not None and same_as.index == index_before:
        known = same_as.hidden
    try:
        listing = None
        if known is None:
            listing = spawn_git(
                [*base, "ls-files", "-v", "-z"], cwd=root, env={**git_env, **READ_ONLY}, feed=False
            )
        try:
            # Started now, so their start-up (and HEAD's tree, read meanwhile) overlaps status;
            # not when the tree id will probably be W0's (they start later if it is not).
            if same_as is None:
                helpers = Helpers(base, root, {**git_env, **READ_ONLY})
            proc = run_git([*base, *_STATUS], cwd=root, env=git_env, timeout=GIT_TIMEOUT)
            if listing is not None:
                flags, _ = listing.communicate(timeout=GIT_TIMEOUT)
                listed = listing.returncode
            elif hidden_entries.index_state(mirror) == index_before:
                flags, listed = b"", 0
            else:
                known = None
                again = run_git(
                    [*base, "ls-files", "-v", "-z"],
                    cwd=root,
                    env={**git_env, **READ_ONLY},
                    timeout=GIT_TIMEOUT,
                )
                flags, listed = again.stdout, again.returncode
        finally:
            if listing is not None and listing.poll() is None:
                listing.kill()
                listing.wait()
        if (proc.returncode != 0 or listed != 0) and mirror is not None:
            # Whatever the copy could not do (a split index, say), git on the real index can.
            if helpers is not None:
                helpers.close()
            return capture(root, env, exclude=exclude, depth=depth, same_as=same_as)
    except GitNotRunError as exc:
        if helpers is not None:
            helpers.close()
        return _not_run(exc.cause)
    except (OSError, subprocess.TimeoutExpired) as exc:
        if helpers is not None:
            helpers.close()
        return _not_run(exc)
    try:
        taken = _finish(
            proc,
            listed=listed,
            flags=flags,
            known=known,
            helpers=helpers,
            same_as=same_as,
            base=base,
            root=root,
            env=env,
            git_env=git_env,
            exclude=exclude,
            depth=depth,
            started=started,
            settings=settings,
        )
    finally:
        if helpers is not None:
            helpers.close()
    after = hidden_entries.index_state(mirror)
    # Only a copy git did not save again during this capture is offered to the next one: one
    # that git rewrites at every status (racy entries) would make W1 list it after its status,
    # not beside it, which is slower than listing it anyway.
    taken.index = after if after == index_before else None
    return taken


def _not_run(exc: OSError | subprocess.TimeoutExpired) -> Capture:
    """The capture of a git that could not start, or that did not finish in time."""
    if isinstance(exc, FileNotFoundError):
        return Capture(reason="git is not installed, so the code state cannot be bound")
    if not isinstance(exc, OSError):
        return Capture(reason=f"git status did not finish within {GIT_TIMEOUT:.0f} s")
    return Capture(reason=f"git could not run ({exc.strerror})")


def _finish(
    proc: subprocess.CompletedProcess[bytes],
    *,
    listed: int | None,
    flags: bytes,
    helpers: Helpers | None,
    base: list[str],
    root: str,
    env: Mapping[str, str],
    git_env: Mapping[str, str],
    exclude: str | None,
    depth: int,
    started: float,
    same_as: Capture | None = None,
    known: list[tuple[bytes, bytes]] | None = None,
    settings: str | None = None,
) -> Capture:
    """The capture for a finished `git status` (and `ls-files -v`), with its tree id."""
    if proc.returncode != 0 or listed != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = first[0] if first else f"exit {proc.returncode or listed}"
        if "not a git repository" in detail:
            return Capture(reason="the workspace is not a git repository")
        return Capture(reason=f"git status failed: {detail[:300]}")
    hidden = []
    if known is not None:
        hidden = known
    elif hidden_entries.any_flag(flags):
        hidden = [(m.group(2), m.group(1)) for m in hidden_entries.FLAGGED.finditer(flags)]
        staged = hidden_entries.staged_entries(base, root, git_env) if hidden else {}
        if staged is None:
            return Capture(reason="git ls-files failed on entries git status does not look at")
        hidden = [(path, tag + b" " + staged.get(path, b"? ?")) for path, tag in hidden]
    seen = Seen()
    seen.feed = helpers.feed if helpers is not None else None
    try:
        result = digest_status(
            proc.stdout, root, exclude=exclude, env=env, depth=depth, hidden=hidden, seen=seen
        )
    except _NestedError as exc:
        if depth:
            raise
        return Capture(reason=str(exc))
    result.hidden = hidden
    if settings is not None:
        # Known only now that status has listed the paths whose attributes count.
        paths = [path for path, _ in (*seen.records, *seen.hidden)]
        result.settings = settings + "|" + git_settings.attributes_identity(root, paths)
    if (
        same_as is not None
        and result.settings == same_as.settings
        and (result.head, result.digest) == (same_as.head, same_as.digest)
    ):
        # Everything the tree id is a function of is as it was (verification.md §3).
        result.tree, result.head_tree = same_as.tree, same_as.head_tree
    elif result.head is not None and result.head != "unborn":
        _tree_id(result, seen, helpers=helpers, base=base, root=root, git_env=git_env)
    else:
        result.tree_reason = "the repository has no commit yet"
    result.seconds = round(time.monotonic() - started, 4)
    if result.seconds > SLOW_CAPTURE:
        result.warning = (
            f"capturing the work tree took {result.seconds:.1f} s, probably because git's index "
            "is stale (files touched since git last saved it); cortex never writes .git, so run "
            "`git update-index --refresh` (or any plain `git status`) once to make it fast again"
        )
    return result


def _tree_id(
    result: Capture,
    seen: Seen,
    *,
    helpers: Helpers | None,
    base: list[str],
    root: str,
    git_env: Mapping[str, str],
) -> None:
    """Set the capture's tree id (or why there is none), starting the helpers if W1 had not."""
    assert result.head is not None  # noqa: S101 - the caller checked
    own = None
    try:
        if helpers is None:
            helpers = own = Helpers(base, root, {**git_env, **READ_ONLY})
        tree, head_tree = working_tree.working_tree_id(seen, result.head, helpers)
        working_tree.unchanged_since_read(seen, root)
        result.tree, result.head_tree = tree, head_tree
    except NoTreeError as exc:
        result.tree_reason = str(exc)[:500]
    except (GitNotRunError, OSError) as exc:
        result.tree_reason = f"git cat-file or hash-object could not start ({exc})"[:500]
    finally:
        if own is not None:
            own.close()


def digest_status(
    output: bytes,
    root: str,
    *,
    exclude: str | None = None,
    env: Mapping[str, str] | None = None,
    depth: int = 0,
    hidden: list[tuple[bytes, bytes]] | None = None,
    seen: Seen | None = None,
) -> Capture:
    """The capture for one `git status --porcelain=v2 -z` output (see module docstring).

    `seen`, when given, collects what the tree id is built from: the records, and the state
    on disk of each listed path as it was read for the digest.

    `hidden` lists index entries git status does not look at (assume-unchanged, skip-worktree)
    with their `ls-files -v` tag: their state on disk is digested too, so an edit to one counts.

    A listed directory is a repository of its own (a dirty submodule, or an untracked nested
    clone, which git lists as one `dir/` entry and does not look into): it is captured in turn,
    so its commit and its files count too.
    """
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
        # Only the store's own untracked files are left out: a tracked file, or anything else
        # that happens to sit under the store's directory, always counts.
        if prefix is not None and fields == b"?" and _in_store(path, prefix):
            continue
        entries.append((path, fields))
    entries.extend((path, b"hidden:" + tag) for path, tag in hidden or [])
    if head is None and depth == 0:
        return Capture(branch=branch, reason="the repository has no commit yet (HEAD is unborn)")
    entries.sort()
    digest = sha256(DIGEST_VERSION + b"\0" + (head or "unborn").encode() + b"\0")
    root_bytes = os.fsencode(root)
    changed: list[str] = []
    for path, fields in entries:
        state = _disk_state(os.path.join(root_bytes, path), env, depth, seen, path)
        for part in (path, fields, state):
            digest.update(len(part).to_bytes(8, "big") + part)
        hidden_entry = fields.startswith(b"hidden:")
        if seen is not None:
            (seen.hidden if hidden_entry else seen.records).append((path, fields))
            regular = seen.disk.get(path) in (DISK_REGULAR, DISK_EXECUTABLE)
            if seen.feed is not None and regular and hashed(fields):
                seen.feed(path)
        if not hidden_entry or hidden_entries.differs_from_index(
            os.path.join(root_bytes, path), fields[len(b"hidden:") :]
        ):
            changed.append(path.decode("utf-8", "backslashreplace"))
    return Capture(
        head=head or "unborn",
        branch=branch,
        digest="sha256:" + digest.hexdigest(),
        changed=changed,
    )


def _split(record: bytes) -> tuple[bytes, bytes]:
    """(fields, path) of one porcelain v2 record; the path is the last, space-free-split field.

    Ordinary (`1`) records have 8 fields before the path, unmerged (`u`) 10, untracked (`?`)
    and ignored (`!`) 1. Paths may contain spaces, so split a fixed number of times.
    """
    kind = record[:1]
    count = {b"1": 8, b"u": 10}.get(kind, 1)
    parts = record.split(b" ", count)
    if len(parts) <= count:
        msg = f"unexpected git status record {clip(record.decode('utf-8', 'replace'), 80)!r}"
        raise ValueError(msg)
    return b" ".join(parts[:count]), parts[count]


_STORE_ENTRY = re.compile(
    rb"(task_[0-9A-Z]{26}(/.*)?|\.store\.lock|\.keys/.*|\.creating-.*|\.gitignore)"
)


def _in_store(path: bytes, prefix: bytes) -> bool:
    """Whether an untracked path is one of the case store's own files."""
    return path.startswith(prefix) and _STORE_ENTRY.fullmatch(path[len(prefix) :]) is not None


def _exclusion(root: str, exclude: str | None) -> bytes | None:
    if exclude is None:
        return None
    # Both resolved: the store may be configured through a symlinked path.
    relative = os.path.relpath(os.path.realpath(exclude), os.path.realpath(root))
    if relative == os.curdir or relative.startswith(os.pardir):
        return None
    return os.fsencode(relative.replace(os.sep, "/")) + b"/"


_NESTED_MAX = 4
"""Repositories inside repositories deeper than this make the capture unbindable."""


def _disk_state(
    path: bytes,
    env: Mapping[str, str] | None = None,
    depth: int = 0,
    seen: Seen | None = None,
    key: bytes = b"",
) -> bytes:
    """What is at `path` now: its type, executable bit and content digest (no size cap).

    With `seen`, what was found is also recorded under `key` for the tree id: the digest and
    the tree then rest on one look at the path.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if seen is not None:
            seen.disk[key] = DISK_MISSING
        return b"missing"
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        if seen is not None:
            seen.disk[key] = DISK_LINK
            seen.links[key] = target
        return b"link:" + str(sha256(target).hexdigest()).encode()
    if stat.S_ISDIR(mode):
        if seen is not None:
            seen.disk[key] = DISK_DIR
        return _nested_state(path, env, depth, seen, key)
    if not stat.S_ISREG(mode):
        return b"special:" + oct(stat.S_IFMT(mode)).encode()
    executable = b"x" if mode & 0o111 else b"-"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    digest = sha256(b"")
    carriage = False
    try:
        # Taken before the read: a write while it reads moves the ctime past this stamp.
        stamp = working_tree.stamp_of(fd)
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
            carriage = carriage or b"\r" in chunk
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    finally:
        os.close(fd)
    if seen is not None:
        seen.disk[key] = DISK_EXECUTABLE if mode & 0o111 else DISK_REGULAR
        if carriage:
            seen.carriage.add(key)
        seen.stamps[key] = stamp
    return b"file:" + executable + b":" + str(digest.hexdigest()).encode()


class _NestedError(Exception):
    """A nested repository could not be captured: the whole capture is unbindable."""


def _nested_state(
    path: bytes,
    env: Mapping[str, str] | None,
    depth: int,
    seen: Seen | None = None,
    key: bytes = b"",
) -> bytes:
    if env is None or not os.path.lexists(os.path.join(path, b".git")):
        return b"dir"  # a plain directory where git lists a path: git lists its files too
    if depth >= _NESTED_MAX:
        msg = f"repositories are nested more than {_NESTED_MAX} deep at {os.fsdecode(path)}"
        raise _NestedError(msg)
    inner = capture(os.fsdecode(path), env, depth=depth + 1)
    if inner.digest is None:
        msg = f"the nested repository {os.fsdecode(path)} cannot be captured: {inner.reason}"
        raise _NestedError(msg)
    if seen is not None:
        seen.nested[key] = inner
    return f"repo:{inner.head}:{inner.digest}".encode()


def committed_changes(root: str, env: Mapping[str, str], base: str, head: str) -> list[str] | None:
    """Paths changed between two commits (for scope), or None when git cannot say."""
    if base == head:
        return []
    if base.startswith("-") or head.startswith("-"):
        return None
    output = git_output(
        [
            "git",
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-ext-diff",
            "--no-renames",
            "--name-only",
            "-z",
            "--end-of-options",
            base,
            head,
            "--",
        ],
        cwd=root,
        env={**env, **READ_ONLY},
        timeout=GIT_TIMEOUT,
    )
    if output is None:
        return None
    return [p.decode("utf-8", "backslashreplace") for p in output.split(b"\0") if p]
