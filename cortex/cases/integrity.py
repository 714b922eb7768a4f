"""Integrity audit of one case directory. Reads only; never locks, repairs or creates anything.

Errors are violations of the format's invariants (a broken chain, a revision out of order, a
dangling reference, a file that does not decode). Warnings are the expected debris of an
interrupted write (a torn tail, a pending journal, temp files), which the next writer removes,
and things a person may want to look at.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

import msgspec

from cortex.cases import ledger
from cortex.cases.bounds import JOURNAL_MAX, RAW_BLOB_MAX, SNAPSHOT_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.documents import AUX_TYPES, Decisions, Hypotheses, Verification
from cortex.cases.errors import CortexError, IntegrityError
from cortex.cases.findings import (
    AuditReport,
    Collector,
    LedgerContext,
    ReplicaAudited,
    Tombstone,
    audit_secrets,
)
from cortex.cases.fsio import TEMP_PREFIX, read_bounded
from cortex.cases.ids import is_id
from cortex.cases.journal import decode_journal, journal_entry_ok
from cortex.cases.layout import (
    BACKUP_PREFIX,
    CASE_FILE,
    JOURNAL_FILE,
    LOCK_FILE,
    RAW_DIR,
    REFS_DIR,
    REPLICAS_DIR,
    REPLICAS_FILE,
    ledger_file,
    parse_raw_ref,
)
from cortex.cases.records import (
    LEDGER_PREFIXES,
    LEDGER_TYPES,
    LEDGERS,
    CaseFile,
    Command,
    Evidence,
    LedgerState,
    PhaseChange,
    case_digest,
    decode,
)
from cortex.cases.redact import Redactor
from cortex.cases.refusals import REFUSALS_FILE
from cortex.cases.store import decode_case

MAX_FINDINGS_PER_LEDGER = 20
_KNOWN_ENTRIES = frozenset(
    {CASE_FILE, LOCK_FILE, JOURNAL_FILE, RAW_DIR, REFS_DIR}
    | {ledger_file(name) for name in LEDGERS}
    | {"plan.json", "hypotheses.json", "decisions.json", "verification.json", "summary.md"}
    | {REFUSALS_FILE}
    | {REPLICAS_DIR, REPLICAS_FILE}
    | {"activity.jsonl", "activity.lock", "activity.dropped", "activity.warned"}
)


def audit_case(path: str, task_id: str, redactor: Redactor) -> AuditReport:
    """Check every invariant of the case directory at `path`."""
    found = Collector()
    records: dict[str, int] = {}
    replicas: list[ReplicaAudited] = []
    case = _audit_snapshot(path, task_id, found)
    tombstones: list[Tombstone] = []
    if case is not None:
        context = LedgerContext(path=path, case=case, found=found, redactor=redactor)
        if "replicas" in case.snapshots:
            # First: local records may cite records imported before them.
            from cortex.cases.replica_audit import audit_replicas

            replicas = audit_replicas(context, found)
        for name in LEDGERS:
            records[name] = _audit_ledger(context, name) + sum(
                r.records.get(name, 0) for r in replicas
            )
        if context.anchors or os.path.lexists(os.path.join(path, "activity.jsonl")):
            # A deleted activity ledger is found by the anchors its commits left.
            records["activity"] = _audit_activity(context)
        _audit_raw(path, context.raw_refs, found)
        if context.tombstones or context.forgets:
            from cortex.cases.forgotten import audit_forgets

            tombstones = audit_forgets(context, found)
        _audit_case_digest(case, context.last_command, found)
        _audit_phases(case, context.phases, found)
        _audit_snapshots(path, case, context.evidence_ids, found)
        audit_secrets(case, redactor, CASE_FILE, found)
    _audit_entries(path, found)
    return AuditReport(
        task_id=task_id,
        ok=not found.errors,
        revision=None if case is None else case.revision,
        records=records,
        errors=found.errors,
        warnings=found.warnings,
        tombstones=tombstones,
        replicas=replicas,
    )


def _audit_activity(context: LedgerContext) -> int:
    """The activity ledger's chain, its anchors in the commits, and secrets in it."""
    from cortex.cases import activity

    log = activity.read(context.path, context.case.id)
    for problem in [*log.problems, *activity.check_anchors(log, context.anchors)]:
        context.found.error("activity", problem, file=activity.FILE)
    anchored = max((anchor.n for anchor in context.anchors), default=0)
    if len(log.records) > anchored:
        unanchored = len(log.records) - anchored
        context.found.warn(
            "activity_unanchored",
            f"{unanchored} activity record(s) after the last commit are not anchored yet",
            file=activity.FILE,
        )
    for record in log.records:
        audit_secrets(record, context.redactor, activity.FILE, context.found)
    return len(log.records)


