"""`cortex case open`: create a case (or, with an idempotency key, return the one a retry made)."""

from __future__ import annotations

import os
from typing import Annotated, Literal

import msgspec

from cortex.cases.bounds import GOAL_MAX, SURFACES_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import InvalidInputError
from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile, PhaseChange, Workspace, encode
from cortex.kernel import inputs, validate
from cortex.kernel.envelope import Result, step
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Input
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import TERMINAL, next_actions
from cortex.workspace.identity import git_head


def open_case(
    kernel: Kernel,
    *,
    goal: str,
    mode: str = inputs.MODE,
    risk: str = inputs.RISK,
    surfaces: list[str] | None = None,
    criteria: list[str] | None = None,
    idempotency_key: str | None = None,
    actor: str | None = None,
    parent: str | None = None,
    no_recall: bool = False,
) -> Result:
    """Open a case for `goal` in the current workspace's store (under `parent`, if given).

    The answer carries the brief: what earlier cases of this repository learned that matches
    the goal (docs/design/recall.md), unless `no_recall` or `recall_brief = false` says not to.
    """
    redactor = kernel.redactor
    goal = validate.text(goal, "goal", GOAL_MAX)
    checked_mode = validate.choice(mode, "--mode", validate.MODES)
    checked_risk = validate.choice(risk, "--risk", validate.RISKS)
    given = surfaces or ["code"]
    if len(given) > SURFACES_MAX:
        raise InvalidInputError(f"at most {SURFACES_MAX} surfaces")
    chosen = [validate.choice(s, "--surface", validate.SURFACES) for s in given]
    if len(set(chosen)) != len(chosen):
        raise InvalidInputError("a surface is given twice")
    acceptance = validate.criteria(criteria or [], redactor)
    key = None
    if idempotency_key is not None:
        key = validate.identifier(idempotency_key, "--idempotency-key", redactor)
    who = kernel.actor(actor)
    if parent is not None:
        # Made whole (a prefix, @latest); the parent must be in this workspace's store.
        parent, _ = kernel.find_writable(parent, argument="parent")

    identity = kernel.workspace
    warnings: list[str] = []
    branch = commit = None
    if identity.kind == "git":
        branch, commit, problem = git_head(identity.root, kernel.env)
        if problem:
            warnings.append(problem)
        warnings += _own_files_uncommitted(kernel)
    elif identity.note:
        warnings.append(identity.note)
    now = kernel.now()
    case = CaseFile(
        revision=1,
        id=new_id("task"),
        created_at=now,
        updated_at=now,
        goal=goal,
        mode=checked_mode,
        risk=checked_risk,
        actor=who,
        idempotency_key=key,
        parent_task_id=parent,
        status="orienting",
        workspace=Workspace(
            kind=identity.kind,
            root=identity.root,
            repository=identity.name,
            branch=branch,
            commit_before=commit,
        ),
        surfaces=chosen,
        acceptance_criteria=acceptance,
    )
    # What makes two opens "the same request": a retry must ask for the same case. It is taken
    # over the text as stored (redacted), so the key file cannot confirm a guessed secret.
    fingerprint = sha256_hex(
        encode(
            [
                redactor(goal),
                mode,
                risk,
                sorted(chosen),
                [(c.id, redactor(c.statement)) for c in acceptance],
                parent,
            ]
        )
    )
    # Opening captures the workspace, which is the orientation: new -> orienting in one commit.
    phases = [
        PhaseChange(id=new_id("ph"), timestamp=now, to_phase="new", actor=who),
        PhaseChange(
            id=new_id("ph"), timestamp=now, from_phase="new", to_phase="orienting", actor=who
        ),
    ]
    kernel.prepare_store()
    existing = None if key is None else kernel.store.lookup_key(key, fingerprint)
    if existing is not None and not kernel.store.exists(existing):
        existing = None  # the key was claimed but the crash came first: create it now
    if existing is not None:
        # A retry: the key already names a case, whatever has happened to its parent since.
        committed, created = kernel.store.read_case(existing), False
        if parent is not None and not _link_child(kernel, parent, existing, who):
            warnings.append(f"the parent {parent} is closed; it does not list this case")
    elif parent is not None:
        committed, created = _open_child(
            kernel, parent, case, actor=who, phases=phases, key=key, fingerprint=fingerprint
        )
    else:
        committed, created = kernel.store.create(
            case, operation="case.open", phases=phases, idempotency_key=key, fingerprint=fingerprint
        )
    task = committed.id
    brief = None
    if not no_recall and kernel.config.recall_brief:
        from cortex.kernel.recall import brief as make_brief

        brief, trouble = make_brief(kernel, task, committed.goal)
        warnings += trouble
    return Result(
        data={
            "taskId": task,
            "created": created,
            "revision": committed.revision,
            "status": committed.status,
            "goal": committed.goal,
            "mode": committed.mode,
            "risk": committed.risk,
            "workspace": committed.workspace,
            "store": kernel.store_info,
            "path": os.path.join(kernel.cases_root, task),
            "brief": brief,
            "warnings": warnings,
        },
        actions=[
            *next_actions(committed),
            step("case.status", "see where the case stands", task=task),
        ],
    )


