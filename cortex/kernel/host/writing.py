"""Reading and writing a host's configuration file: never through a symlink, never torn.

A file is read only if it is a regular file (a symlink is refused: replacing it would cut the
link, and writing through it would edit a file elsewhere), bounded by HOST_CONFIG_MAX. A write
makes a one-time backup of the original, then replaces the file atomically with its mode kept,
and only if the file is still what was read (a host that saves its own file meanwhile wins).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from cortex.cases.bounds import HOST_CONFIG_MAX
from cortex.cases.errors import InvalidInputError, RefusedError
from cortex.cases.fsio import fsync_dir, read_bounded, write_atomic, write_once

if TYPE_CHECKING:
    from cortex.kernel.host.setup import Location

BACKUP_SUFFIX = ".cortex-backup"


def read_target(where: Location) -> bytes | None:
    """The file's bytes, or None if it does not exist; never through a symlink."""
    if not directory_ready(where):
        return None
    return current(where.path)


def directory_ready(where: Location) -> bool:
    """Whether the file's directory exists; refuses a symlink where Cortex owns the directory."""
    directory = os.path.dirname(where.path)
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        if not where.own_dir:
            raise InvalidInputError(f"{directory} does not exist") from None
        return False
    if where.own_dir and stat.S_ISLNK(mode):
        msg = (
            f"{directory} is a symlink; refusing to follow it (it could send the write "
            "anywhere). Point CODEX_HOME at the real directory, or replace the link"
        )
        raise RefusedError(msg)
    if not os.path.isdir(directory):
        raise InvalidInputError(f"{directory} is not a directory")
    return True


def current(path: str) -> bytes | None:
    """The file's bytes, or None if it does not exist; refused if it is a symlink or not a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        msg = (
            f"{path} is a symlink; refusing to follow it (replacing it would cut the link, and "
            "writing through it would edit a file elsewhere). Edit the file it points to by hand"
        )
        raise RefusedError(msg)
    if not stat.S_ISREG(mode):
        raise InvalidInputError(f"{path} is not a regular file")
    return read_bounded(path, HOST_CONFIG_MAX)


def read_for_check(path: str) -> bytes | None:
    """For `doctor`: the file's bytes following symlinks (reading is harmless), None if absent."""
    real = os.path.realpath(path)
    if not os.path.lexists(real):
        return None
    return read_bounded(real, HOST_CONFIG_MAX)


def write_file(where: Location, original: bytes | None, new: bytes, backup: str | None) -> bool:
    """Back up, then replace atomically; False if the file changed since it was read.

    Empty `new` removes the file (`--remove` took out all that was in it).
    """
    if not new:
        return unlink(where, original, backup)
    if not directory_ready(where):
        make_dir(where)
    mode = os.lstat(where.path).st_mode & 0o777 if original is not None else where.new_file_mode
    if backup is not None and original is not None:
        if current(where.path) != original:
            return False
        write_backup(backup, original, mode)

    def unchanged() -> bool:
        return current(where.path) == original

    # The mode is set before the rename: the file is never visible with other permissions.
    return write_atomic(where.path, new, mode=mode, unchanged=unchanged)


def make_dir(where: Location) -> None:
    """Create the file's directory: private in a user's home, like any other in a repository."""
    directory = os.path.dirname(where.path)
    parent = os.path.dirname(directory)
    if where.scope == "user":
        from cortex.cases.fsio import make_private_dirs

        make_private_dirs(directory)  # the user's own configuration directory
        return
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o755)  # a project directory, like any other in the repository
    directory_ready(where)  # what stands there now must still be a real directory
    fsync_dir(parent)


def write_backup(path: str, data: bytes, mode: int) -> None:
    """The original bytes, never group-readable, and whole or absent.

    A later run trusts any backup it finds, so one torn by a crash must never appear under the
    backup's name; a concurrent run that backed up the same file a moment earlier wins.
    """
    write_once(path, data, mode=mode & 0o600)


def unlink(where: Location, original: bytes | None, backup: str | None) -> bool:
    """Remove a file setup emptied, after a backup; False if it changed since it was read."""
    if original is None or current(where.path) != original:
        return original is None
    if backup is not None:
        write_backup(backup, original, os.lstat(where.path).st_mode & 0o777)
    os.unlink(where.path)
    directory = os.path.dirname(where.path)
    fsync_dir(directory)
    if where.own_dir:
        # The host's own directory (`.claude`, `.codex`) setup may have made: gone if empty.
        with contextlib.suppress(OSError):
            os.rmdir(directory)
    return True
