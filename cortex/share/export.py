"""The export of the local replica of one case: what would leave, checked before anything does.

A reader of the case (no lock, nothing written to it): one committed view, its ledgers up to the
committed lengths. With the previous export of this replica at hand (its head and tails, read
from the local ref), the sealed segments and blobs it wrote are reused once the local chain is
seen to continue it, and only the new lines are projected and checked; otherwise everything is.
See docs/design/sharing.md, "Sharing".
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

from cortex.cases import ledger
from cortex.cases.bounds import RAW_BLOB_MAX, SHARE_CASE_MAX, SHARE_SEGMENT_LINES, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import BusyError
from cortex.cases.fsio import read_bounded
from cortex.cases.layout import RAW_DIR, ledger_file, parse_raw_ref
from cortex.cases.records import (
    LEDGER_TYPES,
    CaseFile,
    Evidence,
    Forgetting,
    LedgerState,
    encode,
    encode_pretty,
)
from cortex.cases.replica_index import Origin, ReplicaIndex
from cortex.cases.replicas import line_hash, parse
from cortex.cases.tree import decode_manifest, encode_manifest
from cortex.share import project
from cortex.share.format import (
    CASE,
    HEAD,
    LEDGER_NAMES,
    LEDGERS_DIR,
    META,
    SUMMARY,
    TAIL,
    Head,
    LedgerHead,
    Meta,
    Segment,
    Tail,
    blob_path,
    commit_message,
    ref,
    segment_name,
)
from cortex.share.leaving import Checker, Context, leaving_snapshots
from cortex.share.project import BlobOut, PathMap


class Previous(msgspec.Struct, kw_only=True):
    """This replica's previous export, as the local ref holds it."""

    head: Head | None = None
    tails: dict[str, bytes] = msgspec.field(default_factory=dict)
    """Exported bytes of each ledger's previous tail."""
    segments: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    """Each ledger's sealed segment files and their blob ids."""


class Exported(msgspec.Struct, kw_only=True):
    """One replica's export: its files, what it withholds, what a check found."""

    head: Head
    files: dict[str, bytes]
    """Path in the replica's directory -> bytes (everything not reused)."""
    reused: dict[str, str]
    """Path in the replica's directory -> blob id of a sealed segment already shared."""
    blobs: dict[str, bytes]
    """Path in the tree (`blobs/...`) -> bytes of the blobs new lines cite."""
    meta: bytes
    withheld: list[dict[str, Any]]
    hits: list[str]
    """Ids of the records (and snapshot items) whose text looks like a secret."""
    mapped: list[str]
    lines: dict[str, list[bytes]]
    """Each ledger's exported lines, when every one was built (a full export), for comparing."""
    full: bool
    sizes: dict[str, int] = msgspec.field(default_factory=dict)
    """Bytes of every file of the replica's directory (reused ones included)."""
    shas: dict[str, str] = msgspec.field(default_factory=dict)
    dropped: list[str] = msgspec.field(default_factory=list)
    """Tree paths (`blobs/...`) of blobs this case's forgets removed: left out of the commit."""

    @property
    def total(self) -> int:
        """Bytes this replica's export holds, with the blobs its records cite."""
        return sum(self.sizes.values()) + self.head.blob_bytes


def origin_of(
    digest: str, lamport: int, replica: str, previous: Head | None, index: ReplicaIndex | None
) -> Origin:
    """The change behind the local state's content (stable while the content is unchanged)."""
    if previous is not None and previous.digest == digest and previous.origin is not None:
        return previous.origin
    sync = index.local if index is not None else None
    if sync is not None and sync.digest == digest and sync.origin is not None:
        return sync.origin
    return Origin(replica=replica, lamport=lamport)


class _LedgerOut(msgspec.Struct, kw_only=True):
    head: LedgerHead
    files: dict[str, bytes]
    reused: dict[str, str]
    lines: list[bytes] | None
    blobs: list[BlobOut]
    withheld: list[dict[str, Any]]


