"""`cortex adopt`: a moved or renamed repository takes back the cases its old path left behind.

A store's id follows the path of the repository's git directory (docs/design/paths.md), so after
`mv` (or `cp -a` and the old copy deleted) the repository opens an empty store, and the old one
is orphaned: none of its cases records a workspace that still exists. Adopt moves that store's
cases here, case by case under their locks, and records the old workspace root so that
`@latest` counts its cases as opened here (docs/design/storage.md, "Archive, remove, adopt").
`doctor` names orphaned stores through `orphans`.
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import Any, NamedTuple

from cortex.cases.errors import CortexError, InvalidInputError, NotFoundError
from cortex.cases.ids import is_id
from cortex.cases.store import CaseStore
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel


class Orphan(NamedTuple):
    """A store under the state root whose cases' workspaces are all gone (or not its own)."""

    id: str
    root: str
    cases: list[str]
    archived: list[str]
    roots: list[str]
    """The workspace roots its cases were opened at."""
    ours: bool
    """Whether it holds this repository's commits (or, without any, its name)."""
    orphaned: bool = True


def _cases(root: str) -> tuple[list[str], list[str]]:
    from cortex.cases.retention import archive_root

    def ids(directory: str) -> list[str]:
        if os.path.islink(directory):
            return []  # a planted link is never followed: its target is not a store's
        try:
            return sorted(n for n in os.listdir(directory) if is_id(n, "task"))
        except OSError:
            return []

    return ids(root), ids(archive_root(root))


def _store_of(path: str, env: Any) -> str | None:
    from cortex.workspace.identity import discover

    try:
        return discover(path, env).store_id
    except CortexError:
        return None


def orphans(kernel: Kernel) -> list[Orphan]:
    """Every orphaned store under `<state root>/sessions/` (a reader: writes nothing)."""
    sessions = os.path.join(kernel.state_root, "sessions")
    try:
        names = sorted(os.listdir(sessions))
    except (FileNotFoundError, NotADirectoryError):
        return []
    here = os.path.realpath(kernel.cases_root)
    found: list[Orphan] = []
    for name in names:
        root = os.path.join(sessions, name)
        if os.path.realpath(root) == here or not os.path.isdir(root) or os.path.islink(root):
            continue
        if not _mine(root):
            continue  # another user's files are theirs to move, never ours
        orphan = _orphan(kernel, name, root)
        if orphan is not None:
            found.append(orphan)
    return found


