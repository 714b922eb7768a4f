"""cortex/cases/txn.py's commit, in process: what one transaction writes, and what it refuses.

The store and CLI tests commit whole cases; here each part of a commit is pinned on its own:
the audit line's fields, the clock's floor, snapshot references and backups, snapshots adopted
byte for byte, imported replicas' ledgers, fences, the refusals with their messages, and the
warnings of a commit whose last step failed. Bounds are shrunk (monkeypatched) so that each is
met exactly. A test written for a mutant names it in its docstring (`function` number: the
change); docs/testing.md has the module's mutation score. `_resolve_journal` and
`_replica_lengths` are the names and numbers of the run before issue 31 moved them to
cortex/cases/recovery.py (`resolve`, `replica_lengths`), whose mutants are numbered anew.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgspec
import pytest
from store_kit import Plan, evidence, make_store, new_case
from txn_kit import dies_at, directory, files, read_journal, recover

from cortex.cases import fsio, ids, ledger
from cortex.cases import txn as txn_module
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import (
    BusyError,
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
)
from cortex.cases.layout import JOURNAL_FILE, REPLICAS_FILE, replica_ledger
from cortex.cases.records import (
    Command,
    Evidence,
    LedgerState,
    StagedFile,
    case_digest,
    decode,
    encode_pretty,
)
from cortex.cases.replica_index import HeadInfo, ImportedReplica, LocalSync, ReplicaIndex
from cortex.cases.store import CaseStore, monotonic_ms
from cortex.cases.txn import Transaction

LATER = "2026-11-30T12:00:05.000Z"
EARLIER = "2026-11-30T11:59:00.000Z"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CaseStore:
    monkeypatch.chdir(tmp_path)
    return make_store(tmp_path)


@pytest.fixture
def task(store: CaseStore) -> str:
    case, _ = store.create(new_case(), operation="case.open")
    return case.id


def commands(store: CaseStore, task: str) -> list[Command]:
    path = directory(store, task) / "commands.jsonl"
    return [decode(line, Command) for line in path.read_bytes().splitlines()]


class TestTransactionState:
    def test_a_negative_expected_revision_is_bad_input(self, store: CaseStore, task: str) -> None:
        """`__init__`: no case is at a negative revision; 0 is a revision to compare with."""
        with pytest.raises(InvalidInputError) as bad:
            store.transaction(task, actor="a", operation="x", expected_revision=-1)
        assert str(bad.value) == "the expected revision must be 0 or more, not -1"
        with pytest.raises(RevisionConflictError):  # noqa: SIM117 - the conflict is on entry
            with store.transaction(task, actor="a", operation="x", expected_revision=0):
                pass

    def test_a_revision_conflict_names_both_and_releases_the_lock(
        self, store: CaseStore, task: str
    ) -> None:
        """`_check_expected_revision`: the expected and actual revisions; the lock is released
        so the next writer is not kept waiting."""
        with pytest.raises(RevisionConflictError) as conflict:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x", expected_revision=4):
                pass
        assert (conflict.value.expected, conflict.value.actual) == (4, 1)
        with store.transaction(task, actor="a", operation="x", expected_revision=1) as txn:
            txn.append("evidence", evidence())
        assert txn.outcome.revision == 2

    def test_outcome(self, store: CaseStore, task: str) -> None:
        """`outcome`: the committed case; with `skip`, the case as read; before either, an
        error rather than a guess."""
        txn = store.transaction(task, actor="a", operation="x")
        with pytest.raises(RuntimeError) as early:
            _ = txn.outcome
        assert str(early.value) == "the transaction has not committed"
        with txn:
            txn.skip = True
        assert txn.outcome is txn.case
        assert txn.committed is None
        with store.transaction(task, actor="a", operation="x") as done:
            done.append("evidence", evidence())
        assert done.outcome is done.committed
        assert done.outcome.revision == 2


class TestTheLock:
    def test_the_case_lock_is_held_and_names_its_holder(
        self, store: CaseStore, task: str, tmp_path: Path
    ) -> None:
        """Kills `__init__` 41, 42, 49, 51, 52: the transaction holds the case's own lock file
        (not one relative to the working directory), and a writer that gives up waiting is
        told which case is busy and who holds it, doing what."""
        impatient = CaseStore(store.root, redactor=store.redactor, lock_timeout=0.05, now=store.now)
        with store.transaction(task, actor="ann", operation="case.note") as txn:
            with pytest.raises(BusyError) as busy:  # noqa: SIM117
                with impatient.transaction(task, actor="bob", operation="case.plan"):
                    pass
            txn.skip = True
        assert str(busy.value).startswith(
            f"case {task} is busy (held by actor ann, operation case.note, pid {os.getpid()}, "
        )
        assert str(busy.value).endswith("; gave up after 0.05 s, retry later")
        assert not (tmp_path / ".lock").exists()


class TestAppend:
    def test_an_unknown_ledger_is_refused(self, store: CaseStore, task: str) -> None:
        with store.transaction(task, actor="a", operation="x") as txn:
            with pytest.raises(ValueError, match=r"^unknown ledger 'notes'$"):
                txn.append("notes", evidence())
            txn.skip = True

    def test_a_clock_that_stepped_back_is_floored(self, store: CaseStore, task: str) -> None:
        """A record older than the ledger's last line (or the case's last change) takes that
        time; later records of the same ledger are floored by the earlier ones."""
        with store.transaction(task, actor="a", operation="x") as txn:
            first = txn.append("evidence", msgspec.structs.replace(evidence(), timestamp=LATER))
            second = txn.append("evidence", msgspec.structs.replace(evidence(), timestamp=EARLIER))
            phase = txn.append("phases", msgspec.structs.replace(evidence(), timestamp=EARLIER))
            txn.skip = True
        assert (first.timestamp, second.timestamp) == (LATER, LATER)
        assert phase.timestamp == "2026-11-30T12:00:00.000Z"  # the phases ledger's own last

    def test_a_record_is_returned_as_stored(self, store: CaseStore, task: str) -> None:
        """The caller gets the record redacted, as the ledger will hold it."""
        with store.transaction(task, actor="a", operation="x") as txn:
            clean = txn.append("evidence", evidence("password=hunter2hunter2"))
        assert isinstance(clean, Evidence)
        assert "hunter2" not in clean.claim
        assert txn.written["evidence"][0] == msgspec.structs.replace(
            clean, revision=2, prev=txn.written["evidence"][0].prev
        )


class TestTheAuditLine:
    def test_every_field_of_the_commands_line(self, store: CaseStore, task: str) -> None:
        """`_commit`'s Command: actor, operation, target, the recovery notes joined, the case
        digest as written, the duration from the transaction's start, the commit's revision."""
        started = monotonic_ms() - 5_000
        with store.transaction(task, actor="ann", operation="case.note", started_ms=started) as t:
            t.target = "ev_1"
            t.notes.extend(["first", "second"])
            t.append("evidence", evidence())
        line = commands(store, task)[-1]
        assert (line.actor, line.operation, line.target, line.note) == (
            "ann",
            "case.note",
            "ev_1",
            "first; second",
        )
        assert line.case_digest == case_digest(store.read_case(task))
        assert 5_000 <= line.duration_ms < 60_000
        assert t.written["commands"][0].revision == 2
        with store.transaction(task, actor="bob", operation="case.note") as plain:
            plain.append("evidence", evidence())
        assert (commands(store, task)[-1].note, commands(store, task)[-1].target) == (None, None)

    def test_the_commit_time_never_goes_back(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_commit` 16-18: the commit's time is the latest of the store's clock, the
        case's last change and every record's (floored) time."""
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.append("evidence", msgspec.structs.replace(evidence(), timestamp=LATER))
        assert store.read_case(task).updated_at == LATER  # a record ahead of the clock
        monkeypatch.setattr(store, "now", lambda: EARLIER)
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.notes.append("nothing appended but the audit line")
        assert store.read_case(task).updated_at == LATER  # the clock behind the case
        monkeypatch.setattr(store, "now", lambda: "2026-11-30T12:01:00.000Z")
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.skip = False
        assert store.read_case(task).updated_at == "2026-11-30T12:01:00.000Z"

    def test_the_revision_and_immutable_fields_are_the_stores(
        self, store: CaseStore, task: str
    ) -> None:
        """Kills `_commit` 4, 6, 7, 9-12: the refusals' messages."""
        with pytest.raises(InvalidInputError) as immutable:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.case.created_at = LATER
        assert str(immutable.value) == (
            "these fields cannot change once a case exists: "
            "id, schema_version, created_at, workspace, acceptance_criteria"
        )
        with pytest.raises(ValueError) as revision:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.case.revision = 9
        assert str(revision.value) == "the revision is managed by the store"
        assert store.read_case(task).revision == 1

    def test_a_ledger_without_a_committed_state_starts_at_its_genesis(
        self, store: CaseStore, task: str
    ) -> None:
        """Kills `_commit` 162 (the ledger's name not passed to `chain`): a ledger the case
        records no state for (a case written before that ledger existed) starts its chain at
        that ledger's own genesis."""
        path = directory(store, task) / "case.json"
        case = store.read_case(task)
        del case.ledgers["evidence"]
        path.write_bytes(encode_pretty(case))
        (directory(store, task) / "evidence.jsonl").unlink()
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.append("evidence", evidence())
        assert txn.written["evidence"][0].prev == ledger.genesis(task, "evidence")
        assert store.read_case(task).ledgers["evidence"].count == 1

    def test_a_changed_case_is_redacted(self, store: CaseStore, task: str) -> None:
        """What the caller changed in case.json is redacted before it is written."""
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.case.goal = "deploy with password=hunter2hunter2"
        assert "hunter2" not in store.read_case(task).goal
        assert "hunter2" not in (directory(store, task) / "case.json").read_text()