OWN_FILES = ("cortex.toml", ".mcp.json", os.path.join(".codex", "config.toml"))
"""What `cortex init` and `cortex setup --scope project` write into a repository."""


def _own_files_uncommitted(kernel: Kernel) -> list[str]:
    """A warning if Cortex's own set-up files are not committed as the case opens.

    They would count as this task's changes, outside its boundary, and fail `scope`. Git runs
    only when one of the files exists.
    """
    root = kernel.workspace.root
    present = [name for name in OWN_FILES if os.path.lexists(os.path.join(root, name))]
    if not present:
        return []
    from cortex.workspace.dirty import uncommitted

    changed = uncommitted(root, kernel.env, present)
    if not changed:
        return []
    names = ", ".join(sorted(changed))
    warning = (
        f"{names} (written by cortex init or setup) is not committed: it will count as this "
        "task's change outside its boundary, and scope will fail on it; commit it and open "
        "the case again, or add it to the plan's boundary"
    )
    return [warning]


def _open_child(
    kernel: Kernel,
    parent: str,
    case: CaseFile,
    *,
    actor: str,
    phases: list[PhaseChange],
    key: str | None,
    fingerprint: str,
) -> tuple[CaseFile, bool]:
    """Create a child and list it on its parent, holding the parent's lock throughout.

    So the parent cannot be closed between the check and the link. Lock order: parent case,
    then store (nothing takes them the other way round). A crash after the child is created
    and before the parent commits leaves a child naming its parent; a retry with the same key
    returns the child and adds the link.
    """
    store = kernel.writable(parent)
    with store.transaction(parent, actor=actor, operation="case.link-child") as txn:
        if txn.case.status in TERMINAL:
            msg = f"the parent {parent} is {txn.case.status}; open a standalone case instead"
            raise GateRefusedError(msg)
        committed, created = kernel.store.create(
            case, operation="case.open", phases=phases, idempotency_key=key, fingerprint=fingerprint
        )
        if committed.id in txn.case.child_task_ids:
            txn.skip = True
        else:
            txn.case.child_task_ids.append(committed.id)
            txn.target = committed.id
    return committed, created


def _link_child(kernel: Kernel, parent: str, child: str, actor: str) -> bool:
    """List `child` on `parent` (idempotent); False when the parent is closed and was left alone."""
    store = kernel.writable(parent)
    with store.transaction(parent, actor=actor, operation="case.link-child") as txn:
        if txn.case.status in TERMINAL:
            txn.skip = True
            return child in txn.case.child_task_ids
        if child in txn.case.child_task_ids:
            txn.skip = True
            return True
        txn.case.child_task_ids.append(child)
        txn.target = child
    return True


class OpenTask(Input):
    """The input of `case open`."""

    goal: Annotated[str, msgspec.Meta(description="what the task should achieve")]
    mode: Annotated[
        Literal["change", "investigate", "review"], msgspec.Meta(description=inputs.MODE_HELP)
    ] = inputs.MODE
    risk: Literal["low", "medium", "high"] = inputs.RISK
    surfaces: Annotated[list[str], msgspec.Meta(description=inputs.one_of(inputs.SURFACES))] = (
        msgspec.field(default_factory=list)
    )
    criteria: Annotated[
        list[str], msgspec.Meta(description="acceptance criteria, each 'ID=STATEMENT'")
    ] = msgspec.field(default_factory=list)
    idempotency_key: Annotated[
        str | None, msgspec.Meta(description="a retry with the same key returns the same case")
    ] = None
    parent: Annotated[str | None, msgspec.Meta(description="open as a child of this case")] = None
    actor: Actor = None
    no_recall: Annotated[
        bool, msgspec.Meta(description="leave out the brief of what earlier cases learned")
    ] = False


def open_task(kernel: Kernel, given: OpenTask) -> Result:
    """`open_case` for one input."""
    return open_case(
        kernel,
        goal=given.goal,
        mode=given.mode,
        risk=given.risk,
        surfaces=given.surfaces,
        criteria=given.criteria,
        idempotency_key=given.idempotency_key,
        actor=given.actor,
        parent=given.parent,
        no_recall=given.no_recall,
    )