def _mine(root: str) -> bool:
    """Whether the store directory belongs to this user (a shared state root may hold others')."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or os.lstat(root).st_uid == getuid()


def _orphan(kernel: Kernel, name: str, root: str) -> Orphan | None:
    from cortex.cases.retention import archive_root

    active, archived = _cases(root)
    if not active and not archived:
        return None
    roots: set[str] = set()
    commits: set[str] = set()
    for directory, ids in ((root, active), (archive_root(root), archived)):
        store = CaseStore(directory, redactor=kernel.redactor, lock_timeout=1.0, now=kernel.now)
        for task_id in ids:
            try:
                case = store.read_case(task_id)
            except CortexError:
                continue
            roots.add(case.workspace.root)
            if case.workspace.commit_before:
                commits.add(case.workspace.commit_before)
    if any(os.path.isdir(path) and _store_of(path, kernel.env) == name for path in roots):
        return None  # its repository is still where its cases say
    ours = _holds(kernel, commits) if commits else _named_like(name, kernel.workspace.store_id)
    return Orphan(name, root, active, archived, sorted(roots), ours)


def _named_like(store_id: str, ours: str) -> bool:
    return store_id.rsplit("-", 1)[0] == ours.rsplit("-", 1)[0]


def _holds(kernel: Kernel, commits: set[str]) -> bool:
    """Whether this repository has any of `commits` (one `git cat-file --batch-check`)."""
    if kernel.workspace.kind != "git":
        return False
    from cortex.workspace.git import GitNotRunError, run_git

    try:
        proc = run_git(
            ["git", "cat-file", "--batch-check=%(objecttype)"],
            cwd=kernel.workspace.root,
            env=kernel.env,
            timeout=30,
            data="".join(f"{commit}\n" for commit in sorted(commits)).encode(),
        )
    except GitNotRunError:
        return False
    return b"commit" in proc.stdout.split()


def adopt(kernel: Kernel, store: str | None, *, dry_run: bool) -> Result:
    """Move the cases of this repository's orphaned stores (or of `store`) into this one."""
    if kernel.config.cases_dir is not None:
        msg = "this repository keeps its cases in a configured cases_dir, which moves with it"
        raise InvalidInputError(msg)
    chosen = _chosen(kernel, store)
    plan = [
        {
            "id": orphan.id,
            "root": orphan.root,
            "cases": orphan.cases,
            "archived": orphan.archived,
            "workspaces": orphan.roots,
            "orphaned": orphan.orphaned,
        }
        for orphan in chosen
    ]
    moved: list[str] = []
    skipped: list[dict[str, str]] = []
    warnings: list[str] = []
    # The stores' own files only: a link planted for `.keys` or `.archive` is left, never read
    # through (it could name any directory of the user's).
    warnings += [
        f"{os.path.join(orphan.root, name)} is a link, not the store's own directory: left alone"
        for orphan in chosen
        for name in (".keys", ".archive")
        if os.path.islink(os.path.join(orphan.root, name))
    ]
    aliases = sorted({path for o in chosen for path in o.roots if not os.path.isdir(path)})
    if not dry_run and chosen:
        from cortex.kernel.stores import Move, adopted, record_adopted

        kernel.prepare_store()
        now = kernel.now()
        # The old stores' own earlier roots come along: a repository moved twice still counts.
        earlier = [m.from_root for orphan in chosen for m in adopted(orphan.root).moves]
        record_adopted(
            kernel.cases_root,
            [
                Move(from_root=path, to_root=kernel.workspace.root, at=now)
                for path in [*aliases, *earlier]
            ],
        )
        for orphan in chosen:
            _move_store(kernel, orphan, moved, skipped)
        from cortex.kernel.recall import follow

        warnings += follow(kernel, [(orphan.root, orphan.cases) for orphan in chosen])
    return Result(
        data={
            "dryRun": dry_run,
            "into": {"id": kernel.workspace.store_id, "root": kernel.cases_root},
            "stores": plan,
            "aliases": [{"from": path, "to": kernel.workspace.root} for path in aliases],
            "moved": moved,
            "skipped": skipped,
            "warnings": warnings,
        }
    )


def _chosen(kernel: Kernel, store: str | None) -> list[Orphan]:
    found = orphans(kernel)
    if store is None:
        return [orphan for orphan in found if orphan.ours]
    sessions = os.path.join(kernel.state_root, "sessions")
    name = os.path.basename(os.path.normpath(store)) if os.sep in store else store
    root = os.path.join(sessions, name)
    if os.path.realpath(root) == os.path.realpath(kernel.cases_root):
        raise InvalidInputError(f"{name} is this workspace's own store")
    if not os.path.isdir(root) or os.path.islink(root) or name.startswith("."):
        raise NotFoundError(f"no store {name!r} under {sessions}")
    if not _mine(root):
        raise InvalidInputError(f"the store {name} belongs to another user; its owner may adopt it")
    for orphan in found:
        if orphan.id == name:
            return [orphan]
    active, archived = _cases(root)
    # Not orphaned: its repository still exists. A person may still move its cases here.
    return [Orphan(name, root, active, archived, [], ours=False, orphaned=False)]