class TestSnapshots:
    def test_a_snapshot_ref_names_the_revision_and_digest(
        self, store: CaseStore, task: str
    ) -> None:
        """The case records the staged snapshot's revision and the sha256 of its bytes."""
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot("plan.json", Plan(summary="s"))
        data = (directory(store, task) / "plan.json").read_bytes()
        ref = store.read_case(task).snapshots["plan"]
        assert (ref.revision, ref.sha256) == (2, sha256_hex(data))
        assert decode(data, Plan).revision == 2

    def test_the_snapshot_bound_is_exact(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_commit` 43-45: a snapshot of exactly the bound commits; one byte more is
        refused with its size, before anything is written."""
        summary = "s" * 4000  # longer than case.json, which the same bound applies to
        size = len(encode_pretty(Plan(summary=summary, revision=2)))
        monkeypatch.setattr(txn_module, "SNAPSHOT_MAX", size)
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot("plan.json", Plan(summary=summary))
        before = files(store, task)
        with pytest.raises(InvalidInputError) as big:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.stage_snapshot("plan.json", Plan(summary=summary + "s"))
        assert str(big.value) == f"plan.json would be {size + 1} bytes, over {size}"
        assert files(store, task) == before

    def test_the_case_snapshot_bound_is_exact(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """case.json itself over the bound is refused with its size, nothing written."""
        monkeypatch.setattr(txn_module, "SNAPSHOT_MAX", 100)
        before = files(store, task)
        with pytest.raises(InvalidInputError) as big:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.append("evidence", evidence())
        assert str(big.value).startswith("case snapshot would be ")
        assert str(big.value).endswith(" bytes, over 100")
        assert files(store, task) == before

    def test_the_case_snapshot_may_be_exactly_the_bound(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_commit` 175 (`len > SNAPSHOT_MAX` -> `>=`) and 178-180 (the `txn.fence`
        crash point renamed): the size case.json would have is learnt by a first attempt
        stopped at `txn.fence`, where nothing is written yet; with the bound at exactly that
        size, the same commit goes through."""
        sizes: list[int] = []
        real = encode_pretty

        def measured(document: msgspec.Struct) -> bytes:
            data = real(document)
            sizes.append(len(data))
            return data

        monkeypatch.setattr(txn_module, "encode_pretty", measured)
        before = files(store, task)
        with dies_at(monkeypatch, "txn.fence"):  # noqa: SIM117 - one commit in the block
            with store.transaction(task, actor="a", operation="x", started_ms=0) as txn:
                txn.append("evidence", evidence("one"))
        assert files(store, task) == before
        monkeypatch.setattr(txn_module, "SNAPSHOT_MAX", sizes[-1])
        with store.transaction(task, actor="a", operation="x", started_ms=0) as txn:
            txn.append("evidence", evidence("one"))
        assert len((directory(store, task) / "case.json").read_bytes()) == sizes[-1]

    def test_a_snapshot_staged_twice_is_refused(self, store: CaseStore, task: str) -> None:
        """One commit stages a snapshot once: a second staging of the same name, either way,
        is a programming error, said at once instead of a failed link at publish."""
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot("plan.json", Plan(summary="one"))
            with pytest.raises(ValueError) as twice:
                txn.stage_snapshot("plan.json", Plan(summary="two"))
            assert str(twice.value) == "plan.json is staged twice in one commit"
            with pytest.raises(ValueError, match=r"^plan.json is staged twice in one commit$"):
                txn.stage_snapshot_bytes("plan.json", encode_pretty(Plan(summary="b")), 2)
            txn.stage_snapshot_bytes("decisions.json", b"{}", 2)
            with pytest.raises(ValueError, match=r"^decisions.json is staged twice"):
                txn.stage_snapshot("decisions.json", Plan(summary="c"))
            txn.skip = True

    def test_a_snapshot_read_in_the_transaction(self, store: CaseStore, task: str) -> None:
        """`snapshot`: the committed version, or None when the case has none."""
        with store.transaction(task, actor="a", operation="x") as txn:
            assert txn.snapshot("plan.json", Plan) is None
            txn.stage_snapshot("plan.json", Plan(summary="s"))
        with store.transaction(task, actor="a", operation="x") as txn:
            plan = txn.snapshot("plan.json", Plan)
            txn.skip = True
        assert plan is not None
        assert (plan.summary, plan.revision) == ("s", 2)

    def test_a_snapshot_that_moved_is_an_integrity_error(self, store: CaseStore, task: str) -> None:
        """Kills `snapshot` 7-15: under the lock no commit can move it, so a version case.json
        does not name is damage, reported with the file."""
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot("plan.json", Plan(summary="s"))
        path = directory(store, task) / "plan.json"
        path.write_bytes(encode_pretty(Plan(summary="s", revision=7)))
        with store.transaction(task, actor="a", operation="x") as txn:
            with pytest.raises(IntegrityError) as moved:
                txn.snapshot("plan.json", Plan)
            txn.skip = True
        assert str(moved.value) == "plan.json does not hold the version case.json records"
        assert moved.value.path == str(path)

    def test_a_snapshot_adopted_byte_for_byte(self, store: CaseStore, task: str) -> None:
        """Kills `_commit` 74-84, 86, 87 and `stage_snapshot_bytes` 7: bytes another replica
        wrote are published as they are, under the revision they carry, with a backup of the
        version they replace (and none for a first one)."""
        first = encode_pretty(Plan(summary="theirs", revision=5))
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot_bytes("plan.json", first, 5)
            assert txn._verbatim == [("plan.json", first, 5)]
        root = directory(store, task)
        assert (root / "plan.json").read_bytes() == first
        ref = store.read_case(task).snapshots["plan"]
        assert (ref.revision, ref.sha256) == (5, sha256_hex(first))
        second = encode_pretty(Plan(summary="newer", revision=6))
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot_bytes("plan.json", second, 6)
        assert txn.outcome.snapshots["plan"].revision == 6
        assert (root / "plan.json").read_bytes() == second
        assert not (root / ".bak-plan.json").exists()

    def test_an_adopted_snapshot_keeps_a_backup_until_the_commit_point(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The replaced version is linked as `.bak-plan.json` in the case before publishing,
        so a rollback can restore it."""
        first = encode_pretty(Plan(summary="theirs", revision=5))
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot_bytes("plan.json", first, 5)
        assert [f.backup for f in _journal_after_staging(store, task, monkeypatch, first)] == [
            ".bak-plan.json"
        ]
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]
        assert (directory(store, task) / "plan.json").read_bytes() == first