def lamport_of(case: CaseFile, index: ReplicaIndex | None) -> int:
    """The local Lamport clock: the revision lifted by what the last import saw."""
    if index is None:
        return case.revision
    return index.local.clock + max(case.revision - index.local.base_revision, 0)


def build(context: Context, previous: Previous) -> Exported:
    """Export the local replica (see the module docstring)."""
    case = context.case
    check = Checker(context.redactor, context.paths)
    reuse = previous.head is not None and previous.head.ruleset == context.ruleset
    path = context.store.case_path(case.id)
    withheld: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    reused: dict[str, str] = {}
    blobs: dict[str, bytes] = {}
    blob_bytes = 0 if not reuse or previous.head is None else previous.head.blob_bytes
    blob_count = 0 if not reuse or previous.head is None else previous.head.blobs
    ledgers: dict[str, LedgerHead] = {}
    all_lines: dict[str, list[bytes]] = {}
    full = True
    forgets = _forgets(path, case.ledgers.get("evidence") or LedgerState())
    for name in LEDGER_NAMES:
        state = case.ledgers.get(name) or LedgerState()
        before = previous.head.ledgers.get(name) if reuse and previous.head else None
        if name == "evidence" and before is not None and _forgot_since(path, state, before):
            # A forget rewrote a line the previous export may hold: nothing of it is reused
            # (docs/design/sharing.md, "Forgotten records").
            before = None
        result = _ledger(
            context,
            path=path,
            name=name,
            state=state,
            before=before,
            previous=previous,
            check=check,
        )
        if result is None:
            # The local chain does not continue what was shared (a restored state directory):
            # export this ledger whole; the tree merge keeps the other history under a fork key.
            before = None
            result = _ledger(
                context,
                path=path,
                name=name,
                state=state,
                before=None,
                previous=previous,
                check=check,
            )
            assert result is not None  # noqa: S101 - a whole export does not reuse anything
        full = full and before is None
        ledgers[name] = result.head
        withheld.extend(result.withheld)
        for file, data in result.files.items():
            files[f"{LEDGERS_DIR}/{name}/{file}"] = data
        for file, oid in result.reused.items():
            reused[f"{LEDGERS_DIR}/{name}/{file}"] = oid
        if result.lines is not None:
            all_lines[name] = result.lines
        for blob in result.blobs:
            if blob.withheld:
                withheld.append(
                    {
                        "id": blob.raw_id,
                        "what": "blob",
                        "reason": blob.withheld,
                        "size": blob.size,
                        "sha256": blob.sha256,
                    }
                )
                continue
            for tree_path, data in blob.exported.items():
                if tree_path not in blobs:
                    blobs[tree_path] = data
                    blob_bytes += len(data)
                    blob_count += 1
    last = previous.head if reuse else None
    snapshots, snapshot_files = leaving_snapshots(context, path, check, last)
    files.update(snapshot_files)
    shared_case = project.project_case(case, context.paths)
    case_bytes = encode_pretty(shared_case)
    files[CASE] = case_bytes
    summary = None
    summary_path = os.path.join(path, SUMMARY)
    if os.path.lexists(summary_path):
        data = project.project_text(read_bounded(summary_path, SNAPSHOT_MAX), context.paths)
        summary = sha256_hex(data)
        if last is None or last.summary != summary:
            check.data(data, case.id)
        files[SUMMARY] = data
    aux = dict(snapshots)
    digest = project.content_digest(shared_case, aux, summary)
    if last is None or last.digest != digest:
        # The state's content changed since the last export under these rules: check it.
        check.strings(msgspec.to_builtins(shared_case), case.id)
    elif context.paths.present(case_bytes):
        check.leaks.append(case.id)
    message = commit_message(case.id, context.replica, case.revision)
    for text, label in ((message, case.id), (ref(case.id).encode(), case.id)):
        check.data(text, label)
    lamport = lamport_of(case, context.index)
    origin = origin_of(digest, lamport, context.replica, previous.head, context.index)
    known = dict(context.index.local.known) if context.index is not None else {}
    if origin.replica == context.replica:
        known[context.replica] = max(known.get(context.replica, 0), origin.lamport)
    shas = {name: sha256_hex(data) for name, data in files.items()}
    head = Head(
        task_id=case.id,
        replica=context.replica,
        revision=case.revision,
        lamport=lamport,
        epoch=case.change_lease.epoch if case.change_lease is not None else 0,
        digest=digest,
        origin=origin,
        known=known,
        status=case.status,
        ledgers=ledgers,
        snapshots={CASE: shas[CASE], **snapshots},
        summary=summary,
        blob_bytes=blob_bytes,
        blobs=blob_count,
        ruleset=context.ruleset,
        cortex=context.version,
        # The case's own time, not the clock's: an unchanged case exports to the same tree.
        exported_at=case.updated_at,
    )
    head_bytes = encode_pretty(head)
    files[HEAD] = head_bytes
    meta = encode_pretty(Meta(task_id=case.id))
    for label, data in ((HEAD, head_bytes), (META, meta)):
        if check.redactor.looks_secret(data.decode()):
            check.hits.append(case.id if label == META else f"{case.id} {label}")
    sizes = {name: len(data) for name, data in files.items()}
    shas = {name: sha256_hex(data) for name, data in files.items()}
    for name, head_entry in ledgers.items():
        for segment in head_entry.segments:
            file = f"{LEDGERS_DIR}/{name}/{segment_name(segment.first, segment.last)}"
            sizes[file] = segment.bytes
            shas[file] = segment.sha256
    for label in check.leaks:
        check.hits.append(f"{label} (a path of this machine)")
    dropped = {
        blob_path(blob.sha256, tree=tree) for forget in forgets for blob in forget.raw
        for tree in (False, True)
    }  # fmt: skip
    return Exported(
        dropped=sorted(dropped - set(blobs)),
        head=head,
        files=files,
        reused=reused,
        blobs=blobs,
        meta=meta,
        withheld=withheld,
        hits=check.hits,
        mapped=sorted(set(context.paths.placeholders.values())),
        lines=all_lines,
        full=full,
        sizes=sizes,
        shas=shas,
    )


