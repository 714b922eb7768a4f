"""File-system primitives with the durability rules of docs/design/storage.md.

Everything here works on `str` paths with `os` calls: `pathlib` and `tempfile` cost several
milliseconds to import, more than the I/O of an entire append (docs/benchmarks.md).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

from cortex.cases import _crash
from cortex.cases.errors import IntegrityError

try:
    import fcntl
except ImportError:  # pragma: no cover - only on platforms without fcntl (Windows)
    _FLOCK = False
else:
    _FLOCK = True

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

DIR_MODE = 0o700
FILE_MODE = 0o600
TEMP_PREFIX = ".tmp-"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# O_NONBLOCK: a FIFO planted where a file belongs must not hang a reader in open().
READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
# Read-write: where flock is emulated with POSIX locks (NFS), an exclusive lock needs it.
_PROBE_FLAGS = os.O_RDWR | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_TEMP_ATTEMPTS = 3


class UnsyncedReplaceError(OSError):
    """The rename happened (readers see the new file) but the directory fsync failed."""


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, looping over short writes."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(path: str) -> None:
    """Make a directory's entries (creations, renames, removals) durable."""
    fd = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private_dirs(path: str) -> None:
    """Create `path` and any missing parents with mode 0700; existing ones are left as they are."""
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
    if missing:
        fsync_dir(os.path.dirname(missing[-1]))


def temp_name(directory: str, final_name: str) -> str:
    """A unique temp path in `directory`, recognisable by recovery as stray debris."""
    return os.path.join(directory, f"{TEMP_PREFIX}{final_name}-{os.getpid()}-{os.urandom(4).hex()}")


def write_new_file(path: str, data: bytes, *, sync: bool = True, mode: int | None = None) -> None:
    """Create `path` exclusively (never through a symlink), write it and fsync it.

    `mode`, if given, is set exactly (whatever the umask) before any byte is written.
    """
    fd = os.open(path, CREATE_FLAGS, FILE_MODE)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(
    path: str,
    data: bytes,
    *,
    mode: int | None = None,
    unchanged: Callable[[], bool] | None = None,
) -> bool:
    """Replace `path` with `data` so that readers see the old or the new file, never a mix.

    Temp file in the same directory, fsync, rename over the target, fsync the directory: without
    the first fsync a crash can leave a zero-length file under the final name (the ext4
    delayed-allocation case); without the last, the rename itself can be lost.

    `mode` is set exactly on the temp file, so the file is never visible under its name with
    other permissions; without it the file is private (0600, less what the umask removes).
    `unchanged`, called after the temp file is synced and just before the rename, says whether
    the target is still what the caller read; if not, nothing is replaced and the result is
    False (the caller reads again and retries). Otherwise the result is True.
    """
    directory = os.path.dirname(path)
    tmp, fd = _create_temp(directory, os.path.basename(path))
    try:
        # The descriptor stays open until the temp name is gone: its lock is what tells
        # remove_stale_temps that this temp file has a live writer.
        try:
            _crash.point("snapshot.tmp_created")
            write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            _crash.point("snapshot.tmp_written")
            os.fsync(fd)
            _crash.point("snapshot.tmp_synced")
            if unchanged is not None and not unchanged():
                _unlink_quietly(tmp)
                return False
            os.replace(tmp, path)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _crash.point("snapshot.replaced")
    try:
        fsync_dir(directory)
    except OSError as exc:
        # Past the rename there is no undoing: say precisely what is uncertain.
        raise UnsyncedReplaceError(exc.errno, f"{directory}: {exc.strerror}") from exc
    _crash.point("snapshot.dir_synced")
    return True


_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}
"""How link(2) fails on file systems without hard links (some FUSE and network mounts)."""