def _move_store(
    kernel: Kernel, orphan: Orphan, moved: list[str], skipped: list[dict[str, str]]
) -> None:
    """Move every case of `orphan` here under both store locks, then its keys; drop it if empty."""
    from cortex.cases.layout import STORE_LOCK_FILE
    from cortex.cases.lock import FileLock

    store = kernel.store
    info = store.lock_info(kernel.actor(None), "adopt")
    first, second = sorted([orphan.root, kernel.cases_root])
    timeout = store.lock_timeout
    try:
        with (
            FileLock(os.path.join(first, STORE_LOCK_FILE), timeout=timeout, info=info, what=first),
            FileLock(
                os.path.join(second, STORE_LOCK_FILE), timeout=timeout, info=info, what=second
            ),
        ):
            _move_cases(kernel, orphan, moved, skipped, info)
            _move_keys(orphan.root, kernel.cases_root)
            _drop_if_empty(orphan.root)
    except OSError as exc:  # a store this user may not lock or change: nothing more is moved
        msg = f"cannot adopt the store {orphan.id}: {exc.strerror or exc} ({exc.filename})"
        raise InvalidInputError(msg) from None


def _move_cases(
    kernel: Kernel, orphan: Orphan, moved: list[str], skipped: list[dict[str, str]], info: Any
) -> None:
    """Each case directory, active then archived; one that cannot move is skipped, with why."""
    from cortex.cases.retention import archive_root, move

    timeout = kernel.store.lock_timeout
    for source, target, ids in (
        (orphan.root, kernel.cases_root, orphan.cases),
        (archive_root(orphan.root), archive_root(kernel.cases_root), orphan.archived),
    ):
        for task_id in ids:
            try:
                move(source, task_id, target, timeout=timeout, info=info)
            except CortexError as exc:
                skipped.append({"taskId": task_id, "why": exc.message})
                continue
            except OSError as exc:  # not this user's to move (another owner's directory)
                skipped.append({"taskId": task_id, "why": str(exc.strerror or exc)})
                continue
            moved.append(task_id)


def _move_keys(source: str, target: str) -> None:
    """Idempotency keys go with their cases; a key the target already has stays where it is."""
    import re
    import stat

    from cortex.cases.fsio import fsync_dir, make_private_dirs
    from cortex.cases.layout import KEYS_DIR

    keys = os.path.join(source, KEYS_DIR)
    if os.path.islink(keys):
        return
    try:
        names = os.listdir(keys)
    except (FileNotFoundError, NotADirectoryError):
        return
    into = os.path.join(target, KEYS_DIR)
    make_private_dirs(into)
    for name in names:
        path = os.path.join(keys, name)
        # Only what the store writes there: `<sha256 of the key>.json`, a regular file.
        if not re.fullmatch(r"[0-9a-f]{64}\.json", name) or not stat.S_ISREG(
            os.lstat(path).st_mode
        ):
            continue
        if not os.path.lexists(os.path.join(into, name)):
            os.rename(path, os.path.join(into, name))
    fsync_dir(into)
    fsync_dir(keys)


def _drop_if_empty(root: str) -> None:
    """Remove what an emptied store keeps for itself; the store directory, if nothing is left."""
    from cortex.cases.layout import ARCHIVE_DIR, KEYS_DIR, STORE_LOCK_FILE

    for name in (KEYS_DIR, ARCHIVE_DIR):
        path = os.path.join(root, name)
        if os.path.islink(path):
            continue  # not the store's: left for a person, and so is the store
        for leftover in (".gitignore",):
            if os.path.isfile(os.path.join(path, leftover)):
                os.unlink(os.path.join(path, leftover))
        with suppress(OSError):
            os.rmdir(path)
    if any(is_id(name, "task") for name in os.listdir(root)):
        return
    for name in (STORE_LOCK_FILE, ".adopted.json", ".gitignore"):
        with suppress(FileNotFoundError):
            os.unlink(os.path.join(root, name))
    try:
        os.rmdir(root)
    except OSError:
        return  # something else lives there: left for a person


class Adopt(Input):
    """The input of `adopt`."""

    store: str | None = None
    dry_run: bool = False


def adopt_store(kernel: Kernel, given: Adopt) -> Result:
    """`adopt` for one input."""
    return adopt(kernel, given.store, dry_run=given.dry_run)
