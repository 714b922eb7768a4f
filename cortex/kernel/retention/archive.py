"""`case archive`, `unarchive`, `prune` and `rm`: bounding what a store keeps.

Nothing goes away by itself. Archiving moves a closed case out of every default view and out of
the recall corpus (and back); pruning abandons and archives the cases left idle; removing
deletes a closed case for good, with its recall rows and local sharing refs, and says what it
cannot reach (docs/design/storage.md, "Archive, remove, adopt").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from cortex.cases.errors import CortexError, NotFoundError
from cortex.cases.retention import archive_root, is_archive, move, tree_bytes
from cortex.cases.store import CaseStore
from cortex.kernel.envelope import Result, step
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Input, TaskId
from cortex.kernel.kernel import Kernel, format_time, parse_time
from cortex.kernel.lifecycle import TERMINAL

CLOSE_FIRST = "{verb} takes closed cases (complete, blocked or abandoned); {task} is {status}"


def _ours(kernel: Kernel, task: str) -> tuple[str, CaseStore, bool]:
    """A case of this workspace's store, active or archived: (id, store, archived)."""
    task_id, store = kernel.find(task)
    root = os.path.realpath(store.root)
    if root == os.path.realpath(kernel.cases_root):
        return task_id, store, False
    if root == os.path.realpath(archive_root(kernel.cases_root)):
        return task_id, store, True
    workspace = store.read_case(task_id).workspace.root
    msg = f"case {task_id} belongs to the workspace {workspace}; run this from there"
    raise NotFoundError(msg)


def _closed(verb: str, task_id: str, status: str) -> None:
    if status not in TERMINAL:
        msg = CLOSE_FIRST.format(verb=verb, task=task_id, status=status)
        raise GateRefusedError(msg, [step("case.abort", "close it first", task=task_id)])


def archive(kernel: Kernel, task: str, *, actor: str | None = None) -> Result:
    """Move a closed case into the store's archive; its recall rows are dropped."""
    who = kernel.actor(actor)
    task_id, store, archived = _ours(kernel, task)
    case = store.read_case(task_id)
    if archived:
        return _moved(task_id, case.status, archived=True, path=store.case_path(task_id))
    _closed("archive", task_id, case.status)
    info = store.lock_info(who, "case.archive")
    path = move(
        store.root, task_id, archive_root(store.root), timeout=store.lock_timeout, info=info
    )
    from cortex.kernel.retention.recall_rows import purge

    warnings = purge(kernel, kernel.store, task_id, derive=False, scrub=False)
    return _moved(task_id, case.status, archived=True, path=path, warnings=warnings)


def unarchive(kernel: Kernel, task: str, *, actor: str | None = None) -> Result:
    """Move an archived case back into the store; the recall index takes it in again."""
    who = kernel.actor(actor)
    task_id, store, archived = _ours(kernel, task)
    case = store.read_case(task_id)
    if not archived:
        return _moved(task_id, case.status, archived=False, path=store.case_path(task_id))
    info = store.lock_info(who, "case.unarchive")
    path = move(store.root, task_id, kernel.cases_root, timeout=store.lock_timeout, info=info)
    from cortex.kernel.recall import after_commit

    warnings = after_commit(kernel, kernel.store, task_id)
    return _moved(task_id, case.status, archived=False, path=path, warnings=warnings)


def _moved(
    task_id: str, status: str, *, archived: bool, path: str, warnings: list[str] | None = None
) -> Result:
    return Result(
        data={
            "taskId": task_id,
            "status": status,
            "archived": archived,
            "path": path,
            "warnings": warnings or [],
        }
    )


