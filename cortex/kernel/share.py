"""The use cases `case share`, `case fetch` and `case bundle`.

`share` exports the local replica of a case into `refs/cortex/cases/<id>` and pushes it; it
reads the case and never writes it. `fetch` brings cases into the tracking namespace and imports
them through the store's commit protocol, adopting the state in force by fencing and recording
conflicts. `bundle` is `share` into a file. docs/design/sharing.md is the contract; the git side
is `cortex.share`.
"""

from __future__ import annotations

import os
import random
import time
from typing import TYPE_CHECKING, Any

from cortex import __version__
from cortex.cases.bounds import SHARE_ALL_MAX, SHARE_PUSH_ATTEMPTS, SHARE_RETRY_PAUSE
from cortex.cases.errors import (
    ArgumentError,
    BusyError,
    CortexError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    RefusedError,
)
from cortex.cases.ids import check_id, new_id
from cortex.cases.layout import REPLICAS_FILE
from cortex.cases.records import CaseFile, PhaseChange, Workspace
from cortex.cases.replica_index import ReplicaIndex
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.progress import Progress
from cortex.share import intake, replica_id
from cortex.share import remote as remote_module
from cortex.share.errors import GitFailedError, RemoteRefusedError
from cortex.share.format import ref, tracking
from cortex.share.git import Git
from cortex.share.leaving import Context
from cortex.share.project import PathMap, machine_paths
from cortex.share.publish import Published, SharedTree, object_format, publish
from cortex.share.replica_id import ReplicaFile

if TYPE_CHECKING:
    from cortex.share import fetched as fetched_module

# What every use case needs -------------------------------------------------------------------


def _git(kernel: Kernel) -> Git:
    if kernel.workspace.kind != "git":
        msg = "sharing cases needs a git repository; this workspace is a plain directory"
        raise InvalidInputError(msg)
    return Git(kernel.workspace.root, kernel.env)


def _enabled(kernel: Kernel, doing: str) -> None:
    if not kernel.config.share.enabled:
        msg = (
            f"cannot {doing}: sharing is off for this repository; set `[share] enabled = true` "
            "in cortex.toml (CONFIG.md) to let its cases leave this machine"
        )
        raise GateRefusedError(msg)


def _remote(kernel: Kernel, given: str | None) -> str:
    name = given or kernel.config.share.remote
    try:
        return remote_module.check_remote(name)
    except InvalidInputError:
        msg = f"{{remote}} {name[:80]!r} is not the name of a configured git remote"
        raise ArgumentError(msg, "remote") from None


def replica(kernel: Kernel, *, create: bool) -> ReplicaFile:
    """This state root's replica id (minted and kept the first time one is needed)."""
    return replica_id.load(kernel.state_root, create=create)


def persist_replica(kernel: Kernel, rep: ReplicaFile) -> None:
    """Keep `rep` as this state root's replica id (`cortex.share.replica_id.keep`)."""
    replica_id.keep(kernel.state_root, rep)


def paths(kernel: Kernel) -> PathMap:
    """This machine's absolute paths that never leave it, and their placeholders."""
    where = kernel.workspace
    home = kernel.env.get("HOME")
    return machine_paths(where.root, where.common_dir, kernel.cases_root, kernel.state_root, home)


def _context(
    kernel: Kernel, case: CaseFile, index: ReplicaIndex | None, rep: ReplicaFile
) -> Context:
    mapping = paths(kernel)
    return Context(
        store=kernel.store,
        case=case,
        index=index,
        replica=rep.id,
        paths=mapping,
        redactor=kernel.redactor,
        ruleset=replica_id.ruleset_digest(
            rep.key, __version__, kernel.config.redact_literals, mapping
        ),
        version=__version__,
        now=kernel.now(),
    )


