"""Capturing a directory as a tree artifact (`evidence add --raw-dir`), within its bounds.

The walk never follows a symlink, never opens anything but a regular file (and that without
following a link, and without blocking on a FIFO swapped in meanwhile), looks at no more than
TREE_WALK_MAX entries in sorted order, and keeps at most TREE_FILES_MAX files of at most
TREE_BYTES_MAX together. What it leaves out is listed with the reason (docs/design/artifacts.md).
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from cortex.cases.bounds import (
    RAW_BLOB_MAX,
    TREE_BYTES_MAX,
    TREE_DEPTH_MAX,
    TREE_FILES_MAX,
    TREE_WALK_MAX,
)
from cortex.cases.errors import ArgumentError
from cortex.cases.tree import path_problem

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = _READ_FLAGS | getattr(os, "O_DIRECTORY", 0)


class Captured(NamedTuple):
    """What a capture kept (relative path, bytes) and what it left out (path, reason)."""

    members: list[tuple[str, bytes]]
    skipped: list[tuple[str, str]]
    walked: int
    truncated: bool


def capture(directory: str) -> Captured:
    """Walk `directory` within the bounds; refused (exit 4) if it is not a real directory.

    Every step opens relative to the directory descriptor already held, never by path again:
    a directory swapped for a symlink after it was listed cannot lead the walk out of the tree.
    """
    try:
        info = os.lstat(directory)
    except OSError as exc:
        msg = f"{{raw_dir}} {directory!r} cannot be read ({exc.strerror})"
        raise ArgumentError(msg, "raw_dir") from None
    if stat.S_ISLNK(info.st_mode):
        msg = f"{{raw_dir}} {directory!r} is a symlink; give the directory itself"
        raise ArgumentError(msg, "raw_dir")
    if not stat.S_ISDIR(info.st_mode):
        raise ArgumentError(f"{{raw_dir}} {directory!r} is not a directory", "raw_dir")
    try:
        root = os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        # Swapped for a symlink (or removed) since the check above.
        msg = f"{{raw_dir}} {directory!r} cannot be opened as a directory ({exc.strerror})"
        raise ArgumentError(msg, "raw_dir") from None
    walk = _Walk()
    try:
        walk.directory(root, ())
    finally:
        os.close(root)
    return Captured(walk.members, walk.skipped, walk.walked, walk.truncated)


class _Walk:
    def __init__(self) -> None:
        self.members: list[tuple[str, bytes]] = []
        self.skipped: list[tuple[str, str]] = []
        self.walked = 0
        self.truncated = False
        self.total = 0
        self.at = -1  # the descriptor of the directory being walked

    def directory(self, fd: int, parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            self.skipped.append(("/".join(parts) or ".", f"cannot be listed ({exc.strerror})"))
            return
        outer, self.at = self.at, fd
        try:
            for entry in entries:
                if self.walked >= TREE_WALK_MAX:
                    self.truncated = True
                    return
                self.walked += 1
                self.entry(entry, (*parts, entry.name))
        finally:
            self.at = outer

    def entry(self, entry: os.DirEntry[str], parts: tuple[str, ...]) -> None:
        relative = "/".join(parts)
        problem = path_problem(relative)
        if problem is not None:
            # Shown escaped: the name itself may hold the control characters that refused it.
            self.skipped.append((ascii(relative)[1:-1], f"the name {problem}"))
            return
        if entry.is_symlink():
            self.skipped.append((relative, "a symlink (never followed)"))
        elif entry.is_dir(follow_symlinks=False):
            if len(parts) >= TREE_DEPTH_MAX:
                self.skipped.append((relative, f"deeper than {TREE_DEPTH_MAX} levels"))
                return
            try:
                sub = os.open(entry.name, _DIR_FLAGS, dir_fd=self.at)
            except OSError as exc:
                self.skipped.append((relative, f"cannot be listed ({exc.strerror})"))
                return
            try:
                self.directory(sub, parts)
            finally:
                os.close(sub)
        elif entry.is_file(follow_symlinks=False):
            self.file(entry.name, relative)
        else:
            self.skipped.append((relative, "not a regular file (never opened)"))

    def file(self, name: str, relative: str) -> None:
        if len(self.members) >= TREE_FILES_MAX:
            self.truncated = True
            self.skipped.append((relative, f"over the {TREE_FILES_MAX}-file limit"))
            return
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=self.at)
        except OSError as exc:
            self.skipped.append((relative, f"cannot be read ({exc.strerror})"))
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.skipped.append((relative, "not a regular file (swapped while walking)"))
                return
            if info.st_size > RAW_BLOB_MAX:
                self.skipped.append((relative, f"{info.st_size} bytes, over the file size limit"))
                return
            if info.st_size > TREE_BYTES_MAX - self.total:
                self.truncated = True
                self.skipped.append((relative, f"over the {TREE_BYTES_MAX}-byte total"))
                return
            data = _read(fd, info.st_size + 1)
        except OSError as exc:
            self.skipped.append((relative, f"cannot be read ({exc.strerror})"))
            return
        finally:
            os.close(fd)
        if len(data) != info.st_size:
            self.skipped.append((relative, "changed while it was read"))
            return
        self.total += len(data)
        self.members.append((relative, data))


def _read(fd: int, most: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < most:
        chunk = os.read(fd, min(1 << 20, most - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
