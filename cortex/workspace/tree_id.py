"""A git tree id from a base tree and a list of changes (docs/design/verification.md §1.1).

Pure: no process, no file system. The caller reads tree objects (`read`, one call per level of
the changed paths, so a `git cat-file --batch` answers each level in one round trip) and says
what each changed path now holds; `build` rebuilds the trees along those paths only, in git's
byte format, and returns the root's id. What `git add -A && git write-tree` would give is then
`build(HEAD's tree, <every path git status lists, as git add would store it>)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cortex.cases.digest import _sha256

_sha1: Callable[[bytes], Any]
try:  # CPython's builtin, as for sha256 (cortex.cases.digest): hashlib loads OpenSSL
    from _sha1 import sha1 as _sha1  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha1 as _sha1

Entry = tuple[bytes, bytes]
"""A tree entry: its mode as git writes it (`100644`, `40000`, ...) and its raw object id."""
Reader = Callable[[list[bytes]], Mapping[bytes, bytes]]
"""Raw tree ids -> the trees' bodies; an id left out of the answer is a missing object."""

TREE = b"40000"
SYMLINK = b"120000"
GITLINK = b"160000"
REGULAR = b"100644"
EXECUTABLE = b"100755"
MAX_DEPTH = 256
"""Paths nested deeper than this many directories get no tree id (the build recurses)."""

_WIDTHS = {"sha1": 20, "sha256": 32}
_CANONICAL = {
    TREE: TREE,
    SYMLINK: SYMLINK,
    GITLINK: GITLINK,
    REGULAR: REGULAR,
    EXECUTABLE: EXECUTABLE,
}


class TreeError(ValueError):
    """The changes cannot be applied exactly (a missing object, a file and a dir at one name)."""


def object_id(kind: bytes, body: bytes, algorithm: str = "sha1") -> bytes:
    """The raw id git gives an object: the hash of `<kind> <size>`, a NUL, then `<body>`."""
    digest = (_sha256 if algorithm == "sha256" else _sha1)(
        kind + b" " + str(len(body)).encode() + b"\0"
    )
    digest.update(body)
    return bytes(digest.digest())


def empty_tree(algorithm: str = "sha1") -> bytes:
    """The id of the tree with no entries (what an empty root is)."""
    return object_id(b"tree", b"", algorithm)


def canonical(mode: bytes) -> bytes:
    """The mode git's index writes for `mode` (old tools wrote 100664 or 040000)."""
    known = _CANONICAL.get(mode)
    if known is not None:
        return known
    value = int(mode, 8)
    kind = value & 0o170000
    if kind == 0o040000:
        return TREE
    if kind == 0o100000:
        return EXECUTABLE if value & 0o100 else REGULAR
    return mode


def parse_tree(body: bytes, width: int) -> dict[bytes, Entry]:
    """The entries of a tree object's body: name -> (mode, raw id); `width` is the id's size."""
    entries: dict[bytes, Entry] = {}
    position = 0
    end = len(body)
    while position < end:
        space = body.find(b" ", position)
        nul = body.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 1 + width > end:
            msg = "a tree object is truncated or malformed"
            raise TreeError(msg)
        name = body[space + 1 : nul]
        entries[name] = (body[position:space], body[nul + 1 : nul + 1 + width])
        position = nul + 1 + width
    return entries


def _order(item: tuple[bytes, Entry]) -> bytes:
    # git compares names as if a tree's name ended in "/" (so "a.b" < tree "a" < "a0").
    name, (mode, _oid) = item
    return name + b"/" if canonical(mode) == TREE else name


def serialize_tree(entries: Mapping[bytes, Entry]) -> bytes:
    """A tree object's body for `entries`, in git's order and with git's mode strings."""
    return b"".join(
        canonical(mode) + b" " + name + b"\0" + oid
        for name, (mode, oid) in sorted(entries.items(), key=_order)
    )


