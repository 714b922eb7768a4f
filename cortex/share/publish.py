"""From an export to a commit on `refs/cortex/cases/<id>`: read the previous one, merge, write.

One `git cat-file --batch` reads the previous export (its commit, our replica's head, tails and
segment listings) and, for a merge, the other side; one `git hash-object --stdin-paths` and one
`git mktree --batch` write what is new; `git commit-tree` and a compare-and-swap `git
update-ref` finish. Nothing is written before every check passed. docs/design/sharing.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from cortex.cases import _crash
from cortex.cases.bounds import SHARE_CASE_MAX, SHARE_REPLICAS_MAX
from cortex.cases.layout import is_replica_key
from cortex.share import export as export_module
from cortex.share.errors import GitFailedError, SecretFoundError, ShareTooLargeError
from cortex.share.export import Exported, Previous
from cortex.share.format import (
    BLOBS,
    HEAD,
    LEDGER_NAMES,
    LEDGERS_DIR,
    META,
    REPLICAS,
    TAIL,
    Head,
    commit_message,
    ref,
    replica_dir,
)
from cortex.share.git import CatFile, Git
from cortex.share.history import Shared, fork_suffix, relation
from cortex.share.leaving import Context
from cortex.share.objects import BLOB, Entry, Reader, Tree, Writer, algorithm, object_id


class Published(msgspec.Struct, kw_only=True):
    """What publishing one case did."""

    task_id: str
    commit: str | None
    previous: str | None
    unchanged: bool
    objects: int
    exported: Exported
    merged: bool = False
    forks: list[str] = msgspec.field(default_factory=list)
    manifest: dict[str, Any] | None = None


class SharedTree:
    """A case's shared tree read through one cat-file session."""

    def __init__(self, objects: CatFile, algo: str) -> None:
        self.objects = objects
        self.reader = Reader(objects, algo)

    def head(self, replica_tree: dict[str, Entry]) -> Head | None:
        """A replica's head.json, decoded (None when absent or unreadable)."""
        entry = replica_tree.get(HEAD)
        if entry is None or entry.is_tree:
            return None
        try:
            return msgspec.json.decode(self.reader.blob(entry.oid), type=Head)
        except (msgspec.DecodeError, msgspec.ValidationError, GitFailedError):
            return None

    def history(self, task_id: str, replica_tree: dict[str, Entry]) -> Shared | None:
        """A replica's history in this tree (for comparing), or None without a head."""
        head = self.head(replica_tree)
        if head is None:
            return None

        def load(name: str, file: str) -> bytes:
            ledgers = replica_tree.get(LEDGERS_DIR)
            if ledgers is None:
                return b""
            directory = self.reader.tree(ledgers.oid).get(name)
            if directory is None:
                return b""
            entry = self.reader.tree(directory.oid).get(file)
            return b"" if entry is None else self.reader.blob(entry.oid)

        return Shared(task_id, head, load)


def commit_of(objects: CatFile, name: str) -> tuple[str, str] | None:
    """(commit id, root tree id) of a ref or commit, or None when it does not exist."""
    found = objects.read(name)
    if found is None or found[1] != "commit":
        return None
    first = found[2].split(b"\n", 1)[0]
    if not first.startswith(b"tree "):
        raise GitFailedError(f"{name} is not a well-formed commit")
    return found[0], first[5:].decode()


def _commit(found: tuple[str, str, bytes] | None) -> tuple[str, str] | None:
    """(commit id, root tree id) of a read commit object."""
    if found is None or found[1] != "commit":
        return None
    first = found[2].split(b"\n", 1)[0]
    if not first.startswith(b"tree "):
        raise GitFailedError(f"{found[0]} is not a well-formed commit")
    return found[0], first[5:].decode()


def object_format(git: Git, objects: CatFile) -> str:
    """sha1 or sha256, from one object id of the repository (or git's word, if it has none)."""
    found = objects.read("HEAD")
    if found is not None:
        return algorithm(found[0])
    return "sha256" if git.out("rev-parse", "--show-object-format") == "sha256" else "sha1"


