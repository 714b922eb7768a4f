"""A fetched case tree: read it, check every replica in it, and work out what to import.

Nothing here writes. `read_case_tree` decodes and checks the heads; `plan` compares each
fetched replica with what the case directory already holds (the local chain for this machine's
own replica id, the imported extents for the others), reads and verifies exactly the new lines
(segment digests, counts, the chain from the last line already held) and the blobs they cite,
and says where each goes, forked histories under their fork keys. docs/design/sharing.md.
"""

from __future__ import annotations

import os

import msgspec

from cortex.cases import ledger
from cortex.cases.bounds import SHARE_REPLICAS_MAX, SHARE_SEGMENT_LINES
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, UnsupportedSchemaError
from cortex.cases.ids import is_id
from cortex.cases.layout import is_replica_key, ledger_file, parse_raw_ref, replica_ledger
from cortex.cases.records import (
    LEDGER_PREFIXES,
    LEDGER_TYPES,
    CaseFile,
    Evidence,
    LedgerRecord,
    LedgerState,
)
from cortex.cases.redact import Redactor
from cortex.cases.replica_index import LocalSync, ReplicaIndex
from cortex.cases.replicas import ShareMeta, check_chain, line_hash, parse
from cortex.cases.scrub import strings
from cortex.cases.tree import decode_manifest
from cortex.share.format import (
    FORMAT,
    LEDGER_NAMES,
    LEDGERS_DIR,
    META,
    REPLICAS,
    TAIL,
    Head,
    Meta,
    blob_path,
    segment_name,
)
from cortex.share.history import History, Lines, Shared, fork_suffix, relation
from cortex.share.objects import Entry
from cortex.share.publish import SharedTree, commit_of


class Fetched(msgspec.Struct, kw_only=True):
    """One replica as the fetched tree holds it."""

    key: str
    oid: str
    """The id of its directory's tree."""
    head: Head
    tree: dict[str, Entry]
    history: Shared


class CaseTree(msgspec.Struct, kw_only=True):
    """A fetched case: its commit and its replicas."""

    task_id: str
    commit: str
    root: dict[str, Entry]
    replicas: dict[str, Fetched]


class Import(msgspec.Struct, kw_only=True):
    """What to import of one fetched replica, and under which key."""

    key: str
    source: str
    """Its key in the fetched tree."""
    head: Head
    forked: bool
    appends: dict[str, tuple[bytes, int]] = msgspec.field(default_factory=dict)
    """Ledger -> (lines to append, committed length before)."""
    extents: dict[str, LedgerState] = msgspec.field(default_factory=dict)
    blobs: dict[str, bytes] = msgspec.field(default_factory=dict)
    """`raw/<raw id>.txt|.tree` -> bytes."""
    lines: int = 0
    evidence: set[str] = msgspec.field(default_factory=set)
    """The ids of the new evidence records (adopted snapshots may cite them)."""


def read_case_tree(shared: SharedTree, name: str, task_id: str) -> CaseTree:
    """The fetched tree at `name` (a tracking ref), its meta and heads checked."""
    found = commit_of(shared.objects, name)
    if found is None:
        raise IntegrityError(f"{name} is not a commit")
    commit, root_id = found
    root = shared.reader.tree(root_id)
    meta_entry = root.get(META)
    if meta_entry is None:
        raise IntegrityError(f"the shared case {task_id} has no {META}")
    try:
        meta = msgspec.json.decode(shared.reader.blob(meta_entry.oid), type=Meta)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise IntegrityError(f"the shared case {task_id}: {META}: {exc}") from None
    if meta.format != FORMAT:
        msg = f"the shared case {task_id} is in format {meta.format!r}; this Cortex reads {FORMAT}"
        raise UnsupportedSchemaError(msg)
    if meta.task_id != task_id:
        raise IntegrityError(f"the shared case at {name} says it is {meta.task_id}")
    replicas: dict[str, Fetched] = {}
    directory = root.get(REPLICAS)
    listing = shared.reader.tree(directory.oid) if directory is not None else {}
    if len(listing) > SHARE_REPLICAS_MAX:
        raise IntegrityError(f"the shared case holds more than {SHARE_REPLICAS_MAX} replicas")
    for key, entry in sorted(listing.items()):
        if not is_replica_key(key) or not entry.is_tree:
            raise IntegrityError(f"the shared case holds {REPLICAS}/{key[:80]!r}, not a replica")
        tree = shared.reader.tree(entry.oid)
        head = shared.head(tree)
        if head is None:
            raise IntegrityError(f"replica {key} of {task_id} has no readable head")
        if head.format != FORMAT:
            raise UnsupportedSchemaError(f"replica {key} is in format {head.format!r}")
        if head.task_id != task_id or head.replica != key.partition("~")[0]:
            raise IntegrityError(f"replica {key}'s head names another case or replica")
        if set(head.ledgers) - set(LEDGER_NAMES):
            raise IntegrityError(f"replica {key}'s head names an unknown ledger")
        history = shared.history(task_id, tree)
        assert history is not None  # noqa: S101 - it has a head
        replicas[key] = Fetched(key=key, oid=entry.oid, head=head, tree=tree, history=history)
    return CaseTree(task_id=task_id, commit=commit, root=root, replicas=replicas)