def _case_ids(kernel: Kernel, task_id: str | None, *, all_cases: bool) -> list[str]:
    if (task_id is None) == (not all_cases):
        raise ArgumentError("give a task id or {all}, not both and not neither", "all")
    if task_id is not None:
        check_id(task_id, "task", what="task id")
        kernel.writable(task_id)  # a case of another workspace is shared from there
        return [task_id]
    return kernel.store.list_ids()[:SHARE_ALL_MAX]


# share ----------------------------------------------------------------------------------------


def share(kernel: Kernel, given: Share) -> Result:
    """Export each case's local replica, commit it, push it (unless `dry_run`)."""
    _enabled(kernel, "share")
    ids = _case_ids(kernel, given.task_id, all_cases=given.all_cases)
    name = _remote(kernel, given.remote)
    dry_run = given.dry_run
    git = _git(kernel)
    rep = replica(kernel, create=not dry_run)
    progress = kernel.progress or Progress()
    progress.begin("case.share", count=len(ids))
    results: dict[str, Published] = {}
    with git.objects() as objects:
        shared = SharedTree(objects, object_format(git, objects))
        for index, case_id in enumerate(ids, 1):
            progress.step("export", subject=case_id, index=index, count=len(ids))
            # A case fetched before is merged at once: the push then needs no second round.
            results[case_id] = _publish(
                kernel, git, shared, case_id, rep, dry_run=dry_run, merge=tracking(name, case_id)
            )
    if dry_run:
        progress.end()
        return Result(
            data={
                "dryRun": True,
                "remote": name,
                "replica": rep.id,
                "cases": [
                    {"taskId": case_id, "ref": ref(case_id), "manifest": p.manifest}
                    for case_id, p in results.items()
                ],
            }
        )
    progress.step("push", count=len(results))
    attempts = _push(kernel, git, name, rep, results)
    progress.end()
    cases: list[dict[str, Any]] = []
    for case_id, published in results.items():
        cases.append(
            {
                "taskId": case_id,
                "ref": ref(case_id),
                "commit": published.commit,
                "pushed": True,
                "unchanged": published.unchanged and attempts[case_id] == 1,
                "attempts": attempts[case_id],
                "merged": published.merged,
                "objects": published.objects,
                "bytes": published.exported.total,
                "withheld": published.exported.withheld,
                "forks": published.forks,
            }
        )
    warnings = [
        f"{c['taskId']}: another history of a replica was kept under {fork}"
        for c in cases
        for fork in c["forks"]
    ]
    return Result(
        data={
            "dryRun": False,
            "remote": name,
            "replica": rep.id,
            "cases": cases,
            "warnings": warnings,
        }
    )


def _publish(
    kernel: Kernel,
    git: Git,
    shared: SharedTree,
    case_id: str,
    rep: ReplicaFile,
    *,
    dry_run: bool,
    merge: str | None = None,
) -> Published:
    for attempt in range(3):
        case, documents = kernel.store.read_view(case_id)
        context = _context(kernel, case, documents.get(REPLICAS_FILE), rep)
        try:
            return publish(git, shared, context, rep.id, dry_run=dry_run, merge=merge)
        except BusyError:
            if attempt == 2:
                raise
            time.sleep(0.01 * (attempt + 1))
    msg = "unreachable"
    raise AssertionError(msg)