def prune(
    kernel: Kernel, *, older_than: str | None, apply: bool, actor: str | None = None
) -> Result:
    """Abandon and archive this store's open cases idle longer than an age.

    A dry run unless `apply`. A case whose change lease is active is left alone: someone holds it.
    """
    from cortex.kernel.config import duration
    from cortex.kernel.lease import state

    if older_than is None:
        seconds = kernel.config.prune_older_than
        source = (kernel.config.sources.get("prune_older_than") or ["default"])[0]
    else:
        seconds = duration(older_than, "--older-than", None)
        source = "--older-than"
    now = kernel.clock()
    found: list[dict[str, object]] = []
    revisions: dict[str, int] = {}
    for task_id in kernel.store.list_ids():
        try:
            case = kernel.store.read_case(task_id)
            idle = now - parse_time(case.updated_at)
        except (CortexError, ValueError):
            continue  # unreadable cases are `doctor`'s and `audit`'s to report
        if case.status in TERMINAL or idle < seconds:
            continue
        held = state(case.change_lease, now) == "active"
        revisions[task_id] = case.revision
        found.append(
            {
                "taskId": task_id,
                "goal": case.goal,
                "status": case.status,
                "updatedAt": case.updated_at,
                "idleSeconds": round(idle, 3),
                "action": "skipped: its change lease is active" if held else "abandon, archive",
                "done": False,
                "error": None,
            }
        )
    if apply:
        _apply_prune(kernel, found, seconds, actor, revisions)
    return Result(
        data={
            "olderThanSeconds": seconds,
            "source": source,
            "applied": apply,
            "now": format_time(now),
            "cases": found,
            "pruned": sum(bool(item["done"]) for item in found),
        }
    )


def _apply_prune(
    kernel: Kernel,
    found: list[dict[str, object]],
    seconds: int,
    actor: str | None,
    revisions: dict[str, int],
) -> None:
    from cortex.kernel.steps.close import close

    days = f"{seconds // 86400}d" if seconds >= 86400 else f"{seconds}s"
    for item in found:
        if item["action"] != "abandon, archive":
            continue
        task_id = str(item["taskId"])
        try:
            reason = f"pruned: idle for more than {days}"
            # Only the revision judged idle: a case written to since is not idle any more.
            close(
                kernel,
                task_id,
                to="abandoned",
                reason=reason,
                actor=actor,
                expected_revision=revisions[task_id],
            )
            archive(kernel, task_id, actor=actor)
        except CortexError as exc:
            item["error"] = {"code": exc.code, "message": exc.message}
            continue
        item["done"] = True


class Removal(NamedTuple):
    """What `rm` removes, and what it cannot: shown before a person confirms."""

    task_id: str
    status: str
    goal: str
    path: str
    bytes: int
    archived: bool
    refs: list[str]
    """Local git refs of the case, deleted with it."""
    kept: list[str]
    """What it cannot remove, each with how a person removes it."""


Confirm = Callable[[Removal], "str | None"]


def remove(kernel: Kernel, task: str, *, force: bool, confirm: Confirm | None) -> Result:
    """Remove a closed case for good (a dry run unless `force`, which needs a person)."""
    task_id, store, archived = _ours(kernel, task)
    case = store.read_case(task_id)
    _closed("rm", task_id, case.status)
    path = store.case_path(task_id)
    refs, kept = _sharing(kernel, case.workspace.root, task_id)
    removal = Removal(
        task_id=task_id,
        status=case.status,
        goal=case.goal,
        path=path,
        bytes=tree_bytes(path),
        archived=archived,
        refs=refs,
        kept=kept,
    )
    warnings: list[str] = []
    if force:
        if not kernel.person_present or confirm is None:
            msg = (
                "removing a case is a person's act: run `cortex case rm --force` at an "
                "interactive terminal, which asks for the task id to be typed; nothing was removed"
            )
            raise GateRefusedError(msg)
        if confirm(removal) != task_id:
            raise GateRefusedError(f"{task_id} was not typed at the terminal; nothing was removed")
        from cortex.cases.retention import remove as remove_case
        from cortex.kernel.retention.recall_rows import purge

        info = kernel.store.lock_info(kernel.actor(None), "case.rm")
        warnings += purge(kernel, kernel.store, task_id, derive=False, before=True)
        remove_case(
            kernel.cases_root,
            task_id,
            archived=archived,
            timeout=kernel.store.lock_timeout,
            info=info,
        )
        warnings += purge(kernel, kernel.store, task_id, derive=False)
        warnings += _delete_refs(kernel, case.workspace.root, refs)
        from cortex.kernel.activity.session_lease import forget_case

        warnings += forget_case(kernel, task_id)
    return Result(
        data={
            "taskId": task_id,
            "status": case.status,
            "goal": case.goal,
            "applied": force,
            "archived": archived,
            "path": path,
            "bytes": removal.bytes,
            "refs": refs,
            "kept": kept,
            "warnings": warnings,
        }
    )