class LocalChain:
    """The local replica's ledgers, as a history (read only when a comparison needs them)."""

    def __init__(self, path: str, case: CaseFile) -> None:
        self.path = path
        self.case = case
        self._lines: dict[str, list[bytes]] = {}

    def count(self, name: str) -> int:
        """Lines of a ledger."""
        return (self.case.ledgers.get(name) or LedgerState()).count

    def lines(self, name: str) -> list[bytes]:
        """Every committed line of a ledger."""
        if name not in self._lines:
            state = self.case.ledgers.get(name) or LedgerState()
            file = os.path.join(self.path, ledger_file(name))
            self._lines[name] = [line for _, line in ledger.iter_lines(file, state.bytes)]
        return self._lines[name]

    def hash_at(self, name: str, n: int) -> str:
        """The chain hash after line `n`."""
        if n == 0:
            return ledger.genesis(self.case.id, name)
        if n == self.count(name):
            state = self.case.ledgers.get(name) or LedgerState()
            return state.tip
        return ledger.line_hash(self.lines(name)[n - 1])


class IdBook:
    """Every record id the case will hold, with the hash of the line that holds it, by ledger.

    The merged view unions records by id (a fork's twin lines are the same line), so a fetched
    record reusing an id the case already holds with other content would shadow that record on
    every surface. The book is read once per ledger, only when an import brings new lines: the
    local ledger, each stored replica's, and what this fetch plans to import.
    """

    def __init__(self, path: str | None, case: CaseFile | None, index: ReplicaIndex) -> None:
        self.path = path
        self.case = case
        self.index = index
        self._ids: dict[str, dict[str, str]] = {}

    def ids(self, name: str) -> dict[str, str]:
        """Record id -> line hash of one ledger across the case."""
        if name not in self._ids:
            found: dict[str, str] = {}
            if self.path is not None and self.case is not None:
                state = self.case.ledgers.get(name) or LedgerState()
                file = os.path.join(self.path, ledger_file(name))
                for _, line in ledger.iter_lines(file, state.bytes):
                    found.setdefault(_line_id(line), ledger.line_hash(line))
                for replica in self.index.replicas:
                    extent = replica.ledgers.get(name) or LedgerState()
                    file = os.path.join(self.path, replica_ledger(replica.key, name))
                    for _, line in ledger.iter_lines(file, extent.bytes):
                        held = hash_line(name, line) if b'"share":' in line else None
                        found.setdefault(_line_id(line), held or ledger.line_hash(line))
            self._ids[name] = found
        return self._ids[name]

    def add(self, name: str, record_id: str, hashed: str, where: str) -> None:
        """Note a new record; refuse it when the case holds its id with other content."""
        known = self.ids(name)
        if known.setdefault(record_id, hashed) != hashed:
            msg = f"{where}: record id {record_id} appears twice (held with other content)"
            raise IntegrityError(msg)


def _line_id(line: bytes) -> str:
    """The id a stored line starts with (`{"id":"<id>"`), or "" for one that does not."""
    if not line.startswith(b'{"id":"'):
        return ""
    end = line.find(b'"', 7)
    return line[7:end].decode("utf-8", "replace") if end > 0 else ""


def stored_history(path: str, task_id: str, index: ReplicaIndex, key: str) -> History | None:
    """An imported replica's history as the case directory holds it."""
    replica = index.replica(key)
    if replica is None:
        return None
    lines: dict[str, list[bytes]] = {}
    for name in LEDGER_NAMES:
        state = replica.ledgers.get(name) or LedgerState()
        file = os.path.join(path, replica_ledger(key, name))
        lines[name] = [line for _, line in ledger.iter_lines(file, state.bytes)]
    return Lines(task_id, lines)