def _ledger(
    context: Context,
    *,
    path: str,
    name: str,
    state: LedgerState,
    before: LedgerHead | None,
    previous: Previous,
    check: Checker,
) -> _LedgerOut | None:
    """One ledger: its head, its new files, its reused segments; None if it cannot be reused."""
    file = os.path.join(path, ledger_file(name))
    task_id = context.case.id
    segments: list[Segment] = []
    carried: list[bytes] = []
    start = 0
    if before is not None:
        segments = list(before.segments)
        start = segments[-1].end if segments else 0
        tip = segments[-1].tip if segments else ledger.genesis(task_id, name)
        if before.tail is not None:
            carried_bytes = previous.tails.get(name)
            if carried_bytes is None or sha256_hex(carried_bytes) != before.tail.sha256:
                return None
            carried = carried_bytes.splitlines()
            start = before.tail.end
            tip = before.tail.tip
        if state.bytes < start or len(segments) * SHARE_SEGMENT_LINES + len(carried) > state.count:
            return None
        new_region = ledger.read_range(file, start, state.bytes) if state.bytes > start else b""
        local_lines = new_region.splitlines()
        if local_lines:
            first = ledger.parse_line(local_lines[0], LEDGER_TYPES[name], where=ledger_file(name))
            if first.prev != tip:
                return None  # the local chain does not continue what was shared: export it all
        kept = {
            segment_name(s.first, s.last): previous.segments.get(name, {}).get(
                segment_name(s.first, s.last), ""
            )
            for s in segments
        }
        if any(not oid for oid in kept.values()):
            return None
    else:
        kept = {}
        local_lines = [line for _, line in ledger.iter_lines(file, state.bytes)]
        tip = ledger.genesis(task_id, name)
    offsets: list[int] = []
    position = start
    for line in local_lines:
        position += len(line) + 1
        offsets.append(position)
    type_ = LEDGER_TYPES[name]
    projected: list[bytes] = []
    blob_outs: list[BlobOut] = []
    withheld_records: list[dict[str, Any]] = []
    for line in local_lines:
        record = ledger.parse_line(line, type_, where=ledger_file(name))
        blob = None
        if isinstance(record, Evidence) and record.raw_ref and record.sensitivity != "sensitive":
            blob = _blob(path, task_id, record, context.paths, check)
            if blob is not None:
                blob_outs.append(blob)
        out, withheld = project.project_line(record, line, context.paths, blob)
        if withheld == "sensitive":
            withheld_records.append({"id": record.id, "what": "record", "reason": "sensitive"})
        exported_record, _ = parse(out, type_, where=ledger_file(name))
        check.strings(msgspec.to_builtins(exported_record), record.id)
        if context.paths.present(out):
            check.leaks.append(record.id)
        projected.append(out)
    combined = carried + projected
    local_offset = {len(carried) + i: end for i, end in enumerate(offsets)}
    base = segments[-1].last if segments else 0
    exported: dict[str, bytes] = {}
    consumed = 0
    while len(combined) - consumed >= SHARE_SEGMENT_LINES:
        chunk = combined[consumed : consumed + SHARE_SEGMENT_LINES]
        data = b"".join(line + b"\n" for line in chunk)
        last_index = consumed + SHARE_SEGMENT_LINES - 1
        segment = Segment(
            first=base + 1,
            last=base + SHARE_SEGMENT_LINES,
            sha256=sha256_hex(data),
            tip=_hash(name, chunk[-1]),
            end=local_offset[last_index],
            bytes=len(data),
        )
        segments.append(segment)
        exported[segment_name(segment.first, segment.last)] = data
        base += SHARE_SEGMENT_LINES
        consumed += SHARE_SEGMENT_LINES
    rest = combined[consumed:]
    tail = None
    if rest:
        data = b"".join(line + b"\n" for line in rest)
        tail = Tail(
            lines=len(rest),
            sha256=sha256_hex(data),
            tip=_hash(name, rest[-1]),
            end=state.bytes,
            bytes=len(data),
        )
        exported[TAIL] = data
    count = base + len(rest)
    if count != state.count:
        return None if before is not None else _mismatch(name, count, state.count)
    head = LedgerHead(
        count=count,
        tip=state.tip or ledger.genesis(task_id, name),
        ordered=state.ordered or state.count == 0,
        segments=segments,
        tail=tail,
    )
    if count and head.tip != (tail.tip if tail else segments[-1].tip):
        return None if before is not None else _mismatch(name, count, state.count)
    return _LedgerOut(
        head=head,
        files=exported,
        reused=kept,
        lines=combined if before is None else None,
        blobs=blob_outs,
        withheld=withheld_records,
    )