def write_once(path: str, data: bytes, *, mode: int) -> bool:
    """Create `path` holding `data`, whole or not at all, unless the name is taken already.

    For a file a later run trusts as it finds it (a backup): one torn by a crash must never
    appear under its name, and the first one written is the one kept. Returns whether this
    call's file is the one now there.
    """
    directory = os.path.dirname(path)
    tmp, fd = _create_temp(directory, os.path.basename(path))
    ours = True
    try:
        write_all(fd, data)
        os.fchmod(fd, mode)
        os.fsync(fd)
        try:
            # A hard link, unlike a rename, fails if the name exists (even as a symlink): the
            # first file is the one kept, and a planted link is never written through.
            os.link(tmp, path)
        except FileExistsError:
            ours = False  # a concurrent writer made it a moment earlier: theirs stands
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            # No hard links here: rename instead. A concurrent writer's file could be replaced
            # in between, but only by another whole one; a link is replaced, not followed.
            ours = not os.path.lexists(path)
            if ours:
                os.replace(tmp, path)
    finally:
        _unlink_quietly(tmp)
        os.close(fd)
    fsync_dir(directory)
    return ours


def splice(path: str, offset: int, data: bytes, *, temp_dir: str) -> None:
    """Replace `len(data)` bytes of `path` at `offset`, so readers see the old or the new file.

    The file is copied to a temp file in `temp_dir` (the case directory, where recovery sweeps
    temps; the same file system as `path`) with the range replaced, synced, renamed over `path`,
    and the directory synced. A reader holding the old file reads it whole; nothing is written
    in place, so no reader ever sees half of the change. It costs a copy of the file: a forget
    is rare, and keeping every offset means no reader needs to know one happened.
    """
    tmp, out = _create_temp(temp_dir, os.path.basename(path))
    try:
        source = open_for_read(path)
        try:
            check_single_link(source, path)
            size = os.fstat(source).st_size
            if offset + len(data) > size:
                msg = f"{path} is {size} bytes; cannot replace bytes {offset}-{offset + len(data)}"
                raise IntegrityError(msg, path=path)
            _copy_range(source, out, 0, offset)
            write_all(out, data)
            _copy_range(source, out, offset + len(data), size)
        finally:
            os.close(source)
        os.fsync(out)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    finally:
        os.close(out)
    fsync_dir(os.path.dirname(path))


def _copy_range(source: int, out: int, start: int, end: int) -> None:
    position = start
    while position < end:
        chunk = os.pread(source, min(1 << 20, end - position), position)
        if not chunk:
            msg = "the file shrank while it was copied"
            raise IntegrityError(msg)
        write_all(out, chunk)
        position += len(chunk)


def _create_temp(directory: str, final_name: str) -> tuple[str, int]:
    """A new temp file for `final_name` and its descriptor, which holds the file's lock.

    The lock lasts as long as the descriptor, so as long as the writer lives: it is how
    remove_stale_temps tells a live writer's temp from a dead one's, in any PID namespace and on
    any machine sharing the file system, where a pid means nothing. Between the creation and the
    lock, a cleanup can take the new file for a dead writer's and remove it; then it is made
    again under a new name.
    """
    for _ in range(_TEMP_ATTEMPTS):
        tmp = temp_name(directory, final_name)
        fd = os.open(tmp, CREATE_FLAGS, FILE_MODE)
        try:
            held = try_lock(fd)
            if held is None or (held and _still_named(tmp, fd)):
                return tmp, fd
            if not held:
                _unlink_quietly(tmp)  # a cleanup holds it and is removing it
        except BaseException:
            _unlink_quietly(tmp)
            os.close(fd)
            raise
        os.close(fd)
    msg = f"{directory}: each temp file was removed by a cleanup as soon as it was created"
    raise OSError(errno.EBUSY, msg)


def try_lock(fd: int) -> bool | None:
    """Take `fd`'s exclusive flock without waiting; released when the descriptor is closed.

    True if taken, False if someone holds it, None where the file system (or the platform) has
    no such lock, so that nobody can hold it either.
    """
    if not _FLOCK:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None  # ENOLCK, EOPNOTSUPP, ...: some FUSE and network mounts
    return True