def _extends_stored(
    fetched: Fetched, index: ReplicaIndex, key: str, path: str, task_id: str
) -> str | None:
    """How the fetched history relates to the stored one of `key`.

    `new` (it extends what is stored), `same`, `behind` (a prefix of what is stored: an older
    export) or None (diverged: a fork). Decided from one hash per ledger, reading the stored
    lines only when the fetched history is shorter (docs/design/sharing.md, shorter histories).
    """
    replica = index.replica(key)
    if replica is None:
        return "new"
    newer = shorter = False
    stored_lines: History | None = None
    for name in LEDGER_NAMES:
        stored = replica.ledgers.get(name) or LedgerState()
        count = fetched.history.count(name)
        if count < stored.count:
            shorter = True
            if stored_lines is None:
                stored_lines = stored_history(path, task_id, index, key)
            assert stored_lines is not None  # noqa: S101 - the replica is stored
            if count and fetched.history.hash_at(name, count) != stored_lines.hash_at(name, count):
                return None
            continue
        if stored.count and fetched.history.hash_at(name, stored.count) != stored.tip:
            return None
        newer = newer or count > stored.count
    if newer and shorter:
        return None  # longer in one ledger, shorter in another: no history of one replica
    if shorter:
        return "behind"
    return "new" if newer else "same"


def plan(
    shared: SharedTree,
    fetched: CaseTree,
    *,
    path: str | None,
    case: CaseFile | None,
    index: ReplicaIndex | None,
    replica: str,
    local_key: str | None,
    redactor: Redactor,
    behind: list[str] | None = None,
) -> list[Import]:
    """What to import of every fetched replica (see the module docstring).

    The keys of fetched histories that are older exports of what is stored go to `behind`.
    """
    imports: list[Import] = []
    index = index or ReplicaIndex(local=_no_sync(replica))
    local = LocalChain(path, case) if path is not None and case is not None else None
    book = IdBook(path, case, index)
    for key, remote in sorted(fetched.replicas.items()):
        target = key
        if key.partition("~")[0] == replica and local is not None:
            # This machine's own replica id: a history of it that the local chain does not
            # contain is someone else's (a copied state directory): keep it under a fork key.
            if local_key is not None and remote.oid == local_key:
                continue  # exactly this machine's last export, which the local chain extends
            how = relation(local, remote.history)
            if how in ("equal", "first"):
                continue
            if key == replica:
                target = f"{replica}~{fork_suffix(local, remote.history)}"
        decided = _extends_stored(remote, index, target, path or "", fetched.task_id)
        while decided is None:
            stored = stored_history(path or "", fetched.task_id, index, target)
            assert stored is not None  # noqa: S101 - None only when something is stored
            target = f"{target.partition('~')[0]}~{fork_suffix(stored, remote.history)}"
            decided = _extends_stored(remote, index, target, path or "", fetched.task_id)
        if decided == "behind" and behind is not None:
            behind.append(target)
        if decided != "new":
            continue
        imports.append(
            _lines(
                shared,
                fetched,
                remote,
                target=target,
                index=index,
                redactor=redactor,
                path=path,
                book=book,
            )
        )
    return imports


def _no_sync(replica: str) -> LocalSync:
    return LocalSync(replica=replica)


def _lines(
    shared: SharedTree,
    fetched: CaseTree,
    remote: Fetched,
    *,
    target: str,
    index: ReplicaIndex,
    redactor: Redactor,
    path: str | None = None,
    book: IdBook | None = None,
) -> Import:
    """Read and verify the new lines of one replica and the blobs they cite."""
    stored = index.replica(target)
    result = Import(
        key=target,
        source=remote.key,
        head=remote.head,
        forked="~" in target,
    )
    task_id = fetched.task_id
    for name in LEDGER_NAMES:
        have = (stored.ledgers.get(name) if stored else None) or LedgerState()
        head = remote.head.ledgers.get(name)
        if head is None or head.count <= have.count:
            if have.count:
                result.extents[name] = have
            continue
        lines = _read_range(shared, remote, name, have.count + 1, head.count)
        prev = have.tip or ledger.genesis(task_id, name)
        where = f"replica {remote.key} {name}"
        ordered = have.ordered or have.count == 0
        last = have.last
        tip = prev
        records: list[tuple[LedgerRecord, ShareMeta | None]] = []
        for record, meta, hashed in check_chain(lines, name, prev=prev, where=where):
            records.append((record, meta))
            if book is not None:
                book.add(name, record.id, hashed, where)
            ordered = ordered and record.timestamp >= last
            last = max(last, record.timestamp)
            tip = hashed
        if tip != head.tip:
            raise IntegrityError(f"{where}: the chain does not end at the tip its head records")
        _check_ids(name, records, lines, where, path, target, have)
        for (record, meta), line in zip(records, lines, strict=True):
            _check_local_rules(redactor, record, line, task_id)
            if isinstance(record, Evidence):
                result.evidence.add(record.id)
                result.blobs.update(_blobs(shared, fetched, record, meta, redactor))
        data = b"".join(line + b"\n" for line in lines)
        result.appends[name] = (data, have.bytes)
        result.extents[name] = LedgerState(
            count=head.count, bytes=have.bytes + len(data), tip=tip, last=last, ordered=ordered
        )
        result.lines += len(lines)
    return result