def read_previous(shared: SharedTree, root: str | None, key: str) -> Previous:
    """This replica's previous export in the tree `root` (empty when there is none)."""
    previous = Previous()
    if root is None:
        return previous
    replicas = shared.reader.tree(root).get(REPLICAS)
    mine = None if replicas is None else shared.reader.tree(replicas.oid).get(key)
    if mine is None:
        return previous
    tree = shared.reader.tree(mine.oid)
    previous.head = shared.head(tree)
    ledgers = tree.get(LEDGERS_DIR)
    if previous.head is None or ledgers is None:
        previous.head = None
        return previous
    listing = shared.reader.tree(ledgers.oid)
    for name in LEDGER_NAMES:
        directory = listing.get(name)
        if directory is None:
            continue
        entries = shared.reader.tree(directory.oid)
        previous.segments[name] = {n: e.oid for n, e in entries.items() if n != TAIL}
        tail = entries.get(TAIL)
        if tail is not None:
            previous.tails[name] = shared.reader.blob(tail.oid)
    return previous


def check(exported: Exported, new: Callable[[str, str], bool], key: str) -> dict[str, Any]:
    """Refuse what must not leave; return the manifest of what would."""
    if exported.hits:
        shown = ", ".join(exported.hits[:20]) + (", ..." if len(exported.hits) > 20 else "")
        msg = (
            f"the share would send text that looks like a secret (or a path of this machine) in "
            f"{len(exported.hits)} record(s): {shown}; nothing was sent. Redact or mark them "
            "sensitive (a sensitive record travels as a stub), then share again"
        )
        raise SecretFoundError(msg, [h.split(" ")[0] for h in exported.hits])
    manifest = export_module.manifest(exported, new, replica_dir(key))
    if exported.total > SHARE_CASE_MAX:
        msg = (
            f"the case's export is {exported.total} bytes, over the {SHARE_CASE_MAX}-byte "
            "limit; the manifest lists what it holds"
        )
        raise ShareTooLargeError(msg, manifest)
    return manifest


def _ours(shared: SharedTree, exported: Exported) -> Shared:
    """Our new export as a history (its new files in memory, its reused segments in git)."""

    def load(name: str, file: str) -> bytes:
        path = f"{LEDGERS_DIR}/{name}/{file}"
        if path in exported.files:
            return exported.files[path]
        oid = exported.reused.get(path)
        return b"" if oid is None else shared.reader.blob(oid)

    return Shared(exported.head.task_id, exported.head, load)


def merge_into(shared: SharedTree, ours: Tree, theirs_root: str, task_id: str) -> list[str]:
    """Union `theirs_root` into `ours` (docs/design/sharing.md, the tree merge); fork keys made."""
    forks: list[str] = []
    theirs = shared.reader.tree(theirs_root)
    for name, entry in theirs.items():
        if name == REPLICAS and entry.is_tree:
            node = ours.subtree(REPLICAS)
            assert node is not None  # noqa: S101 - created when absent
            for key, replica in shared.reader.tree(entry.oid).items():
                if is_replica_key(key) and replica.is_tree:
                    _merge_replica(shared, node, key, replica, task_id=task_id, forks=forks)
        elif name == BLOBS and entry.is_tree:
            node = ours.subtree(BLOBS)
            assert node is not None  # noqa: S101 - created when absent
            for prefix, group in shared.reader.tree(entry.oid).items():
                mine = node.get(prefix)
                if mine is None or mine.oid == group.oid:
                    if mine is None:
                        node.link(prefix, group)
                    continue
                subtree = node.subtree(prefix)
                assert subtree is not None  # noqa: S101 - it exists
                for blob_name, blob in shared.reader.tree(group.oid).items():
                    if subtree.get(blob_name) is None:
                        subtree.link(blob_name, blob)
        elif ours.get(name) is None and name not in ours.children:
            ours.link(name, entry)
    return forks