def _sharing(kernel: Kernel, workspace: str, task_id: str) -> tuple[list[str], list[str]]:
    """The case's local git refs, and what of it may be on remotes (which rm cannot remove)."""
    from cortex.share.format import ref

    if not os.path.isdir(workspace):
        return [], []
    from cortex.workspace.git import GitNotRunError, run_git

    patterns = [ref(task_id), f"refs/cortex-remotes/*/cases/{task_id}"]
    try:
        proc = run_git(
            ["git", "for-each-ref", "--format=%(refname)", *patterns],
            cwd=workspace,
            env=kernel.env,
            timeout=30,
        )
    except GitNotRunError:
        return [], []
    if proc.returncode != 0:
        return [], []
    refs = proc.stdout.decode("utf-8", "replace").split()
    remotes = sorted(
        {name.split("/")[2] for name in refs if name.startswith("refs/cortex-remotes/")}
        | ({kernel.config.share.remote} if ref(task_id) in refs else set())
    )
    kept = [
        f"{ref(task_id)} on {remote}, if it was pushed there: "
        f"git push {remote} --delete {ref(task_id)}"
        for remote in remotes
        if remote != "bundle"
    ]
    return refs, kept


def _delete_refs(kernel: Kernel, workspace: str, refs: list[str]) -> list[str]:
    from cortex.workspace.git import GitNotRunError, run_git

    warnings = []
    for name in refs:
        try:
            proc = run_git(
                ["git", "update-ref", "-d", name],
                cwd=workspace,
                env=kernel.env,
                timeout=30,
            )
        except GitNotRunError as exc:
            warnings.append(f"{name} was not deleted ({exc})")
            continue
        if proc.returncode != 0:
            warnings.append(f"{name} was not deleted: {proc.stderr.decode(errors='replace')}")
    return warnings


__all__ = ["Removal", "archive", "is_archive", "prune", "remove", "unarchive"]


class Archive(Input):
    """The input of `case archive` and `case unarchive`."""

    task_id: TaskId
    actor: Actor = None


def archive_case(kernel: Kernel, given: Archive) -> Result:
    """`archive` for one input."""
    return archive(kernel, given.task_id, actor=given.actor)


def unarchive_case(kernel: Kernel, given: Archive) -> Result:
    """`unarchive` for one input."""
    return unarchive(kernel, given.task_id, actor=given.actor)


class Prune(Input):
    """The input of `case prune`."""

    older_than: str | None = None
    apply: bool = False
    actor: Actor = None


class Remove(Input):
    """The input of `case rm` (a person's act at a terminal: the face asks them to confirm)."""

    task_id: TaskId
    force: bool = False


def prune_idle(kernel: Kernel, given: Prune) -> Result:
    """`prune` for one input."""
    return prune(kernel, older_than=given.older_than, apply=given.apply, actor=given.actor)


def remove_case(kernel: Kernel, given: Remove, *, confirm: Confirm | None) -> Result:
    """`remove` for one input; `confirm` is the face's question to the person, if any."""
    return remove(kernel, given.task_id, force=given.force, confirm=confirm)