def _audit_snapshot(path: str, task_id: str, found: Collector) -> CaseFile | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        found.error("missing", "the case directory does not exist")
        return None
    if not stat.S_ISDIR(mode):
        found.error("not_a_directory", "the case path is not a real directory (symlink?)")
        return None
    if mode & 0o077:
        found.warn("permissions", f"the case directory is mode {oct(mode & 0o777)}, not 0o700")
    case_path = os.path.join(path, CASE_FILE)
    try:
        case = decode_case(read_bounded(case_path, SNAPSHOT_MAX), case_path)
    except FileNotFoundError:
        found.error("missing", "case.json is missing", file=CASE_FILE)
        return None
    except CortexError as exc:
        found.error(exc.code, exc.message, file=CASE_FILE)
        return None
    if case.id != task_id:
        found.error("identity", f"case.json names {case.id}, not {task_id}", file=CASE_FILE)
    for child in [case.parent_task_id, *case.child_task_ids]:
        if child is not None and not is_id(child, "task"):
            found.error("id_format", f"malformed linked task id {child!r}", file=CASE_FILE)
    for name in case.ledgers:
        if name not in LEDGERS:
            found.error("schema", f"case.json names an unknown ledger {name!r}", file=CASE_FILE)
    return case


def _audit_ledger(context: LedgerContext, name: str) -> int:
    path, case, found = context.path, context.case, context.found
    file = ledger_file(name)
    full = os.path.join(path, file)
    state = case.ledgers.get(name)
    if state is None:
        found.error("schema", f"case.json has no committed state for {file}", file=CASE_FILE)
        state = LedgerState()
    genesis = ledger.genesis(case.id, name)
    prefix = LEDGER_PREFIXES[name]
    prefix_len = len(prefix) + 1
    type_ = LEDGER_TYPES[name]
    expected_prev = genesis
    last_revision = 0
    latest = ""
    count = 0
    seen: set[str] = set()
    problems = 0

    def fail(code: str, message: str, offset: int) -> None:
        nonlocal problems
        problems += 1
        if problems <= MAX_FINDINGS_PER_LEDGER:
            found.error(code, message, file=file, offset=offset)

    try:
        for offset, line in ledger.iter_lines(full, state.bytes):
            count += 1
            try:
                record = ledger.parse_line(line, type_, where=f"{file} byte {offset}")
            except IntegrityError as exc:
                fail("schema", exc.message, offset)
                expected_prev = ledger.line_hash(line)
                continue
            if record.prev != expected_prev:
                fail("chain", "the hash chain is broken (edited, dropped or moved line)", offset)
            expected_prev = ledger.line_hash(line)
            if not 1 <= record.revision <= case.revision:
                fail(
                    "revision",
                    f"line revision {record.revision} is outside 1..{case.revision}",
                    offset,
                )
            elif record.revision < last_revision:
                fail("revision", "line revisions go backwards (reordered lines)", offset)
            last_revision = max(last_revision, record.revision)
            if state.ordered and record.timestamp < latest:
                fail("order", "timestamps go backwards in a ledger marked ordered", offset)
            latest = max(latest, record.timestamp)
            if not is_id(record.id, prefix) or not context.check_ulid(record.id[prefix_len:]):
                fail("id_format", f"malformed record id {record.id!r}", offset)
            elif record.id in seen:
                fail("duplicate_id", f"record id {record.id} appears twice", offset)
            seen.add(record.id)
            if isinstance(record, Evidence):
                _check_evidence(record, context, fail, offset)
                context.note_forget(file, record, line, offset, None)
            elif isinstance(record, Command):
                context.last_command = record
                if record.activity is not None:
                    context.anchors.append(record.activity)
            else:
                context.phases.append(record)
            audit_secrets(record, context.redactor, file, found, offset=offset)
    except FileNotFoundError:
        if state.bytes:
            found.error(
                "missing", f"{file} is missing but {state.bytes} bytes are committed", file=file
            )
        return 0
    except IntegrityError as exc:
        found.error("truncated", exc.message, file=file)
        return count
    if problems > MAX_FINDINGS_PER_LEDGER:
        found.error(
            "more", f"{problems - MAX_FINDINGS_PER_LEDGER} more problems in {file}", file=file
        )
    if count != state.count:
        found.error(
            "count", f"{count} committed lines, but case.json says {state.count}", file=file
        )
    if count and state.ordered and latest != state.last:
        msg = f"the latest committed time is {latest}, but case.json says {state.last}"
        found.error("order", msg, file=file)
    if expected_prev != (state.tip or genesis):
        found.error("tip", "the last committed line does not match case.json's tip", file=file)
    _audit_tail(full, file, state, case.revision, found)
    return count