class _Node:
    """One directory or file name on a changed path."""

    __slots__ = ("additions", "change", "children", "has_change")

    def __init__(self) -> None:
        self.children: dict[bytes, _Node] = {}
        self.change: Entry | None = None
        self.has_change = False
        self.additions = False
        """Whether some path strictly below this one gets an entry (not only deletions)."""


def _trie(changes: Mapping[bytes, Entry | None]) -> _Node:
    root = _Node()
    for path, entry in changes.items():
        parts = path.split(b"/")
        if len(parts) > MAX_DEPTH + 1:
            msg = f"a path is nested more than {MAX_DEPTH} directories deep"
            raise TreeError(msg)
        if any(part in (b"", b".", b"..") or b"\0" in part for part in parts):
            msg = f"not a path git can store: {path[:80]!r}"
            raise TreeError(msg)
        node = root
        for part in parts:
            if entry is not None:
                node.additions = True
            node = node.children.setdefault(part, _Node())
        node.has_change = True
        node.change = entry
    return root


def _is_tree(entry: Entry | None) -> bool:
    return entry is not None and canonical(entry[0]) == TREE


def _needs_read(node: _Node, base: Entry | None) -> bool:
    """Whether building `node` needs its base tree's entries (the same test `_build` makes)."""
    explicit_file = node.has_change and node.change is not None
    return bool(node.children) and _is_tree(base) and not explicit_file


def build(
    base: bytes | None,
    changes: Mapping[bytes, Entry | None],
    read: Reader,
    *,
    algorithm: str = "sha1",
) -> bytes:
    """The root tree id after applying `changes` to the tree `base` (None: the empty tree).

    `changes` maps a `/`-separated path to the entry it now holds, or to None when no file,
    symlink or gitlink is there any more. Directories are implied: one exists while something
    is below it, so a directory whose last entry goes is dropped, and a deletion never removes
    a directory by itself (git lists each of its files). Trees off the changed paths are never
    read. Raises TreeError when the changes cannot be applied exactly.
    """
    width = _WIDTHS[algorithm]
    root = _trie(changes)
    if not root.children:
        return base if base is not None else empty_tree(algorithm)
    contents: dict[int, dict[bytes, Entry]] = {}
    level: list[tuple[_Node, bytes]] = []
    if base is not None:
        level = [(root, base)]
    while level:
        wanted = list(dict.fromkeys(oid for _, oid in level))
        answered = read(wanted)
        following: list[tuple[_Node, bytes]] = []
        for node, oid in level:
            body = answered.get(oid)
            if body is None:
                msg = f"the tree {oid.hex()} could not be read"
                raise TreeError(msg)
            entries = parse_tree(body, width)
            contents[id(node)] = entries
            for name, child in node.children.items():
                entry = entries.get(name)
                if _needs_read(child, entry) and entry is not None:
                    following.append((child, entry[1]))
        level = following
    built = _build(root, (TREE, base) if base is not None else None, contents, algorithm)
    return built[1] if built is not None else empty_tree(algorithm)


def _build(
    node: _Node, base: Entry | None, contents: dict[int, dict[bytes, Entry]], algorithm: str
) -> Entry | None:
    if node.has_change and node.change is not None:
        # A file (or symlink, or gitlink) is here now; below it there can only be deletions.
        if node.additions:
            msg = "a file and a directory at one name"
            raise TreeError(msg)
        return node.change
    if not node.children:
        # A deletion here removes a file, never a directory (git lists a directory's files).
        return base if _is_tree(base) else None
    if _is_tree(base):
        entries = dict(contents[id(node)])
    elif base is not None and not node.has_change:
        # A file that stays, with something listed below it.
        if node.additions:
            msg = "a file and a directory at one name"
            raise TreeError(msg)
        return base
    else:
        entries = {}
    for name, child in node.children.items():
        entry = _build(child, entries.get(name), contents, algorithm)
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = entry
    if not entries:
        return None
    return (TREE, object_id(b"tree", serialize_tree(entries), algorithm))
