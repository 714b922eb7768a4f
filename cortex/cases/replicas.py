"""Imported replicas as a case directory stores them, and the merged view readers see.

A replica's ledgers arrive as exported lines (docs/design/sharing.md, "The exported line"): the
stored line byte for byte, or the record with one more member, `"share"`, when the export had
to change it (a stub, mapped paths, a withheld blob). This module reads that format: it decodes
a line into its record, gives the hash its chain uses, checks a chain, and merges the local
ledgers with every imported replica's into one view, unioned by id and ordered by (time, id).

Only a case whose case.json names a `replicas` snapshot pays for any of this.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from cortex.cases import ledger
from cortex.cases.errors import IntegrityError
from cortex.cases.layout import REPLICAS_FILE, ledger_file, replica_ledger
from cortex.cases.records import (
    LEDGER_TYPES,
    CaseFile,
    LedgerRecord,
    LedgerState,
    PhaseChange,
)

if TYPE_CHECKING:
    from cortex.cases.replica_index import ImportedReplica, ReplicaIndex
    from cortex.cases.store import CaseStore

_R = TypeVar("_R")

SHARE_MEMBER = b'"share":'
"""How an exported line that differs from the stored one is told apart (a key; JSON escapes
every quote inside a string, so these bytes can only be a member name)."""
WITHHELD_CLAIM = "(withheld: sensitive)"
"""The claim of a sensitive record's stub."""
WITHHELD_TOOL = "cortex-share"
"""The tool a stub names (its own source is withheld with the rest)."""

Origin = str | None
"""Where a record of the merged view comes from: None for the local replica, else a replica key."""