def _check_evidence(
    record: Evidence,
    context: LedgerContext,
    fail: Callable[[str, str, int], None],
    offset: int,
) -> None:
    evidence_ids, raw_refs, task_id = context.evidence_ids, context.raw_refs, context.case.id
    for parent in record.derived_from:
        if parent not in evidence_ids:
            fail("reference", f"derivedFrom names {parent!r}, not an earlier record", offset)
    evidence_ids.add(record.id)
    if record.raw_ref is None:
        return
    parsed = parse_raw_ref(record.raw_ref)
    if parsed is None or parsed[0] != task_id or not is_id(parsed[1], "raw"):
        fail("reference", f"rawRef {record.raw_ref!r} is not a raw blob of this case", offset)
        return
    raw_refs[parsed[1]] = record.raw_sha256


def _audit_tail(full: str, file: str, state: LedgerState, revision: int, found: Collector) -> None:
    extra = ledger.uncommitted_tail(full, state.bytes)
    if not extra:
        return
    try:
        ledger.check_tail(full, state.bytes, revision)
    except IntegrityError as exc:
        found.error("foreign_tail", exc.message, file=file, offset=state.bytes)
        return
    found.warn(
        "uncommitted_tail",
        f"{extra} uncommitted bytes after the committed end (an interrupted write); "
        "readers ignore them and the next write removes them",
        file=file,
        offset=state.bytes,
    )


def _audit_raw(path: str, referenced: dict[str, str | None], found: Collector) -> None:
    raw_dir = os.path.join(path, RAW_DIR)
    try:
        mode = os.lstat(raw_dir).st_mode
        if not stat.S_ISDIR(mode):
            found.error(
                "symlink", "raw/ is not a real directory (a symlink or a file)", file=RAW_DIR
            )
            return
        names = os.listdir(raw_dir)
    except FileNotFoundError:
        names = []
    present: dict[str, str] = {}  # raw id -> "txt" or "tree"
    for name in names:
        full = os.path.join(raw_dir, name)
        try:
            mode = os.lstat(full).st_mode
        except FileNotFoundError:
            continue  # removed by a writer's rollback while we looked
        stem, _, suffix = name.rpartition(".")
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            found.error("symlink", f"raw/{name} is not a regular file", file=f"raw/{name}")
        elif not (suffix in {"txt", "tree"} and is_id(stem, "raw")):
            found.warn("stray_file", f"raw/{name} is not a raw blob", file=f"raw/{name}")
        elif stem in present:
            # One raw id is a file or a tree, never both: one of the two was planted.
            msg = f"raw/{stem} is stored both as a file and as a tree"
            found.error("reference", msg, file=f"raw/{name}")
        else:
            present[stem] = suffix
    members: set[str] = set()
    for raw_id, expected in sorted(referenced.items()):
        kind = present.get(raw_id)
        if kind is None:
            found.error("reference", f"evidence points at raw/{raw_id}, which is missing")
            continue
        name = f"{raw_id}.{kind}"
        if expected is not None and _file_sha256(os.path.join(raw_dir, name)) != expected:
            found.error(
                "raw_digest",
                f"raw/{name} differs from what was recorded (edited after the fact)",
                file=f"raw/{name}",
            )
        elif kind == "tree":
            members |= _audit_tree(raw_dir, name, present, found)
    pending = os.path.lexists(os.path.join(path, JOURNAL_FILE))
    for orphan in sorted(set(present) - set(referenced) - members):
        if not pending:
            name = f"{orphan}.{present[orphan]}"
            found.warn("orphan_blob", f"raw/{name} is referenced by no committed record")


