"""The case store: where cases live, how they are read, and the doors writers go through.

Readers here take no lock and write nothing. Writers go through `CaseStore.create`
(cortex.cases.creation) or `CaseStore.transaction` (cortex.cases.txn), both of which hold the
relevant lock for the whole write. The protocol is docs/design/storage.md.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from cortex.cases import ledger
from cortex.cases.bounds import SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import (
    BusyError,
    IntegrityError,
    NotFoundError,
    UnsupportedSchemaError,
)
from cortex.cases.fsio import (
    TEMP_PREFIX,
    read_bounded,
)
from cortex.cases.ids import is_id
from cortex.cases.layout import (
    ARCHIVE_DIR,
    BACKUP_PREFIX,
    CASE_FILE,
    JOURNAL_FILE,
    REPLICAS_FILE,
    case_dir,
    ledger_file,
)
from cortex.cases.records import (
    LEDGER_TYPES,
    LEDGERS,
    SCHEMA_VERSION,
    CaseFile,
    Command,
    Evidence,
    LedgerRecord,
    LedgerState,
    LineMeta,
    LockInfo,
    PhaseChange,
    SchemaProbe,
    Via,
    decode,
)
from cortex.cases.redact import Redactor

if TYPE_CHECKING:
    from cortex.cases.txn import Transaction

_D = TypeVar("_D", bound=msgspec.Struct)
_R = TypeVar("_R", bound=Evidence | Command | PhaseChange)
_V = TypeVar("_V")


class SnapshotMovedError(Exception):
    """The snapshot version case.json names is no longer on disk: re-read case.json."""


def decode_case(data: bytes, path: str) -> CaseFile:
    """Decode case.json, telling a newer format apart from a damaged file."""
    try:
        version = decode(data, SchemaProbe).schema_version
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: not a case snapshot ({exc})", path=path) from None
    if version > SCHEMA_VERSION:
        msg = (
            f"{path} uses format version {version}; this Cortex reads up to "
            f"{SCHEMA_VERSION}. Upgrade Cortex; the file was left untouched"
        )
        raise UnsupportedSchemaError(msg, path=path)
    try:
        case = decode(data, CaseFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: {exc}", path=path) from None
    if case.revision < 1:
        raise IntegrityError(f"{path}: revision must be at least 1", path=path)
    return case


def empty_ledgers(task_id: str) -> dict[str, LedgerState]:
    """Committed state of ledgers with no lines."""
    return {name: LedgerState(tip=ledger.genesis(task_id, name)) for name in LEDGERS}


def chain(
    task_id: str, name: str, state: LedgerState, records: list[LedgerRecord], revision: int
) -> tuple[bytes, LedgerState, list[LedgerRecord]]:
    """Tag records with the revision and chain them from the committed tip.

    Returns the bytes to append, the new committed state, and the records as written.
    """
    prev = state.tip or ledger.genesis(task_id, name)
    lines: list[bytes] = []
    written: list[LedgerRecord] = []
    # Order is a property of the whole ledger: an empty one starts ordered, and one line out of
    # order (only possible for ledgers written before the rule) loses it for good.
    last, ordered = state.last, state.ordered or state.count == 0
    for record in records:
        tagged = msgspec.structs.replace(record, revision=revision, prev=prev)
        line = ledger.format_line(tagged)
        prev = ledger.line_hash(line[:-1])
        lines.append(line)
        written.append(tagged)
        ordered = ordered and record.timestamp >= last
        last = max(last, record.timestamp)
    data = b"".join(lines)
    new_state = LedgerState(
        count=state.count + len(records),
        bytes=state.bytes + len(data),
        tip=prev,
        last=last,
        ordered=ordered,
    )
    return data, new_state, written


class CaseStore:
    """All cases of one store directory."""

    def __init__(
        self,
        root: str,
        *,
        redactor: Redactor,
        lock_timeout: float,
        now: Callable[[], str],
        host: str = "",
        via: Via | None = None,
    ) -> None:
        self.root = root
        self.redactor = redactor
        self.lock_timeout = lock_timeout
        self.now = now
        self.host = host or os.uname().nodename
        self.via: Via | None = via
        """How the commands writing through this store arrived; every audit line says so."""
        self.moved: dict[str, tuple[str, str]] = {}
        """Cases whose phase or change boundary a commit through this store changed, with the
        phase before and after: the capture card (cortex.kernel.activity.capture_card) is
        rewritten for those that were or are being changed only."""

    def arrived(self, record: _R) -> _R:
        """`record` stamped with the channel its commit arrived on, unless it names one."""
        via = self.via
        if via is None:
            return record
        if isinstance(record, Evidence):
            if record.source.via is None:
                source = msgspec.structs.replace(record.source, via=via)
                return msgspec.structs.replace(record, source=source)
            return record
        if record.via is None:
            return msgspec.structs.replace(record, via=via)
        return record

    # Paths --------------------------------------------------------------------------------

    def case_path(self, task_id: str) -> str:
        """The directory of an existing case; refuses a symlinked one."""
        path = case_dir(self.root, task_id)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise NotFoundError(f"no case {task_id} in {self.root}") from None
        if stat.S_ISLNK(mode):
            raise IntegrityError(f"{path} is a symlink; refusing to follow it", path=path)
        if not stat.S_ISDIR(mode):
            raise IntegrityError(f"{path} is not a directory", path=path)
        return path

    def exists(self, task_id: str) -> bool:
        """Whether the store has an entry for this case (a symlink counts, and is refused later)."""
        return os.path.lexists(case_dir(self.root, task_id))

    def archived(self, task_id: str) -> bool:
        """Whether the store's archive holds this case."""
        return os.path.lexists(case_dir(os.path.join(self.root, ARCHIVE_DIR), task_id))

    def list_ids(self) -> list[str]:
        """Ids of the cases in this store, newest first. Reads one directory; writes nothing."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted((n for n in names if is_id(n, "task")), reverse=True)

    # Readers ------------------------------------------------------------------------------

    def read_case(self, task_id: str) -> CaseFile:
        """The committed case snapshot."""
        path = os.path.join(self.case_path(task_id), CASE_FILE)
        try:
            data = read_bounded(path, SNAPSHOT_MAX)
        except FileNotFoundError:
            msg = f"{path} is missing: the case directory exists but has no snapshot"
            raise IntegrityError(msg, path=path) from None
        case = decode_case(data, path)
        if case.id != task_id:
            raise IntegrityError(f"{path} belongs to {case.id}, not {task_id}", path=path)
        return case

    def read_ledger(self, case: CaseFile, name: str) -> Iterator[LedgerRecord]:
        """Committed records of one ledger, as of `case`'s revision.

        For a case that imported replicas, the merged view: every replica's records, each once,
        in (time, id) order (docs/design/sharing.md).
        """
        if "replicas" in case.snapshots:
            return (record for record, _ in self.read_ledger_with_origin(case, name))
        state = case.ledgers.get(name) or LedgerState()
        path = os.path.join(self.case_path(case.id), ledger_file(name))
        if state.bytes == 0:
            return iter(())
        return ledger.read_records(path, state.bytes, LEDGER_TYPES[name], revision=case.revision)

    def read_ledger_with_origin(
        self, case: CaseFile, name: str
    ) -> Iterator[tuple[LedgerRecord, str | None]]:
        """`read_ledger`, each record with the replica key it comes from (None: this replica)."""
        if "replicas" not in case.snapshots:
            return ((record, None) for record in self.read_ledger(case, name))
        from cortex.cases.replicas import merged

        return merged(self, case, name)

    def read_snapshot(
        self, task_id: str, name: str, type_: type[_D], *, attempts: int = 5
    ) -> _D | None:
        """An auxiliary snapshot (plan.json, ...) as of the committed case revision, or None.

        A multi-file commit renames new snapshots into place before its commit point, keeping the
        old one as a backup. So a reader that finds a snapshot newer than case.json says (a commit
        in flight, or a crash between the two) reads the backup instead; if neither matches, the
        commit finished in between, and the reader starts over from case.json.
        """
        busy = f"{name} of {task_id} is being replaced by a concurrent commit; retry"
        return self._one_revision(
            task_id, lambda case: self.load_snapshot(case, name, type_), attempts, busy
        )

    def read_view(self, task_id: str, *, attempts: int = 5) -> tuple[CaseFile, dict[str, Any]]:
        """case.json and every auxiliary snapshot it records, all of one revision.

        Like `read_snapshot`, but for a reader that needs several documents to agree: if a
        commit lands between reading case.json and a snapshot, the whole view is read again.
        """
        from cortex.cases.documents import AUX_TYPES

        def view(case: CaseFile) -> tuple[CaseFile, dict[str, Any]]:
            documents: dict[str, Any] = {
                name: self.load_snapshot(case, name, type_)
                for name, type_ in AUX_TYPES.items()
                if name.removesuffix(".json") in case.snapshots
            }
            if "replicas" in case.snapshots:
                from cortex.cases.replica_index import ReplicaIndex

                documents[REPLICAS_FILE] = self.load_snapshot(case, REPLICAS_FILE, ReplicaIndex)
            return case, documents

        busy = f"case {task_id} is being changed by a concurrent commit; retry"
        return self._one_revision(task_id, view, attempts, busy)

    def _one_revision(
        self, task_id: str, read: Callable[[CaseFile], _V], attempts: int, busy: str
    ) -> _V:
        """`read` of the committed case.json, started over while a commit moves its snapshots.

        A commit between reading case.json and a snapshot shows as SnapshotMovedError; each
        retry waits a little longer. After `attempts`, the reader is told to retry (`busy`).
        """
        for attempt in range(attempts):
            case = self.read_case(task_id)
            try:
                return read(case)
            except SnapshotMovedError:
                time.sleep(0.005 * (attempt + 1))
        raise BusyError(busy)

    def load_snapshot(self, case: CaseFile, name: str, type_: type[_D]) -> _D | None:
        """The version of `name` that `case` records, from the file or its backup.

        Raises `SnapshotMovedError` when neither holds that version (a commit moved on
        meanwhile), and IntegrityError when a file claims the version but not its digest.
        """
        ref = case.snapshots.get(name.removesuffix(".json"))
        if ref is None:
            return None
        path = self.case_path(case.id)
        edited: str | None = None
        for candidate in (name, BACKUP_PREFIX + name):
            full = os.path.join(path, candidate)
            try:
                data = read_bounded(full, SNAPSHOT_MAX)
            except FileNotFoundError:
                continue
            try:
                revision = decode(data, LineMeta).revision
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise IntegrityError(f"{full}: {exc}", path=full) from None
            if revision != ref.revision:
                continue
            if sha256_hex(data) != ref.sha256:
                # An adopted snapshot keeps the revision another replica wrote it at, so the
                # version being replaced can carry the same number: look at the backup too.
                edited = edited or full
                continue
            try:
                return decode(data, type_)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise IntegrityError(f"{full}: {exc}", path=full) from None
        if edited is not None and self.read_case(case.id).revision == case.revision:
            msg = f"{edited} differs from what revision {ref.revision} wrote (edited?)"
            raise IntegrityError(msg, path=edited)
        raise SnapshotMovedError

    def find_records(
        self, case: CaseFile, name: str, record_ids: list[str]
    ) -> dict[str, LedgerRecord]:
        """The committed records with these ids, found without decoding the whole ledger."""
        state = case.ledgers.get(name) or LedgerState()
        path = os.path.join(self.case_path(case.id), ledger_file(name))
        found: dict[str, LedgerRecord] = {}
        for record_id, line in ledger.find_lines(path, state.bytes, record_ids).items():
            record = ledger.parse_line(line, LEDGER_TYPES[name], where=f"{name} record {record_id}")
            if record.revision > case.revision:
                msg = f"{ledger_file(name)}: {record_id} claims a revision after the case's"
                raise IntegrityError(msg, path=path)
            found[record_id] = record
        missing = [i for i in record_ids if i not in found]
        if missing and "replicas" in case.snapshots:
            from cortex.cases.replicas import find, load_index

            index = load_index(self, case)
            if index is not None:
                found.update(find(self, case, name, missing, index))
        return found

    def ids_beginning(
        self, case: CaseFile, name: str, start: str, limit: int
    ) -> tuple[list[str], int]:
        """Committed ids of a ledger that begin with `start` (the first `limit`), and how many.

        Nothing is decoded: see `ledger.ids_beginning`.
        """
        state = case.ledgers.get(name) or LedgerState()
        path = os.path.join(self.case_path(case.id), ledger_file(name))
        return ledger.ids_beginning(path, state.bytes, start, limit)

    def ledger_lines_between(
        self, before: CaseFile, after: CaseFile, name: str, *, limit: int
    ) -> list[bytes] | None:
        """The lines a ledger gained between two committed views of a case.

        None when that is over `limit` bytes, or when the ledger shrank (which two committed
        views never show).
        """
        start = (before.ledgers.get(name) or LedgerState()).bytes
        end = (after.ledgers.get(name) or LedgerState()).bytes
        if end < start or end - start > limit:
            return None
        path = os.path.join(self.case_path(after.id), ledger_file(name))
        return ledger.read_range(path, start, end).splitlines()

    def debris(self, case: CaseFile) -> list[str]:
        """What an interrupted writer left behind, as warnings; inspects, never repairs."""
        path = self.case_path(case.id)
        warnings: list[str] = []
        if os.path.lexists(os.path.join(path, JOURNAL_FILE)):
            warnings.append(
                "an interrupted multi-file commit is pending; the next write will finish or "
                "roll it back"
            )
        for name in LEDGERS:
            state = case.ledgers.get(name) or LedgerState()
            extra = ledger.uncommitted_tail(os.path.join(path, ledger_file(name)), state.bytes)
            if extra:
                warnings.append(
                    f"{ledger_file(name)} has {extra} uncommitted bytes after its committed end "
                    "(an interrupted write); ignored, and removed by the next write"
                )
        try:
            strays = [n for n in os.listdir(path) if n.startswith((TEMP_PREFIX, BACKUP_PREFIX))]
        except OSError:
            strays = []
        if strays:
            warnings.append(f"{len(strays)} temporary file(s) left by an interrupted write")
        return warnings

    # Writers ------------------------------------------------------------------------------

    def lock_info(self, actor: str, operation: str) -> LockInfo:
        """Holder metadata for a lock we are about to take."""
        return LockInfo(
            pid=os.getpid(), host=self.host, actor=actor, operation=operation, since=self.now()
        )

    def transaction(
        self,
        task_id: str,
        *,
        actor: str,
        operation: str,
        expected_revision: int | None = None,
        started_ms: int | None = None,
    ) -> Transaction:
        """A locked, recoverable commit on an existing case (use as a context manager).

        `started_ms` (a `monotonic_ms` reading) is when the command began, if before this
        transaction: the audit line's duration then covers the whole command (a verify's run).
        """
        from cortex.cases.txn import Transaction  # import cycle by design

        return Transaction(
            self,
            task_id,
            actor=actor,
            operation=operation,
            expected_revision=expected_revision,
            started_ms=started_ms,
        )

    def create(
        self,
        case: CaseFile,
        *,
        operation: str,
        phases: list[PhaseChange] | None = None,
        idempotency_key: str | None = None,
        fingerprint: str = "",
        files: dict[str, bytes] | None = None,
        now: str | None = None,
    ) -> tuple[CaseFile, bool]:
        """Create a case atomically; with a key, return the existing case on a retry.

        Returns the committed case and whether this call created it (`cortex.cases.creation`).
        """
        from cortex.cases import creation

        return creation.create(
            self,
            case,
            operation=operation,
            phases=phases,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
            files=files,
            now=now,
        )

    def lookup_key(self, key: str, fingerprint: str) -> str | None:
        """The case an idempotency key names, if any (a reader: no lock, no write).

        A key used for a different request is refused.
        """
        from cortex.cases import creation

        return creation.lookup_key(self.root, key, fingerprint)


def monotonic_ms() -> int:
    """Milliseconds from a clock that never goes backwards (for durations)."""
    return time.monotonic_ns() // 1_000_000