_FORGETS = b'"forgets":{'


def _forgets(path: str, state: LedgerState) -> list[Forgetting]:
    """What every forget of this replica removed (found at memchr speed, then decoded)."""
    file = os.path.join(path, ledger_file("evidence"))
    found = []
    for line in ledger.lines_containing(file, state.bytes, _FORGETS):
        record = ledger.parse_line(line, Evidence, where=ledger_file("evidence"))
        if record.forgets is not None:
            found.append(record.forgets)
    return found


def _forgot_since(path: str, state: LedgerState, before: LedgerHead) -> bool:
    """Whether a forget was committed after the previous export's end."""
    end = (
        before.tail.end
        if before.tail is not None
        else (before.segments[-1].end if before.segments else 0)
    )
    if state.bytes <= end:
        return False
    region = ledger.read_range(os.path.join(path, ledger_file("evidence")), end, state.bytes)
    return _FORGETS in region


def _mismatch(name: str, found: int, committed: int) -> Any:
    msg = f"{ledger_file(name)} holds {found} lines where {committed} are committed; retry"
    raise BusyError(msg)


def _hash(name: str, line: bytes) -> str:
    _, meta = parse(line, LEDGER_TYPES[name], where=name)
    return line_hash(line, meta)


def _blob(
    path: str, task_id: str, record: Evidence, paths: PathMap, check: Checker
) -> BlobOut | None:
    """The raw blob a record cites, as it would leave (or why it stays)."""
    assert record.raw_ref is not None  # noqa: S101 - the caller checked
    parsed = parse_raw_ref(record.raw_ref)
    if parsed is None or parsed[0] != task_id:
        return None
    raw_id = parsed[1]
    text = os.path.join(path, RAW_DIR, f"{raw_id}.txt")
    tree = os.path.join(path, RAW_DIR, f"{raw_id}.tree")
    is_tree = os.path.lexists(tree)
    source = tree if is_tree else text
    try:
        data = read_bounded(source, RAW_BLOB_MAX * 2)
    except (OSError, ValueError):
        return BlobOut(
            raw_id=raw_id, tree=is_tree, size=0, sha256=record.raw_sha256 or "", withheld="missing"
        )
    stored_sha = sha256_hex(data)
    out = BlobOut(raw_id=raw_id, tree=is_tree, size=len(data), sha256=stored_sha)
    if not is_tree:
        if project.over_bound(len(data)):
            out.withheld = "size"
            return out
        shared = project.project_text(data, paths)
        check.data(shared, record.id)
        out.shared_sha256 = sha256_hex(shared)
        out.exported[blob_path(out.shared_sha256)] = shared
        return out
    manifest = decode_manifest(data)
    total = len(data)
    members: dict[str, bytes] = {}
    for member in manifest.files:
        member_data = read_bounded(os.path.join(path, RAW_DIR, f"{member.raw}.txt"), RAW_BLOB_MAX)
        total += len(member_data)
        members[member.raw] = member_data
    if project.over_bound(total):
        out.withheld = "size"
        out.size = total
        return out
    for member in manifest.files:
        shared = project.project_text(members[member.raw], paths)
        check.data(shared, record.id)
        member.sha256 = sha256_hex(shared)
        member.size = len(shared)
        out.exported[blob_path(member.sha256)] = shared
    listing = encode_manifest(paths.struct(manifest))
    check.data(listing, record.id)
    out.shared_sha256 = sha256_hex(listing)
    out.exported[blob_path(out.shared_sha256, tree=True)] = listing
    return out


