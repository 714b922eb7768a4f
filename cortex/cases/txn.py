"""One commit on an existing case: lock, recover, read, stage, append, publish, commit.

Use it as a context manager; leaving the block normally commits, an exception writes nothing
that readers can see. Every commit also appends the command's audit line, so no mutation can
skip the audit trail. Steps and crash points follow docs/design/storage.md; the journal a dead
writer left is resolved by `cortex.cases.recovery`, loaded only when there is one.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from types import TracebackType
from typing import Literal, Self, TypeVar

import msgspec

from cortex.cases import _crash, ledger
from cortex.cases.bounds import JOURNAL_MAX, RAW_BLOB_MAX, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import (
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    RevisionConflictError,
)
from cortex.cases.fsio import (
    TEMP_PREFIX,
    UnsyncedReplaceError,
    check_real_dir,
    fsync_dir,
    holds,
    make_private_dirs,
    read_bounded,
    temp_name,
    unlink_if_present,
    write_atomic,
    write_new_file,
)
from cortex.cases.ids import new_id
from cortex.cases.journal import decode_journal, journal_entry_ok
from cortex.cases.layout import (
    ACTIVITY_LOCK,
    AUX_SNAPSHOTS,
    BACKUP_PREFIX,
    CASE_FILE,
    JOURNAL_FILE,
    LOCK_FILE,
    RAW_DIR,
    ledger_file,
)
from cortex.cases.lock import FileLock
from cortex.cases.records import (
    LEDGERS,
    ActivityAnchor,
    CaseFile,
    Command,
    ForgetStep,
    Forgetting,
    Journal,
    LedgerRecord,
    LedgerState,
    SnapshotRef,
    StagedFile,
    case_digest,
    encode,
    encode_pretty,
)
from cortex.cases.scrub import scrub
from cortex.cases.store import (
    CaseStore,
    SnapshotMovedError,
    chain,
    monotonic_ms,
)

_D = TypeVar("_D", bound=msgspec.Struct)

IMMUTABLE_FIELDS = ("id", "schema_version", "created_at", "workspace", "acceptance_criteria")
"""Fields no commit may change; acceptance criteria are a contract fixed at open."""


class Transaction:
    """A commit in progress; see the module docstring."""

    def __init__(
        self,
        store: CaseStore,
        task_id: str,
        *,
        actor: str,
        operation: str,
        expected_revision: int | None,
        started_ms: int | None = None,
    ) -> None:
        if expected_revision is not None and expected_revision < 0:
            # No case is ever at a negative revision: this is bad input, not a conflict to retry.
            msg = f"the expected revision must be 0 or more, not {expected_revision}"
            raise InvalidInputError(msg)
        self.store = store
        self.task_id = task_id
        self.actor = actor
        self.operation = operation
        self.expected_revision = expected_revision
        self.path = store.case_path(task_id)
        self.target: str | None = None
        self.notes: list[str] = []
        """What recovery did before this commit (kept in the audit line)."""
        self.warnings: list[str] = []
        """Things the caller should know about a commit that did happen."""
        self.committed: CaseFile | None = None
        self.written: dict[str, list[LedgerRecord]] = {}
        self.skip = False
        """Set by a caller that found nothing to do (an idempotent retry): no commit."""
        self._fences: list[Callable[[], None]] = []
        self.case: CaseFile
        self._immutable = b""
        self._content = b""
        self._base_revision = 0
        self._appends: dict[str, list[LedgerRecord]] = {}
        self._floors: dict[str, str] = {}
        self._blobs: list[tuple[str, bytes]] = []
        self._snapshots: list[tuple[str, msgspec.Struct]] = []
        self._verbatim: list[tuple[str, bytes, int]] = []
        self._replica_appends: list[tuple[str, bytes, int]] = []
        self._forgets: list[ForgetStep] = []
        self._started = monotonic_ms() if started_ms is None else started_ms
        self._lock = FileLock(
            os.path.join(self.path, LOCK_FILE),
            timeout=store.lock_timeout,
            info=store.lock_info(actor, operation),
            what=f"case {task_id}",
        )

    # Context manager ----------------------------------------------------------------------

    def __enter__(self) -> Self:
        try:
            self._lock.acquire()
        except FileNotFoundError:
            # Archived or removed between finding the case and locking it: nothing is written.
            raise NotFoundError(f"case {self.task_id} was moved or removed meanwhile") from None
        try:
            self.case = self.store.read_case(self.task_id)
            self._recover(self.case)
            self._check_expected_revision()
            # Encoded, not copied: a shallow copy would share the lists a caller can mutate.
            self._immutable = _immutable_bytes(self.case)
            self._content = _content_bytes(self.case)
            self._base_revision = self.case.revision
            self._place = _place(self.case)
        except BaseException:
            self._lock.release()
            raise
        return self

    def _check_expected_revision(self) -> None:
        expected = self.expected_revision
        if expected is not None and expected != self.case.revision:
            raise RevisionConflictError(expected=expected, actual=self.case.revision)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self._commit()
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._lock.release()
        except OSError as exc:
            # close(2) frees the descriptor, and the lock with it, whatever it returns: what was
            # committed stays committed, and an error on its way out must not be replaced.
            done = "committed; " if self.committed is not None else ""
            self.warnings.append(
                f"{done}releasing the case lock ended with an error ({exc.strerror or exc})"
            )

    @property
    def outcome(self) -> CaseFile:
        """The case as committed (or, when there was nothing to commit, as it was read)."""
        if self.committed is not None:
            return self.committed
        if self.skip:
            return self.case
        msg = "the transaction has not committed"
        raise RuntimeError(msg)

    # What the caller adds -----------------------------------------------------------------

    def append(self, name: str, record: LedgerRecord) -> LedgerRecord:
        """Queue a ledger record; returns it as it will be stored (redacted)."""
        if name not in LEDGERS:
            msg = f"unknown ledger {name!r}"
            raise ValueError(msg)
        floor = self._floors.get(name)
        if floor is None:
            state = self.case.ledgers.get(name) or LedgerState()
            floor = max(state.last, self.case.updated_at)
        if record.timestamp < floor:
            # The clock stepped back: keep the ledger in time order (storage.md, "Time order").
            record = msgspec.structs.replace(record, timestamp=floor)
        self._floors[name] = record.timestamp
        clean, _ = scrub(self.store.arrived(record), self.store.redactor)
        self._appends.setdefault(name, []).append(clean)
        return clean

    def stage_blob(self, relative: str, data: bytes, *, redact: bool = True) -> tuple[bytes, bool]:
        """Queue a new write-once blob (`raw/raw_….txt`, or a tree's `raw/raw_….tree`).

        Returns the bytes as they will be stored (redacted) and whether redaction changed them.
        `redact=False` is for a document the caller built from strings it redacted one by one
        (a tree's listing): a pass over its serialized form would read field boundaries as text.
        """
        if len(data) > RAW_BLOB_MAX:
            msg = f"blob is {len(data)} bytes, over the {RAW_BLOB_MAX}-byte limit"
            raise InvalidInputError(msg)
        probe = StagedFile(staged=TEMP_PREFIX + "probe", final=relative)
        if not journal_entry_ok(probe):
            msg = f"{relative!r} is not a blob or write-once file of the case format"
            raise ValueError(msg)
        clean = self.store.redactor.redact_bytes(data) if redact else data
        self._blobs.append((relative, clean))
        return clean, clean != data

    def snapshot(self, name: str, type_: type[_D]) -> _D | None:
        """The committed version of an auxiliary snapshot (consistent: we hold the lock)."""
        try:
            return self.store.load_snapshot(self.case, name, type_)
        except SnapshotMovedError:
            msg = f"{name} does not hold the version case.json records"
            raise IntegrityError(msg, path=os.path.join(self.path, name)) from None

    def fence(self, check: Callable[[], None]) -> None:
        """Run `check` again immediately before the first write; raising aborts the commit.

        For conditions that can lapse while the process is stopped, such as a lease's expiry.
        """
        self._fences.append(check)

    def stage_snapshot(self, name: str, document: msgspec.Struct) -> None:
        """Queue a replacement of an auxiliary snapshot (it must have a `revision` field)."""
        if name not in AUX_SNAPSHOTS:
            msg = f"{name!r} is not an auxiliary snapshot"
            raise ValueError(msg)
        self._once(name)
        self._snapshots.append((name, document))

    def _once(self, name: str) -> None:
        # Publishing links each staged snapshot once: a second one of the same name would fail
        # there, late and obscurely. It is the caller's mistake, said now.
        if any(staged == name for staged, *_ in (*self._snapshots, *self._verbatim)):
            msg = f"{name} is staged twice in one commit"
            raise ValueError(msg)

    def stage_snapshot_bytes(self, name: str, data: bytes, revision: int) -> None:
        """Queue an auxiliary snapshot written byte for byte, as another replica wrote it.

        A fetch adopts a shared state this way (docs/design/sharing.md): its bytes, and so its
        digest, stay those every other machine has (a batch names its plan by that digest).
        `revision` is the revision the bytes carry; the caller has decoded and checked them.
        """
        if name not in AUX_SNAPSHOTS:
            msg = f"{name!r} is not an auxiliary snapshot"
            raise ValueError(msg)
        if len(data) > SNAPSHOT_MAX:
            raise InvalidInputError(f"{name} is {len(data)} bytes, over {SNAPSHOT_MAX}")
        self._once(name)
        self._verbatim.append((name, data, revision))

    def append_replica(self, relative: str, data: bytes, committed: int) -> None:
        """Queue whole lines for an imported replica's ledger (`replicas/<key>/<ledger>.jsonl`).

        `committed` is its committed length, which the journal records so that a rollback
        truncates it back. The caller verified the lines' chain and records the new extent in
        the `replicas.json` it stages in the same commit.
        """
        from cortex.cases.layout import parse_replica_ledger

        if parse_replica_ledger(relative) is None:
            msg = f"{relative!r} is not an imported replica's ledger"
            raise ValueError(msg)
        self._replica_appends.append((relative, data, committed))

    def forget(
        self, record_id: str, *, what: Literal["record", "raw"] = "record"
    ) -> list[Forgetting]:
        """Queue replacing a committed evidence record (or only its raw output) by a tombstone.

        Every copy is found: in this replica's evidence ledger and in each imported replica's.
        The tombstones are written, and the blobs removed, only after the commit point; recovery
        finishes that if the writer dies (docs/design/storage.md, "Forgetting a record").
        Returns what forget records must vouch for, one per copy.
        """
        from cortex.cases.forgetting import plan

        planned = plan(self, record_id, what=what)
        queued = {(step.ledger, step.offset) for step in self._forgets}
        if any((step.ledger, step.offset) in queued for step, _ in planned):
            msg = f"{record_id} is forgotten twice in one commit"
            raise ValueError(msg)
        self._forgets += [step for step, _ in planned]
        return [forgetting for _, forgetting in planned]

    # Commit -------------------------------------------------------------------------------

    def _commit(self) -> None:
        if self.skip:
            return
        case = self.case
        if _immutable_bytes(case) != self._immutable:
            changed = ", ".join(IMMUTABLE_FIELDS)
            raise InvalidInputError(f"these fields cannot change once a case exists: {changed}")
        if case.revision != self._base_revision:
            msg = "the revision is managed by the store"
            raise ValueError(msg)
        # Never before the previous commit, nor before a record of this one (the floors).
        now = max(self.store.now(), case.updated_at, *self._floors.values())
        revision = case.revision + 1

        # Encode everything first: a bound or redaction refusal must come before any write.
        snapshots = dict(case.snapshots)
        staged: list[tuple[StagedFile, bytes]] = []
        for relative, blob in self._blobs:
            staged.append((StagedFile(staged="", final=relative), blob))
        for name, document in self._snapshots:
            versioned = msgspec.structs.replace(document, revision=revision)
            clean, _ = scrub(versioned, self.store.redactor)
            encoded = encode_pretty(clean)
            if len(encoded) > SNAPSHOT_MAX:
                msg = f"{name} would be {len(encoded)} bytes, over {SNAPSHOT_MAX}"
                raise InvalidInputError(msg)
            # A backup only when there is something to restore; otherwise the commit creates it.
            exists = os.path.lexists(os.path.join(self.path, name))
            backup = BACKUP_PREFIX + name if exists else None
            staged.append((StagedFile(staged="", final=name, backup=backup), encoded))
            snapshots[name.removesuffix(".json")] = SnapshotRef(
                revision=revision, sha256=sha256_hex(encoded)
            )
        for name, encoded, tagged in self._verbatim:
            exists = os.path.lexists(os.path.join(self.path, name))
            backup = BACKUP_PREFIX + name if exists else None
            staged.append((StagedFile(staged="", final=name, backup=backup), encoded))
            snapshots[name.removesuffix(".json")] = SnapshotRef(
                revision=tagged, sha256=sha256_hex(encoded)
            )
        if self._replica_appends and not staged:
            msg = "an import stages replicas.json: replica appends need the journal"
            raise ValueError(msg)
        new_case = msgspec.structs.replace(
            case, revision=revision, updated_at=now, snapshots=snapshots
        )
        if _content_bytes(case) != self._content:
            # Only a changed case needs redacting again: what was read was redacted when written.
            new_case, _ = scrub(new_case, self.store.redactor)
        self.append(
            "commands",
            Command(
                id=new_id("cmd"),
                timestamp=now,
                actor=self.actor,
                operation=self.operation,
                duration_ms=monotonic_ms() - self._started,
                target=self.target,
                note="; ".join(self.notes) or None,
                case_digest=case_digest(new_case),
                activity=_activity_anchor(self.path),
            ),
        )
        ledgers = dict(case.ledgers)
        payloads: list[tuple[str, bytes]] = []
        for name, records in self._appends.items():
            state = ledgers.get(name) or LedgerState()
            data, ledgers[name], self.written[name] = chain(
                self.task_id, name, state, records, revision
            )
            payloads.append((name, data))
        new_case.ledgers = ledgers
        snapshot = encode_pretty(new_case)
        if len(snapshot) > SNAPSHOT_MAX:
            msg = f"case snapshot would be {len(snapshot)} bytes, over {SNAPSHOT_MAX}"
            raise InvalidInputError(msg)

        _crash.point("txn.fence")
        for check in self._fences:
            check()
        journal = None
        try:
            if staged or self._forgets:
                journal = self._stage(staged, case, revision)
            for name, data in payloads:
                ledger.append(os.path.join(self.path, ledger_file(name)), data)
            self._append_replicas()
            if journal is not None:
                _crash.point("txn.appended")
                self._publish(journal)
                _crash.point("txn.published")
            self._replace_case(snapshot)
        except BaseException:
            # Leave no debris behind a failed write (a full disk, a refused link, a journal
            # whose directory could not be synced): undo it now, while we still hold the lock.
            # If this fails too, the next writer will.
            self._undo_quietly()
            raise
        _crash.point("txn.case_replaced" if journal else "commit.case_replaced")
        self.committed = new_case
        if _place(new_case) != self._place:
            self.store.moved[self.task_id] = (self._place[0], new_case.status)
        if journal is not None:
            try:
                self._finish(journal)
            except (OSError, IntegrityError) as exc:
                self.warnings.append(f"committed; cleanup is left to the next write ({exc})")

    def _replace_case(self, snapshot: bytes) -> None:
        """The commit point: case.json's rename. Only this rename unsynced is a warning."""
        path = os.path.join(self.path, CASE_FILE)
        try:
            write_atomic(path, snapshot)
        except UnsyncedReplaceError as exc:
            # The rename is done, so the commit is visible: report it as made, and say what is
            # uncertain, rather than invite a retry that would record everything twice. (The
            # journal's own rename unsynced is a plain failure: nothing was committed yet.)
            self.warnings.append(
                f"committed, but the directory could not be flushed to disk ({exc.strerror}); "
                "the change may not survive a power loss"
            )
        except OSError as exc:
            # A rename can take effect and still fail (network file systems), and the temp
            # file is closed after it: what case.json holds decides whether this committed.
            if not holds(path, snapshot):
                raise
            self.warnings.append(
                f"committed, but writing case.json ended with an error ({exc.strerror or exc}); "
                "the change may not survive a power loss"
            )

    def _append_replicas(self) -> None:
        created: set[str] = set()
        for relative, data, _ in self._replica_appends:
            path = os.path.join(self.path, relative)
            directory = os.path.dirname(path)
            if not os.path.lexists(directory):
                # Every directory it makes is private, `replicas/` included (makedirs' mode
                # would reach only the last one).
                make_private_dirs(directory)
                created.add(os.path.dirname(directory))
            check_real_dir(directory)
            if not os.path.lexists(path):
                created.add(directory)
            ledger.append(path, data)
        for directory in sorted(created, reverse=True):
            fsync_dir(directory)

    def _undo_quietly(self) -> None:
        # The original error is the one to report; contextlib costs 0.5 ms to import.
        try:  # noqa: SIM105
            self._recover(self.store.read_case(self.task_id))
        except Exception:  # noqa: BLE001, S110
            pass

    def _stage(
        self, staged: list[tuple[StagedFile, bytes]], case: CaseFile, revision: int
    ) -> Journal:
        check_real_dir(os.path.join(self.path, RAW_DIR))
        files: list[StagedFile] = []
        for entry, data in staged:
            tmp = temp_name(self.path, os.path.basename(entry.final))
            write_new_file(tmp, data)
            inode = os.lstat(tmp).st_ino
            files.append(msgspec.structs.replace(entry, staged=os.path.basename(tmp), inode=inode))
        _crash.point("txn.staged")
        journal = Journal(
            task_id=self.task_id,
            from_revision=case.revision,
            to_revision=revision,
            ledgers={name: (case.ledgers.get(name) or LedgerState()).bytes for name in LEDGERS},
            files=files,
            replica_ledgers={path: committed for path, _, committed in self._replica_appends},
            forget=self._forgets,
        )
        write_atomic(os.path.join(self.path, JOURNAL_FILE), encode(journal))
        _crash.point("txn.journaled")
        return journal

    def _publish(self, journal: Journal) -> None:
        directories = {self.path}
        for entry in journal.files:
            final = os.path.join(self.path, entry.final)
            staged = os.path.join(self.path, entry.staged)
            # Never write through a directory that was swapped for a symlink.
            check_real_dir(os.path.dirname(final))
            if entry.backup is None:
                # A file this commit creates: link refuses to replace an existing one.
                os.link(staged, final)
                os.unlink(staged)
            else:
                os.link(final, os.path.join(self.path, entry.backup))
                os.replace(staged, final)
            directories.add(os.path.dirname(final))
        for directory in directories:
            fsync_dir(directory)

    def _finish(self, journal: Journal) -> None:
        if journal.forget:
            from cortex.cases.forgetting import apply

            apply(self.path, journal.forget)
        for entry in journal.files:
            if entry.backup is not None:
                unlink_if_present(os.path.join(self.path, entry.backup))
        os.unlink(os.path.join(self.path, JOURNAL_FILE))
        fsync_dir(self.path)

    # Recovery ------------------------------------------------------------------------------

    def _recover(self, case: CaseFile) -> None:
        """Undo or finish what a dead writer left, so this commit starts from a clean state.

        Recovery never touches case.json: it is only ever replaced at a commit point.
        """
        journal_path = os.path.join(self.path, JOURNAL_FILE)
        if os.path.lexists(journal_path):
            from cortex.cases import recovery

            journal = decode_journal(read_bounded(journal_path, JOURNAL_MAX), journal_path)
            recovery.resolve(self.store, self.path, self.task_id, journal, case, self.notes)
            if case.revision >= journal.to_revision:
                # The commit point was reached: only the clean-up is missing.
                self._finish(journal)
                self.notes.append(
                    f"finished cleaning up the commit of revision {journal.to_revision}"
                )
        for name in LEDGERS:
            path = os.path.join(self.path, ledger_file(name))
            state = case.ledgers.get(name) or LedgerState()
            if ledger.uncommitted_tail(path, state.bytes) or _shorter(path, state.bytes):
                extra = ledger.check_tail(path, state.bytes, case.revision)
                if extra:
                    ledger.truncate(path, state.bytes)
                    self.notes.append(f"removed {extra} uncommitted bytes from {ledger_file(name)}")
        removed = 0
        for name in os.listdir(self.path):
            if not name.startswith((TEMP_PREFIX, BACKUP_PREFIX)):
                continue
            full = os.path.join(self.path, name)
            # Only files (or links) are ours to remove; a directory here is not our debris, and
            # `audit` reports it rather than us deleting what we did not make.
            if not stat.S_ISDIR(os.lstat(full).st_mode):
                unlink_if_present(full)
                removed += 1
        if removed:
            fsync_dir(self.path)
            self.notes.append(f"removed {removed} temporary file(s) of an interrupted write")


def _content_bytes(case: CaseFile) -> bytes:
    """Everything a caller can change in case.json (not the store's own bookkeeping)."""
    return encode(
        msgspec.structs.replace(case, revision=0, updated_at="", ledgers={}, snapshots={})
    )


def _immutable_bytes(case: CaseFile) -> bytes:
    return encode([getattr(case, field) for field in IMMUTABLE_FIELDS])


def _shorter(path: str, committed: int) -> bool:
    try:
        return os.lstat(path).st_size < committed
    except FileNotFoundError:
        return committed > 0


def _place(case: CaseFile) -> tuple[str, tuple[str, ...]]:
    """A case's phase and change boundary, copied: callers mutate the case in place."""
    return case.status, tuple(case.change_boundary.files)


def _activity_anchor(case_dir: str) -> ActivityAnchor | None:
    """The activity log's last record, for the command's anchor (docs/design/activity.md).

    One stat when no capture ever ran for the case, the common case, without loading the
    activity module on every commit.
    """
    if not os.path.exists(os.path.join(case_dir, ACTIVITY_LOCK)):
        return None
    from cortex.cases import activity

    return activity.last(case_dir)