def _push(
    kernel: Kernel, git: Git, remote: str, rep: ReplicaFile, results: dict[str, Published]
) -> dict[str, int]:
    """Push every case; a rejection for being behind fetches, merges and retries (bounded)."""
    from cortex.cases import _crash

    attempts = dict.fromkeys(results, 0)
    pending = list(results)
    for attempt in range(1, SHARE_PUSH_ATTEMPTS + 1):
        for case_id in pending:
            attempts[case_id] = attempt
        try:
            verdicts = remote_module.push(git, remote, [ref(i) for i in pending])
        except RemoteRefusedError as exc:
            raise _with_fallback(exc, pending) from None
        _crash.point("share.pushed")
        refused = [i for i in pending if verdicts[ref(i)].status == "refused"]
        if refused:
            declined = remote_module.declined(remote, ref(refused[0]), verdicts, refused)
            raise _with_fallback(declined, refused)
        behind = [i for i in pending if verdicts[ref(i)].status == "behind"]
        if not behind:
            return attempts
        if attempt == SHARE_PUSH_ATTEMPTS:
            break
        time.sleep(random.uniform(0, SHARE_RETRY_PAUSE * attempt))  # noqa: S311 - jitter only
        remote_module.fetch_tracking(git, remote, behind)
        with git.objects() as objects:
            shared = SharedTree(objects, object_format(git, objects))
            for case_id in behind:
                merged = _publish(
                    kernel,
                    git,
                    shared,
                    case_id,
                    rep,
                    dry_run=False,
                    merge=tracking(remote, case_id),
                )
                merged.merged = merged.merged or results[case_id].merged
                merged.forks = results[case_id].forks + merged.forks
                results[case_id] = merged
        pending = behind
    msg = (
        f"{len(pending)} case(s) lost the race to {remote} {SHARE_PUSH_ATTEMPTS} times in a row "
        "(others are sharing the same cases right now); nothing was lost, share again"
    )
    raise BusyError(msg)


def _with_fallback(exc: RemoteRefusedError, ids: list[str]) -> RemoteRefusedError:
    targets = exc.task_ids or ids
    if "bundle" not in exc.message:
        exc.message += "; hand the case over as a bundle instead"
    exc.task_ids = targets
    exc.actions = [  # type: ignore[attr-defined]
        Action(
            command=f"cortex case bundle {i} -o case-{i}.bundle",
            reason="a verified git bundle: upload it as a CI artifact; the reviewer runs "
            f"cortex case fetch --bundle case-{i}.bundle",
        )
        for i in targets
    ]
    return exc


# bundle ---------------------------------------------------------------------------------------


def bundle(kernel: Kernel, given: Bundle) -> Result:
    """Export and commit like `share`, then write a verified bundle of the case ref."""
    _enabled(kernel, "bundle the case")
    task_id, output = given.task_id, os.path.join(kernel.cwd, given.output)
    ids = _case_ids(kernel, task_id, all_cases=False)
    target = os.path.abspath(output)
    for forbidden in (kernel.state_root, kernel.cases_root):
        root = os.path.realpath(forbidden).rstrip(os.sep) + os.sep
        if os.path.realpath(target).startswith(root):
            raise GateRefusedError(f"{output} is inside Cortex's state; write the bundle elsewhere")
    git = _git(kernel)
    rep = replica(kernel, create=True)
    with git.objects() as objects:
        shared = SharedTree(objects, object_format(git, objects))
        published = _publish(kernel, git, shared, ids[0], rep, dry_run=False)
    heads = remote_module.write_bundle(git, target, [ref(task_id)])
    return Result(
        data={
            "taskId": task_id,
            "ref": ref(task_id),
            "commit": published.commit,
            "file": target,
            "bytes": os.path.getsize(target),
            "heads": heads,
            "verified": True,
            "withheld": published.exported.withheld,
        },
        actions=[
            Action(
                command=f"cortex case fetch --bundle {os.path.basename(target)}",
                reason="how the receiving machine reads it",
            )
        ],
    )


# fetch ----------------------------------------------------------------------------------------