def _audit_tree(raw_dir: str, name: str, present: dict[str, str], found: Collector) -> set[str]:
    """Check a tree's members against its manifest; return their raw ids (referenced by it)."""
    from cortex.cases.tree import decode_manifest

    try:
        manifest = decode_manifest(read_bounded(os.path.join(raw_dir, name), SNAPSHOT_MAX))
    except (OSError, ValueError, CortexError) as exc:
        found.error(
            "tree", f"raw/{name} is not a readable tree listing ({exc})", file=f"raw/{name}"
        )
        return set()
    members: set[str] = set()
    for member in manifest.files:
        blob = f"{member.raw}.txt"
        if not is_id(member.raw, "raw") or present.get(member.raw) != "txt":
            found.error("reference", f"raw/{name} lists {member.path!r} as raw/{blob}, missing")
            continue
        members.add(member.raw)
        if _file_sha256(os.path.join(raw_dir, blob)) != member.sha256:
            msg = f"raw/{blob} ({member.path!r} of raw/{name}) differs from what was recorded"
            found.error("raw_digest", msg, file=f"raw/{blob}")
    return members


def _file_sha256(path: str) -> str | None:
    try:
        return sha256_hex(read_bounded(path, RAW_BLOB_MAX * 2))
    except (OSError, CortexError):
        return None


def _audit_case_digest(case: CaseFile, last: Command | None, found: Collector) -> None:
    """case.json must be what the last commit wrote: its unchained fields are checked here."""
    if last is None:
        return
    if last.case_digest is None or last.case_digest != case_digest(case):
        found.error(
            "case_digest",
            "case.json differs from what its last commit wrote (edited after the fact)",
            file=CASE_FILE,
        )


def _audit_phases(case: CaseFile, phases: list[PhaseChange], found: Collector) -> None:
    """Each phase line continues from the last, and the last ends where the case is."""
    previous = None
    for index, change in enumerate(phases):
        if change.from_phase != previous:
            found.error(
                "phase_chain",
                f"phase line {index + 1} starts from {change.from_phase}, not {previous}",
                file="phases.jsonl",
            )
        previous = change.to_phase
    if phases and previous != case.status:
        found.error(
            "phase_chain",
            f"the last phase line ends in {previous}, but the case is {case.status}",
            file="phases.jsonl",
        )


