"""The use cases `case share`, `case fetch`, `case bundle` and `case trailer`.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from cortex import __version__
from cortex.cases.bounds import (
    SHARE_ALL_MAX,
    SHARE_CONFLICTS_KEPT,
    SHARE_PUSH_ATTEMPTS,
    SHARE_RETRY_PAUSE,
    SNAPSHOT_MAX,
)
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import AUX_TYPES
from cortex.cases.errors import (
    ArgumentError,
    BusyError,
    CortexError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    RefusedError,
)
from cortex.cases.fsio import make_private_dirs, read_bounded, write_once
from cortex.cases.ids import check_id, is_id, new_id
from cortex.cases.layout import REPLICAS_FILE, replica_ledger
from cortex.cases.records import (
    CaseFile,
    LineMeta,
    PhaseChange,
    SnapshotRef,
    Workspace,
    decode,
    encode_pretty,
)
from cortex.cases.replica_index import (
    Conflict,
    ConflictSide,
    Fence,
    HeadInfo,
    ImportedReplica,
    LocalSync,
    ReplicaIndex,
)
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Actor, Input, TaskId
from cortex.kernel.kernel import Kernel
from cortex.kernel.progress import Progress
from cortex.share import remote as remote_module
from cortex.share.errors import GitFailedError, RemoteRefusedError
from cortex.share.export import Context, lamport_of, origin_of
from cortex.share.format import SNAPSHOTS, commit_message, ref, replica_dir, tracking
from cortex.share.git import Git
from cortex.share.project import ADOPTED_FIELDS, PathMap, content_digest, project_case
from cortex.share.publish import Published, SharedTree, commit_of, object_format, publish
from cortex.share.resolve import State, fold

if TYPE_CHECKING:
    from cortex.share import fetched as fetched_module

REPLICA_FILE = "replica.json"


class ReplicaFile(msgspec.Struct, kw_only=True):
    """`<state root>/replica.json`: this state root's replica id, and a key that never leaves."""

    id: str
    key: str
    """Keys the ruleset digest in each head, so a head says nothing about the rules."""


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
    path = os.path.join(kernel.state_root, REPLICA_FILE)
    try:
        return _read_replica(path)
    except FileNotFoundError:
        if not create:
            return ReplicaFile(id=new_id("rep"), key=os.urandom(32).hex())
    make_private_dirs(kernel.state_root)
    fresh = ReplicaFile(id=new_id("rep"), key=os.urandom(32).hex())
    write_once(path, msgspec.json.encode(fresh) + b"\n", mode=0o600)
    return _read_replica(path)  # a concurrent first writer may have won


def persist_replica(kernel: Kernel, rep: ReplicaFile) -> None:
    """Keep `rep` as this state root's replica id, right before the first commit that needs it.

    A fetch plans with a replica id it has not written yet, so a refused fetch leaves no
    `replica.json` behind; a concurrent first writer that kept another id wins, and this call
    is refused as busy (retry: the next plan uses the kept id).
    """
    path = os.path.join(kernel.state_root, REPLICA_FILE)
    if not os.path.lexists(path):
        make_private_dirs(kernel.state_root)
        write_once(path, msgspec.json.encode(rep) + b"\n", mode=0o600)
    if _read_replica(path).id != rep.id:
        raise BusyError("another command kept this machine's replica id first; fetch again")


