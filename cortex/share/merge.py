"""An import's merge: fetched states fenced against the local one, and what the import writes.

`fetch` (`cortex.kernel.share`) plans an import with `cortex.share.fetched`, then merges here:
the states of the fetched replicas and of the local case (`states`, `local_state`) are folded
(`cortex.share.resolve`); a case this machine lacks is built whole (`new_case`); an existing
case takes the new lines, blobs and replica entries in the transaction the kernel opened
(`into`), and adopts the state in force when another replica's wins (`adopt`). The conflicts
folding found are kept, bounded (`record_conflicts`). The kernel takes the lock, stamps who
acted and commits; nothing here decides whether a fetch may run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import msgspec

from cortex.cases.bounds import SHARE_CONFLICTS_KEPT, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import NotFoundError
from cortex.cases.fsio import read_bounded
from cortex.cases.ids import new_id
from cortex.cases.layout import REPLICAS_FILE, replica_ledger
from cortex.cases.records import CaseFile, PhaseChange, SnapshotRef, Workspace, encode_pretty
from cortex.cases.replica_index import (
    Conflict,
    ConflictSide,
    Fence,
    HeadInfo,
    ImportedReplica,
    LocalSync,
    ReplicaIndex,
)
from cortex.share.format import SNAPSHOTS, ref
from cortex.share.intake import check_adoptable, snapshot_revision, snapshots_of
from cortex.share.project import ADOPTED_FIELDS, content_digest, project_case
from cortex.share.resolve import State, fold

if TYPE_CHECKING:
    from cortex.cases.redact import Redactor
    from cortex.share.fetched import CaseTree, Fetched, Import
    from cortex.share.leaving import Context
    from cortex.share.publish import SharedTree


class NewCase(msgspec.Struct, kw_only=True):
    """A case built whole from a fetch, for the kernel to create with its first phase."""

    case: CaseFile
    files: dict[str, bytes]
    adopted: str
    """The replica whose state the case starts in."""
    result: dict[str, Any]


def summary(task_id: str, imports: list[Import], behind: list[str]) -> dict[str, Any]:
    """What a fetch reports of one case imported into an existing one (filled in by `into`)."""
    return {
        "taskId": task_id,
        "created": False,
        "unchanged": not imports,
        "imported": {i.key: i.lines for i in imports},
        "adopted": None,
        "conflicts": 0,
        "forks": [i.key for i in imports if i.forked],
        "behind": behind,
    }


def new_case(
    shared: SharedTree,
    tree: CaseTree,
    *,
    source: str,
    replica: str,
    redactor: Redactor,
    workspace: Workspace,
    now: str,
) -> NewCase:
    """The files of a case this machine does not hold yet, whole, from the fetched replicas."""
    from cortex.share import fetched as fetched_module

    imports = fetched_module.plan(
        shared,
        tree,
        path=None,
        case=None,
        index=None,
        replica=replica,
        local_key=None,
        redactor=redactor,
    )
    if not imports:
        raise NotFoundError(f"the shared case {tree.task_id} holds nothing to import")
    outcome = fold(None, states(imports))
    assert outcome is not None  # noqa: S101 - there are states
    winner = outcome.winner
    source_key = next(i.source for i in imports if i.key == winner.key)
    shared_case, documents, summary_file = snapshots_of(shared, tree.replicas[source_key])
    check_adoptable(shared_case, documents, imports, None)
    files: dict[str, bytes] = {}
    snapshots: dict[str, SnapshotRef] = {}
    for name, data in documents.items():
        files[name] = data
        snapshots[name.removesuffix(".json")] = SnapshotRef(
            revision=snapshot_revision(data), sha256=sha256_hex(data)
        )
    if summary_file is not None:
        files["summary.md"] = summary_file
    for item in imports:
        for ledger_name, (data, _) in item.appends.items():
            files[replica_ledger(item.key, ledger_name)] = data
        files.update(item.blobs)
    clock = max([s.fence.lamport for s in states(imports)]) + 1
    index = ReplicaIndex(
        revision=1,
        local=LocalSync(
            replica=replica,
            clock=clock,
            base_revision=1,
            digest=winner.digest,
            origin=winner.origin,
            known=outcome.known,
        ),
        in_force=winner.key,
        replicas=[imported(i, source, tree.commit, now) for i in imports],
    )
    record_conflicts(index, outcome.conflicts, now)
    index_bytes = encode_pretty(index)
    files[REPLICAS_FILE] = index_bytes
    snapshots["replicas"] = SnapshotRef(revision=1, sha256=sha256_hex(index_bytes))
    fields = {f: getattr(shared_case, f) for f in ADOPTED_FIELDS}
    workspace = Workspace(
        kind=workspace.kind,
        root=workspace.root,
        repository=workspace.repository,
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
    result = {
        "taskId": tree.task_id,
        "created": True,
        "unchanged": False,
        "imported": {i.key: i.lines for i in imports},
        "adopted": winner.key,
        "conflicts": len(outcome.conflicts),
        "forks": [i.key for i in imports if i.forked],
        "behind": [],
    }
    return NewCase(case=case, files=files, adopted=winner.key, result=result)


def local_state(shared: SharedTree, context: Context) -> tuple[State, str]:
    """The local state as fencing sees it, and its content digest."""
    from cortex.share.export import lamport_of, origin_of
    from cortex.share.leaving import Checker, leaving_snapshots
    from cortex.share.publish import commit_of

    case, index, replica, mapping = context.case, context.index, context.replica, context.paths
    checker = Checker(context.redactor, mapping)
    shas, _ = leaving_snapshots(context, context.store.case_path(case.id), checker)
    summary_path = os.path.join(context.store.case_path(case.id), "summary.md")
    summary_sha = None
    if os.path.lexists(summary_path):
        summary_sha = sha256_hex(mapping.data(read_bounded(summary_path, SNAPSHOT_MAX)))
    digest = content_digest(project_case(case, mapping), shas, summary_sha)
    lamport = lamport_of(case, index)
    previous = None
    local = commit_of(shared.objects, ref(case.id))
    if local is not None:
        from cortex.share.publish import read_previous

        previous = read_previous(shared, local[1], replica).head
    origin = origin_of(digest, lamport, replica, previous, index)
    known = dict(index.local.known) if index is not None else {}
    epoch = case.change_lease.epoch if case.change_lease is not None else 0
    fence = Fence(epoch=epoch, lamport=lamport, replica=replica)
    side = ConflictSide(
        replica=replica,
        fence=fence,
        digest=digest,
        origin=origin,
        phase=case.status,
        lease_actor=case.change_lease.actor if case.change_lease else None,
        lease_epoch=epoch,
    )
    state = State(key="", fence=fence, digest=digest, origin=origin, known=known, side=side)
    return state, digest


def into(  # noqa: PLR0917 - one call site, each argument a different fact
    shared: SharedTree,
    tree: CaseTree,
    imports: list[Import],
    local: State,
    result: dict[str, Any],
    txn: Any,
    *,
    index: ReplicaIndex | None,
    source: str,
    replica: str,
    actor: str,
    now: str,
) -> None:
    """Merge `imports` into the case `txn` writes (it holds the case lock); fill in `result`."""
    case: CaseFile = txn.case
    outcome = fold(local, states(imports))
    assert outcome is not None  # noqa: S101 - there is a local state
    winner = outcome.winner
    index = index or ReplicaIndex(local=LocalSync(replica=replica))
    if winner.key and winner.digest != local.digest:
        source_key = next(i.source for i in imports if i.key == winner.key)
        adopt(
            shared,
            tree.replicas[source_key],
            txn=txn,
            key=winner.key,
            source=source,
            actor=actor,
            now=now,
            imports=imports,
            local=(txn.path, case, index),
        )
        index.in_force = winner.key
        result["adopted"] = winner.key
    lamports = [local.fence.lamport, *(s.fence.lamport for s in states(imports))]
    index.local = LocalSync(
        replica=replica,
        clock=max(lamports) + 1,
        base_revision=case.revision + 1,
        digest=winner.digest,
        origin=winner.origin,
        known=outcome.known,
    )
    by_key = {r.key: r for r in index.replicas}
    for item in imports:
        by_key[item.key] = imported(item, source, tree.commit, now)
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
    record_conflicts(index, outcome.conflicts, now)
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


def adopt(
    shared: SharedTree,
    remote: Fetched,
    *,
    txn: Any,
    key: str,
    source: str,
    actor: str,
    now: str,
    imports: list[Import],
    local: tuple[str, CaseFile, ReplicaIndex | None],
) -> None:
    """Make the local case hold another replica's state (docs/design/sharing.md, adoption)."""
    shared_case, documents, summary_file = snapshots_of(shared, remote)
    check_adoptable(shared_case, documents, imports, local)
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
        txn.stage_snapshot_bytes(name, data, snapshot_revision(data))
    if summary_file is not None and not os.path.lexists(os.path.join(txn.path, "summary.md")):
        txn.stage_blob("summary.md", summary_file, redact=False)
    if case.status != before:
        txn.append(
            "phases",
            PhaseChange(
                id=new_id("ph"),
                timestamp=now,
                from_phase=before,
                to_phase=case.status,
                actor=actor,
                reason=f"adopted the state of replica {key} (fetched from {source})",
                adopted=key,
                via="share",  # the state came from another replica
            ),
        )


def states(imports: list[Import]) -> list[State]:
    """Each fetched replica's state, as fencing compares it."""
    found = []
    for item in imports:
        head = item.head
        fence = Fence(epoch=head.epoch, lamport=head.lamport, replica=item.key)
        side = ConflictSide(
            replica=item.key, fence=fence, digest=head.digest, origin=head.origin, phase=head.status
        )
        found.append(
            State(
                key=item.key,
                fence=fence,
                digest=head.digest,
                origin=head.origin,
                known=dict(head.known),
                side=side,
            )
        )
    return found


def imported(item: Import, source: str, commit: str, now: str) -> ImportedReplica:
    """The replica index's entry for a replica just imported."""
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


def record_conflicts(index: ReplicaIndex, pairs: list[tuple[State, State]], now: str) -> None:
    """Keep the conflicts a fold found (the latest, bounded) and count them all."""
    for winner, loser in pairs:
        assert winner.side is not None  # noqa: S101 - every state has one
        assert loser.side is not None  # noqa: S101 - every state has one
        index.conflicts.append(Conflict(at=now, winner=winner.side, loser=loser.side))
    index.conflicts = index.conflicts[-SHARE_CONFLICTS_KEPT:]
    index.conflicts_total += len(pairs)