def _merge_replica(
    shared: SharedTree, node: Tree, key: str, theirs: Entry, *, task_id: str, forks: list[str]
) -> None:
    mine = node.get(key)
    if mine is None:
        node.link(key, theirs)
        return
    if mine.oid == theirs.oid:
        return
    ours_history = shared.history(task_id, shared.reader.tree(mine.oid))
    theirs_history = shared.history(task_id, shared.reader.tree(theirs.oid))
    if theirs_history is None:
        return
    if ours_history is None:
        node.link(key, theirs)
        return
    how = relation(ours_history, theirs_history)
    if how in ("equal", "first"):
        return
    if how == "second":
        node.link(key, theirs)
        return
    fork = f"{key.partition('~')[0]}~{fork_suffix(ours_history, theirs_history)}"
    forks.append(fork)
    _merge_replica(shared, node, fork, theirs, task_id=task_id, forks=forks)


def place(
    shared: SharedTree, root: Tree, key: str, exported: Exported, task_id: str, *, extends: bool
) -> list[str]:
    """Put our export at our key; a history there that ours does not extend moves aside."""
    replicas = root.subtree(REPLICAS)
    assert replicas is not None  # noqa: S101 - created when absent
    forks: list[str] = []
    there = replicas.get(key)
    if there is not None and not extends:
        theirs = shared.history(task_id, shared.reader.tree(there.oid))
        if theirs is not None:
            ours = _ours(shared, exported)
            how = relation(ours, theirs)
            if how in {"diverged", "second"}:
                fork = f"{key.partition('~')[0]}~{fork_suffix(ours, theirs)}"
                forks.append(fork)
                _merge_replica(shared, replicas, fork, there, task_id=task_id, forks=forks)
    # Built on the version there (when ours extends it), so unchanged files are not rewritten.
    there = replicas.get(key)
    mine = Tree(shared.reader, there.oid if there is not None and not forks else None)
    for path, data in exported.files.items():
        mine.put(path, data)
    for path, oid in exported.reused.items():
        mine.link(path, Entry(BLOB, oid))
    _prune(mine, set(exported.files) | set(exported.reused))
    replicas.remove(key)
    replicas.children[key] = mine
    if len(replicas.names()) > SHARE_REPLICAS_MAX:
        msg = f"the case has more than {SHARE_REPLICAS_MAX} replicas; refusing to add more"
        raise GitFailedError(msg)
    for path, data in exported.blobs.items():
        root.put(path, data)
    for path in exported.dropped:
        directory, _, name = path.rpartition("/")
        node = root.walk(directory, create=False)
        if node is not None and name in node.names():
            node.remove(name)
    if root.get(META) is None and META not in root.blobs:
        root.put(META, exported.meta)
    return forks


def _prune(tree: Tree, keep: set[str], prefix: str = "") -> None:
    """Drop every file of `tree` that is not in `keep` (a sealed tail, a dropped snapshot)."""
    for name in tree.names():
        path = f"{prefix}{name}"
        entry = tree.get(name)
        if name in tree.children or (entry is not None and entry.is_tree):
            child = tree.subtree(name, create=False)
            if child is not None:
                _prune(child, keep, f"{path}/")
        elif path not in keep:
            tree.remove(name)