def _audit_snapshots(path: str, case: CaseFile, evidence_ids: set[str], found: Collector) -> None:
    """Each auxiliary snapshot is the exact version case.json records (revision and digest)."""
    pending = os.path.lexists(os.path.join(path, JOURNAL_FILE))
    types: dict[str, type[msgspec.Struct]] = dict(AUX_TYPES)
    if "replicas" in case.snapshots:
        from cortex.cases.replica_index import ReplicaIndex

        types[REPLICAS_FILE] = ReplicaIndex
    for stem, ref in sorted(case.snapshots.items()):
        name = f"{stem}.json"
        type_ = types.get(name)
        if type_ is None:
            found.error("schema", f"case.json names an unknown snapshot {name!r}", file=CASE_FILE)
            continue
        candidates = [name, BACKUP_PREFIX + name] if pending else [name]
        data = None
        for candidate in candidates:
            try:
                raw = read_bounded(os.path.join(path, candidate), SNAPSHOT_MAX)
            except FileNotFoundError:
                continue
            except CortexError as exc:
                found.error(exc.code, exc.message, file=candidate)
                continue
            if sha256_hex(raw) == ref.sha256:
                data = raw
                break
        if data is None:
            found.error(
                "snapshot_digest",
                f"{name} is not the version revision {ref.revision} wrote (edited or missing)",
                file=name,
            )
            continue
        try:
            document = decode(data, type_)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            found.error("schema", f"{name}: {exc}", file=name)
            continue
        tag = getattr(document, "revision", ref.revision)
        if tag != ref.revision:
            # Readers take the version whose tag case.json records, and only that one: a file
            # with the right bytes under another tag is read by none of them (they answer busy).
            found.error(
                "snapshot_revision",
                f"{name} says revision {tag}, but case.json records it as revision {ref.revision}",
                file=name,
            )
            continue
        if isinstance(document, Decisions):
            waiting = [d.id for d in document.decisions if d.status == "pending"]
            paused = case.status == "needs_human_decision"
            if len(waiting) > 1 or bool(waiting) != paused:
                found.error(
                    "decision_state",
                    f"pending decisions {waiting} do not match the case being {case.status}",
                    file=name,
                )
        if isinstance(document, Verification):
            _audit_receipts(document, evidence_ids, found)
        if isinstance(document, Hypotheses):
            for hypothesis in document.hypotheses:
                for support in hypothesis.supports:
                    if support not in evidence_ids:
                        found.error(
                            "reference",
                            f"{hypothesis.id} cites {support}, which is not evidence of this case",
                            file=name,
                        )


def _audit_receipts(document: Verification, evidence_ids: set[str], found: Collector) -> None:
    """Every receipt belongs to a kept batch, cites evidence of this case, and agrees with it."""
    batches = {batch.id: batch for batch in document.batches}
    name = "verification.json"
    for receipt in document.receipts:
        batch = batches.get(receipt.batch_id)
        if batch is None:
            found.error("reference", f"{receipt.id} names an unknown batch", file=name)
            continue
        if receipt.binding != batch.binding or (
            receipt.binding == "bound"
            and (receipt.revision, receipt.dirty_digest, receipt.tree)
            != (batch.revision, batch.dirty_digest, batch.tree)
        ):
            found.error("receipt_binding", f"{receipt.id} disagrees with {batch.id}", file=name)
        if receipt.binding == "unbound" and receipt.status in ("passed", "failed"):
            found.error(
                "receipt_binding",
                f"{receipt.id} is unbound but says {receipt.status}",
                file=name,
            )
        for cited in receipt.evidence:
            if cited not in evidence_ids:
                found.error(
                    "reference",
                    f"{receipt.id} cites {cited}, which is not evidence of this case",
                    file=name,
                )


def _audit_entries(path: str, found: Collector) -> None:
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in sorted(names):
        if name.startswith((TEMP_PREFIX, BACKUP_PREFIX)):
            found.warn(
                "stray_file",
                f"{name} was left by an interrupted write; the next write removes it",
                file=name,
            )
        elif name == JOURNAL_FILE:
            journal_path = os.path.join(path, name)
            try:
                journal = decode_journal(read_bounded(journal_path, JOURNAL_MAX), journal_path)
            except FileNotFoundError:
                continue  # the writer finished its commit while we looked
            except CortexError as exc:
                found.error("journal", exc.message, file=name)
                continue
            strange = [e.final for e in journal.files if not journal_entry_ok(e)]
            if strange:
                msg = f"the pending journal names files recovery will not touch: {strange[:5]}"
                found.error("journal", msg, file=name)
            else:
                found.warn(
                    "pending_journal",
                    "an interrupted multi-file commit is pending; the next write resolves it",
                    file=name,
                )
        elif name not in _KNOWN_ENTRIES:
            found.warn("stray_file", f"{name} is not part of the case format", file=name)
        else:
            try:
                mode = os.lstat(os.path.join(path, name)).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode):
                found.error("symlink", f"{name} is a symlink", file=name)
            elif mode & 0o077:
                found.warn("permissions", f"{name} is mode {oct(mode & 0o777)}", file=name)
