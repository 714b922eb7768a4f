"""A git tree id from a base tree and a list of changes (docs/design/verification.md §1.1).

Pure: no process, no file system. The caller reads tree objects (`read`, one call per level of
the changed paths, so a `git cat-file --batch` answers each level in one round trip) and says
what each changed path now holds; `build` rebuilds the trees along those paths only, in git's
byte format, and returns the root's id. What `git add -A && git write-tree` would give is then
`build(HEAD's tree, <every path git status lists, as git add would store it>)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import accumulate
from operator import add, itemgetter
from typing import Any

from cortex.cases.digest import sha256
from cortex.cases.redact import clip

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


_KNOWN = frozenset(_CANONICAL)
_first = itemgetter(0)
_second = itemgetter(1)
_ENTRY = {
    width: re.compile(rb"([0-7]+) ([^\0]+)\0(.{%d})" % width, re.DOTALL)
    for width in _WIDTHS.values()
}
"""One tree entry: mode, name, id. Matched back to back from the start of a well-formed tree,
so the segmentation is git's; `ParsedTree` checks that the matches cover the body exactly."""


class TreeError(ValueError):
    """The changes cannot be applied exactly (a missing object, a file and a dir at one name)."""


def object_id(kind: bytes, body: bytes, algorithm: str = "sha1") -> bytes:
    """The raw id git gives an object: the hash of `<kind> <size>`, a NUL, then `<body>`."""
    digest = (sha256 if algorithm == "sha256" else _sha1)(
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
    """The entries of a tree object's body, in its order: name -> (mode, raw id).

    `width` is the size of an id (20 for SHA-1, 32 for SHA-256).
    """
    return {name: (mode, oid) for mode, name, oid in ParsedTree(body, width).found}


class ParsedTree:
    """A tree read from git, kept as its bytes: rebuilt by splicing when only entries change.

    The root of a large repository holds thousands of entries and is on every changed path;
    replacing a few of them in the bytes costs far less than parsing and writing them all.
    """

    __slots__ = ("_offsets", "body", "canonical", "extra", "found", "index")

    def __init__(self, body: bytes, width: int) -> None:
        # Per-entry work stays in C (findall, map, zip): a tree on a changed path may hold
        # thousands of entries, and Python-level loops over them were most of the cost.
        found: list[tuple[bytes, bytes, bytes]] = _ENTRY[width].findall(body)
        modes = list(map(_first, found))
        names = list(map(_second, found))
        self.extra = 2 + width
        if sum(map(len, modes)) + sum(map(len, names)) + len(found) * self.extra != len(body):
            msg = "a tree object is truncated or malformed"
            raise TreeError(msg)
        self.body = body
        self.found = found
        self.index = dict(zip(names, range(len(found)), strict=True))
        self.canonical = set(modes) <= _KNOWN
        self._offsets: list[int] | None = None

    def get(self, name: bytes) -> Entry | None:
        """The entry called `name`, if the tree has one."""
        position = self.index.get(name)
        if position is None:
            return None
        mode, _, oid = self.found[position]
        return (mode, oid)

    def entries(self) -> dict[bytes, Entry]:
        """All entries, in the tree's order."""
        return {name: (mode, oid) for mode, name, oid in self.found}

    def splice(self, replaced: Mapping[int, bytes]) -> bytes:
        """The body with entry `i` replaced by `replaced[i]` (b"" removes it)."""
        if self._offsets is None:
            # Where entry i starts, less i * extra (the fixed part of each entry): C-level.
            sizes = map(add, map(len, map(_first, self.found)), map(len, map(_second, self.found)))
            self._offsets = list(accumulate(sizes, initial=0))
        offsets, extra = self._offsets, self.extra
        pieces = []
        after = 0
        for position in sorted(replaced):
            pieces.append(
                self.body[offsets[after] + after * extra : offsets[position] + position * extra]
            )
            pieces.append(replaced[position])
            after = position + 1
        pieces.append(self.body[offsets[after] + after * extra :])
        return b"".join(pieces)


def _order(item: tuple[bytes, Entry]) -> bytes:
    # git compares names as if a tree's name ended in "/" (so "a.b" < tree "a" < "a0").
    name, (mode, _oid) = item
    return name + b"/" if canonical(mode) == TREE else name


def serialize_tree(entries: Mapping[bytes, Entry]) -> bytes:
    """A tree object's body for `entries`, in git's order and with git's mode strings."""
    items = sorted(entries.items(), key=_order)
    known = _CANONICAL.get
    return b"".join(
        [
            (known(mode) or canonical(mode)) + b" " + name + b"\0" + oid
            for name, (mode, oid) in items
        ]
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
            msg = f"not a path git can store: {clip(path.decode('utf-8', 'replace'), 80)!r}"
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
    parsed: Mapping[bytes, ParsedTree] | None = None,
) -> bytes:
    """The root tree id after applying `changes` to the tree `base` (None: the empty tree).

    `changes` maps a `/`-separated path to the entry it now holds, or to None when no file,
    symlink or gitlink is there any more. Directories are implied: one exists while something
    is below it, so a directory whose last entry goes is dropped, and a deletion never removes
    a directory by itself (git lists each of its files). Trees off the changed paths are never
    read. `parsed` holds trees the caller already has (by raw id): they are not read again.
    Raises TreeError when the changes cannot be applied exactly.
    """
    width = _WIDTHS[algorithm]
    root = _trie(changes)
    if not root.children:
        return base if base is not None else empty_tree(algorithm)
    contents: dict[int, ParsedTree] = {}
    level: list[tuple[_Node, bytes]] = []
    if base is not None:
        level = [(root, base)]
    while level:
        known = parsed or {}
        wanted = list(dict.fromkeys(oid for _, oid in level if oid not in known))
        answered = read(wanted) if wanted else {}
        following: list[tuple[_Node, bytes]] = []
        for node, oid in level:
            tree = known.get(oid)
            if tree is None:
                body = answered.get(oid)
                if body is None:
                    msg = f"the tree {oid.hex()} could not be read"
                    raise TreeError(msg)
                tree = ParsedTree(body, width)
            contents[id(node)] = tree
            for name, child in node.children.items():
                entry = tree.get(name)
                if _needs_read(child, entry) and entry is not None:
                    following.append((child, entry[1]))
        level = following
    built = _build(root, (TREE, base) if base is not None else None, contents, algorithm)
    return built[1] if built is not None else empty_tree(algorithm)


def _line(name: bytes, entry: Entry) -> bytes:
    return canonical(entry[0]) + b" " + name + b"\0" + entry[1]


def _build(
    node: _Node, base: Entry | None, contents: dict[int, ParsedTree], algorithm: str
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
    tree = contents[id(node)] if _is_tree(base) else None
    if tree is None and base is not None and not node.has_change:
        # A file that stays, with something listed below it.
        if node.additions:
            msg = "a file and a directory at one name"
            raise TreeError(msg)
        return base
    updates: dict[bytes, Entry | None] = {}
    replaced: dict[int, bytes] = {}
    # A tree read from git is in git's order: replacing an entry by one of the same kind, or
    # removing one, keeps it, so its bytes are spliced. A new name or a kind change (which
    # moves the name in git's order) rebuilds the tree from its entries, sorted.
    splice = tree is not None and tree.canonical
    for name, child in node.children.items():
        old = tree.get(name) if tree is not None else None
        entry = _build(child, old, contents, algorithm)
        updates[name] = entry
        if old is None:
            splice = splice and entry is None
        elif entry is None:
            replaced[tree.index[name]] = b""  # type: ignore[union-attr]
        elif _is_tree(old) == _is_tree(entry):
            replaced[tree.index[name]] = _line(name, entry)  # type: ignore[union-attr]
        else:
            splice = False
    if splice and tree is not None:
        if sum(1 for line in replaced.values() if not line) == len(tree.found):
            return None
        body = tree.splice(replaced)
    else:
        entries = tree.entries() if tree is not None else {}
        for name, entry in updates.items():
            if entry is None:
                entries.pop(name, None)
            else:
                entries[name] = entry
        if not entries:
            return None
        body = serialize_tree(entries)
    return (TREE, object_id(b"tree", body, algorithm))
