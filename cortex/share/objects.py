r"""Git trees in memory: read lazily, changed in place, written with as few processes as possible.

A `Tree` starts as a known object id and is read (one `cat-file` request) only when something
inside it is looked at or changed; an untouched subtree is written back by its id. Writing
computes every tree's id here first (git's own format: `<mode> <name>\0<raw id>` entries,
sorted with a tree's name compared as `name/`), so unchanged trees are recognised and only new
ones are handed to one `git mktree --batch`; new blobs go to one `git hash-object -w
--stdin-paths`. The ids git answers with are checked against ours.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from cortex.cases.digest import sha1, sha256_hex
from cortex.cases.fsio import make_private_dirs
from cortex.share.errors import GitFailedError
from cortex.share.git import CatFile, Git

BLOB = "100644"
TREE = "40000"


class Entry(NamedTuple):
    """One entry of a tree: its mode and the id of what it names."""

    mode: str
    oid: str

    @property
    def is_tree(self) -> bool:
        """Whether it names a tree."""
        return self.mode == TREE


def algorithm(oid: str) -> str:
    """The hash of a repository, told by the length of one of its object ids."""
    return "sha256" if len(oid) == 64 else "sha1"


def object_id(kind: str, data: bytes, algo: str) -> str:
    """The id git gives an object of this kind and content."""
    header = f"{kind} {len(data)}\0".encode()
    if algo == "sha256":
        return sha256_hex(header + data)
    return str(sha1(header + data).hexdigest())


def encode_tree(entries: dict[str, Entry]) -> bytes:
    """The canonical content of a tree object."""

    def order(name: str) -> bytes:
        return name.encode() + (b"/" if entries[name].is_tree else b"")

    out = bytearray()
    for name in sorted(entries, key=order):
        entry = entries[name]
        out += f"{entry.mode} {name}\0".encode() + bytes.fromhex(entry.oid)
    return bytes(out)


def parse_tree(data: bytes, algo: str) -> dict[str, Entry]:
    """The entries of a tree object's content."""
    size = 32 if algo == "sha256" else 20
    entries: dict[str, Entry] = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        mode = data[at:space].decode()
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        oid = data[nul + 1 : nul + 1 + size].hex()
        entries[name] = Entry(TREE if mode in {"40000", "040000"} else mode, oid)
        at = nul + 1 + size
    return entries


class Tree:
    """A tree being built: known entries, and the subtrees opened for change."""

    def __init__(self, reader: Reader, oid: str | None = None) -> None:
        self.reader = reader
        self.oid = oid
        self._entries: dict[str, Entry] | None = None if oid else {}
        self.children: dict[str, Tree] = {}
        self.blobs: dict[str, bytes] = {}
        """New blob contents by entry name (written when the tree is)."""
        self.dirty = False

    @property
    def entries(self) -> dict[str, Entry]:
        """This tree's entries as stored (reading the object the first time)."""
        if self._entries is None:
            assert self.oid is not None  # noqa: S101 - a tree without entries has an id
            self._entries = self.reader.tree(self.oid)
        return self._entries

    def names(self) -> list[str]:
        """Every name in this tree, including new ones."""
        return sorted(set(self.entries) | set(self.children) | set(self.blobs))

    def subtree(self, name: str, *, create: bool = True) -> Tree | None:
        """The subtree `name`, opened for change (created empty when absent and `create`)."""
        if name in self.children:
            return self.children[name]
        entry = self.entries.get(name)
        if entry is not None and entry.is_tree:
            child = Tree(self.reader, entry.oid)
        elif create:
            child = Tree(self.reader)
        else:
            return None
        self.children[name] = child
        self.blobs.pop(name, None)
        return child

    def walk(self, path: str, *, create: bool = True) -> Tree | None:
        """The subtree at a `/`-separated path."""
        node: Tree | None = self
        for part in [p for p in path.split("/") if p]:
            if node is None:
                return None
            node = node.subtree(part, create=create)
        return node

    def put(self, path: str, data: bytes) -> None:
        """Set the blob at `path` (parents created)."""
        directory, _, name = path.rpartition("/")
        node = self.walk(directory)
        assert node is not None  # noqa: S101 - walk creates
        node.blobs[name] = data
        node.children.pop(name, None)
        node.mark()

    def link(self, path: str, entry: Entry) -> None:
        """Set the entry at `path` to an existing object (a subtree or a blob by id)."""
        directory, _, name = path.rpartition("/")
        node = self.walk(directory)
        assert node is not None  # noqa: S101 - walk creates
        node.children.pop(name, None)
        node.blobs.pop(name, None)
        node.entries[name] = entry
        node.mark()

    def remove(self, name: str) -> None:
        """Drop an entry of this tree."""
        self.entries.pop(name, None)
        self.children.pop(name, None)
        self.blobs.pop(name, None)
        self.mark()

    def mark(self) -> None:
        """Note that this tree changed (its id must be computed again)."""
        self.dirty = True

    def get(self, name: str) -> Entry | None:
        """The stored entry `name` (not a new blob or an opened subtree)."""
        return self.entries.get(name)