def _journal_after_staging(
    store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch, current: bytes
) -> list[StagedFile]:
    replacement = encode_pretty(Plan(summary="next", revision=9))
    with dies_at(monkeypatch, "txn.published"):  # noqa: SIM117 - one commit in the block
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot_bytes("plan.json", replacement, 9)
    root = directory(store, task)
    assert (root / ".bak-plan.json").read_bytes() == current
    assert (root / "plan.json").read_bytes() == replacement
    return list(read_journal(store, task).files)


class TestFences:
    def test_a_fence_runs_after_encoding_and_before_the_first_write(
        self, store: CaseStore, task: str
    ) -> None:
        """Kills `fence` 1: every fence is called once, in order, right before the first write;
        one that raises aborts the commit with nothing written."""
        calls: list[str] = []

        def lapsed() -> None:
            calls.append("second")
            raise PermissionError("the lease expired")

        before = files(store, task)
        with pytest.raises(PermissionError, match="the lease expired"):  # noqa: SIM117, PT012
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.fence(lambda: calls.append("first"))
                txn.fence(lapsed)
                txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"blob")
                txn.append("evidence", evidence())
                assert calls == []
        assert calls == ["first", "second"]
        assert files(store, task) == before
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.fence(lambda: calls.append("third"))
            txn.append("evidence", evidence())
        assert calls == ["first", "second", "third"]
        assert store.read_case(task).revision == 2


