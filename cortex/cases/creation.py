"""Creating a case: the whole directory published at once, and the idempotency keys of `open`.

A new case is staged complete under `.creating-<id>` (its first ledgers, its snapshot, any
files a fetch brings) and renamed into place under the store lock, so a reader sees a whole
case or none; the staging of a dead writer is removed by the next creation. An idempotency
key records which case a request opened, before the case is published, so a retried `open`
returns the same case (docs/design/storage.md). `CaseStore.create` and `CaseStore.lookup_key`
are the entry points; this module loads only when a case is created or a key looked up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec

from cortex.cases import _crash
from cortex.cases.bounds import JOURNAL_MAX, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.fsio import (
    DIR_MODE,
    TEMP_PREFIX,
    check_real_dir,
    fsync_dir,
    make_private_dirs,
    read_bounded,
    write_atomic,
    write_new_file,
)
from cortex.cases.ids import check_id, new_id
from cortex.cases.layout import (
    CASE_FILE,
    CREATING_PREFIX,
    KEYS_DIR,
    LOCK_FILE,
    RAW_DIR,
    REFS_DIR,
    REMOVING_PREFIX,
    STORE_LOCK_FILE,
    case_dir,
    ledger_file,
)
from cortex.cases.lock import FileLock
from cortex.cases.records import (
    LEDGERS,
    CaseFile,
    Command,
    KeyRecord,
    LedgerRecord,
    PhaseChange,
    case_digest,
    decode,
    encode,
    encode_pretty,
)
from cortex.cases.scrub import scrub
from cortex.cases.store import chain, empty_ledgers, monotonic_ms

if TYPE_CHECKING:
    from cortex.cases.store import CaseStore


def create(
    store: CaseStore,
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

    Returns the committed case and whether this call created it. `phases` are the case's
    first phase lines (by default one, into its initial status). `files` are more files of
    the new case directory, published with it (a fetch creates a case whole: snapshots,
    blobs, imported replicas' ledgers; only names the format has are accepted).
    """
    for relative in files or {}:
        _check_created_file(relative)
    started = monotonic_ms()
    if phases is None:
        phases = [
            PhaseChange(
                id=new_id("ph"),
                timestamp=case.created_at,
                to_phase=case.status,
                actor=case.actor,
            )
        ]
    # Everything is encoded before anything is written: a refusal (a bound, a secret-looking
    # identifier, text that cannot be encoded) must leave no key and no half-built case.
    prepared = _prepare(store, case, operation, phases, started, now=now)
    make_private_dirs(store.root)
    lock = FileLock(
        os.path.join(store.root, STORE_LOCK_FILE),
        timeout=store.lock_timeout,
        info=store.lock_info(case.actor, operation),
        what="the case store",
    )
    with lock:
        _remove_stray_creations(store.root)
        if idempotency_key is not None:
            existing = _claim_key(store.root, idempotency_key, fingerprint, case.id)
            if existing is not None and store.exists(existing):
                return store.read_case(existing), False
            if existing is not None and store.archived(existing):
                msg = (
                    f"this idempotency key opened {existing}, which is archived: unarchive "
                    "it (cortex case unarchive), or use a new key"
                )
                raise InvalidInputError(msg)
            if existing is not None:
                # The key was written but the crash came before the case was published.
                prepared = _prepare(
                    store,
                    msgspec.structs.replace(case, id=existing),
                    operation,
                    phases,
                    started,
                    now=now,
                )
        _publish_case(store.root, *prepared, files=files or {})
    return prepared[0], True


def lookup_key(root: str, key: str, fingerprint: str) -> str | None:
    """The case an idempotency key names, if any (a reader: no lock, no write).

    A key used for a different request is refused.
    """
    path = os.path.join(root, KEYS_DIR, sha256_hex(key.encode()) + ".json")
    try:
        data = read_bounded(path, JOURNAL_MAX)
    except FileNotFoundError:
        return None
    return _key_target(path, data, fingerprint)


def _key_target(path: str, data: bytes, fingerprint: str) -> str:
    try:
        record = decode(data, KeyRecord)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"{path}: not an idempotency record ({exc})", path=path) from None
    if record.fingerprint != fingerprint:
        msg = (
            "this idempotency key was already used to open a different case "
            f"({record.task_id}); use a new key for a new request"
        )
        raise InvalidInputError(msg)
    return check_id(record.task_id, "task", what="task id in an idempotency record")


