"""Moving whole case directories: into and out of the archive, away for removal, across stores.

Each move is one `rename` of a case directory under its case lock, so a case is always in
exactly one place, whole (docs/design/storage.md, "Archive, remove, adopt"). Readers find a case
by the store it is in; a writer that was waiting for the lock finds no case at the old path
afterwards and writes nothing.
"""

from __future__ import annotations

import os
import stat

import msgspec

from cortex.cases import _crash
from cortex.cases.bounds import JOURNAL_MAX
from cortex.cases.errors import IntegrityError, NotFoundError
from cortex.cases.fsio import check_real_dir, fsync_dir, make_private_dirs, read_bounded
from cortex.cases.ids import is_id
from cortex.cases.layout import (
    ARCHIVE_DIR,
    KEYS_DIR,
    LOCK_FILE,
    REMOVING_PREFIX,
    STORE_LOCK_FILE,
    case_dir,
)
from cortex.cases.lock import FileLock
from cortex.cases.records import KeyRecord, LockInfo, decode

_IGNORE_ALL = b"*\n"


def archive_root(root: str) -> str:
    """The archive of the store at `root` (itself a store directory of archived cases)."""
    return os.path.join(root, ARCHIVE_DIR)


def is_archive(root: str) -> bool:
    """Whether `root` is a store's archive."""
    return os.path.basename(root.rstrip(os.sep)) == ARCHIVE_DIR


def _case_lock(path: str, task_id: str, timeout: float, info: LockInfo) -> FileLock:
    return FileLock(
        os.path.join(path, LOCK_FILE), timeout=timeout, info=info, what=f"case {task_id}"
    )


def _existing_case(root: str, task_id: str) -> str:
    path = case_dir(root, task_id)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise NotFoundError(f"no case {task_id} in {root}") from None
    if not stat.S_ISDIR(mode):
        raise IntegrityError(f"{path} is not a real directory (a symlink?)", path=path)
    return path


def move(
    source_root: str, task_id: str, target_root: str, *, timeout: float, info: LockInfo
) -> str:
    """Rename a case directory from one store directory to another; its new path.

    The target store directory is created (private) when missing; an archive gets a
    `.gitignore` of `*`, so a store kept inside a repository never shows it to git.
    """
    check_real_dir(source_root)  # a store's archive planted as a link is not followed
    source = _existing_case(source_root, task_id)
    target = case_dir(target_root, task_id)
    if not os.path.isdir(target_root):
        make_private_dirs(target_root)
    check_real_dir(target_root)
    if is_archive(target_root):
        _ignore_everything(target_root)
    if os.path.lexists(target):
        raise IntegrityError(f"{target} already exists; refusing to replace it", path=target)
    try:
        lock = _case_lock(source, task_id, timeout, info)
        lock.acquire()
    except FileNotFoundError:
        raise NotFoundError(f"case {task_id} was moved or removed meanwhile") from None
    try:
        if not os.path.isdir(source):
            raise NotFoundError(f"case {task_id} was moved or removed meanwhile")
        os.rename(source, target)
        _crash.point("archive.moved")
        fsync_dir(source_root)
        if os.path.realpath(target_root) != os.path.realpath(source_root):
            fsync_dir(target_root)
    finally:
        lock.release()
    return target


def _ignore_everything(directory: str) -> None:
    path = os.path.join(directory, ".gitignore")
    if os.path.lexists(path):
        return
    from cortex.cases.fsio import write_new_file

    try:
        write_new_file(path, _IGNORE_ALL, mode=0o644)
    except FileExistsError:
        return
    fsync_dir(directory)


def remove(root: str, task_id: str, *, archived: bool, timeout: float, info: LockInfo) -> None:
    """Remove a case of the store at `root` (from its archive if `archived`), for good.

    Under the store lock, so no `case open` claims an idempotency key meanwhile: the case
    directory is renamed away (from then on no reader finds it), the key files naming it are
    removed, then the tree. A crash leaves a `.removing-` directory that `finish_removals`
    completes.
    """
    source_root = archive_root(root) if archived else root
    store_lock = os.path.join(root, STORE_LOCK_FILE)
    with FileLock(store_lock, timeout=timeout, info=info, what="the case store"):
        source = _existing_case(source_root, task_id)
        away = os.path.join(root, REMOVING_PREFIX + task_id)
        if os.path.lexists(away):
            _finish(root, task_id)
        lock = _case_lock(source, task_id, timeout, info)
        lock.acquire()
        try:
            os.rename(source, away)
            fsync_dir(root)
            if archived:
                fsync_dir(source_root)
        finally:
            lock.release()
        _crash.point("remove.renamed")
        _finish(root, task_id)


def finish_removals(root: str) -> list[str]:
    """Complete removals a crash interrupted (the caller holds the store lock); their ids."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    done = []
    for name in sorted(names):
        task_id = name[len(REMOVING_PREFIX) :]
        if name.startswith(REMOVING_PREFIX) and is_id(task_id, "task"):
            _finish(root, task_id)
            done.append(task_id)
    return done


def _finish(root: str, task_id: str) -> None:
    """Remove the key files naming `task_id`, then its `.removing-` tree."""
    import shutil

    keys = os.path.join(root, KEYS_DIR)
    removed = False
    try:
        names = os.listdir(keys)
    except FileNotFoundError:
        names = []
    for name in names:
        path = os.path.join(keys, name)
        try:
            record = decode(read_bounded(path, JOURNAL_MAX), KeyRecord)
        except (OSError, IntegrityError, msgspec.DecodeError, msgspec.ValidationError):
            continue  # not a key file of ours: left for a person
        if record.task_id == task_id:
            os.unlink(path)
            removed = True
    if removed:
        fsync_dir(keys)
    _crash.point("remove.keys")
    away = os.path.join(root, REMOVING_PREFIX + task_id)
    if os.path.islink(away):
        os.unlink(away)
    elif os.path.lexists(away):
        shutil.rmtree(away)
    fsync_dir(root)


def tree_bytes(path: str) -> int:
    """The bytes of every file under `path` (symlinks not followed); 0 when it is missing."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except FileNotFoundError:
                continue
    return total
