"""Rolling back, or finishing, the commit a dead writer left half done (docs/design/storage.md).

A commit writes its journal before it touches anything, so a writer killed mid-commit leaves
one behind. The next commit on the case (`cortex.cases.txn`) finds it and hands it here: the
journal is checked against the committed state first (recovery deletes and truncates on the
journal's word, so a crafted one must not reach committed data), then every step of a commit
that never reached its commit point is undone. A commit that did reach it only lacks its
clean-up, which the transaction finishes itself. Loaded only when a journal is found.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cortex.cases import ledger
from cortex.cases.errors import IntegrityError
from cortex.cases.fsio import check_real_dir, fsync_dir, unlink_if_present
from cortex.cases.journal import journal_entry_ok
from cortex.cases.layout import AUX_SNAPSHOTS, JOURNAL_FILE, ledger_file
from cortex.cases.records import LEDGERS, CaseFile, Journal, LedgerState

if TYPE_CHECKING:
    from cortex.cases.store import CaseStore


def resolve(  # noqa: PLR0917 - one call site, each argument a different fact
    store: CaseStore, path: str, task_id: str, journal: Journal, case: CaseFile, notes: list[str]
) -> None:
    """Check `journal`, then undo its commit unless `case` shows the commit point was reached.

    IntegrityError when the journal could not have been written by this protocol; the case
    is then left untouched. `notes` gets a line for what was rolled back.
    """
    committed = case.revision >= journal.to_revision
    needed = journal.replica_ledgers or any(
        s.ledger.startswith("replicas/") for s in journal.forget
    )
    lengths = replica_lengths(store, path, case) if needed else {}
    _check_journal(journal, task_id, case, committed=committed, replica_lengths=lengths)
    if committed:
        return
    for name, length in journal.ledgers.items():
        file = os.path.join(path, ledger_file(name))
        if os.path.exists(file) and os.path.getsize(file) > length:
            ledger.truncate(file, length)
    for relative, length in journal.replica_ledgers.items():
        file = os.path.join(path, relative)
        check_real_dir(os.path.dirname(file))
        if relative not in lengths:
            # No committed replicas.json records it: the interrupted import created it.
            _remove_new_replica_ledger(file)
        elif os.path.lexists(file) and os.lstat(file).st_size > length:
            ledger.truncate(file, length)
    for entry in reversed(journal.files):
        final = os.path.join(path, entry.final)
        staged = os.path.join(path, entry.staged)
        check_real_dir(os.path.dirname(final))
        if entry.backup is not None:
            backup = os.path.join(path, entry.backup)
            if os.path.lexists(backup):
                os.replace(backup, final)
        elif os.path.lexists(final) and not os.path.lexists(staged):
            # Published (linked, then the staged name removed): this commit created it, if
            # it is still the file this commit staged. Anything else is left for `audit`
            # (a forged or foreign journal must not delete what another commit published).
            if entry.inode is not None and os.lstat(final).st_ino == entry.inode:
                os.unlink(final)
        elif os.path.lexists(final) and os.path.samefile(final, staged):
            # Linked but the staged name not yet removed: same inode, created by us.
            os.unlink(final)
        unlink_if_present(staged)
        fsync_dir(os.path.dirname(final))
    os.unlink(os.path.join(path, JOURNAL_FILE))
    fsync_dir(path)
    notes.append(f"rolled back an interrupted commit of revision {journal.to_revision}")


def replica_lengths(store: CaseStore, path: str, case: CaseFile) -> dict[str, int]:
    """The committed length of every imported replica's ledger, by its relative path."""
    from cortex.cases.layout import REPLICAS_FILE, replica_ledger
    from cortex.cases.replica_index import ReplicaIndex
    from cortex.cases.store import SnapshotMovedError

    if "replicas" not in case.snapshots:
        return {}
    try:
        index = store.load_snapshot(case, REPLICAS_FILE, ReplicaIndex)
    except SnapshotMovedError:
        msg = f"{REPLICAS_FILE} does not hold the version case.json records"
        raise IntegrityError(msg, path=os.path.join(path, REPLICAS_FILE)) from None
    if index is None:
        return {}
    return {
        replica_ledger(replica.key, name): state.bytes
        for replica in index.replicas
        for name, state in replica.ledgers.items()
    }


def _check_journal(
    journal: Journal,
    task_id: str,
    case: CaseFile,
    *,
    committed: bool,
    replica_lengths: dict[str, int],
) -> None:
    """Refuse a journal this protocol could not have written, before it can touch anything.

    Recovery deletes and truncates on the journal's word, so the word is checked against the
    committed state: a crafted journal must not be able to truncate acknowledged records,
    unlink a ledger or move the lock file.
    """
    problem = None
    if journal.task_id != task_id or journal.to_revision != journal.from_revision + 1:
        problem = "it belongs to another case or spans more than one revision"
    elif not committed and journal.from_revision != case.revision:
        problem = (
            f"it starts from revision {journal.from_revision}, not the current {case.revision}"
        )
    elif not committed and any(
        name not in LEDGERS or length != (case.ledgers.get(name) or LedgerState()).bytes
        for name, length in journal.ledgers.items()
    ):
        problem = "its ledger lengths are not the committed ones"
    elif not committed and not _replica_lengths_ok(journal, replica_lengths):
        problem = "its imported replicas' ledger lengths are not the committed ones"
    elif journal.forget and not _forgets_ok(journal, case, replica_lengths):
        problem = "it names a forget this case's ledgers cannot hold"
    else:
        for entry in journal.files:
            if not journal_entry_ok(entry):
                problem = f"it names an unexpected file {entry.final!r}"
                break
            if (
                not committed
                and entry.backup is None
                and entry.final in AUX_SNAPSHOTS
                and entry.final.removesuffix(".json") in case.snapshots
            ):
                # A commit replacing a snapshot the case records keeps a backup of it; one
                # said to have created it would have the rollback delete committed data.
                problem = f"it would remove the committed {entry.final}"
                break
    if problem is not None:
        msg = f"the commit journal of {task_id} cannot be trusted ({problem}); left untouched"
        raise IntegrityError(msg)


def _forgets_ok(journal: Journal, case: CaseFile, replica_lengths: dict[str, int]) -> bool:
    """Each forget step replaces a range of an evidence ledger of this case, committed."""
    from cortex.cases.forgetting import step_ok

    evidence = (case.ledgers.get("evidence") or LedgerState()).bytes
    return all(step_ok(step, evidence, replica_lengths) for step in journal.forget)


def _replica_lengths_ok(journal: Journal, committed: dict[str, int]) -> bool:
    """A rollback truncates replica ledgers only to the lengths the committed state records."""
    from cortex.cases.layout import parse_replica_ledger

    return all(
        parse_replica_ledger(relative) is not None and length == committed.get(relative, 0)
        for relative, length in journal.replica_ledgers.items()
    )


def _remove_new_replica_ledger(path: str) -> None:
    """Remove a replica ledger an interrupted import created, and its directories if empty."""
    directory = os.path.dirname(path)
    unlink_if_present(path)
    for folder in (directory, os.path.dirname(directory)):  # replicas/<key>, then replicas/
        try:
            os.rmdir(folder)
        except OSError:
            # Not empty (another ledger, another replica): what was removed in it stays so.
            if os.path.isdir(folder):
                fsync_dir(folder)
            return
        fsync_dir(os.path.dirname(folder))