def _still_named(path: str, fd: int) -> bool:
    """Whether `path` is still the file open as `fd` (not removed, not replaced)."""
    try:
        named = os.lstat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def remove_stale_temps(directory: str, final_names: Collection[str]) -> int:
    """Remove the temp files that dead writers left for `final_names`; never a live writer's.

    A writer holds its temp file's lock for as long as the file exists (see `_create_temp`),
    so a temp whose lock can be taken without waiting has no writer left. One whose lock cannot
    be tested (no flock here, another user's file) is left. Returns how many were removed; the
    directory is not synced (a removal lost to a crash is only done again by the next call).
    """
    import re  # only for this clean-up, never on the per-call path

    pattern = re.compile(re.escape(TEMP_PREFIX) + r"(.+)-[0-9]+-[0-9a-f]{8}")  # temp_name's
    try:
        entries = os.listdir(directory)
    except OSError:
        return 0  # tidying up is not worth failing over; the caller reports real trouble
    removed = 0
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match is not None and match.group(1) in final_names:
            removed += _remove_if_abandoned(os.path.join(directory, entry))
    return removed


def _remove_if_abandoned(path: str) -> bool:
    try:
        kind = os.lstat(path).st_mode
    except OSError:
        return False
    if stat.S_ISDIR(kind):
        return False  # not something a writer makes; not ours to remove
    if not stat.S_ISREG(kind):
        # A writer's temp is a regular file: a link (or FIFO) under such a name has no writer.
        return _unlink_if_there(path)
    try:
        fd = os.open(path, _PROBE_FLAGS)
    except PermissionError:
        try:
            fd = os.open(path, READ_FLAGS)  # a read-only temp (a read-only file's backup)
        except OSError:
            return False
    except OSError:
        return False
    try:
        # Unlinked while the lock is held: a writer that locks this file later finds its name
        # gone (see `_create_temp`); and only if the name is still the file that was locked.
        return try_lock(fd) is True and _still_named(path, fd) and _unlink_if_there(path)
    finally:
        os.close(fd)


def _unlink_if_there(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _unlink_quietly(path: str) -> None:
    try:  # noqa: SIM105 - contextlib costs 0.5 ms to import on the per-call path
        os.unlink(path)
    except OSError:
        pass


def open_for_read(path: str) -> int:
    """Open a regular file for reading without following a symlink at the last component."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IntegrityError(f"{path} is a symlink; refusing to follow it", path=path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IntegrityError(f"{path} is not a regular file", path=path)
    return fd


def check_single_link(fd: int, path: str) -> None:
    """Refuse to write through a file that is hard-linked elsewhere (it would change both)."""
    if os.fstat(fd).st_nlink > 1:
        msg = f"{path} has other hard links; refusing to write through it"
        raise IntegrityError(msg, path=path)


def check_real_dir(path: str) -> None:
    """Refuse a directory that is a symlink (or not a directory) before writing into it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise IntegrityError(f"{path} is not a real directory (a symlink?); refusing it", path=path)


def read_bounded(path: str, limit: int) -> bytes:
    """Read a whole regular file, refusing (without reading it) one larger than `limit`."""
    fd = open_for_read(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise IntegrityError(f"{path} is {size} bytes, over the {limit}-byte limit", path=path)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise IntegrityError(f"{path} grew past the {limit}-byte limit", path=path)
        return data
    finally:
        os.close(fd)


def unlink_if_present(path: str) -> None:
    """Remove the file at `path`; one already gone is fine."""
    try:  # noqa: SIM105 - contextlib costs 0.5 ms to import on the per-call path
        os.unlink(path)
    except FileNotFoundError:
        pass


def holds(path: str, data: bytes) -> bool:
    """Whether the file at `path` is exactly `data` (read back when a commit point errs)."""
    try:
        return read_bounded(path, len(data)) == data
    except (OSError, IntegrityError):
        return False
