"""`cortex case open`: create a case (or, with an idempotency key, return the one a retry made)."""

from __future__ import annotations

import os

from cortex.cases.bounds import GOAL_MAX, SURFACES_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import InvalidInputError
from cortex.cases.ids import check_id, new_id
from cortex.cases.records import CaseFile, Mode, PhaseChange, Risk, Surface, Workspace, encode
from cortex.kernel import defaults, validate
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import TERMINAL, next_actions
from cortex.workspace.identity import git_head


def open_case(
    kernel: Kernel,
    *,
    goal: str,
    mode: str = defaults.MODE,
    risk: str = defaults.RISK,
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
    mode = validate.choice(mode, "--mode", Mode)
    risk = validate.choice(risk, "--risk", Risk)
    chosen = surfaces or ["code"]
    if len(chosen) > SURFACES_MAX:
        raise InvalidInputError(f"at most {SURFACES_MAX} surfaces")
    for surface in chosen:
        validate.choice(surface, "--surface", Surface)
    if len(set(chosen)) != len(chosen):
        raise InvalidInputError("a surface is given twice")
    acceptance = validate.criteria(criteria or [], redactor)
    key = None
    if idempotency_key is not None:
        key = validate.identifier(idempotency_key, "--idempotency-key", redactor)
    who = kernel.actor(actor)
    if parent is not None:
        check_id(parent, "task", what="--parent")
        kernel.writable(parent)  # the parent must be in this workspace's store

    identity = kernel.workspace
    warnings: list[str] = []
    branch = commit = None
    if identity.kind == "git":
        branch, commit, problem = git_head(identity.root, kernel.env)
        if problem:
            warnings.append(problem)
    elif identity.note:
        warnings.append(identity.note)
    now = kernel.now()
    case = CaseFile(
        revision=1,
        id=new_id("task"),
        created_at=now,
        updated_at=now,
        goal=goal,
        mode=mode,  # type: ignore[arg-type]  # validated against Mode above
        risk=risk,  # type: ignore[arg-type]  # validated against Risk above
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
        surfaces=chosen,  # type: ignore[arg-type]  # validated against Surface above
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
            Action(command=f"cortex case status {task}", reason="see where the case stands"),
        ],
    )


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
