"""The git tree id of a working state (verification.md §1.1), built beside the capture's digest.

`git add -A && git write-tree` would write to `.git`; this names the same tree without writing
anything. The capture's one look at each path `git status` lists (`Seen`) says what is on
disk; `Helpers` are the two read-only gits started beside status (`cat-file --batch` for
HEAD's trees, `hash-object --stdin-paths` for the blob id `git add` would give a file), and
`working_tree_id` rebuilds HEAD's tree along the listed paths (`tree_id.build`). Where the id
cannot be named exactly (a conflict of attributes, CRLF under "safer autocrlf", a nested
repository with changes) it refuses with `NoTreeError`: the tree id is never guessed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from cortex.workspace import tree_id
from cortex.workspace.git import READ_ONLY, git_output, spawn_git

if TYPE_CHECKING:
    import subprocess

GIT_TIMEOUT = 120.0
"""A 50k-file tree with a stale index takes about a second; a minute or two is a hung git."""
CHUNK = 1 << 20
"""Bytes read from a file at a time."""


class Nested(Protocol):
    """What the tree id needs of a nested repository's own capture (a `Capture`)."""

    head: str | None
    tree: str | None
    head_tree: str | None
    tree_reason: str | None


DISK_MISSING, DISK_LINK, DISK_DIR, DISK_REGULAR, DISK_EXECUTABLE = range(5)
"""What the capture found at a listed path (`Seen.disk`)."""
_ZERO_MODE = b"000000"
_EARLY = 512
"""Paths fed to hash-object while the digest runs (see `Helpers.feed`)."""
_BATCH = 256
"""Objects asked of `cat-file` per write: its answers are read before more is asked, so
neither side can fill a pipe while the other waits."""


