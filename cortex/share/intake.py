"""What a fetch reads before it imports: where fetched refs land, and the state it would adopt.

A fetch lands each case under its own private ref namespace (`INCOMING`), so a case that fails
its checks leaves nothing behind, and the leftovers of a killed fetch are dropped by the next.
A pull request names its cases in commit trailers (`pull_request_cases`). The state an import
would adopt is read back from the fetched tree, each snapshot checked against its head
(`snapshots_of`), and checked to hold together as `audit` checks a case (`check_adoptable`).
Nothing here writes a case; the use case `fetch` (`cortex.kernel.share`) decides and commits.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec

from cortex.cases.documents import AUX_TYPES
from cortex.cases.errors import ArgumentError, IntegrityError, NotFoundError
from cortex.cases.layout import replica_ledger
from cortex.cases.records import CaseFile, LineMeta, decode
from cortex.share import remote as remote_module
from cortex.share.format import SNAPSHOTS, ref, tracking

if TYPE_CHECKING:
    from cortex.cases.replica_index import ReplicaIndex
    from cortex.share.fetched import Fetched, Import
    from cortex.share.git import Git
    from cortex.share.publish import SharedTree

INCOMING = "refs/cortex-incoming"
"""Where a fetch lands before each case is checked (docs/design/sharing.md, each case)."""


def incoming(git: Git) -> str:
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


def drop_incoming(git: Git, namespace: str) -> None:
    """Delete this fetch's private refs (every case in it is imported or refused by now)."""
    proc = git.run(["for-each-ref", "--format=%(refname)", namespace + "/"], check=False)
    names = proc.stdout.decode("utf-8", "replace").split()
    if names:
        git.run(
            ["update-ref", "--stdin"],
            stdin="".join(f"delete {n}\n" for n in names).encode(),
            check=False,
        )


def land_bundle(git: Git, path: str, namespace: str) -> list[str]:
    """Fetch every case a bundle holds into `namespace`; the task ids it holds."""
    heads = remote_module.bundle_heads(git, path)
    requested = [h.removeprefix("refs/cortex/cases/") for h in heads]
    pairs = [(ref(i), f"{namespace}/{i}") for i in requested]
    remote_module.fetch(git, path, pairs)
    return requested


def land(git: Git, remote: str, requested: list[str], namespace: str) -> list[str]:
    """Fetch the `requested` cases of `remote` into `namespace`; the refs it does not hold."""
    pairs = [(ref(i), f"{namespace}/{i}") for i in requested]
    tips = remote_module.existing(git, [tracking(remote, i) for i in requested])
    return remote_module.fetch(git, remote, pairs, tips=tips)


def exported_key(shared: SharedTree, task_id: str, replica: str) -> str | None:
    """The tree id of this replica's last export of the case, as the local case ref holds it."""
    from cortex.share.publish import commit_of

    local_commit = commit_of(shared.objects, ref(task_id))
    if local_commit is None:
        return None
    replicas = shared.reader.tree(local_commit[1]).get("replicas")
    if replicas is None:
        return None
    entry = shared.reader.tree(replicas.oid).get(replica)
    return entry.oid if entry is not None else None


def pull_request_cases(
    git: Git, remote: str, number: int, base: str | None
) -> tuple[list[str], list[str]]:
    """The task ids a pull request's trailers name, and the trailer values that are not ids."""
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


def snapshots_of(
    shared: SharedTree, remote: Fetched
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


def check_adoptable(
    case: CaseFile,
    documents: dict[str, bytes],
    imports: list[Import],
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


def snapshot_revision(data: bytes) -> int:
    """The revision a snapshot file carries in its own metadata."""
    return decode(data, LineMeta).revision