def _read_replica(path: str) -> ReplicaFile:
    data = read_bounded(path, 4096)
    try:
        found = msgspec.json.decode(data, type=ReplicaFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: not a replica file ({exc})", path=path) from None
    if not is_id(found.id, "rep") or len(found.key) != 64:
        raise IntegrityError(f"{path}: not a replica file", path=path)
    return found


def paths(kernel: Kernel) -> PathMap:
    """This machine's absolute paths that never leave it, and their placeholders."""
    pairs = [(kernel.workspace.root, "<workspace>")]
    if kernel.workspace.common_dir:
        pairs.append((os.path.dirname(kernel.workspace.common_dir), "<workspace>"))
    pairs += [(kernel.cases_root, "<cases>"), (kernel.state_root, "<state>")]
    home = kernel.env.get("HOME")
    if home and os.path.isabs(home) and home.rstrip("/"):
        pairs.append((home, "<home>"))
    return PathMap(pairs)


def ruleset(kernel: Kernel, key: str, mapping: PathMap) -> str:
    """A keyed digest of what checks an export: the version, the literals, the path map."""
    material = msgspec.json.encode(
        [__version__, sorted(kernel.config.redact_literals), mapping.paths]
    )
    return hmac_sha256(bytes.fromhex(key), material)


def hmac_sha256(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 (RFC 2104) on the store's sha256, without loading OpenSSL for `hmac`."""
    block = 64
    if len(key) > block:
        key = bytes.fromhex(sha256_hex(key))
    key = key.ljust(block, b"\0")
    inner = bytes.fromhex(sha256_hex(bytes(k ^ 0x36 for k in key) + message))
    return sha256_hex(bytes(k ^ 0x5C for k in key) + inner)


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
        ruleset=ruleset(kernel, rep.key, mapping),
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


def share(
    kernel: Kernel,
    task_id: str | None,
    *,
    all_cases: bool = False,
    remote: str | None = None,
    dry_run: bool = False,
) -> Result:
    """Export each case's local replica, commit it, push it (unless `dry_run`)."""
    _enabled(kernel, "share")
    ids = _case_ids(kernel, task_id, all_cases=all_cases)
    name = _remote(kernel, remote)
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
        index: ReplicaIndex | None = documents.get(REPLICAS_FILE)
        try:
            return publish(
                git,
                shared,
                _context(kernel, case, index, rep),
                rep.id,
                dry_run=dry_run,
                merge=merge,
            )
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
            reason = verdicts[ref(refused[0])].reason
            declined = RemoteRefusedError(
                f"{remote} declined {ref(refused[0])} {reason}: hosts that accept only branches "
                "and tags, and read-only tokens (a fork's pull request), cannot take case refs; "
                "hand the case over as a bundle instead",
                refused,
            )
            raise _with_fallback(declined, refused)
        behind = [i for i in pending if verdicts[ref(i)].status == "behind"]
        if not behind:
            return attempts
        if attempt == SHARE_PUSH_ATTEMPTS:
            break
        time.sleep(random.uniform(0, SHARE_RETRY_PAUSE * attempt))  # noqa: S311 - jitter only
        pairs = [(ref(i), tracking(remote, i)) for i in behind]
        tips = remote_module.existing(git, [d for _, d in pairs])
        remote_module.fetch(git, remote, pairs, tips=tips)
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


def bundle(kernel: Kernel, task_id: str, *, output: str) -> Result:
    """Export and commit like `share`, then write a verified bundle of the case ref."""
    _enabled(kernel, "bundle the case")
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
    temporary = f"{target}.cortex-{os.getpid()}.bundle"
    try:
        remote_module.bundle_create(git, temporary, [ref(task_id)])
        heads = remote_module.bundle_heads(git, temporary)
        os.replace(temporary, target)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
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


# trailer --------------------------------------------------------------------------------------


def trailer(kernel: Kernel, *, actor: str | None = None) -> Result:
    """The `Cortex-Case:` trailers for the cases of this workspace whose lease is active."""
    from cortex.cases.errors import CortexError
    from cortex.kernel.lease import state

    who = kernel.acting(actor)
    now = kernel.clock()
    found = []
    for case_id in kernel.store.list_ids():
        try:
            case = kernel.store.read_case(case_id)
        except CortexError:
            continue
        lease = case.change_lease
        if lease is None or state(lease, now) != "active":
            continue
        if who is not None and lease.actor != who:
            continue
        found.append(case_id)
    if not found:
        held = f" held by {who}" if who else ""
        raise NotFoundError(f"no case of this workspace has an active change lease{held}")
    return Result(data={"taskIds": found, "trailers": [f"Cortex-Case: {i}" for i in found]})


# fetch ----------------------------------------------------------------------------------------


def fetch(
    kernel: Kernel,
    task_id: str | None,
    *,
    pr: int | None = None,
    bundle_file: str | None = None,
    all_cases: bool = False,
    remote: str | None = None,
    base: str | None = None,
    cwd: str | None = None,
) -> Result:
    """Fetch cases into the tracking namespace and import them (see the module docstring)."""
    from cortex.cases import _crash

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
    incoming = _incoming(git)
    try:
        if bundle_file is not None:
            path = os.path.abspath(os.path.join(cwd or kernel.workspace.root, bundle_file))
            heads = remote_module.bundle_heads(git, path)
            source_name = "bundle"
            source = f"bundle:{os.path.basename(path)}"
            requested = [h.removeprefix("refs/cortex/cases/") for h in heads]
            pairs = [(ref(i), f"{incoming}/{i}") for i in requested]
            remote_module.fetch(git, path, pairs)
            absent: list[str] = []
        else:
            source_name = _remote(kernel, remote)
            source = f"remote:{source_name}"
            if pr is not None:
                requested, refused = _pr(git, source_name, pr, base)
                warnings += [
                    f"a Cortex-Case trailer names {v!r}, not a task id; ignored" for v in refused
                ]
            elif all_cases:
                requested = remote_module.list_cases(git, source_name)[:SHARE_ALL_MAX]
            else:
                assert task_id is not None  # noqa: S101 - counted above
                requested = [check_id(task_id, "task", what="task id")]
            pairs = [(ref(i), f"{incoming}/{i}") for i in requested]
            tips = remote_module.existing(git, [tracking(source_name, i) for i in requested])
            absent = remote_module.fetch(git, source_name, pairs, tips=tips)
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
        _drop_incoming(git, incoming)
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


INCOMING = "refs/cortex-incoming"
"""Where a fetch lands before each case is checked (docs/design/sharing.md, each case)."""


def _incoming(git: Git) -> str:
    """This fetch's private ref namespace; the leftovers of killed fetches are dropped first."""
    proc = git.run(["for-each-ref", "--format=%(refname)", INCOMING + "/"], check=False)
    stale = set()
    for name in proc.stdout.decode("utf-8", "replace").split():
        owner = name.removeprefix(INCOMING + "/").partition("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            stale.add(name)
    if stale:
        git.run(["update-ref", "--stdin"], stdin="".join(f"delete {n}\n" for n in stale).encode())
    return f"{INCOMING}/{os.getpid()}-{os.urandom(4).hex()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drop_incoming(git: Git, incoming: str) -> None:
    proc = git.run(["for-each-ref", "--format=%(refname)", incoming + "/"], check=False)
    names = proc.stdout.decode("utf-8", "replace").split()
    if names:
        git.run(
            ["update-ref", "--stdin"],
            stdin="".join(f"delete {n}\n" for n in names).encode(),
            check=False,
        )


def _pr(git: Git, remote: str, number: int, base: str | None) -> tuple[list[str], list[str]]:
    if not 1 <= number <= 10**9:
        raise ArgumentError("{pr} must be a pull request number", "pr")
    where = f"refs/cortex-remotes/{remote}/pull/{number}"
    if base is not None and not remote_module.check_remote(base):
        raise ArgumentError("{base} is not a branch name", "base")
    base_source = f"refs/heads/{base}" if base else "HEAD"
    pairs = [(f"refs/pull/{number}/head", f"{where}/head"), (base_source, f"{where}/base")]
    absent = remote_module.fetch(git, remote, pairs)
    if f"refs/pull/{number}/head" in absent:
        raise NotFoundError(f"{remote} has no pull request {number} (refs/pull/{number}/head)")
    if base_source in absent:
        raise NotFoundError(f"{remote} has no {base_source}; name the base with --base")
    return remote_module.pr_cases(git, f"{where}/base", f"{where}/head")


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
    local_commit = commit_of(shared.objects, ref(case_id))
    local_key = None
    if local_commit is not None:
        replicas = shared.reader.tree(local_commit[1]).get("replicas")
        if replicas is not None:
            entry = shared.reader.tree(replicas.oid).get(rep.id)
            local_key = entry.oid if entry is not None else None
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


def _states(tree: fetched_module.CaseTree, imports: list[fetched_module.Import]) -> list[State]:
    states = []
    for item in imports:
        head = item.head
        fence = Fence(epoch=head.epoch, lamport=head.lamport, replica=item.key)
        side = ConflictSide(
            replica=item.key, fence=fence, digest=head.digest, origin=head.origin, phase=head.status
        )
        states.append(
            State(
                key=item.key,
                fence=fence,
                digest=head.digest,
                origin=head.origin,
                known=dict(head.known),
                side=side,
            )
        )
    del tree
    return states


def _imported(item: fetched_module.Import, source: str, commit: str, now: str) -> ImportedReplica:
    head = item.head
    return ImportedReplica(
        key=item.key,
        replica=head.replica,
        forked=item.forked,
        ledgers=dict(item.extents),
        head=HeadInfo(
            revision=head.revision,
            lamport=head.lamport,
            epoch=head.epoch,
            digest=head.digest,
            origin=head.origin,
            known=dict(head.known),
            exported_at=head.exported_at,
            cortex=head.cortex,
            status=head.status,
        ),
        source=source,
        commit=commit,
        fetched_at=now,
    )


def _conflicts(index: ReplicaIndex, pairs: list[tuple[State, State]], now: str) -> None:
    for winner, loser in pairs:
        assert winner.side is not None  # noqa: S101 - every state has one
        assert loser.side is not None  # noqa: S101 - every state has one
        index.conflicts.append(Conflict(at=now, winner=winner.side, loser=loser.side))
    index.conflicts = index.conflicts[-SHARE_CONFLICTS_KEPT:]
    index.conflicts_total += len(pairs)


def _snapshots_of(
    shared: SharedTree, remote: fetched_module.Fetched
) -> tuple[CaseFile, dict[str, bytes], bytes | None]:
    """The winner's case.json (decoded) and snapshot files, each checked against its head."""
    from cortex.share import fetched as fetched_module

    data = fetched_module.snapshot(shared, remote, "case.json")
    if data is None:
        raise IntegrityError(f"replica {remote.key} has no case.json")
    try:
        case = decode(data, CaseFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"replica {remote.key}'s case.json: {exc}") from None
    files: dict[str, bytes] = {}
    for name in SNAPSHOTS:
        found = fetched_module.snapshot(shared, remote, name)
        if found is None:
            continue
        try:
            decode(found, AUX_TYPES[name])
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise IntegrityError(f"replica {remote.key}'s {name}: {exc}") from None
        files[name] = found
    return case, files, fetched_module.summary(shared, remote)


def _check_adoptable(
    case: CaseFile,
    documents: dict[str, bytes],
    imports: list[fetched_module.Import],
    local: tuple[str, CaseFile, ReplicaIndex | None] | None,
) -> None:
    """The snapshots an import would adopt hold together as `audit` checks them.

    A receipt agrees with its batch and cites evidence the case will hold; hypotheses cite such
    evidence; a pending decision matches the phase. `local` is (case path, local case.json,
    replicas.json) of a case that exists here; the cited ids are looked up there only when the
    import itself does not bring them.
    """
    from cortex.cases import ledger
    from cortex.cases.documents import Decisions, Hypotheses, Verification

    cited: set[str] = set()
    where = f"the state the fetch would adopt ({case.id})"
    if "verification.json" in documents:
        document = decode(documents["verification.json"], Verification)
        batches = {b.id: b for b in document.batches}
        for receipt in document.receipts:
            batch = batches.get(receipt.batch_id)
            if batch is None or receipt.binding != batch.binding:
                raise IntegrityError(f"{where}: receipt {receipt.id} disagrees with its batch")
            if receipt.binding == "bound" and (
                receipt.revision,
                receipt.dirty_digest,
                receipt.tree,
            ) != (batch.revision, batch.dirty_digest, batch.tree):
                raise IntegrityError(f"{where}: receipt {receipt.id} disagrees with its batch")
            if receipt.binding == "unbound" and receipt.status in ("passed", "failed"):
                raise IntegrityError(f"{where}: receipt {receipt.id} is unbound but decided")
            cited.update(receipt.evidence)
    if "hypotheses.json" in documents:
        for hypothesis in decode(documents["hypotheses.json"], Hypotheses).hypotheses:
            cited.update(hypothesis.supports)
    if "decisions.json" in documents:
        waiting = [
            d.id for d in decode(documents["decisions.json"], Decisions).decisions
            if d.status == "pending"
        ]  # fmt: skip
        if len(waiting) > 1 or bool(waiting) != (case.status == "needs_human_decision"):
            raise IntegrityError(f"{where}: its pending decisions do not match its phase")
    missing = sorted(cited - set().union(*(i.evidence for i in imports)))
    if missing and local is not None:
        path, local_case, index = local
        state = local_case.ledgers.get("evidence")
        if state is not None and state.bytes:
            file = os.path.join(path, "evidence.jsonl")
            missing = [i for i in missing if i not in ledger.find_lines(file, state.bytes, missing)]
        for replica_entry in index.replicas if index is not None else []:
            extent = replica_entry.ledgers.get("evidence")
            if not missing or extent is None or not extent.bytes:
                continue
            file = os.path.join(path, replica_ledger(replica_entry.key, "evidence"))
            missing = [
                i for i in missing if i not in ledger.find_lines(file, extent.bytes, missing)
            ]
    if missing:
        msg = f"{where} cites {missing[0]}, which is not evidence of this case"
        raise IntegrityError(msg)


def _tag(data: bytes) -> int:
    return decode(data, LineMeta).revision


def _create(
    kernel: Kernel,
    shared: SharedTree,
    tree: fetched_module.CaseTree,
    source: str,
    rep: ReplicaFile,
) -> dict[str, Any] | None:
    """Create a case this machine does not hold yet, whole, from the fetched replicas."""
    from cortex.share import fetched as fetched_module

    imports = fetched_module.plan(
        shared,
        tree,
        path=None,
        case=None,
        index=None,
        replica=rep.id,
        local_key=None,
        redactor=kernel.redactor,
    )
    if not imports:
        raise NotFoundError(f"the shared case {tree.task_id} holds nothing to import")
    outcome = fold(None, _states(tree, imports))
    assert outcome is not None  # noqa: S101 - there are states
    winner = outcome.winner
    source_key = next(i.source for i in imports if i.key == winner.key)
    shared_case, documents, summary = _snapshots_of(shared, tree.replicas[source_key])
    _check_adoptable(shared_case, documents, imports, None)
    now = kernel.now()
    files: dict[str, bytes] = {}
    snapshots: dict[str, SnapshotRef] = {}
    for name, data in documents.items():
        files[name] = data
        snapshots[name.removesuffix(".json")] = SnapshotRef(
            revision=_tag(data), sha256=sha256_hex(data)
        )
    if summary is not None:
        files["summary.md"] = summary
    for item in imports:
        for ledger_name, (data, _) in item.appends.items():
            files[replica_ledger(item.key, ledger_name)] = data
        files.update(item.blobs)
    clock = max([s.fence.lamport for s in _states(tree, imports)]) + 1
    index = ReplicaIndex(
        revision=1,
        local=LocalSync(
            replica=rep.id,
            clock=clock,
            base_revision=1,
            digest=winner.digest,
            origin=winner.origin,
            known=outcome.known,
        ),
        in_force=winner.key,
        replicas=[_imported(i, source, tree.commit, now) for i in imports],
    )
    _conflicts(index, outcome.conflicts, now)
    index_bytes = encode_pretty(index)
    files[REPLICAS_FILE] = index_bytes
    snapshots["replicas"] = SnapshotRef(revision=1, sha256=sha256_hex(index_bytes))
    fields = {f: getattr(shared_case, f) for f in ADOPTED_FIELDS}
    workspace = Workspace(
        kind=kernel.workspace.kind,
        root=kernel.workspace.root,
        repository=kernel.workspace.name,
        branch=None,
        commit_before=shared_case.workspace.commit_before,
    )
    case = CaseFile(
        revision=1,
        id=tree.task_id,
        created_at=shared_case.created_at,
        updated_at=now,
        workspace=workspace,
        acceptance_criteria=shared_case.acceptance_criteria,
        snapshots=snapshots,
        **fields,
    )
    phase = PhaseChange(
        id=new_id("ph"),
        timestamp=now,
        to_phase=case.status,
        actor=kernel.actor(None),
        reason=f"fetched from {source}, in the state of replica {winner.key}",
        adopted=winner.key,
        via="share",  # the state arrived from another replica, not from this command's caller
    )
    try:
        kernel.prepare_store()
        persist_replica(kernel, rep)
        kernel.store.create(case, operation="case.fetch", phases=[phase], files=files, now=now)
    except IntegrityError:
        if kernel.store.exists(tree.task_id):
            return None  # a concurrent fetch created it: import into it instead
        raise
    return {
        "taskId": tree.task_id,
        "created": True,
        "unchanged": False,
        "imported": {i.key: i.lines for i in imports},
        "adopted": winner.key,
        "conflicts": len(outcome.conflicts),
        "forks": [i.key for i in imports if i.forked],
        "behind": [],
    }


def _local_state(
    kernel: Kernel,
    shared: SharedTree,
    case: CaseFile,
    index: ReplicaIndex | None,
    rep: ReplicaFile,
) -> tuple[State, str]:
    """The local state as fencing sees it, and its content digest."""
    from cortex.share.export import Checker, leaving_snapshots
    from cortex.share.resolve import State

    mapping = paths(kernel)
    checker = Checker(kernel.redactor, mapping)
    context = _context(kernel, case, index, rep)
    shas, _ = leaving_snapshots(context, kernel.store.case_path(case.id), checker)
    summary_path = os.path.join(kernel.store.case_path(case.id), "summary.md")
    summary = None
    if os.path.lexists(summary_path):
        summary = sha256_hex(mapping.data(read_bounded(summary_path, SNAPSHOT_MAX)))
    digest = content_digest(project_case(case, mapping), shas, summary)
    lamport = lamport_of(case, index)
    previous = None
    local = commit_of(shared.objects, ref(case.id))
    if local is not None:
        from cortex.share.publish import read_previous

        previous = read_previous(shared, local[1], rep.id).head
    origin = origin_of(digest, lamport, rep.id, previous, index)
    known = dict(index.local.known) if index is not None else {}
    epoch = case.change_lease.epoch if case.change_lease is not None else 0
    fence = Fence(epoch=epoch, lamport=lamport, replica=rep.id)
    side = ConflictSide(
        replica=rep.id,
        fence=fence,
        digest=digest,
        origin=origin,
        phase=case.status,
        lease_actor=case.change_lease.actor if case.change_lease else None,
        lease_epoch=epoch,
    )
    state = State(key="", fence=fence, digest=digest, origin=origin, known=known, side=side)
    return state, digest


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
    result: dict[str, Any] = {
        "taskId": case.id,
        "created": False,
        "unchanged": not imports,
        "imported": {i.key: i.lines for i in imports},
        "adopted": None,
        "conflicts": 0,
        "forks": [i.key for i in imports if i.forked],
        "behind": behind,
    }
    if not imports:
        txn.skip = True
        return result
    persist_replica(kernel, rep)
    local, _ = _local_state(kernel, shared, case, index, rep)
    outcome = fold(local, _states(tree, imports))
    assert outcome is not None  # noqa: S101 - there is a local state
    winner = outcome.winner
    now = kernel.now()
    index = index or ReplicaIndex(local=LocalSync(replica=rep.id))
    if winner.key and winner.digest != local.digest:
        source_key = next(i.source for i in imports if i.key == winner.key)
        _adopt(
            kernel,
            shared,
            tree.replicas[source_key],
            txn=txn,
            key=winner.key,
            source=source,
            now=now,
            check=lambda adopted, documents: _check_adoptable(
                adopted, documents, imports, (txn.path, case, index)
            ),
        )
        index.in_force = winner.key
        result["adopted"] = winner.key
    lamports = [local.fence.lamport, *(s.fence.lamport for s in _states(tree, imports))]
    index.local = LocalSync(
        replica=rep.id,
        clock=max(lamports) + 1,
        base_revision=case.revision + 1,
        digest=winner.digest,
        origin=winner.origin,
        known=outcome.known,
    )
    by_key = {r.key: r for r in index.replicas}
    for item in imports:
        by_key[item.key] = _imported(item, source, tree.commit, now)
        for ledger_name, (data, committed) in item.appends.items():
            txn.append_replica(replica_ledger(item.key, ledger_name), data, committed)
    index.replicas = [by_key[k] for k in sorted(by_key)]
    staged: set[str] = set()
    for item in imports:
        for relative, data in item.blobs.items():
            if relative in staged or os.path.lexists(os.path.join(txn.path, relative)):
                continue
            staged.add(relative)
            txn.stage_blob(relative, data, redact=False)
    _conflicts(index, outcome.conflicts, now)
    result["conflicts"] = len(outcome.conflicts)
    txn.stage_snapshot(REPLICAS_FILE, index)
    lines = sum(i.lines for i in imports)
    note = f"imported {lines} line(s) of {len(imports)} replica(s)"
    if result["adopted"]:
        note += f"; adopted the state of {result['adopted']}"
    if outcome.conflicts:
        note += f"; {len(outcome.conflicts)} conflict(s) recorded"
    txn.notes.append(note)
    txn.target = source if len(source) <= 200 and "/" not in source else "bundle"
    return result


def _adopt(
    kernel: Kernel,
    shared: SharedTree,
    remote: fetched_module.Fetched,
    *,
    txn: Any,
    key: str,
    source: str,
    now: str,
    check: Callable[[CaseFile, dict[str, bytes]], None],
) -> None:
    """Make the local case hold another replica's state (docs/design/sharing.md, adoption)."""
    shared_case, documents, summary = _snapshots_of(shared, remote)
    check(shared_case, documents)
    case: CaseFile = txn.case
    before = case.status
    for field in ADOPTED_FIELDS:
        setattr(case, field, getattr(shared_case, field))
    for name in SNAPSHOTS:
        stem = name.removesuffix(".json")
        data = documents.get(name)
        if data is None:
            case.snapshots.pop(stem, None)
            continue
        current = case.snapshots.get(stem)
        if current is not None and current.sha256 == sha256_hex(data):
            continue
        txn.stage_snapshot_bytes(name, data, _tag(data))
    if summary is not None and not os.path.lexists(os.path.join(txn.path, "summary.md")):
        txn.stage_blob("summary.md", summary, redact=False)
    if case.status != before:
        txn.append(
            "phases",
            PhaseChange(
                id=new_id("ph"),
                timestamp=now,
                from_phase=before,
                to_phase=case.status,
                actor=kernel.actor(None),
                reason=f"adopted the state of replica {key} (fetched from {source})",
                adopted=key,
                via="share",  # the state came from another replica
            ),
        )


def commit_text(task_id: str, replica_id: str, revision: int) -> str:
    """The message of a case commit (for the benchmark's floor)."""
    return commit_message(task_id, replica_id, revision).decode()


def replica_path(key: str) -> str:
    """The directory of a replica in the shared tree (for the benchmark)."""
    return replica_dir(key)


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


class Trailer(Input):
    """The input of `case trailer`."""

    actor: Actor = None


def share_cases(kernel: Kernel, given: Share) -> Result:
    """`share` for one input."""
    return share(
        kernel,
        given.task_id,
        all_cases=given.all_cases,
        remote=given.remote,
        dry_run=given.dry_run,
    )


def fetch_cases(kernel: Kernel, given: Fetch) -> Result:
    """`fetch` for one input; a relative bundle file is where the call runs."""
    return fetch(
        kernel,
        given.task_id,
        pr=given.pr,
        bundle_file=given.bundle_file,
        all_cases=given.all_cases,
        remote=given.remote,
        base=given.base,
        cwd=kernel.cwd,
    )


def bundle_case(kernel: Kernel, given: Bundle) -> Result:
    """`bundle` for one input."""
    return bundle(kernel, given.task_id, output=os.path.join(kernel.cwd, given.output))


def trailers(kernel: Kernel, given: Trailer) -> Result:
    """`trailer` for one input."""
    return trailer(kernel, actor=given.actor)