class Seen:
    """What one capture read, for the tree id: records, and the state of each listed path."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []
        self.hidden: list[tuple[bytes, bytes]] = []
        self.disk: dict[bytes, int] = {}
        """Path -> one of the DISK_ states (absent: something else)."""
        self.links: dict[bytes, bytes] = {}
        self.nested: dict[bytes, Nested] = {}
        self.carriage: set[bytes] = set()
        """Regular files whose bytes hold a carriage return (see `_safer_crlf`)."""
        self.stamps: dict[bytes, tuple[int, int, int, int]] = {}
        """Regular files -> (inode, size, mtime, ctime in ns) as the digest began reading them."""
        self.feed: Callable[[bytes], None] | None = None
        """Where to send a file the tree id will need hashed, as soon as the digest saw it."""


class NoTreeError(Exception):
    """The tree id cannot be named exactly; the message says why."""


class Helpers:
    """`git cat-file --batch` and `git hash-object --stdin-paths`, started beside status.

    Both only read: cat-file answers object ids, hash-object without `-w` prints the id a
    file would get and stores nothing. Both are killed and reaped by `close`, and a watchdog
    kills them if a read outlasts GIT_TIMEOUT, so a hung git cannot hang the capture.

    Their latency is hidden where it is safe: while status runs, a thread asks cat-file for
    HEAD's commit and tree and parses the root (kept only if that commit is the HEAD status
    then reports); and files are fed to hash-object while the digest reads them.
    """

    def __init__(self, base: list[str], root: str, env: Mapping[str, str]) -> None:
        import threading

        self.base = base
        self.root = root
        self.env = env
        self.file_mode: bool | None = None
        self.fed: list[bytes] = []
        self.head: tuple[str, bytes, str, tree_id.ParsedTree] | None = None
        """What the prefetch found: (commit id, commit body, tree id, the parsed tree)."""
        self.objects = spawn_git([*base, "cat-file", "--batch"], cwd=root, env=env, feed=True)
        try:
            self.hasher = spawn_git(
                [*base, "hash-object", "--stdin-paths"], cwd=root, env=env, feed=True, errors=True
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
        except NoTreeError:
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
                        raise NoTreeError(msg)
                    size = int(header[2])
                    body = stdout.read(size + 1)
                    if len(body) != size + 1:
                        msg = "git cat-file stopped answering"
                        raise NoTreeError(msg)
                    found[name] = (header[0].decode("ascii"), header[1], body[:size])
        except (OSError, ValueError) as exc:
            msg = f"git cat-file failed ({exc})"
            raise NoTreeError(msg) from None
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
            raise NoTreeError(msg) from None
        ids = out.decode("ascii", "replace").split()
        asked = self.fed + rest
        if self.hasher.returncode != 0 or len(ids) != len(asked):
            first = err.decode("utf-8", "replace").strip().splitlines()
            msg = "a listed file could not be hashed (it changed while it was captured?)"
            raise NoTreeError(msg + (f": {first[0][:200]}" if first else ""))
        return dict(zip(asked, ids, strict=True))

    def hash_one(self, path: bytes) -> str:
        """`hash_paths` for a path its line protocol cannot carry (newline, CR, leading quote)."""
        data = _read_regular(os.path.join(os.fsencode(self.root), path))
        output = git_output(
            [*self.base, "hash-object", b"--path=" + path, "--stdin"],
            cwd=self.root,
            env={**self.env, **READ_ONLY},
            timeout=GIT_TIMEOUT,
            data=data,
        )
        if output is None:
            msg = "a listed file could not be hashed"
            raise NoTreeError(msg)
        return output.decode("ascii", "replace").strip()

    def trusts_file_mode(self) -> bool:
        """core.fileMode (default true), asked only when an executable bit matters."""
        if self.file_mode is None:
            output = git_output(
                [*self.base, "config", "--bool", "core.fileMode"],
                cwd=self.root,
                env={**self.env, **READ_ONLY},
                timeout=GIT_TIMEOUT,
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
        raise NoTreeError(msg) from None
    chunks = []
    try:
        # Only a regular file has a blob: a FIFO or a device swapped in since the digest read
        # the path would read as something (end of file at once, for a FIFO without a writer),
        # and the tree id is never guessed.
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            msg = "a listed file could not be read for its tree entry"
            raise NoTreeError(msg)
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
    except OSError:
        msg = "a listed file could not be read for its tree entry"
        raise NoTreeError(msg) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def hashed(fields: bytes) -> bool:
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


def working_tree_id(seen: Seen, head: str, helpers: Helpers) -> tuple[str, str]:
    """(tree id, HEAD's tree id) of the working state (verification.md §1.1), or NoTreeError."""
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
            raise NoTreeError(msg)
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
            raise NoTreeError(msg)
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
            raise NoTreeError(msg) from None
    try:
        built = tree_id.build(
            bytes.fromhex(head_tree),
            plan.changes,
            helpers.trees,
            algorithm=algorithm,
            parsed=parsed,
        )
    except tree_id.TreeError as exc:
        raise NoTreeError(str(exc)) from None
    return built.hex(), head_tree


def unchanged_since_read(seen: Seen, root: str) -> None:
    """Refuse a tree id when a file the digest read may have changed since it read it.

    hash-object reads each file again, later: a file rewritten in between (and put back before
    the next capture) would give a tree of bytes the digest never saw, and the end capture of a
    verify takes the start's tree id on the digest's word (verification.md §3). Any write moves
    the ctime, so the stat data the digest saw must still be there once every blob is named; a
    write within the same tick of the file system's clock is the one it cannot see.
    """
    base = os.fsencode(root)
    for path, stamp in seen.stamps.items():
        try:
            now = _stamp(os.lstat(os.path.join(base, path)))
        except OSError:
            now = None
        if now != stamp:
            name = path.decode("utf-8", "backslashreplace")
            msg = f"{name} changed while it was captured (between its digest and its blob id)"
            raise NoTreeError(msg)


def _stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    """What any write to a file changes: inode, size, mtime and ctime in ns."""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def stamp_of(fd: int) -> tuple[int, int, int, int]:
    """`_stamp` of an open file (the digest's, taken before it reads)."""
    return _stamp(os.fstat(fd))


def _ordinary(plan: _Plan, seen: Seen, helpers: Helpers, path: bytes, parts: list[bytes]) -> None:
    """A `1 XY sub mH mI mW hH hI` record."""
    work_side, mode_index, mode_work, blob_index = parts[1][1:2], parts[4], parts[5], parts[7]
    if (
        _is_attributes(path)
        and mode_index != _ZERO_MODE
        and seen.disk.get(path) not in (DISK_REGULAR, DISK_EXECUTABLE)
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
    seen: Seen,
    helpers: Helpers,
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
    if state == DISK_MISSING:
        plan.changes[path] = None  # gone since status listed it: git add -A drops it
    elif state == DISK_LINK:
        target = seen.links[key]
        plan.changes[path] = (tree_id.SYMLINK, tree_id.object_id(b"blob", target, plan.algorithm))
    elif state == DISK_DIR:
        inner = seen.nested.get(key)
        if inner is None:
            msg = f"{name} is a directory where git lists a file"
            raise NoTreeError(msg)
        if inner.tree is None or inner.head is None:
            msg = f"the nested repository {name} has no tree id: {inner.tree_reason}"
            raise NoTreeError(msg)
        if inner.tree != inner.head_tree:
            msg = f"the nested repository {name} has uncommitted changes, which a gitlink "
            msg += "cannot name"
            raise NoTreeError(msg)
        plan.changes[path] = (tree_id.GITLINK, bytes.fromhex(inner.head))
    elif state in (DISK_REGULAR, DISK_EXECUTABLE):
        if mode in (tree_id.SYMLINK, tree_id.GITLINK):
            msg = f"{name} changed type while it was captured"
            raise NoTreeError(msg)
        if mode not in (tree_id.REGULAR, tree_id.EXECUTABLE):
            # Untracked or conflicted (git gave no mode): the executable bit, where it counts.
            executable = state == DISK_EXECUTABLE and helpers.trusts_file_mode()
            mode = tree_id.EXECUTABLE if executable else tree_id.REGULAR
        plan.hash.append((path, mode))
        if index_blob is not None and key in seen.carriage:
            plan.index_blobs[path] = index_blob
    else:
        msg = f"{name} could not be read as a file, a symlink or a repository (a FIFO, a "
        msg += "socket, or no permission?)"
        raise NoTreeError(msg)


def _hidden(plan: _Plan, seen: Seen, helpers: Helpers, path: bytes, parts: list[bytes]) -> None:
    """An assume-unchanged or skip-worktree entry (`tag mode blob` from ls-files): disk counts."""
    tag, mode_index, blob_index = parts[0], parts[1], parts[2]
    if _is_attributes(path) and seen.disk.get(path) not in (DISK_REGULAR, DISK_EXECUTABLE):
        _attributes_from_index(path)
    if seen.disk.get(path) == DISK_MISSING:
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
    raise NoTreeError(msg)


def _safer_crlf(plan: _Plan, helpers: Helpers) -> None:
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
            raise NoTreeError(msg)
