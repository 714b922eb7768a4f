"""The audit of a case's imported replicas (called by `integrity.audit_case`).

Each imported replica's ledgers must verify as exported (docs/design/sharing.md): every line
decodes, every `prev` is the hash of the line before (a stub or mapped line by the hash its
`share` member records), the count and tip are those `replicas.json` commits. Their evidence
ids join the case's (local records and snapshots may cite them), and the blobs they cite must be
in `raw/` as recorded, unless the sharing machine withheld them. A forked replica and a recorded
conflict are warnings: nothing stored is wrong, but a person should know.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import msgspec

from cortex.cases import ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import CortexError, IntegrityError
from cortex.cases.findings import Collector, LedgerContext, ReplicaAudited, audit_secrets
from cortex.cases.fsio import read_bounded
from cortex.cases.ids import is_id
from cortex.cases.layout import (
    BACKUP_PREFIX,
    JOURNAL_FILE,
    REPLICAS_DIR,
    REPLICAS_FILE,
    is_replica_key,
    parse_raw_ref,
    replica_ledger,
)
from cortex.cases.records import LEDGER_PREFIXES, LEDGERS, Evidence, LedgerState, decode
from cortex.cases.replica_index import ReplicaIndex
from cortex.cases.replicas import check_chain

_MAX_FINDINGS = 20


def _index(path: str, sha256: str, found: Collector) -> ReplicaIndex | None:
    pending = os.path.lexists(os.path.join(path, JOURNAL_FILE))
    candidates = [REPLICAS_FILE, BACKUP_PREFIX + REPLICAS_FILE] if pending else [REPLICAS_FILE]
    for candidate in candidates:
        try:
            data = read_bounded(os.path.join(path, candidate), 16 * 1024 * 1024)
        except FileNotFoundError:
            continue
        except CortexError as exc:
            found.error(exc.code, exc.message, file=candidate)
            return None
        if sha256_hex(data) != sha256:
            continue
        try:
            return decode(data, ReplicaIndex)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            found.error("schema", f"{REPLICAS_FILE}: {exc}", file=REPLICAS_FILE)
            return None
    return None  # `_audit_snapshots` reports the missing or edited version


def audit_replicas(context: LedgerContext, found: Collector) -> list[ReplicaAudited]:
    """Check every imported replica of the case at `context.path` (see the module docstring).

    Returns each replica checked with the lines read from each of its ledgers.
    """
    case, path = context.case, context.path
    ref = case.snapshots.get("replicas")
    if ref is None:
        return []
    index = _index(path, ref.sha256, found)
    if index is None:
        return []
    audited: list[ReplicaAudited] = []
    keys: set[str] = set()
    for replica in index.replicas:
        if not is_replica_key(replica.key) or replica.key.partition("~")[0] != replica.replica:
            found.error("replica", f"{REPLICAS_FILE} names a malformed replica {replica.key!r}")
            continue
        if replica.key in keys:
            found.error("replica", f"{REPLICAS_FILE} names replica {replica.key} twice")
            continue
        keys.add(replica.key)
        directory = os.path.join(path, REPLICAS_DIR, replica.key)
        try:
            mode = os.lstat(directory).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):
            found.error("symlink", f"{REPLICAS_DIR}/{replica.key} is not a real directory")
            continue
        lines = {
            name: _audit_ledger(context, replica.key, name, replica.ledgers.get(name), found)
            for name in LEDGERS
        }
        audited.append(ReplicaAudited(key=replica.key, replica=replica.replica, records=lines))
        if replica.forked:
            found.warn(
                "replica_forked",
                f"replica {replica.key} is a second history of {replica.replica}: a state "
                "directory was copied or restored; both are kept (docs/design/sharing.md, Forks)",
            )
    if index.conflicts_total:
        found.warn(
            "replica_conflict",
            f"{index.conflicts_total} change(s) lost to a higher-fenced state and were recorded "
            f"in {REPLICAS_FILE}",
            file=REPLICAS_FILE,
        )
    _audit_strays(path, keys, found)
    return audited


def _audit_ledger(
    context: LedgerContext,
    key: str,
    name: str,
    state: LedgerState | None,
    found: Collector,
) -> int:
    """Check one ledger of an imported replica; the number of lines read."""
    state = state or LedgerState()
    relative = replica_ledger(key, name)
    full = os.path.join(context.path, relative)
    prefix = LEDGER_PREFIXES[name]
    count = 0
    tip = ledger.genesis(context.case.id, name)
    seen: set[str] = set()
    problems = 0
    try:
        current: list[tuple[int, bytes]] = []

        def lines() -> Iterator[bytes]:
            for offset, line in ledger.iter_lines(full, state.bytes):
                current[:] = [(offset, line)]
                yield line

        for record, meta, hashed in check_chain(lines(), name, prev=tip, where=relative):
            count += 1
            tip = hashed
            if not is_id(record.id, prefix) or not context.check_ulid(record.id[len(prefix) + 1 :]):
                problems += 1
                if problems <= _MAX_FINDINGS:
                    found.error("id_format", f"malformed record id {record.id!r}", file=relative)
            elif record.id in seen:
                found.error("duplicate_id", f"record id {record.id} appears twice", file=relative)
            seen.add(record.id)
            if isinstance(record, Evidence):
                context.evidence_ids.add(record.id)
                offset, line = current[0]
                context.note_forget(relative, record, line, offset, key)
                withheld = meta is not None and (
                    meta.withheld is not None or (meta.raw is not None and meta.raw.withheld)
                )
                parsed = None if record.raw_ref is None else parse_raw_ref(record.raw_ref)
                if parsed is not None and parsed[0] == context.case.id and not withheld:
                    context.raw_refs.setdefault(parsed[1], record.raw_sha256)
            audit_secrets(record, context.redactor, relative, found)
    except FileNotFoundError:
        if state.bytes:
            found.error("missing", f"{relative} is missing but {state.bytes} bytes are committed")
        return count
    except IntegrityError as exc:
        found.error("chain", exc.message, file=relative)
        return count
    if count != state.count:
        msg = f"{count} committed lines, but {REPLICAS_FILE} says {state.count}"
        found.error("count", msg, file=relative)
    if state.count and tip != state.tip:
        msg = f"the last committed line does not match {REPLICAS_FILE}'s tip"
        found.error("tip", msg, file=relative)
    extra = ledger.uncommitted_tail(full, state.bytes)
    if extra:
        found.warn(
            "uncommitted_tail",
            f"{extra} uncommitted bytes after the committed end (an interrupted import)",
            file=relative,
            offset=state.bytes,
        )
    return count


def _audit_strays(path: str, keys: set[str], found: Collector) -> None:
    try:
        names = sorted(os.listdir(os.path.join(path, REPLICAS_DIR)))
    except (FileNotFoundError, NotADirectoryError):
        return
    pending = os.path.lexists(os.path.join(path, JOURNAL_FILE))
    for name in names:
        if name not in keys and not pending:
            found.warn(
                "stray_file",
                f"{REPLICAS_DIR}/{name} is no imported replica (an interrupted import left it)",
                file=f"{REPLICAS_DIR}/{name}",
            )
