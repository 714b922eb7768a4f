"""A file-change watcher for tests: Linux inotify through ctypes, over a whole directory tree.

Comparing snapshots before and after misses a file written and restored, or a temp file created
and removed; inotify reports every write, creation, deletion, rename, attribute change and every
close of a file opened for writing, as it happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path
from types import TracebackType
from typing import Self

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_NONBLOCK = 0o4000
WRITES = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
NAMES = {
    IN_MODIFY: "modify",
    IN_ATTRIB: "attrib",
    IN_CLOSE_WRITE: "close_write",
    IN_MOVED_FROM: "moved_from",
    IN_MOVED_TO: "moved_to",
    IN_CREATE: "create",
    IN_DELETE: "delete",
    IN_DELETE_SELF: "delete_self",
    IN_MOVE_SELF: "move_self",
}
_EVENT = struct.Struct("iIII")


class Watcher:
    """Watch every directory under the given roots for writes; `events()` drains what happened."""

    def __init__(self, *roots: Path) -> None:
        self.roots = roots
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = -1
        self._dirs: dict[int, Path] = {}

    def __enter__(self) -> Self:
        self._fd = self._libc.inotify_init1(IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        for root in self.roots:
            for directory in [root, *(p for p in root.rglob("*") if p.is_dir())]:
                wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), WRITES)
                if wd < 0:
                    raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
                self._dirs[wd] = directory
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        os.close(self._fd)

    def events(self) -> list[str]:
        """Every write event since the last call, as 'kind path'."""
        found: list[str] = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + length].rstrip(b"\0").decode(errors="replace")
                offset += length
                kinds = [label for bit, label in NAMES.items() if mask & bit]
                where = self._dirs.get(wd, Path("?")) / name
                found.extend(f"{kind} {where}" for kind in kinds)