def publish(
    git: Git,
    shared: SharedTree,
    context: Context,
    key: str,
    *,
    dry_run: bool,
    merge: str | None = None,
) -> Published:
    """Export the local replica of one case, check it, and commit it (unless `dry_run`).

    `merge` names a commit (the remote's, fetched into the tracking namespace) to merge in.
    """
    task_id = context.case.id
    name = ref(task_id)
    directory = replica_dir(key)
    wanted = [name, f"{name}^{{tree}}", f"{name}:{REPLICAS}", f"{name}:{directory}"]
    wanted += [f"{name}:{directory}/{HEAD}", f"{name}:{directory}/{LEDGERS_DIR}"]
    for ledger_name in LEDGER_NAMES:
        wanted += [f"{name}:{directory}/{LEDGERS_DIR}/{ledger_name}"]
        wanted += [f"{name}:{directory}/{LEDGERS_DIR}/{ledger_name}/{TAIL}"]
    if merge is not None:
        wanted.append(merge)
    # Everything the previous export's reuse needs, with one round trip to cat-file.
    answers = shared.reader.prefetch(wanted)
    local = _commit(answers.get(name))
    previous = read_previous(shared, local[1] if local else None, key)
    exported = export_module.build(context, previous)
    previous_tree = shared.reader.tree(local[1]) if local else {}

    def new(path: str, sha: str) -> bool:
        del sha
        return _new(shared, previous_tree, path, exported)

    manifest = check(exported, new, key)
    if dry_run:
        return Published(
            task_id=task_id,
            commit=local[0] if local else None,
            previous=local[0] if local else None,
            unchanged=False,
            objects=0,
            exported=exported,
            manifest=manifest,
        )
    root = Tree(shared.reader, local[1] if local else None)
    parents = [local[0]] if local else []
    forks: list[str] = []
    merged = False
    if merge is not None:
        other = _commit(answers.get(merge))
        if (
            other is not None
            and (local is None or other[0] != local[0])
            and not _contains(git, local[0] if local else None, other[0])
        ):
            forks += merge_into(shared, root, other[1], task_id)
            parents.append(other[0])
            merged = True
    extends = previous.head is not None and not exported.full and not merged
    forks += place(shared, root, key, exported, task_id, extends=extends)
    writer = Writer(git, shared.reader.algo, context.store.root)
    tree = writer.resolve(root)
    if tree is None:
        raise GitFailedError("the case's tree came out empty")
    if local is not None and tree == local[1] and not merged:
        return Published(
            task_id=task_id,
            commit=local[0],
            previous=local[0],
            unchanged=True,
            objects=0,
            exported=exported,
            manifest=manifest,
        )
    written = writer.commit()
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    message = commit_message(task_id, context.replica, context.case.revision)
    commit = git.out(*args, stdin=message, identity=True)
    _crash.point("share.objects_written")
    old = local[0] if local else ""
    update = git.run(["update-ref", "-m", "cortex share", name, commit, old], check=False)
    if update.returncode != 0:
        from cortex.cases.errors import BusyError

        msg = f"{name} moved while this share ran (another share of the case?); retry"
        raise BusyError(msg)
    _crash.point("share.ref_updated")
    return Published(
        task_id=task_id,
        commit=commit,
        previous=local[0] if local else None,
        unchanged=False,
        objects=written.blobs + written.trees + 1,
        exported=exported,
        merged=merged,
        forks=forks,
        manifest=manifest,
    )


def _contains(git: Git, descendant: str | None, ancestor: str) -> bool:
    if descendant is None:
        return False
    proc = git.run(["merge-base", "--is-ancestor", ancestor, descendant], check=False)
    return proc.returncode == 0


def _new(shared: SharedTree, root: dict[str, Entry], path: str, exported: Exported) -> bool:
    """Whether `path` (with the content the export gives it) is not on the local ref yet."""
    parts = path.split("/")
    entries: dict[str, Entry] | None = root
    for part in parts[:-1]:
        entry = None if entries is None else entries.get(part)
        entries = None if entry is None or not entry.is_tree else shared.reader.tree(entry.oid)
    entry = None if entries is None else entries.get(parts[-1])
    if entry is None:
        return True
    data = _content(path, exported)
    if data is None:
        return False
    return entry.oid != object_id("blob", data, shared.reader.algo)


def _content(path: str, exported: Exported) -> bytes | None:
    if path == META:
        return exported.meta
    if path.startswith(BLOBS + "/"):
        return exported.blobs.get(path)
    relative = path.split("/", 2)[2] if path.startswith(REPLICAS + "/") else path
    return exported.files.get(relative)