def _check_ids(  # noqa: PLR0917 - one call site, each argument a different fact
    name: str,
    records: list[tuple[LedgerRecord, ShareMeta | None]],
    lines: list[bytes],
    where: str,
    path: str | None,
    key: str,
    have: LedgerState,
) -> None:
    """Each new record's id is well formed and new to this replica's history, as audit checks."""
    prefix = LEDGER_PREFIXES[name]
    seen: set[str] = set()
    for (record, _), line in zip(records, lines, strict=True):
        if not is_id(record.id, prefix):
            raise IntegrityError(f"{where}: malformed record id {record.id[:80]!r}")
        if not line.startswith(b'{"id":"' + record.id.encode() + b'"'):
            # Every line Cortex writes starts with its id, which is how a stored ledger is
            # searched by id (`ledger.find_lines`): a line that hides it is not one of ours.
            raise IntegrityError(f"{where}: the line of {record.id} does not start with its id")
        if record.id in seen:
            raise IntegrityError(f"{where}: record id {record.id} appears twice")
        seen.add(record.id)
    if path is not None and have.bytes:
        file = os.path.join(path, replica_ledger(key, name))
        found = ledger.find_lines(file, have.bytes, sorted(seen))
        if found:
            raise IntegrityError(f"{where}: record id {min(found)} appears twice")


def _read_range(
    shared: SharedTree, remote: Fetched, name: str, first: int, last: int
) -> list[bytes]:
    """Exported lines `first..last` (1-based) of one ledger, every file read checked."""
    head = remote.head.ledgers[name]
    ledgers = remote.tree.get(LEDGERS_DIR)
    if ledgers is None:
        raise IntegrityError(f"replica {remote.key} has no {LEDGERS_DIR}/")
    directory = shared.reader.tree(ledgers.oid).get(name)
    if directory is None:
        raise IntegrityError(f"replica {remote.key} has no {LEDGERS_DIR}/{name}/")
    files = shared.reader.tree(directory.oid)
    expected = {segment_name(s.first, s.last) for s in head.segments}
    if head.tail is not None:
        expected.add(TAIL)
    if set(files) != expected:
        raise IntegrityError(f"replica {remote.key}'s {name} files are not those its head lists")
    lines: list[bytes] = []
    position = 0
    for segment in head.segments:
        if segment.last - segment.first + 1 != SHARE_SEGMENT_LINES or segment.first != position + 1:
            raise IntegrityError(f"replica {remote.key}'s {name} segments are not contiguous")
        position = segment.last
        if segment.last < first:
            continue
        data = shared.reader.blob(files[segment_name(segment.first, segment.last)].oid)
        if sha256_hex(data) != segment.sha256:
            raise IntegrityError(
                f"replica {remote.key}'s {name} segment {segment.first} was edited"
            )
        chunk = data.splitlines()
        if len(chunk) != SHARE_SEGMENT_LINES:
            raise IntegrityError(f"replica {remote.key}'s {name} segment {segment.first} is torn")
        lines.extend(chunk[max(first - segment.first, 0) :])
    if head.tail is not None:
        data = shared.reader.blob(files[TAIL].oid)
        if sha256_hex(data) != head.tail.sha256:
            raise IntegrityError(f"replica {remote.key}'s {name} tail was edited")
        chunk = data.splitlines()
        if len(chunk) != head.tail.lines:
            raise IntegrityError(f"replica {remote.key}'s {name} tail is torn")
        lines.extend(chunk[max(first - position - 1, 0) :])
        position += len(chunk)
    if position != head.count:
        raise IntegrityError(f"replica {remote.key}'s {name} holds {position}, not {head.count}")
    return lines[: last - first + 1]