def replica_index(key: str, length: int) -> ReplicaIndex:
    head = HeadInfo(revision=1, lamport=1, epoch=0, digest="d", exported_at=LATER, cortex="test")
    return ReplicaIndex(
        local=LocalSync(replica=ids.new_id("rep")),
        replicas=[
            ImportedReplica(
                key=key,
                replica=key,
                ledgers={"evidence": LedgerState(count=1, bytes=length)},
                head=head,
                source="remote:origin",
                commit="0" * 40,
                fetched_at=LATER,
            )
        ],
    )


def lines(*names: str) -> bytes:
    return b"".join(ledger.format_line(evidence(n)) for n in names)


class TestReplicas:
    """Imported replicas' ledgers (`replicas/<key>/<ledger>.jsonl`), appended in a commit."""

    def import_(self, store: CaseStore, task: str, key: str, data: bytes, committed: int) -> None:
        with store.transaction(task, actor="a", operation="case.fetch") as txn:
            txn.append_replica(replica_ledger(key, "evidence"), data, committed)
            txn.stage_snapshot(REPLICAS_FILE, replica_index(key, committed + len(data)))

    def test_an_import_creates_private_directories_and_syncs_them(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_append_replicas` 1-13, 15-27: the lines land in the
        replica's ledger, in directories made private (0700 whatever the umask), and each
        directory that gained an entry is synced, deepest first."""
        synced: list[str] = []

        def sync(path: str) -> None:
            synced.append(path)
            fsio.fsync_dir(path)

        monkeypatch.setattr(txn_module, "fsync_dir", sync)
        key = ids.new_id("rep")
        data = lines("one", "two")
        old_umask = os.umask(0o022)
        try:
            self.import_(store, task, key, data, 0)
        finally:
            os.umask(old_umask)
        root = directory(store, task)
        folder = root / "replicas" / key
        assert (folder / "evidence.jsonl").read_bytes() == data
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
        replicas_dir = str(root / "replicas")
        assert synced[:2] == [str(folder), replicas_dir]
        # A second import into the existing file creates nothing: no directory to sync first.
        synced.clear()
        more = lines("three")
        self.import_(store, task, key, more, len(data))
        assert (folder / "evidence.jsonl").read_bytes() == data + more
        assert str(folder) not in synced
        assert replicas_dir not in synced

    def test_a_new_ledger_in_an_existing_directory_syncs_the_directory(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_append_replicas` 22-24: a new file's directory entry is made durable."""
        key = ids.new_id("rep")
        self.import_(store, task, key, lines("one"), 0)
        synced: list[str] = []
        monkeypatch.setattr(txn_module, "fsync_dir", synced.append)
        with store.transaction(task, actor="a", operation="case.fetch") as txn:
            txn.append_replica(replica_ledger(key, "phases"), lines("p"), 0)
            txn.stage_snapshot(REPLICAS_FILE, replica_index(key, 1))
        folder = directory(store, task) / "replicas" / key
        assert synced[0] == str(folder)
        assert str(folder.parent) not in synced

    def test_a_symlinked_replica_directory_is_refused(
        self, store: CaseStore, task: str, tmp_path: Path
    ) -> None:
        """Kills `_append_replicas` 14: never append through a directory swapped for a link."""
        key = ids.new_id("rep")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (directory(store, task) / "replicas").mkdir()
        (directory(store, task) / "replicas" / key).symlink_to(elsewhere)
        with pytest.raises(IntegrityError, match="not a real directory"):
            self.import_(store, task, key, lines("one"), 0)
        assert list(elsewhere.iterdir()) == []
        assert store.read_case(task).revision == 1

    def test_replica_appends_need_the_journal(self, store: CaseStore, task: str) -> None:
        """Replica lines without a staged file (replicas.json) cannot be rolled back."""
        with pytest.raises(ValueError) as refused:  # noqa: SIM117
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.append_replica(replica_ledger(ids.new_id("rep"), "evidence"), b"{}\n", 0)
        assert str(refused.value) == (
            "an import stages replicas.json: replica appends need the journal"
        )
        assert store.read_case(task).revision == 1

    def test_an_interrupted_import_is_cut_back_to_the_committed_length(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_stage` 42 (the replicas' lengths left out of the journal), `_resolve_journal`
        3, 4, 6, 11, 33-39, 43, 44, 46-49 and `_replica_lengths` 1-10, 20-24: a rollback
        truncates an imported replica's ledger to the length the committed replicas.json
        records."""
        key = ids.new_id("rep")
        first = lines("one")
        self.import_(store, task, key, first, 0)
        path = directory(store, task) / "replicas" / key / "evidence.jsonl"
        with dies_at(monkeypatch, "txn.appended"):
            self.import_(store, task, key, lines("two"), len(first))
        assert read_journal(store, task).replica_ledgers == {
            replica_ledger(key, "evidence"): len(first)
        }
        assert path.read_bytes() != first
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]
        assert path.read_bytes() == first

    def test_a_new_replica_ledger_is_cut_to_nothing(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 40, 41: a first import's ledger, which no committed
        replicas.json records, is removed by the rollback, with the directories the import
        made for it."""
        key = ids.new_id("rep")
        before = files(store, task)
        with dies_at(monkeypatch, "txn.appended"):
            self.import_(store, task, key, lines("one"), 0)
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert files(store, task) == before
        assert not (directory(store, task) / "replicas").exists()

    def test_a_failed_first_import_is_undone_whole(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A first import that fails after its lines were appended (the publish's link, here)
        leaves neither the replica's ledger nor its directories."""
        before = files(store, task)

        def broken_link(*_args: object) -> None:
            raise OSError(errno.EIO, "Input/output error")

        with monkeypatch.context() as patch:
            patch.setattr(os, "link", broken_link)
            with pytest.raises(OSError, match="Input/output error"):
                self.import_(store, task, ids.new_id("rep"), lines("one"), 0)
        assert files(store, task) == before
        assert not (directory(store, task) / "replicas").exists()

    def test_a_second_replica_keeps_the_directory_of_the_first(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Only the directories an import made, and only empty ones, go with its rollback."""
        first = ids.new_id("rep")
        self.import_(store, task, first, lines("one"), 0)
        kept = files(store, task)
        with dies_at(monkeypatch, "txn.appended"):  # noqa: SIM117 - one commit in the block
            with store.transaction(task, actor="a", operation="case.fetch") as txn:
                other = ids.new_id("rep")
                txn.append_replica(replica_ledger(other, "evidence"), lines("two"), 0)
                txn.stage_snapshot(REPLICAS_FILE, replica_index(first, len(lines("one"))))
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]
        assert files(store, task) == kept
        assert sorted(os.listdir(directory(store, task) / "replicas")) == [first]

    def test_a_first_import_stopped_before_its_lines_is_rolled_back(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The journal names a replica ledger that was never created: the rollback has
        nothing to cut or remove there."""
        key = ids.new_id("rep")
        before = files(store, task)
        with dies_at(monkeypatch, "txn.journaled"):
            self.import_(store, task, key, lines("one"), 0)
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert files(store, task) == before

    def test_a_damaged_replicas_file_does_not_block_an_unrelated_rollback(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 5 (the replicas' lengths read for every journal): a commit
        that imported nothing is rolled back without reading replicas.json."""
        key = ids.new_id("rep")
        self.import_(store, task, key, lines("one"), 0)
        with dies_at(monkeypatch, "txn.appended"):  # noqa: SIM117 - one commit in the block
            with store.transaction(task, actor="a", operation="evidence.add") as txn:
                txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"blob\n")
        (directory(store, task) / REPLICAS_FILE).write_bytes(encode_pretty(replica_index(key, 0)))
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]

    def test_a_lost_committed_replica_ledger_does_not_stop_a_rollback(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 42 (`exists and longer` -> `or`): a replica ledger the
        committed replicas.json records but which is gone (audit reports the loss) has nothing
        to truncate; the rest of the rollback goes on."""
        key = ids.new_id("rep")
        first = lines("one")
        self.import_(store, task, key, first, 0)
        with dies_at(monkeypatch, "txn.journaled"):
            self.import_(store, task, key, lines("two"), len(first))
        path = directory(store, task) / "replicas" / key / "evidence.jsonl"
        path.unlink()
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]
        assert not path.exists()
        assert not (directory(store, task) / JOURNAL_FILE).exists()

    def test_a_journal_with_other_replica_lengths_is_refused(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A journal may truncate a replica's ledger only to the committed length."""
        key = ids.new_id("rep")
        first = lines("one")
        self.import_(store, task, key, first, 0)
        with dies_at(monkeypatch, "txn.appended"):
            self.import_(store, task, key, lines("two"), len(first))
        journal = read_journal(store, task)
        journal.replica_ledgers = {replica_ledger(key, "evidence"): 1}
        (directory(store, task) / JOURNAL_FILE).write_bytes(msgspec.json.encode(journal))
        before = files(store, task)
        with pytest.raises(IntegrityError) as refused:
            recover(store, task)
        assert "its imported replicas' ledger lengths are not the committed ones" in str(
            refused.value
        )
        assert files(store, task) == before

    def test_a_moved_replicas_file_stops_recovery(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_replica_lengths` 11-19: replicas.json not holding the committed version is
        damage, reported with the file."""
        key = ids.new_id("rep")
        self.import_(store, task, key, lines("one"), 0)
        with dies_at(monkeypatch, "txn.journaled"):
            self.import_(store, task, key, lines("two"), len(lines("one")))
        path = directory(store, task) / REPLICAS_FILE
        path.write_bytes(encode_pretty(replica_index(key, 0)))
        with pytest.raises(IntegrityError) as moved:
            recover(store, task)
        assert str(moved.value) == "replicas.json does not hold the version case.json records"
        assert moved.value.path == str(path)

    def test_a_rollback_through_a_symlinked_replica_directory_is_refused(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Kills `_resolve_journal` 38, 39: truncation never goes through a swapped directory."""
        key = ids.new_id("rep")
        with dies_at(monkeypatch, "txn.appended"):
            self.import_(store, task, key, lines("one"), 0)
        folder = directory(store, task) / "replicas" / key
        appended = (folder / "evidence.jsonl").read_bytes()
        elsewhere = tmp_path / "elsewhere"
        folder.rename(elsewhere)
        folder.symlink_to(elsewhere)
        with pytest.raises(IntegrityError, match="not a real directory"):
            recover(store, task)
        assert (elsewhere / "evidence.jsonl").read_bytes() == appended


def fail_closing_the_lock(patch: pytest.MonkeyPatch, txn: Transaction) -> None:
    """Make close(2) of the transaction's lock descriptor report EIO, after closing it (as
    Linux does: the descriptor, and the lock with it, is gone whatever close returns)."""
    real_close = os.close
    lock_fd = txn._lock._fd

    def close(fd: int) -> None:
        real_close(fd)
        if fd == lock_fd:
            raise OSError(errno.EIO, "Input/output error")

    patch.setattr(os, "close", close)


class TestAfterTheCommitPoint:
    def test_an_unsynced_directory_is_a_warning_not_a_failure(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The rename of case.json happened: the commit is reported as made, with what is
        uncertain, and is cleaned up as usual."""
        real = fsio.write_atomic

        def unsynced(path: str, data: bytes) -> bool:
            real(path, data)
            if path.endswith("case.json"):
                raise fsio.UnsyncedReplaceError(errno.EIO, "Input/output error")
            return True

        monkeypatch.setattr(txn_module, "write_atomic", unsynced)
        with store.transaction(task, actor="a", operation="x") as txn:
            txn.stage_snapshot("plan.json", Plan(summary="s"))
        assert txn.warnings == [
            (
                "committed, but the directory could not be flushed to disk (Input/output error); "
                "the change may not survive a power loss"
            )
        ]
        assert txn.outcome.revision == 2
        assert store.read_case(task).revision == 2
        assert not (directory(store, task) / JOURNAL_FILE).exists()

    def test_an_unsynced_journal_is_a_failure_not_a_commit(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Only case.json's rename is the commit point: a journal whose directory could not be
        synced means nothing was committed, so the caller gets the error, never a success with
        a warning, and the attempt is rolled back at once."""
        before = files(store, task)
        real = fsio.write_atomic

        def unsynced(path: str, data: bytes) -> bool:
            real(path, data)
            if path.endswith(JOURNAL_FILE):
                raise fsio.UnsyncedReplaceError(errno.EIO, "Input/output error")
            return True

        monkeypatch.setattr(txn_module, "write_atomic", unsynced)
        with pytest.raises(fsio.UnsyncedReplaceError):  # noqa: SIM117, PT012 - one commit
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.stage_snapshot("plan.json", Plan(summary="s"))
                txn.append("evidence", evidence())
        assert txn.committed is None
        assert txn.warnings == []
        assert files(store, task) == before
        assert store.read_case(task).revision == 1

    @pytest.mark.parametrize("staged", [False, True])
    def test_an_error_closing_case_json_after_its_rename_is_a_warning(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch, staged: bool
    ) -> None:
        """The temp file's close comes after the rename: once case.json holds this commit's
        bytes, the commit is made, and a failing close is reported as a warning, never as an
        error that would invite a retry recording everything twice."""
        real_replace, real_close = os.replace, os.close
        armed = False

        def replace(source: str, target: str) -> None:
            nonlocal armed
            real_replace(source, target)
            armed = armed or str(target).endswith(os.sep + "case.json")

        def close(fd: int) -> None:
            nonlocal armed
            real_close(fd)
            if armed:
                armed = False
                raise OSError(errno.EIO, "Input/output error")

        with monkeypatch.context() as patch:
            patch.setattr(os, "replace", replace)
            patch.setattr(os, "close", close)
            with store.transaction(task, actor="a", operation="x") as txn:
                if staged:
                    txn.stage_snapshot("plan.json", Plan(summary="new"))
                txn.append("evidence", evidence("kept"))
        assert txn.warnings == [
            (
                "committed, but writing case.json ended with an error (Input/output error); "
                "the change may not survive a power loss"
            )
        ]
        assert txn.outcome.revision == 2
        assert recover(store, task) == []
        assert store.read_case(task).ledgers["evidence"].count == 1
        assert not (directory(store, task) / JOURNAL_FILE).exists()

    def test_a_rename_that_took_effect_but_failed_is_a_warning(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A rename that happened and still returned an error (a network file system) is the
        commit point reached."""
        real_replace = os.replace

        def replace(source: str, target: str) -> None:
            real_replace(source, target)
            if str(target).endswith(os.sep + "case.json"):
                raise OSError(errno.EIO, "Input/output error")

        with monkeypatch.context() as patch:
            patch.setattr(os, "replace", replace)
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.append("evidence", evidence("kept"))
        assert len(txn.warnings) == 1
        assert txn.outcome.revision == 2
        assert recover(store, task) == []
        assert store.read_case(task).revision == 2

    def test_a_rename_that_did_not_happen_is_a_failure(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """case.json still the old bytes: nothing is committed, the error is the caller's and
        the attempt is undone."""
        before = files(store, task)
        real_replace = os.replace

        def replace(source: str, target: str) -> None:
            if str(target).endswith(os.sep + "case.json"):
                raise OSError(errno.EIO, "Input/output error")
            real_replace(source, target)

        with monkeypatch.context() as patch:
            patch.setattr(os, "replace", replace)
            with pytest.raises(OSError, match="Input/output error"):  # noqa: SIM117, PT012
                with store.transaction(task, actor="a", operation="x") as txn:
                    txn.stage_snapshot("plan.json", Plan(summary="lost"))
                    txn.append("evidence", evidence("lost"))
        assert txn.committed is None
        assert files(store, task) == before

    def test_an_error_releasing_the_lock_after_a_commit_is_a_warning(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """close(2) frees the lock's descriptor, and the lock, whatever it returns: the commit
        stands and is reported with a warning."""
        with (
            monkeypatch.context() as patch,
            store.transaction(task, actor="a", operation="x") as txn,
        ):
            txn.append("evidence", evidence("kept"))
            fail_closing_the_lock(patch, txn)
        assert txn.warnings == [
            "committed; releasing the case lock ended with an error (Input/output error)"
        ]
        assert txn.outcome.revision == 2
        with store.transaction(task, actor="b", operation="x", expected_revision=2) as after:
            after.skip = True  # the lock is free again

    def test_an_error_releasing_the_lock_without_a_commit_says_only_that(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_release` 3, 7: with nothing committed (an idempotent retry), the warning
        does not claim a commit."""
        with (
            monkeypatch.context() as patch,
            store.transaction(task, actor="a", operation="x") as txn,
        ):
            txn.skip = True
            fail_closing_the_lock(patch, txn)
        assert txn.warnings == ["releasing the case lock ended with an error (Input/output error)"]
        assert txn.committed is None

    def test_case_json_is_read_back_to_decide(self, tmp_path: Path) -> None:
        """Kills `_holds` 6: the commit counts as made only when case.json can be read back
        and holds exactly the bytes written; a file that cannot be read, is missing, differs or
        is longer does not."""
        path = tmp_path / "case.json"
        assert fsio.holds(str(path), b"{}") is False
        path.write_bytes(b"{}")
        assert fsio.holds(str(path), b"{}") is True
        assert fsio.holds(str(path), b"[]") is False
        assert fsio.holds(str(path), b"{") is False  # longer than what was written
        path.unlink()
        path.mkdir()
        assert fsio.holds(str(path), b"{}") is False

    def test_an_error_releasing_the_lock_never_hides_the_commits_own_error(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A refused commit stays refused with its own error, whatever the release says."""
        with (  # noqa: PT012 - one commit in the block
            monkeypatch.context() as patch,
            pytest.raises(ValueError, match="unknown ledger"),
            store.transaction(task, actor="a", operation="x") as txn,
        ):
            fail_closing_the_lock(patch, txn)
            txn.append("notes", evidence())
        assert txn.committed is None
        assert store.read_case(task).revision == 1

    def test_a_failed_clean_up_is_left_to_the_next_writer(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`_finish` failing after the commit point is a warning; the next writer finishes."""
        real_unlink = os.unlink

        def refuse_journal(path: str) -> None:
            if str(path).endswith(JOURNAL_FILE):
                raise PermissionError(errno.EACCES, "Permission denied")
            real_unlink(path)

        with monkeypatch.context() as patch:
            patch.setattr(os, "unlink", refuse_journal)
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.stage_snapshot("plan.json", Plan(summary="s"))
        assert txn.warnings == [
            "committed; cleanup is left to the next write ([Errno 13] Permission denied)"
        ]
        assert txn.outcome.revision == 2
        assert recover(store, task) == ["finished cleaning up the commit of revision 2"]
        assert not (directory(store, task) / JOURNAL_FILE).exists()


class TestUndo:
    def test_a_failed_append_is_undone_under_the_lock(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A write that fails before the commit point is rolled back at once: the staged
        files, the journal and the ledgers' tails are gone, and the error is the caller's."""
        before = files(store, task)
        real = ledger.append
        calls = 0

        def full_disk(path: str, data: bytes) -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(path, data)

        monkeypatch.setattr(ledger, "append", full_disk)
        with pytest.raises(OSError, match="No space left"):  # noqa: SIM117, PT012
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"blob")
                txn.append("evidence", evidence())
        assert files(store, task) == before

    def test_the_original_error_survives_a_failed_undo(
        self, store: CaseStore, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If the undo fails too, the caller still gets the write's own error, and the next
        writer finishes the rollback."""
        before = files(store, task)

        def full_disk(_path: str, _data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def broken_read(_task: str) -> None:
            raise IntegrityError("unreadable", path="case.json")

        monkeypatch.setattr(ledger, "append", full_disk)
        with pytest.raises(OSError, match="No space left"):  # noqa: SIM117, PT012
            with store.transaction(task, actor="a", operation="x") as txn:
                txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"blob")
                monkeypatch.setattr(store, "read_case", broken_read)
        monkeypatch.undo()
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert files(store, task) == before