def _claim_key(root: str, key: str, fingerprint: str, task_id: str) -> str | None:
    """Return the case a key already names, or record it for `task_id` and return None."""
    keys = os.path.join(root, KEYS_DIR)
    check_real_dir(keys)
    path = os.path.join(keys, sha256_hex(key.encode()) + ".json")
    try:
        data = read_bounded(path, JOURNAL_MAX)
    except FileNotFoundError:
        make_private_dirs(keys)
        write_atomic(path, encode(KeyRecord(task_id=task_id, fingerprint=fingerprint)))
        _crash.point("open.key_written")
        return None
    return _key_target(path, data, fingerprint)


def _remove_stray_creations(root: str) -> None:
    """Remove `.creating-*` directories: under the store lock only a dead writer has one.

    A removal a crash interrupted is finished too, key files first: a retried open must
    not find a key naming a case that is being removed, and bring it back.
    """
    names = os.listdir(root)
    if any(n.startswith(REMOVING_PREFIX) for n in names):
        from cortex.cases.retention import finish_removals

        finish_removals(root)
    strays = [n for n in names if n.startswith(CREATING_PREFIX)]
    if not strays:
        return
    import shutil  # only needed after a crash

    for name in strays:
        path = os.path.join(root, name)
        if os.path.islink(path):
            os.unlink(path)
        else:
            shutil.rmtree(path, ignore_errors=True)
    fsync_dir(root)


def _prepare(
    store: CaseStore,
    case: CaseFile,
    operation: str,
    phases: list[PhaseChange],
    started: int,
    *,
    now: str | None = None,
) -> tuple[CaseFile, dict[str, bytes], bytes]:
    """The committed case, each ledger's bytes, and the snapshot: everything to write.

    `now` is the commit's time; by default the case's creation (a fetch creates a case
    that was opened earlier, elsewhere).
    """
    now = now or case.created_at
    committed, _ = scrub(
        msgspec.structs.replace(case, revision=1, updated_at=now, ledgers={}), store.redactor
    )
    command = Command(
        id=new_id("cmd"),
        timestamp=now,
        actor=case.actor,
        operation=operation,
        duration_ms=monotonic_ms() - started,
        target=case.id,
        case_digest=case_digest(committed),
    )
    ledgers = empty_ledgers(case.id)
    appends: dict[str, list[LedgerRecord]] = {"phases": list(phases), "commands": [command]}
    payloads: dict[str, bytes] = {}
    for name in LEDGERS:
        records = [scrub(store.arrived(r), store.redactor)[0] for r in appends.get(name, [])]
        payloads[name], ledgers[name], _ = chain(case.id, name, ledgers[name], records, 1)
    committed.ledgers = ledgers
    try:
        snapshot = encode_pretty(committed)
    except msgspec.EncodeError as exc:
        raise InvalidInputError(f"the case cannot be stored: {exc}") from None
    if len(snapshot) > SNAPSHOT_MAX:
        msg = f"case snapshot would be {len(snapshot)} bytes, over {SNAPSHOT_MAX}"
        raise InvalidInputError(msg)
    return committed, payloads, snapshot


def _publish_case(
    root: str,
    committed: CaseFile,
    payloads: dict[str, bytes],
    snapshot: bytes,
    *,
    files: dict[str, bytes],
) -> None:
    final = case_dir(root, committed.id)
    if os.path.lexists(final):
        raise IntegrityError(f"{final} already exists", path=final)
    staging = os.path.join(root, CREATING_PREFIX + committed.id)
    os.mkdir(staging, DIR_MODE)
    for sub in (RAW_DIR, REFS_DIR):
        os.mkdir(os.path.join(staging, sub), DIR_MODE)
    write_new_file(os.path.join(staging, LOCK_FILE), b"", sync=False)
    for name in LEDGERS:
        write_new_file(os.path.join(staging, ledger_file(name)), payloads[name])
    directories = {staging, os.path.join(staging, RAW_DIR)}
    for relative, data in sorted(files.items()):
        directory = os.path.dirname(os.path.join(staging, relative))
        if not os.path.isdir(directory):
            make_private_dirs(directory)
            directories.add(os.path.dirname(directory))
        write_new_file(os.path.join(staging, relative), data)
        directories.add(directory)
    write_new_file(os.path.join(staging, CASE_FILE), snapshot)
    for directory in sorted(directories, reverse=True):
        fsync_dir(directory)
    _crash.point("open.staged")
    os.rename(staging, final)
    fsync_dir(root)


def _check_created_file(relative: str) -> None:
    """Refuse a file name a new case directory cannot hold (see `create`)."""
    from cortex.cases.journal import journal_entry_ok
    from cortex.cases.layout import parse_replica_ledger
    from cortex.cases.records import StagedFile

    probe = StagedFile(staged=TEMP_PREFIX + "probe", final=relative)
    if parse_replica_ledger(relative) is None and not journal_entry_ok(probe):
        msg = f"{relative!r} is not a file of the case format"
        raise ValueError(msg)