def fetch(kernel: Kernel, given: Fetch) -> Result:
    """Fetch cases into the tracking namespace and import them (see the module docstring).

    A relative bundle file is where the call runs.
    """
    from cortex.cases import _crash

    task_id, pr, bundle_file, base = given.task_id, given.pr, given.bundle_file, given.base
    all_cases = given.all_cases

    chosen = sum(
        x for x in (task_id is not None, pr is not None, bundle_file is not None, all_cases)
    )
    if chosen != 1:
        msg = "give exactly one of a task id, {pr}, {bundle} or {all}"
        raise ArgumentError(msg, "pr", "bundle", "all")
    if base is not None and pr is None:
        raise ArgumentError("{base} names the branch a {pr} merges into", "base", "pr")
    git = _git(kernel)
    progress = kernel.progress or Progress()
    progress.begin("case.fetch")
    progress.step("fetch")
    warnings: list[str] = []
    requested: list[str]
    incoming = intake.incoming(git)
    try:
        if bundle_file is not None:
            path = os.path.abspath(os.path.join(kernel.cwd, bundle_file))
            source_name = "bundle"
            source = f"bundle:{os.path.basename(path)}"
            requested = intake.land_bundle(git, path, incoming)
            absent: list[str] = []
        else:
            source_name = _remote(kernel, given.remote)
            source = f"remote:{source_name}"
            if pr is not None:
                requested, refused = intake.pull_request_cases(git, source_name, pr, base)
                warnings += [
                    f"a Cortex-Case trailer names {v!r}, not a task id; ignored" for v in refused
                ]
            elif all_cases:
                requested = remote_module.list_cases(git, source_name)[:SHARE_ALL_MAX]
            else:
                assert task_id is not None  # noqa: S101 - counted above
                requested = [check_id(task_id, "task", what="task id")]
            absent = intake.land(git, source_name, requested, incoming)
        _crash.point("fetch.fetched")
        missing = [i for i in requested if ref(i) in absent]
        if task_id is not None and missing:
            raise NotFoundError(f"{source_name} holds no case {task_id}")
        warnings += [f"{source_name} holds no case {i}" for i in missing]
        rep = replica(kernel, create=False)  # kept only when an import commits
        cases: list[dict[str, Any]] = []
        refusals: list[dict[str, Any]] = []
        first: CortexError | None = None
        found = [i for i in requested if i not in missing]
        with git.objects() as objects:
            shared = SharedTree(objects, object_format(git, objects))
            for index, case_id in enumerate(found, 1):
                progress.step("import", subject=case_id, index=index, count=len(found))
                try:
                    result = _import(
                        kernel,
                        shared,
                        case_id,
                        name=f"{incoming}/{case_id}",
                        source=source,
                        rep=rep,
                    )
                except (IntegrityError, RefusedError, InvalidInputError, NotFoundError) as exc:
                    if task_id is not None:
                        raise
                    first = first or exc
                    refusals.append({"taskId": case_id, "code": exc.code, "message": exc.message})
                    warnings.append(f"{case_id} was refused, nothing of it imported: {exc.message}")
                    continue
                # The tracking ref follows only what was imported: share merges from it.
                git.run(["update-ref", tracking(source_name, case_id), f"{incoming}/{case_id}"])
                cases.append(result)
    finally:
        intake.drop_incoming(git, incoming)
    progress.end()
    if first is not None and not cases:
        raise first  # every case fetched was refused: the fetch as a whole failed
    return Result(
        data={
            "source": source,
            "requested": requested,
            "cases": cases,
            "refused": refusals,
            "warnings": warnings,
        }
    )


def _import(
    kernel: Kernel,
    shared: SharedTree,
    case_id: str,
    *,
    name: str,
    source: str,
    rep: ReplicaFile,
) -> dict[str, Any]:
    try:
        return _import_checked(kernel, shared, case_id, name=name, source=source, rep=rep)
    except GitFailedError as exc:
        # Reading what was just fetched failed: a gitlink, a missing or oversized object, a
        # tree where a file belongs. The fetched case is hostile or damaged, not this machine.
        raise IntegrityError(f"the shared case {case_id} cannot be read: {exc.message}") from None