def _check_local_rules(redactor: Redactor, record: LedgerRecord, line: bytes, task_id: str) -> None:
    """Nothing this machine's redaction calls secret is stored here, wherever it came from."""
    from cortex.share.errors import SecretFoundError

    del line
    for text in strings(msgspec.to_builtins(record)):
        if redactor.looks_secret(text):
            msg = (
                f"the fetched case {task_id} holds text this machine's redaction rules call "
                f"secret, in {record.id}; nothing was imported"
            )
            raise SecretFoundError(msg, [record.id])


def _blobs(
    shared: SharedTree,
    fetched: CaseTree,
    record: Evidence,
    meta: ShareMeta | None,
    redactor: Redactor,
) -> dict[str, bytes]:
    """The blobs an imported record cites (none for a stub or a withheld blob), checked."""
    from cortex.share.errors import SecretFoundError

    if record.raw_ref is None or record.raw_sha256 is None:
        return {}
    if meta is not None and (meta.withheld or (meta.raw is not None and meta.raw.withheld)):
        return {}
    parsed = parse_raw_ref(record.raw_ref)
    if parsed is None or parsed[0] != fetched.task_id:
        raise IntegrityError(f"{record.id} cites {record.raw_ref[:120]!r}, not a blob of this case")
    raw_id = parsed[1]
    text = _blob(shared, fetched, record.raw_sha256, tree=False)
    found: dict[str, bytes] = {}
    if text is not None:
        found[f"raw/{raw_id}.txt"] = text
        checks = [text]
    else:
        listing = _blob(shared, fetched, record.raw_sha256, tree=True)
        if listing is None:
            raise IntegrityError(f"{record.id} cites a blob the shared case does not hold")
        found[f"raw/{raw_id}.tree"] = listing
        checks = [listing]
        manifest = decode_manifest(listing)
        for member in manifest.files:
            data = _blob(shared, fetched, member.sha256, tree=False)
            if data is None:
                raise IntegrityError(f"{record.id} cites a tree whose member is not shared")
            found[f"raw/{member.raw}.txt"] = data
            checks.append(data)
    for data in checks:
        if redactor.looks_secret(data.decode("utf-8", "surrogateescape")):
            msg = (
                f"the fetched case {fetched.task_id} holds raw output this machine's redaction "
                f"rules call secret, cited by {record.id}; nothing was imported"
            )
            raise SecretFoundError(msg, [record.id])
    return found


def _blob(shared: SharedTree, fetched: CaseTree, sha256: str, *, tree: bool) -> bytes | None:
    parts = blob_path(sha256, tree=tree).split("/")
    entries = fetched.root
    for part in parts[:-1]:
        entry = entries.get(part)
        if entry is None or not entry.is_tree:
            return None
        entries = shared.reader.tree(entry.oid)
    entry = entries.get(parts[-1])
    if entry is None or entry.is_tree:
        return None
    data = shared.reader.blob(entry.oid)
    if sha256_hex(data) != sha256:
        raise IntegrityError(f"the shared blob {sha256[:12]} does not match its name (edited)")
    return data


def snapshot(shared: SharedTree, remote: Fetched, name: str) -> bytes | None:
    """A fetched replica's snapshot file, checked against its head (None when it has none)."""
    sha = remote.head.snapshots.get(name)
    entry = remote.tree.get(name)
    if sha is None and entry is None:
        return None
    if sha is None or entry is None or entry.is_tree:
        raise IntegrityError(f"replica {remote.key}'s {name} is not the one its head names")
    data = shared.reader.blob(entry.oid)
    if sha256_hex(data) != sha:
        raise IntegrityError(f"replica {remote.key}'s {name} was edited")
    return data


def summary(shared: SharedTree, remote: Fetched) -> bytes | None:
    """A fetched replica's summary.md, checked."""
    entry = remote.tree.get("summary.md")
    if remote.head.summary is None:
        return None
    if entry is None:
        raise IntegrityError(f"replica {remote.key}'s summary.md is missing")
    data = shared.reader.blob(entry.oid)
    if sha256_hex(data) != remote.head.summary:
        raise IntegrityError(f"replica {remote.key}'s summary.md was edited")
    return data


def hash_line(name: str, line: bytes) -> str:
    """The chain hash of an exported line."""
    _, meta = parse(line, LEDGER_TYPES[name], where=name)
    return line_hash(line, meta)