class Reader:
    """Trees and blobs read through one cat-file session, cached."""

    def __init__(self, objects: CatFile, algo: str) -> None:
        self.objects = objects
        self.algo = algo
        self._trees: dict[str, dict[str, Entry]] = {}
        self._blobs: dict[str, bytes] = {}

    def remember(self, oid: str, kind: str, data: bytes) -> None:
        """Cache an object read some other way (a batch of `REV:PATH` requests)."""
        if kind == "tree":
            self._trees.setdefault(oid, parse_tree(data, self.algo))
        elif kind == "blob":
            self._blobs[oid] = data

    def prefetch(self, names: list[str]) -> dict[str, tuple[str, str, bytes] | None]:
        """Read several objects by name with one round trip, caching every tree and blob."""
        answers = self.objects.read_many(names)
        for found in answers:
            if found is not None:
                self.remember(*found)
        return dict(zip(names, answers, strict=True))

    def tree(self, oid: str) -> dict[str, Entry]:
        """The entries of a tree (a copy the caller may change)."""
        if oid not in self._trees:
            found = self.objects.read(oid)
            if found is None or found[1] != "tree":
                raise GitFailedError(f"tree {oid} cannot be read")
            self._trees[oid] = parse_tree(found[2], self.algo)
        return dict(self._trees[oid])

    def blob(self, oid: str) -> bytes:
        """The content of a blob."""
        if oid in self._blobs:
            return self._blobs.pop(oid)
        found = self.objects.read(oid)
        if found is None or found[1] != "blob":
            raise GitFailedError(f"blob {oid} cannot be read")
        return found[2]


class Written(NamedTuple):
    """What writing a tree produced."""

    oid: str
    blobs: int
    trees: int


class Writer:
    """Computes ids, and writes the new objects of one or more trees with two git processes."""

    def __init__(self, git: Git, algo: str, scratch: str) -> None:
        self.git = git
        self.algo = algo
        self.scratch = scratch
        self._blobs: dict[str, bytes] = {}
        self._trees: list[tuple[str, dict[str, Entry]]] = []
        self._queued: set[str] = set()

    def resolve(self, tree: Tree) -> str | None:
        """The id of `tree` with every change applied (None: it is empty); queue what is new."""
        if not tree.dirty and not tree.children and not tree.blobs and tree.oid is not None:
            return tree.oid
        entries = dict(tree.entries)
        for name, data in tree.blobs.items():
            oid = object_id("blob", data, self.algo)
            if entries.get(name) != Entry(BLOB, oid):
                self._blobs.setdefault(oid, data)
            entries[name] = Entry(BLOB, oid)
        for name, child in tree.children.items():
            child_id = self.resolve(child)
            if child_id is None:
                entries.pop(name, None)  # git has no empty directories
            else:
                entries[name] = Entry(TREE, child_id)
        if not entries:
            return None
        oid = object_id("tree", encode_tree(entries), self.algo)
        if oid != tree.oid and oid not in self._queued:
            self._queued.add(oid)
            self._trees.append((oid, entries))
        return oid

    def commit(self) -> Written:
        """Write every queued blob and tree; return the counts (no commit is made here)."""
        blobs, trees = self._write_blobs(), self._write_trees()
        return Written("", blobs, trees)

    def _write_blobs(self) -> int:
        if not self._blobs:
            return 0
        directory = os.path.join(self.scratch, f"share-{os.getpid()}-{os.urandom(4).hex()}")
        make_private_dirs(directory)
        try:
            paths = []
            for index, data in enumerate(self._blobs.values()):
                path = os.path.join(directory, str(index))
                with open(path, "wb") as handle:  # a scratch copy: git reads it, we delete it
                    handle.write(data)
                paths.append(path)
            stdin = "".join(p + "\n" for p in paths).encode()
            out = self.git.out("hash-object", "-w", "--no-filters", "--stdin-paths", stdin=stdin)
        finally:
            for name in os.listdir(directory):  # flat: only the copies written above
                os.unlink(os.path.join(directory, name))
            os.rmdir(directory)
        written = out.split()
        if written != list(self._blobs):
            raise GitFailedError("git hash-object answered with other ids than the content's")
        count = len(self._blobs)
        self._blobs = {}
        return count

    def _write_trees(self) -> int:
        if not self._trees:
            return 0
        # Children are queued before their parents (depth first), as mktree needs them.
        unique = dict(self._trees)
        chunks = []
        for entries in unique.values():
            lines = "".join(
                f"{e.mode} {'tree' if e.is_tree else 'blob'} {e.oid}\t{name}\n"
                for name, e in sorted(entries.items())
            )
            chunks.append(lines)
        stdin = "\n".join(chunks).encode() + b"\n"
        out = self.git.out("mktree", "--batch", stdin=stdin).split()
        if out != list(unique):
            raise GitFailedError("git mktree answered with other ids than the trees'")
        self._trees = []
        self._queued = set()
        return len(unique)
