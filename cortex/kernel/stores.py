"""Where stores outside the state root are: a small registry, so readers can find every case.

A repository can keep its cases in a directory of its own (`cases_dir`). Readers that look
across repositories (`case sessions`, `case overview`, `cortex studio`) and readers that find a
case from any directory (`status`, `show`, `timeline`, ...) only know the state root; so the
first `case open` into such a store records its absolute path in
`<state root>/stores/<sha256 of the path, 16 hex>`, one path per file, written once.

Entries are hints, never trusted for writing: a reader skips an entry that does not name an
absolute path to a real directory, and writes still go only to the current workspace's store.
"""

from __future__ import annotations

import os
import stat

import msgspec

from cortex.cases.fsio import fsync_dir, make_private_dirs, write_new_file

REGISTRY_DIR = "stores"
_ENTRY_MAX = 4096
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def register(state_root: str, cases_root: str) -> None:
    """Record `cases_root` (once; a store already registered costs one stat)."""
    from cortex.cases.digest import sha256_hex

    path = os.path.realpath(cases_root)
    directory = os.path.join(state_root, REGISTRY_DIR)
    entry = os.path.join(directory, sha256_hex(path.encode("utf-8", "surrogateescape"))[:16])
    if os.path.lexists(entry):
        return
    make_private_dirs(directory)
    try:
        write_new_file(entry, path.encode("utf-8", "surrogateescape") + b"\n")
    except FileExistsError:
        return  # registered by a concurrent writer
    fsync_dir(directory)


def registered(state_root: str) -> list[str]:
    """The registered store directories that still exist, sorted (no writes, no errors)."""
    directory = os.path.join(state_root, REGISTRY_DIR)
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[str] = []
    for name in names:
        path = _read_entry(os.path.join(directory, name))
        if path is not None and path not in found:
            found.append(path)
    return found


def _read_entry(file: str) -> str | None:
    try:
        fd = os.open(
            file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _ENTRY_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > _ENTRY_MAX:
        return None
    path = data.decode("utf-8", "surrogateescape").rstrip("\n")
    if not os.path.isabs(path) or "\n" in path or "\0" in path:
        return None
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    return path


ADOPTED_FILE = ".adopted.json"
"""In a store: the workspace roots whose cases it adopted after a move, and where they went."""


class Move(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One workspace root that moved: its cases count as opened at `to` (`@latest`)."""

    from_root: str = msgspec.field(name="from")
    to_root: str = msgspec.field(name="to")
    at: str


class Adopted(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`.adopted.json`."""

    moves: list[Move] = msgspec.field(default_factory=list)


def adopted(cases_root: str) -> Adopted:
    """What this store recorded of moved workspaces (empty when nothing was adopted)."""
    from cortex.cases.bounds import JOURNAL_MAX
    from cortex.cases.errors import IntegrityError
    from cortex.cases.fsio import read_bounded

    try:
        data = read_bounded(os.path.join(cases_root, ADOPTED_FILE), JOURNAL_MAX)
    except (FileNotFoundError, NotADirectoryError, IntegrityError):
        return Adopted()
    try:
        return msgspec.json.decode(data, type=Adopted)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Adopted()  # a hint, like the registry: a damaged one adopts nothing


def adopted_roots(cases_root: str, workspace_root: str) -> list[str]:
    """The earlier roots of the workspace at `workspace_root`, as this store recorded them."""
    if not os.path.lexists(os.path.join(cases_root, ADOPTED_FILE)):
        return []
    return [move.from_root for move in adopted(cases_root).moves if move.to_root == workspace_root]


def record_adopted(cases_root: str, moves: list[Move]) -> None:
    """Add `moves` to the store's record (written whole, atomically)."""
    from cortex.cases.fsio import write_atomic

    known = adopted(cases_root)
    seen = {(m.from_root, m.to_root) for m in known.moves}
    merged = known.moves + [m for m in moves if (m.from_root, m.to_root) not in seen]
    make_private_dirs(cases_root)
    write_atomic(os.path.join(cases_root, ADOPTED_FILE), msgspec.json.encode(Adopted(moves=merged)))