class RawMeta(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """A record's raw blob as the sharing machine had it."""

    size: int
    sha256: str
    withheld: str | None = None
    """Why it was not shared (`size`: over SHARE_BLOB_MAX), or None when it was (mapped)."""


class ShareMeta(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    """The `"share"` member of an exported line that differs from the stored one."""

    line: str
    """The sha256 of the stored line this one stands for: the hash the chain uses."""
    size: int | None = None
    withheld: str | None = None
    """`sensitive` for a stub."""
    raw: RawMeta | None = None


def parse(line: bytes, type_: type[_R], *, where: str) -> tuple[_R, ShareMeta | None]:
    """Decode an exported (or stored) ledger line into its record and its share member."""
    if SHARE_MEMBER not in line:
        return ledger.parse_line(line, type_, where=where), None
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError as exc:
        raise IntegrityError(f"{where}: {exc}") from None
    if not isinstance(value, dict) or "share" not in value:
        return ledger.parse_line(line, type_, where=where), None
    meta_value = value.pop("share")
    try:
        meta = msgspec.convert(meta_value, ShareMeta)
        record = msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise IntegrityError(f"{where}: {exc}") from None
    return record, meta


def line_hash(line: bytes, meta: ShareMeta | None) -> str:
    """The hash the next line's `prev` must carry: the stored line's."""
    return meta.line if meta is not None else ledger.line_hash(line)


def check_chain(
    lines: Iterable[bytes], name: str, *, prev: str, where: str
) -> Iterator[tuple[LedgerRecord, ShareMeta | None, str]]:
    """Yield each line's record, share member and hash, refusing a broken chain.

    `prev` is the hash the first line must follow (the ledger's genesis, or the tip of what was
    imported before).
    """
    type_ = LEDGER_TYPES[name]
    for index, line in enumerate(lines):
        record, meta = parse(line, type_, where=f"{where} line {index + 1}")
        if record.prev != prev:
            msg = f"{where}: the hash chain is broken at line {index + 1} ({record.id})"
            raise IntegrityError(msg)
        prev = line_hash(line, meta)
        yield record, meta, prev


# The merged view ------------------------------------------------------------------------------


def load_index(store: CaseStore, case: CaseFile) -> ReplicaIndex | None:
    """The replicas.json version case.json records (None when the case has imported nothing)."""
    if "replicas" not in case.snapshots:
        return None
    from cortex.cases.replica_index import ReplicaIndex
    from cortex.cases.store import SnapshotMovedError

    try:
        return store.load_snapshot(case, REPLICAS_FILE, ReplicaIndex)
    except SnapshotMovedError:
        # A reader that loaded case.json before a commit replaced replicas.json: read again.
        return store.read_snapshot(case.id, REPLICAS_FILE, ReplicaIndex)


def _local(store: CaseStore, case: CaseFile, name: str) -> Iterator[tuple[LedgerRecord, Origin]]:
    state = case.ledgers.get(name) or LedgerState()
    if not state.bytes:
        return
    path = os.path.join(store.case_path(case.id), ledger_file(name))
    for record in ledger.read_records(
        path, state.bytes, LEDGER_TYPES[name], revision=case.revision
    ):
        yield record, None


def _imported(
    path: str, replica: ImportedReplica, name: str
) -> Iterator[tuple[LedgerRecord, Origin]]:
    state = replica.ledgers.get(name) or LedgerState()
    if not state.bytes:
        return
    file = os.path.join(path, replica_ledger(replica.key, name))
    type_ = LEDGER_TYPES[name]
    where = f"{replica_ledger(replica.key, name)}"
    for offset, line in ledger.iter_lines(file, state.bytes):
        record, _ = parse(line, type_, where=f"{where} byte {offset}")
        yield record, replica.key


def _order(item: tuple[LedgerRecord, Origin]) -> tuple[str, str]:
    return item[0].timestamp, item[0].id


def _sorted(
    stream: Iterator[tuple[LedgerRecord, Origin]], *, ordered: bool
) -> Iterator[tuple[LedgerRecord, Origin]]:
    """One replica's records in (time, id) order, so that merging them is the same everywhere.

    A time-ordered ledger only needs each run of equal timestamps sorted by id (one commit's
    records often share a millisecond); a ledger from before the rule is sorted whole.
    """
    if not ordered:
        yield from sorted(stream, key=_order)
        return
    run: list[tuple[LedgerRecord, Origin]] = []
    for item in stream:
        if run and item[0].timestamp != run[0][0].timestamp:
            run.sort(key=_order)
            yield from run
            run = []
        run.append(item)
    run.sort(key=_order)
    yield from run


def _own(name: str, record: LedgerRecord) -> bool:
    """Whether a record is its replica's own event (an adoption repeats another's)."""
    return not (name == "phases" and isinstance(record, PhaseChange) and record.adopted)


def merged(
    store: CaseStore, case: CaseFile, name: str, index: ReplicaIndex | None = None
) -> Iterator[tuple[LedgerRecord, Origin]]:
    """Every record of one ledger across the local and the imported replicas, each once.

    Ordered by (time, id) within and across replicas (a total order every machine computes
    alike), the local replica first among equals, then replicas by key; a record two histories
    share (a fork's common past) is yielded once. Adoption phase lines are left out.
    """
    if index is None:
        index = load_index(store, case)
    local = case.ledgers.get(name) or LedgerState()
    streams = [_sorted(_local(store, case, name), ordered=local.ordered or local.count == 0)]
    if index is not None:
        path = store.case_path(case.id)
        for replica in sorted(index.replicas, key=_key):
            extent = replica.ledgers.get(name) or LedgerState()
            ordered = extent.ordered or extent.count == 0
            streams.append(_sorted(_imported(path, replica, name), ordered=ordered))
    import heapq  # only cases with replicas merge

    seen: set[str] = set()
    for record, origin in heapq.merge(*streams, key=_order):
        if record.id in seen:
            continue
        seen.add(record.id)
        if _own(name, record):
            yield record, origin


def _key(replica: ImportedReplica) -> str:
    return replica.key


def find(
    store: CaseStore, case: CaseFile, name: str, record_ids: list[str], index: ReplicaIndex
) -> dict[str, LedgerRecord]:
    """Records of the imported replicas with these ids (the local ledger was searched first)."""
    path = store.case_path(case.id)
    found: dict[str, LedgerRecord] = {}
    wanted = list(record_ids)
    for replica in sorted(index.replicas, key=_key):
        if not wanted:
            break
        state = replica.ledgers.get(name) or LedgerState()
        file = os.path.join(path, replica_ledger(replica.key, name))
        for record_id, line in ledger.find_lines(file, state.bytes, wanted).items():
            record, _ = parse(line, LEDGER_TYPES[name], where=f"{replica.key} {record_id}")
            found[record_id] = record
        wanted = [i for i in wanted if i not in found]
    return found


def newest(
    store: CaseStore, case: CaseFile, name: str, count: int, index: ReplicaIndex
) -> list[tuple[LedgerRecord, Origin]]:
    """The `count` newest records of one ledger across every replica, newest first.

    Each replica's ledger is read backwards from its end (`ledger.tail_lines`), so the cost
    follows `count`, not the ledgers' lengths.
    """
    path = store.case_path(case.id)
    type_ = LEDGER_TYPES[name]
    state = case.ledgers.get(name) or LedgerState()
    local = ledger.tail_lines(os.path.join(path, ledger_file(name)), state.bytes, count)
    items: list[tuple[LedgerRecord, Origin]] = [
        (ledger.parse_line(line, type_, where=ledger_file(name)), None) for line in local
    ]
    for replica in index.replicas:
        extent = replica.ledgers.get(name) or LedgerState()
        file = os.path.join(path, replica_ledger(replica.key, name))
        for line in ledger.tail_lines(file, extent.bytes, count):
            record, _ = parse(line, type_, where=replica_ledger(replica.key, name))
            items.append((record, replica.key))
    items.sort(key=lambda item: (item[0].timestamp, item[0].id, item[1] is not None), reverse=True)
    seen: set[str] = set()
    result = []
    for record, origin in items:
        if record.id in seen or not _own(name, record):
            continue
        seen.add(record.id)
        result.append((record, origin))
    return result[:count]


def totals(store: CaseStore, case: CaseFile, index: ReplicaIndex) -> dict[str, int]:
    """Exact record counts of the merged view, per ledger (one counting pass each)."""
    return {
        name: sum(1 for _ in merged(store, case, name, index))
        for name in ("evidence", "commands", "phases")
    }


def origins(index: ReplicaIndex | None) -> dict[str, Any] | None:
    """Where the case's replicas came from, for `status`, `show` and the handoff."""
    if index is None:
        return None
    return {
        "local": index.local.replica,
        "inForce": index.in_force or index.local.replica,
        "imported": [
            {
                "key": r.key,
                "replica": r.replica,
                "forked": r.forked,
                "records": {name: state.count for name, state in sorted(r.ledgers.items())},
                "status": r.head.status,
                "revision": r.head.revision,
                "source": r.source,
                "commit": r.commit,
                "exportedAt": r.head.exported_at,
                "fetchedAt": r.fetched_at,
            }
            for r in index.replicas
        ],
        "conflicts": {
            "total": index.conflicts_total,
            "recent": [msgspec.to_builtins(c) for c in index.conflicts[-5:]],
        },
        "forks": [r.key for r in index.replicas if r.forked],
    }
