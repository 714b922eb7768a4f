"""The workspace capture: HEAD, a digest and the tree id of the working state (verification.md §1).

One `git status --porcelain=v2 -z` lists every path that differs from HEAD, the index or the
work tree, with the modes and blob ids git already knows; we add the bytes and mode of each
listed path as it is on disk. The same listing gives the working state's git tree id (§1.1):
HEAD's tree with the listed paths as `git add -A` would store them, hashed by
`git hash-object` (without `-w`) and rebuilt along those paths from trees `git cat-file`
reads. Nothing is written to `.git`, nothing is redacted or capped.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from cortex.cases.digest import sha256
from cortex.cases.redact import clip
from cortex.workspace import tree_id

if TYPE_CHECKING:
    import subprocess

DIGEST_VERSION = b"cortex-worktree-v1"
GIT_TIMEOUT = 120.0
"""A 50k-file tree with a stale index takes about a second; a minute or two is a hung git."""
SLOW_CAPTURE = 1.0
"""Seconds after which a capture adds the stale-index warning."""
_CHUNK = 1 << 20
_LOCK_ABANDONED = 600.0
"""Seconds after which a mirror's `.lock` is taken for a dead git's and removed."""

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
_FLAGGED = re.compile(rb"(?:^|\0)([a-zS]) ([^\0]+)")
"""`git ls-files -v` entries git status does not look at: assume-unchanged (lower case) and
skip-worktree (`S`, `s`)."""


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
) -> Capture:
    """Capture the workspace at `root`; `exclude` is a directory (the case store) to leave out.

    With `mirror_dir`, git works on a private copy of the index kept there (see `_mirror`),
    which it may refresh; `.git` is still never written. Without `refresh` (readers), an
    existing copy is used as it is and nothing at all is written.
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
    git_env = dict(env)
    # The work tree is the case's, whatever core.worktree or GIT_WORK_TREE say.
    base = ["git", f"--work-tree={root}", *_PINNED]
    mirror = None
    if mirror_dir is not None and not os.path.lexists(os.path.join(root, ".gitmodules")):
        # With optional locks on, git would also refresh (write) each dirty submodule's own
        # index under .git/modules: repositories with submodules never use the mirror.
        mirror = _mirror(root, env, mirror_dir, create=refresh)
    if mirror is not None:
        git_env["GIT_INDEX_FILE"] = mirror
    writes_mirror = mirror is not None and refresh
    if not writes_mirror:
        git_env["GIT_OPTIONAL_LOCKS"] = "0"
        base.insert(1, "--no-optional-locks")
    helpers: _Helpers | None = None
    try:
        listing = subprocess.Popen(
            [*base, "ls-files", "-v", "-z"],
            cwd=root,
            env={**git_env, "GIT_OPTIONAL_LOCKS": "0"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Started now, so their start-up (and HEAD's tree, read meanwhile) overlaps status.
            helpers = _Helpers(base, root, {**git_env, "GIT_OPTIONAL_LOCKS": "0"})
            proc = subprocess.run(
                [*base, *_STATUS],
                cwd=root,
                env=git_env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
            flags, _ = listing.communicate(timeout=GIT_TIMEOUT)
        finally:
            if listing.poll() is None:
                listing.kill()
                listing.wait()
        if (proc.returncode != 0 or listing.returncode != 0) and mirror is not None:
            # Whatever the copy could not do (a split index, say), git on the real index can.
            helpers.close()
            return capture(root, env, exclude=exclude, depth=depth)
    except FileNotFoundError:
        if helpers is not None:
            helpers.close()
        return Capture(reason="git is not installed, so the code state cannot be bound")
    except subprocess.TimeoutExpired:
        if helpers is not None:
            helpers.close()
        return Capture(reason=f"git status did not finish within {GIT_TIMEOUT:.0f} s")
    except OSError as exc:
        if helpers is not None:
            helpers.close()
        return Capture(reason=f"git could not run ({exc.strerror})")
    try:
        return _finish(
            proc,
            listed=listing.returncode,
            flags=flags,
            helpers=helpers,
            base=base,
            root=root,
            env=env,
            git_env=git_env,
            exclude=exclude,
            depth=depth,
            started=started,
        )
    finally:
        helpers.close()


def _finish(
    proc: subprocess.CompletedProcess[bytes],
    *,
    listed: int | None,
    flags: bytes,
    helpers: _Helpers,
    base: list[str],
    root: str,
    env: Mapping[str, str],
    git_env: Mapping[str, str],
    exclude: str | None,
    depth: int,
    started: float,
) -> Capture:
    """The capture for a finished `git status` (and `ls-files -v`), with its tree id."""
    if proc.returncode != 0 or listed != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = first[0] if first else f"exit {proc.returncode or listed}"
        if "not a git repository" in detail:
            return Capture(reason="the workspace is not a git repository")
        return Capture(reason=f"git status failed: {detail[:300]}")
    hidden = []
    if _any_flag(flags):
        hidden = [(m.group(2), m.group(1)) for m in _FLAGGED.finditer(flags)]
    if hidden:
        staged = _staged_entries(base, root, git_env)
        if staged is None:
            return Capture(reason="git ls-files failed on entries git status does not look at")
        hidden = [(path, tag + b" " + staged.get(path, b"? ?")) for path, tag in hidden]
    seen = _Seen()
    seen.feed = helpers.feed
    try:
        result = digest_status(
            proc.stdout, root, exclude=exclude, env=env, depth=depth, hidden=hidden, seen=seen
        )
    except _NestedError as exc:
        if depth:
            raise
        return Capture(reason=str(exc))
    if result.head is not None and result.head != "unborn":
        try:
            tree, head_tree = _working_tree(seen, result.head, helpers)
        except _NoTreeError as exc:
            result.tree_reason = str(exc)[:500]
        else:
            result.tree, result.head_tree = tree, head_tree
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


def _any_flag(listing: bytes) -> bool:
    """Whether `ls-files -v -z` lists any entry that is not plain cached (H) or unmerged (M).

    Counting is C-speed; the regex that finds which ones costs ~10 ms on 50k entries, so it
    only runs when there is something to find (rarely).
    """
    records = listing.count(b"\0")
    plain = listing.count(b"\0H ") + listing.count(b"\0M ") + listing.startswith((b"H ", b"M "))
    return plain != records


def _staged_entries(
    base: list[str], root: str, env: Mapping[str, str]
) -> dict[bytes, bytes] | None:
    """Path -> `mode object` for every index entry (only needed when some are hidden: rare)."""
    output = _git_output([*base, "ls-files", "-s", "-z"], root, env)
    if output is None:
        return None
    entries: dict[bytes, bytes] = {}
    for record in output.split(b"\0"):
        info, tab, path = record.partition(b"\t")
        if tab:
            mode, blob, _stage = info.split(b" ")
            entries[path] = mode + b" " + blob
    return entries


def _differs_from_index(path: bytes, fields: bytes) -> bool:
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
        while chunk := os.read(fd, _CHUNK):  # streamed: a hidden file may be huge
            digest.update(chunk)
            size += len(chunk)
    except OSError:
        return True
    finally:
        os.close(fd)
    # A file that changed size while being read is a change (and its header was wrong).
    return size != info.st_size or actual != mode or digest.hexdigest().encode() != blob


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


def _mirror(
    root: str, env: Mapping[str, str], directory: str, *, create: bool = True
) -> str | None:
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
    if source is None:
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
            shutil.copyfileobj(reader, writer, _CHUNK)
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


def _unlink_quietly(path: str) -> None:
    try:  # noqa: SIM105 - contextlib is an import on the per-call path
        os.unlink(path)
    except OSError:
        pass


def digest_status(
    output: bytes,
    root: str,
    *,
    exclude: str | None = None,
    env: Mapping[str, str] | None = None,
    depth: int = 0,
    hidden: list[tuple[bytes, bytes]] | None = None,
    seen: _Seen | None = None,
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
            regular = seen.disk.get(path) in (_REGULAR, _EXECUTABLE)
            if seen.feed is not None and regular and _hashed(fields):
                seen.feed(path)
        if not hidden_entry or _differs_from_index(
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
    seen: _Seen | None = None,
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
            seen.disk[key] = _MISSING
        return b"missing"
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        if seen is not None:
            seen.disk[key] = _LINK
            seen.links[key] = target
        return b"link:" + str(sha256(target).hexdigest()).encode()
    if stat.S_ISDIR(mode):
        if seen is not None:
            seen.disk[key] = _DIR
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
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
            carriage = carriage or b"\r" in chunk
    except OSError as exc:
        return b"unreadable:" + str(exc.errno).encode()
    finally:
        os.close(fd)
    if seen is not None:
        seen.disk[key] = _EXECUTABLE if mode & 0o111 else _REGULAR
        if carriage:
            seen.carriage.add(key)
    return b"file:" + executable + b":" + str(digest.hexdigest()).encode()


class _NestedError(Exception):
    """A nested repository could not be captured: the whole capture is unbindable."""


def _nested_state(
    path: bytes,
    env: Mapping[str, str] | None,
    depth: int,
    seen: _Seen | None = None,
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


# -- the tree id (verification.md §1.1) -------------------------------------------------------

_MISSING, _LINK, _DIR, _REGULAR, _EXECUTABLE = range(5)
_ZERO_MODE = b"000000"
_EARLY = 512
"""Paths fed to hash-object while the digest runs (see `_Helpers.feed`)."""
_BATCH = 256
"""Objects asked of `cat-file` per write: its answers are read before more is asked, so
neither side can fill a pipe while the other waits."""


class _Seen:
    """What one capture read, for the tree id: records, and the state of each listed path."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []
        self.hidden: list[tuple[bytes, bytes]] = []
        self.disk: dict[bytes, int] = {}
        """Path -> _MISSING, _LINK, _DIR, _REGULAR or _EXECUTABLE (absent: something else)."""
        self.links: dict[bytes, bytes] = {}
        self.nested: dict[bytes, Capture] = {}
        self.carriage: set[bytes] = set()
        """Regular files whose bytes hold a carriage return (see `_safer_crlf`)."""
        self.feed: Callable[[bytes], None] | None = None
        """Where to send a file the tree id will need hashed, as soon as the digest saw it."""


class _NoTreeError(Exception):
    """The tree id cannot be named exactly; the message says why."""


class _Helpers:
    """`git cat-file --batch` and `git hash-object --stdin-paths`, started beside status.

    Both only read: cat-file answers object ids, hash-object without `-w` prints the id a
    file would get and stores nothing. Both are killed and reaped by `close`, and a watchdog
    kills them if a read outlasts GIT_TIMEOUT, so a hung git cannot hang the capture.

    Their latency is hidden where it is safe: while status runs, a thread asks cat-file for
    HEAD's commit and tree and parses the root (kept only if that commit is the HEAD status
    then reports); and files are fed to hash-object while the digest reads them.
    """

    def __init__(self, base: list[str], root: str, env: Mapping[str, str]) -> None:
        import subprocess
        import threading

        self.base = base
        self.root = root
        self.env = env
        self.file_mode: bool | None = None
        self.fed: list[bytes] = []
        self.head: tuple[str, bytes, str, tree_id.ParsedTree] | None = None
        """What the prefetch found: (commit id, commit body, tree id, the parsed tree)."""
        self.objects = subprocess.Popen(
            [*base, "cat-file", "--batch"],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            self.hasher = subprocess.Popen(
                [*base, "hash-object", "--stdin-paths"],
                cwd=root,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except BaseException:
            _reap(self.objects)
            raise
        self.timer = threading.Timer(GIT_TIMEOUT, self.close)
        self.timer.daemon = True
        self.timer.start()
        self.prefetch = threading.Thread(target=self._prefetch, daemon=True)
        self.prefetch.start()

    def close(self) -> None:
        """Kill and reap both processes (idempotent)."""
        self.timer.cancel()
        _reap(self.objects)
        _reap(self.hasher)

    def _prefetch(self) -> None:
        try:
            found = self.read(["HEAD", "HEAD^{tree}"])
        except _NoTreeError:
            return
        commit, tree = found.get("HEAD"), found.get("HEAD^{tree}")
        if commit is None or tree is None or commit[1] != b"commit" or tree[1] != b"tree":
            return
        try:
            parsed = tree_id.ParsedTree(tree[2], len(tree[0]) // 2)
        except tree_id.TreeError:
            return
        self.head = (commit[0], commit[2], tree[0], parsed)

    def prefetched(self, head: str) -> tuple[str, tree_id.ParsedTree] | None:
        """(tree id, parsed tree) of `head`'s tree, if the prefetch read that very commit."""
        self.prefetch.join(GIT_TIMEOUT)
        found = self.head
        if found is None or found[0] != head:
            return None  # HEAD moved since (or before) status read it
        if not found[1].startswith(b"tree " + found[2].encode("ascii") + b"\n"):
            return None  # HEAD moved between the prefetch's two lookups
        return found[2], found[3]

    def read(self, requests: list[str]) -> dict[str, tuple[str, bytes, bytes]]:
        """Request (an object id or name) -> (id, type, body); what git lacks is left out."""
        stdin, stdout = self.objects.stdin, self.objects.stdout
        assert stdin is not None  # noqa: S101 - the pipes were asked for
        assert stdout is not None  # noqa: S101
        found: dict[str, tuple[str, bytes, bytes]] = {}
        try:
            for start in range(0, len(requests), _BATCH):
                chunk = requests[start : start + _BATCH]
                stdin.write(b"".join(name.encode("ascii") + b"\n" for name in chunk))
                stdin.flush()
                for name in chunk:
                    header = stdout.readline().split()
                    if len(header) == 2 and header[1] == b"missing":
                        continue
                    if len(header) != 3:
                        msg = "git cat-file stopped answering"
                        raise _NoTreeError(msg)
                    size = int(header[2])
                    body = stdout.read(size + 1)
                    if len(body) != size + 1:
                        msg = "git cat-file stopped answering"
                        raise _NoTreeError(msg)
                    found[name] = (header[0].decode("ascii"), header[1], body[:size])
        except (OSError, ValueError) as exc:
            msg = f"git cat-file failed ({exc})"
            raise _NoTreeError(msg) from None
        return found

    def trees(self, oids: list[bytes]) -> dict[bytes, bytes]:
        """The reader `tree_id.build` asks, one level at a time."""
        answered = self.read([oid.hex() for oid in oids])
        return {
            bytes.fromhex(oid): body for oid, (_, kind, body) in answered.items() if kind == b"tree"
        }

    def feed(self, path: bytes) -> None:
        """Start hashing `path` now (the digest is reading it); its id is read in `hash_paths`.

        Only the first _EARLY paths: until its output is read, hash-object can hold only what
        fits in a pipe, and a writer that fills the other pipe meanwhile would wait forever.
        """
        stdin = self.hasher.stdin
        if stdin is None or len(self.fed) >= _EARLY or not _line_safe(path):
            return
        try:
            stdin.write(path + b"\n")
            stdin.flush()
        except OSError:
            return  # hash_paths will report hash-object's failure
        self.fed.append(path)

    def hash_paths(self, paths: list[bytes]) -> dict[bytes, str]:
        """The blob id `git add` would give each file (clean filters and eol conversion)."""
        import subprocess

        early = set(self.fed)
        rest = [path for path in dict.fromkeys(paths) if path not in early]
        try:
            out, err = self.hasher.communicate(
                b"".join(path + b"\n" for path in rest), timeout=GIT_TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
            msg = f"git hash-object failed ({type(exc).__name__})"
            raise _NoTreeError(msg) from None
        ids = out.decode("ascii", "replace").split()
        asked = self.fed + rest
        if self.hasher.returncode != 0 or len(ids) != len(asked):
            first = err.decode("utf-8", "replace").strip().splitlines()
            msg = "a listed file could not be hashed (it changed while it was captured?)"
            raise _NoTreeError(msg + (f": {first[0][:200]}" if first else ""))
        return dict(zip(asked, ids, strict=True))

    def hash_one(self, path: bytes) -> str:
        """`hash_paths` for a path its line protocol cannot carry (newline, CR, leading quote)."""
        data = _read_regular(os.path.join(os.fsencode(self.root), path))
        output = _git_output_input(
            [*self.base, "hash-object", b"--path=" + path, "--stdin"], self.root, self.env, data
        )
        if output is None:
            msg = "a listed file could not be hashed"
            raise _NoTreeError(msg)
        return output.decode("ascii", "replace").strip()

    def trusts_file_mode(self) -> bool:
        """core.fileMode (default true), asked only when an executable bit matters."""
        if self.file_mode is None:
            output = _git_output(
                [*self.base, "config", "--bool", "core.fileMode"], self.root, self.env
            )
            self.file_mode = output is None or output.strip() != b"false"
        return self.file_mode


def _reap(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            try:  # noqa: SIM105 - contextlib is an import on the per-call path
                pipe.close()
            except OSError:
                pass


def _read_regular(path: bytes) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        msg = "a listed file could not be read for its tree entry"
        raise _NoTreeError(msg) from None
    chunks = []
    try:
        # Only a regular file has a blob: a FIFO or a device swapped in since the digest read
        # the path would read as something (end of file at once, for a FIFO without a writer),
        # and the tree id is never guessed.
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            msg = "a listed file could not be read for its tree entry"
            raise _NoTreeError(msg)
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    except OSError:
        msg = "a listed file could not be read for its tree entry"
        raise _NoTreeError(msg) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _hashed(fields: bytes) -> bool:
    """Whether the tree id hashes the work-tree file of this status record (see `_ordinary`)."""
    kind = fields[:1]
    if kind in (b"?", b"u"):
        return True
    if kind != b"1":
        return False
    parts = fields.split(b" ")
    return parts[1][1:2] not in (b".", b"D") and parts[5] in (tree_id.REGULAR, tree_id.EXECUTABLE)


def _line_safe(path: bytes) -> bool:
    """Whether `hash-object --stdin-paths` reads `path` back as it is (it unquotes `"...`)."""
    return b"\n" not in path and b"\r" not in path and not path.startswith(b'"')


def _is_attributes(path: bytes) -> bool:
    return path == b".gitattributes" or path.endswith(b"/.gitattributes")


class _Plan:
    """The changes the tree is built from, and the files still to hash."""

    def __init__(self, algorithm: str) -> None:
        self.algorithm = algorithm
        self.changes: dict[bytes, tree_id.Entry | None] = {}
        self.hash: list[tuple[bytes, bytes]] = []
        """(path, mode) of each regular file whose blob id `hash-object` must give."""
        self.index_blobs: dict[bytes, str] = {}
        """Hashed tracked files with a carriage return: path -> their index blob."""


def _working_tree(seen: _Seen, head: str, helpers: _Helpers) -> tuple[str, str]:
    """(tree id, HEAD's tree id) of the working state (verification.md §1.1), or _NoTreeError."""
    algorithm = "sha256" if len(head) == 64 else "sha1"
    parsed: dict[bytes, tree_id.ParsedTree] = {}
    early = helpers.prefetched(head)
    if early is not None:
        head_tree = early[0]
        parsed[bytes.fromhex(head_tree)] = early[1]
    else:
        commit = helpers.read([head]).get(head)
        if commit is None or commit[1] != b"commit" or not commit[2].startswith(b"tree "):
            msg = f"git cat-file could not read HEAD ({head})"
            raise _NoTreeError(msg)
        commit_body = commit[2]
        head_tree = commit_body[5 : commit_body.index(b"\n")].decode("ascii")
    plan = _Plan(algorithm)
    untracked = []
    for path, fields in seen.records:
        kind = fields[:1]
        if kind == b"?":
            untracked.append(path)
        elif kind == b"1":
            _ordinary(plan, seen, helpers, path, fields.split(b" "))
        elif kind == b"u":
            # A conflict: `git add -A` resolves it with what is on disk.
            _work_tree_entry(plan, seen, helpers, path, mode=None, index_blob=None)
        else:
            msg = f"git status gave a record this capture does not know ({kind!r})"
            raise _NoTreeError(msg)
    for path in untracked:
        # Last, so a path removed from the index but still on disk (`git rm --cached`) is added.
        _work_tree_entry(
            plan, seen, helpers, path.removesuffix(b"/"), mode=None, index_blob=None, key=path
        )
    for path, fields in seen.hidden:
        _hidden(plan, seen, helpers, path, fields[len(b"hidden:") :].split(b" "))
    _safer_crlf(plan, helpers)
    ids = helpers.hash_paths([path for path, _mode in plan.hash if _line_safe(path)])
    for path, mode in plan.hash:
        oid = ids[path] if path in ids else helpers.hash_one(path)
        try:
            plan.changes[path] = (mode, bytes.fromhex(oid))
        except ValueError:
            msg = "git hash-object gave no object id"
            raise _NoTreeError(msg) from None
    try:
        built = tree_id.build(
            bytes.fromhex(head_tree),
            plan.changes,
            helpers.trees,
            algorithm=algorithm,
            parsed=parsed,
        )
    except tree_id.TreeError as exc:
        raise _NoTreeError(str(exc)) from None
    return built.hex(), head_tree


def _ordinary(plan: _Plan, seen: _Seen, helpers: _Helpers, path: bytes, parts: list[bytes]) -> None:
    """A `1 XY sub mH mI mW hH hI` record."""
    work_side, mode_index, mode_work, blob_index = parts[1][1:2], parts[4], parts[5], parts[7]
    if (
        _is_attributes(path)
        and mode_index != _ZERO_MODE
        and seen.disk.get(path) not in (_REGULAR, _EXECUTABLE)
    ):
        _attributes_from_index(path)
    if work_side == b".":
        # The work tree matches the index: the entry is the index's, nothing to hash.
        plan.changes[path] = (
            None if mode_index == _ZERO_MODE else (mode_index, bytes.fromhex(blob_index.decode()))
        )
    elif work_side == b"D" or mode_work == _ZERO_MODE:
        plan.changes[path] = None
    else:
        index_blob = blob_index.decode() if mode_index != _ZERO_MODE else None
        _work_tree_entry(plan, seen, helpers, path, mode=mode_work, index_blob=index_blob)


def _work_tree_entry(
    plan: _Plan,
    seen: _Seen,
    helpers: _Helpers,
    path: bytes,
    *,
    mode: bytes | None,
    index_blob: str | None,
    key: bytes | None = None,
) -> None:
    """The entry `git add` would make for the work tree's `path` (`mode`: git's, if it said)."""
    key = path if key is None else key
    state = seen.disk.get(key)
    name = path.decode("utf-8", "backslashreplace")
    if state == _MISSING:
        plan.changes[path] = None  # gone since status listed it: git add -A drops it
    elif state == _LINK:
        target = seen.links[key]
        plan.changes[path] = (tree_id.SYMLINK, tree_id.object_id(b"blob", target, plan.algorithm))
    elif state == _DIR:
        inner = seen.nested.get(key)
        if inner is None:
            msg = f"{name} is a directory where git lists a file"
            raise _NoTreeError(msg)
        if inner.tree is None or inner.head is None:
            msg = f"the nested repository {name} has no tree id: {inner.tree_reason}"
            raise _NoTreeError(msg)
        if inner.tree != inner.head_tree:
            msg = f"the nested repository {name} has uncommitted changes, which a gitlink "
            msg += "cannot name"
            raise _NoTreeError(msg)
        plan.changes[path] = (tree_id.GITLINK, bytes.fromhex(inner.head))
    elif state in (_REGULAR, _EXECUTABLE):
        if mode in (tree_id.SYMLINK, tree_id.GITLINK):
            msg = f"{name} changed type while it was captured"
            raise _NoTreeError(msg)
        if mode not in (tree_id.REGULAR, tree_id.EXECUTABLE):
            # Untracked or conflicted (git gave no mode): the executable bit, where it counts.
            executable = state == _EXECUTABLE and helpers.trusts_file_mode()
            mode = tree_id.EXECUTABLE if executable else tree_id.REGULAR
        plan.hash.append((path, mode))
        if index_blob is not None and key in seen.carriage:
            plan.index_blobs[path] = index_blob
    else:
        msg = f"{name} could not be read as a file, a symlink or a repository (a FIFO, a "
        msg += "socket, or no permission?)"
        raise _NoTreeError(msg)


def _hidden(plan: _Plan, seen: _Seen, helpers: _Helpers, path: bytes, parts: list[bytes]) -> None:
    """An assume-unchanged or skip-worktree entry (`tag mode blob` from ls-files): disk counts."""
    tag, mode_index, blob_index = parts[0], parts[1], parts[2]
    if _is_attributes(path) and seen.disk.get(path) not in (_REGULAR, _EXECUTABLE):
        _attributes_from_index(path)
    if seen.disk.get(path) == _MISSING:
        if tag in (b"S", b"s") and mode_index != b"?":
            # A sparse checkout: absent on purpose, the index entry stays.
            plan.changes[path] = (mode_index, bytes.fromhex(blob_index.decode()))
        else:
            plan.changes[path] = None
        return
    if mode_index in (tree_id.REGULAR, tree_id.EXECUTABLE) and not helpers.trusts_file_mode():
        known: bytes | None = mode_index  # core.fileMode false: git keeps the index's mode
    else:
        known = None
    index_blob = None if blob_index == b"?" else blob_index.decode()
    _work_tree_entry(plan, seen, helpers, path, mode=known, index_blob=index_blob)


def _attributes_from_index(path: bytes) -> None:
    """Refuse a tree id while a .gitattributes is in the index but not a file in the work tree.

    git reads such a file from the index (it never follows a symlinked one), and whether
    `git add -A` still sees it when it converts a file depends on the order it works in (it
    drops the file from the index too, and re-reads only files whose stat data is in doubt);
    hash-object reads no index at all.
    """
    name = path.decode("utf-8", "backslashreplace")
    msg = f"{name} is in the index but not a file in the work tree, so which attributes git add "
    msg += "would apply cannot be known"
    raise _NoTreeError(msg)


def _safer_crlf(plan: _Plan, helpers: _Helpers) -> None:
    """Refuse a tree id where git's "safer autocrlf" rule could apply.

    For a path with automatic line-ending conversion, `git add` leaves CRLF alone when the
    index's version already has a carriage return; `hash-object` reads no index and converts.
    Only files whose bytes hold a carriage return are asked about (rare outside such repos),
    and the test errs towards no tree id: any index version without a NUL counts as text.
    """
    if not plan.index_blobs:
        return
    blobs = helpers.read(sorted(set(plan.index_blobs.values())))
    for path, blob in plan.index_blobs.items():
        found = blobs.get(blob)
        # git: the index's version is text (no NUL, among other tests) with a CRLF in it.
        if found is None or (b"\r\n" in found[2] and b"\0" not in found[2]):
            name = path.decode("utf-8", "backslashreplace")
            msg = f"{name} has CRLF line endings in the index and the work tree: git add's "
            msg += "safer-autocrlf rule reads the index, which hash-object does not"
            raise _NoTreeError(msg)


def committed_changes(root: str, env: Mapping[str, str], base: str, head: str) -> list[str] | None:
    """Paths changed between two commits (for scope), or None when git cannot say."""
    if base == head:
        return []
    if base.startswith("-") or head.startswith("-"):
        return None
    output = _git_output(
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
        root,
        env,
    )
    if output is None:
        return None
    return [p.decode("utf-8", "backslashreplace") for p in output.split(b"\0") if p]


def _git_output(argv: list[str], root: str, env: Mapping[str, str]) -> bytes | None:
    """The output of a read-only git command, or None when it cannot run or fails."""
    return _git_output_input(argv, root, env, None)


def _git_output_input(
    argv: Sequence[str | bytes], root: str, env: Mapping[str, str], data: bytes | None
) -> bytes | None:
    """`_git_output` with `data` on the command's standard input."""
    import subprocess

    try:
        proc = subprocess.run(
            argv,
            cwd=root,
            env={**env, "GIT_OPTIONAL_LOCKS": "0"},
            input=data,
            stdin=subprocess.DEVNULL if data is None else None,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