def manifest(
    exported: Exported, new: Callable[[str, str], bool], replica_dir: str
) -> dict[str, Any]:
    """What would leave the machine: files with sizes and digests, what is withheld, totals."""
    entries: list[dict[str, Any]] = [
        {"path": META, "size": len(exported.meta), "sha256": sha256_hex(exported.meta)}
    ]
    entries += [
        {"path": f"{replica_dir}/{name}", "size": size, "sha256": exported.shas[name]}
        for name, size in sorted(exported.sizes.items())
    ]
    entries += [
        {"path": tree_path, "size": len(data), "sha256": sha256_hex(data)}
        for tree_path, data in sorted(exported.blobs.items())
    ]
    files = [{**e, "new": new(str(e["path"]), str(e["sha256"]))} for e in entries]
    total = sum(int(str(f["size"])) for f in files)
    return {
        "files": files,
        "withheld": exported.withheld,
        "mapped": exported.mapped,
        "totals": {
            "files": len(files),
            "bytes": total,
            "newFiles": sum(1 for f in files if f["new"]),
            "newBytes": sum(int(str(f["size"])) for f in files if f["new"]),
            "blobBytes": exported.head.blob_bytes,
        },
        "limit": SHARE_CASE_MAX,
    }


def encoded(value: Any) -> bytes:
    """Compact JSON, as ledger lines are."""
    return encode(value)