def _import_checked(
    kernel: Kernel,
    shared: SharedTree,
    case_id: str,
    *,
    name: str,
    source: str,
    rep: ReplicaFile,
) -> dict[str, Any]:
    from cortex.share import fetched as fetched_module

    tree = fetched_module.read_case_tree(shared, name, case_id)
    local_key = intake.exported_key(shared, case_id, rep.id)
    store = kernel.store
    if not store.exists(case_id):
        try:
            kernel.locate(case_id)
        except NotFoundError:
            pass
        else:
            msg = f"case {case_id} belongs to another workspace on this machine; fetch it there"
            raise InvalidInputError(msg)
        created = _create(kernel, shared, tree, source, rep)
        if created is not None:
            return created
    with store.transaction(case_id, actor=kernel.actor(None), operation="case.fetch") as txn:
        return _into(kernel, shared, tree, source=source, rep=rep, txn=txn, local_key=local_key)


def _create(
    kernel: Kernel,
    shared: SharedTree,
    tree: fetched_module.CaseTree,
    source: str,
    rep: ReplicaFile,
) -> dict[str, Any] | None:
    """Create a case this machine does not hold yet, whole, from the fetched replicas."""
    from cortex.share.merge import new_case

    now = kernel.now()
    workspace = Workspace(
        kind=kernel.workspace.kind, root=kernel.workspace.root, repository=kernel.workspace.name
    )
    new = new_case(
        shared,
        tree,
        source=source,
        replica=rep.id,
        redactor=kernel.redactor,
        workspace=workspace,
        now=now,
    )
    phase = PhaseChange(
        id=new_id("ph"),
        timestamp=now,
        to_phase=new.case.status,
        actor=kernel.actor(None),
        reason=f"fetched from {source}, in the state of replica {new.adopted}",
        adopted=new.adopted,
        via="share",  # the state arrived from another replica, not from this command's caller
    )
    try:
        kernel.prepare_store()
        persist_replica(kernel, rep)
        kernel.store.create(
            new.case, operation="case.fetch", phases=[phase], files=new.files, now=now
        )
    except IntegrityError:
        if kernel.store.exists(tree.task_id):
            return None  # a concurrent fetch created it: import into it instead
        raise
    return new.result


def _into(
    kernel: Kernel,
    shared: SharedTree,
    tree: fetched_module.CaseTree,
    *,
    source: str,
    rep: ReplicaFile,
    txn: Any,
    local_key: str | None,
) -> dict[str, Any]:
    """Import into an existing case, in the transaction `txn` (it holds the case lock)."""
    from cortex.share import fetched as fetched_module
    from cortex.share import merge

    case: CaseFile = txn.case
    index: ReplicaIndex | None = txn.snapshot(REPLICAS_FILE, ReplicaIndex)
    behind: list[str] = []
    imports = fetched_module.plan(
        shared,
        tree,
        path=txn.path,
        case=case,
        index=index,
        replica=rep.id,
        local_key=local_key,
        redactor=kernel.redactor,
        behind=behind,
    )
    result = merge.summary(case.id, imports, behind)
    if not imports:
        txn.skip = True
        return result
    persist_replica(kernel, rep)
    local, _ = merge.local_state(shared, _context(kernel, case, index, rep))
    merge.into(
        shared,
        tree,
        imports,
        local,
        result,
        txn,
        index=index,
        source=source,
        replica=rep.id,
        actor=kernel.actor(None),
        now=kernel.now(),
    )
    return result


# Inputs (docs/design/inputs.md) --------------------------------------------------------------


class Share(Input):
    """The input of `case share`."""

    task_id: str | None = None
    all_cases: bool = False
    remote: str | None = None
    dry_run: bool = False


class Fetch(Input):
    """The input of `case fetch`."""

    task_id: str | None = None
    pr: int | None = None
    bundle_file: str | None = None
    all_cases: bool = False
    remote: str | None = None
    base: str | None = None


class Bundle(Input):
    """The input of `case bundle`; a relative `output` is where the call runs."""

    task_id: TaskId
    output: str
