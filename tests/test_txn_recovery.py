"""A commit's recovery, in process: a writer stopped at each step of a commit (cortex/cases/txn.py),
and the next writer's clean-up (cortex/cases/recovery.py), file by file.

The crash tests (tests/test_crash.py, tests/test_share_crash.py) SIGKILL real processes; a
mutation run cannot see those children run a mutant, so here the same stops happen in the test
process: the armed crash point raises `Died`, and the undo a failed write would run is switched
off, since a killed process runs nothing. What is left on disk is then what a SIGKILL leaves (a
temp file `write_atomic` would have removed aside), and the next transaction must roll it back
or finish it. Each test pins the exact files and the exact notes recovery leaves in the audit
line, so that a mutation run of txn.py and recovery.py (docs/testing.md) sees every branch. A
test written for a mutant names it in its docstring (`function` number: the change);
`_resolve_journal` is the name, and its numbers those, of the run before issue 31 moved it to
recovery.py as `resolve`.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from store_kit import Plan, evidence, make_store, new_case
from txn_kit import dies_at, directory, files, read_journal, recover

from cortex.cases import _crash, ids, ledger
from cortex.cases import txn as txn_module
from cortex.cases.errors import IntegrityError
from cortex.cases.layout import JOURNAL_FILE
from cortex.cases.records import CaseFile, Journal, encode
from cortex.cases.store import CaseStore


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CaseStore:
    # A backup linked relative to the working directory would land here, not in the case.
    monkeypatch.chdir(tmp_path)
    return make_store(tmp_path)


def new_task(store: CaseStore) -> str:
    case, _ = store.create(new_case(), operation="case.open")
    return case.id


def raw_name() -> str:
    return f"raw/{ids.new_id('raw')}.txt"


def commit_plan(store: CaseStore, task: str, summary: str) -> None:
    with store.transaction(task, actor="a", operation="case.plan") as txn:
        txn.stage_snapshot("plan.json", Plan(summary=summary))
        txn.append("evidence", evidence(f"plan {summary}"))


def raw_commit(store: CaseStore, task: str, relative: str) -> None:
    with store.transaction(task, actor="a", operation="evidence.add") as txn:
        txn.stage_blob(relative, b"the blob\n")
        txn.append("evidence", evidence("with a blob"))


def write_journal(store: CaseStore, task: str, journal: Journal) -> None:
    (directory(store, task) / JOURNAL_FILE).write_bytes(encode(journal))


def refused_entry(store: CaseStore, task: str, **entry: object) -> str:
    """Rewrite the pending journal's one entry with `entry`, and return why recovery refuses
    it; the refusal must leave every file as it was."""
    journal = read_journal(store, task)
    journal.files = [msgspec.structs.replace(journal.files[0], **entry)]
    write_journal(store, task, journal)
    before = files(store, task)
    with pytest.raises(IntegrityError) as refused:
        recover(store, task)
    assert files(store, task) == before
    frame = f"the commit journal of {task} cannot be trusted ("
    text = str(refused.value)
    assert text.startswith(frame)
    assert text.endswith("); left untouched")
    return text[len(frame) : -len("); left untouched")]


class TestRollBack:
    """A writer stopped before its commit point: the next one restores the committed state."""

    @pytest.mark.parametrize(
        ("point", "skip"),
        [("txn.staged", 0), ("txn.journaled", 0), ("txn.appended", 0), ("txn.published", 0)],
    )
    def test_a_blob_commit_stopped_before_the_commit_point(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch, point: str, skip: int
    ) -> None:
        """Kills `_stage` 27-29, 54-56 (a crash point renamed: the stop never comes),
        `_resolve_journal`'s rollback of ledgers and created files, and its note."""
        task = new_task(store)
        before = files(store, task)
        with dies_at(monkeypatch, point, skip=skip):
            raw_commit(store, task, raw_name())
        notes = recover(store, task)
        assert files(store, task) == before
        root = directory(store, task)
        assert sorted(os.listdir(root / "raw")) == []
        assert not (root / JOURNAL_FILE).exists()
        if point == "txn.staged":
            # No journal yet: only the staged temp file is left, which any writer removes.
            assert notes == ["removed 1 temporary file(s) of an interrupted write"]
        else:
            assert notes == ["rolled back an interrupted commit of revision 2"]

    def test_ledgers_are_cut_back_by_the_journal_not_by_the_tail_check(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 22, 24 (the ledger's path lost: the tail check would cut it
        instead, and say so in a note of its own): a rollback cuts every ledger back to the
        length its journal records, and no other note is added."""
        task = new_task(store)
        committed = (directory(store, task) / "evidence.jsonl").read_bytes()
        with dies_at(monkeypatch, "txn.appended"):
            raw_commit(store, task, raw_name())
        assert (directory(store, task) / "evidence.jsonl").read_bytes() != committed
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert (directory(store, task) / "evidence.jsonl").read_bytes() == committed

    def test_a_ledger_file_that_does_not_exist_is_skipped(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 25 (`exists and size > length` -> `or`: the size of a file
        that is not there raises): a ledger with nothing committed may have no file."""
        task = new_task(store)
        (directory(store, task) / "evidence.jsonl").unlink()  # 0 bytes committed: allowed
        with dies_at(monkeypatch, "txn.journaled"):
            raw_commit(store, task, raw_name())
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert not (directory(store, task) / "evidence.jsonl").exists()

    def test_a_replaced_snapshot_is_restored_from_its_backup(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Kills `_publish` 26 (the backup linked relative to the working directory) and
        `_resolve_journal` 64-73 (the backup not put back): between publish and the commit point
        the old snapshot is kept as `.bak-plan.json` in the case, and a rollback restores it."""
        task = new_task(store)
        commit_plan(store, task, "kept")
        before = files(store, task)
        with dies_at(monkeypatch, "txn.published"):
            commit_plan(store, task, "lost")
        root = directory(store, task)
        assert (root / ".bak-plan.json").read_bytes() == before["plan.json"]
        assert (root / "plan.json").read_bytes() != before["plan.json"]
        assert not (tmp_path / ".bak-plan.json").exists()
        assert recover(store, task) == ["rolled back an interrupted commit of revision 3"]
        assert files(store, task) == before
        plan = store.read_snapshot(task, "plan.json", Plan)
        assert plan is not None
        assert plan.summary == "kept"

    def test_a_first_snapshot_published_is_removed(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A snapshot the stopped commit created (no backup) is removed while it is still the
        file that commit staged (its inode)."""
        task = new_task(store)
        before = files(store, task)
        with dies_at(monkeypatch, "txn.published"):
            commit_plan(store, task, "lost")
        assert (directory(store, task) / "plan.json").exists()
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert files(store, task) == before

    def test_a_published_file_without_an_inode_is_left_for_audit(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A journal entry that does not name the staged file's inode (an older journal, or a
        forged one) never makes recovery delete a published file."""
        task = new_task(store)
        relative = raw_name()
        with dies_at(monkeypatch, "txn.published"):
            raw_commit(store, task, relative)
        journal = read_journal(store, task)
        journal.files = [msgspec.structs.replace(f, inode=None) for f in journal.files]
        write_journal(store, task, journal)
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert (directory(store, task) / relative).read_bytes() == b"the blob\n"

    def test_a_published_file_replaced_since_is_left_for_audit(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 78 (`inode is not None and same inode` -> `or`): a
        published file that is no longer the staged inode is not the commit's to remove."""
        task = new_task(store)
        relative = raw_name()
        with dies_at(monkeypatch, "txn.published"):
            raw_commit(store, task, relative)
        final = directory(store, task) / relative
        # Moved aside, not deleted: a freed inode number can be given to the next new file.
        final.rename(final.with_name("aside"))
        final.write_bytes(b"someone else's\n")
        recover(store, task)
        assert final.read_bytes() == b"someone else's\n"

    def test_a_file_linked_but_not_yet_unstaged_is_removed(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A writer stopped between the link and the unlink of a new file: both names are the
        same inode, so the final name is the commit's and goes with the staged one."""
        task = new_task(store)
        relative = raw_name()
        with dies_at(monkeypatch, "txn.journaled"):
            raw_commit(store, task, relative)
        root = directory(store, task)
        (entry,) = read_journal(store, task).files
        os.link(root / entry.staged, root / relative)
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert not (root / relative).exists()
        assert not (root / entry.staged).exists()

    def test_a_file_at_the_final_name_that_is_not_the_staged_one_stays(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file at a final name that is neither published by the commit (its staged file is
        still there) nor the same inode stays: only the staged file goes."""
        task = new_task(store)
        relative = raw_name()
        with dies_at(monkeypatch, "txn.journaled"):
            raw_commit(store, task, relative)
        root = directory(store, task)
        (root / relative).write_bytes(b"planted\n")
        recover(store, task)
        assert (root / relative).read_bytes() == b"planted\n"
        assert [n for n in os.listdir(root) if n.startswith(".tmp-")] == []

    def test_the_journal_names_the_staged_files_and_the_committed_lengths(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_stage` 9 (the staged name without its final's name) and the journal's fields:
        from and to revision, every ledger's committed length, each file's staged name (a temp
        name carrying the final's name) and its inode, and a backup only for a replacement."""
        task = new_task(store)
        commit_plan(store, task, "one")
        relative = raw_name()
        case = store.read_case(task)
        with dies_at(monkeypatch, "txn.journaled"):  # noqa: SIM117 - one commit in the block
            with store.transaction(task, actor="a", operation="case.plan") as txn:
                txn.stage_blob(relative, b"blob\n")
                txn.stage_snapshot("plan.json", Plan(summary="two"))
        journal = read_journal(store, task)
        assert (journal.task_id, journal.from_revision, journal.to_revision) == (task, 2, 3)
        assert journal.ledgers == {name: state.bytes for name, state in case.ledgers.items()}
        assert journal.replica_ledgers == {}
        blob, plan = journal.files
        root = directory(store, task)
        assert (blob.final, blob.backup) == (relative, None)
        assert (plan.final, plan.backup) == ("plan.json", ".bak-plan.json")
        for entry, name in ((blob, os.path.basename(relative)), (plan, "plan.json")):
            assert entry.staged.startswith(f".tmp-{name}-{os.getpid()}-")
            assert entry.inode == os.lstat(root / entry.staged).st_ino


class TestRollForward:
    """A writer stopped after its commit point: the next one only cleans up."""

    def test_a_commit_stopped_after_case_json_is_kept_and_cleaned(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The commit point was reached: the new plan stays, its backup and the journal go."""
        task = new_task(store)
        commit_plan(store, task, "old")
        with dies_at(monkeypatch, "txn.case_replaced"):
            commit_plan(store, task, "new")
        root = directory(store, task)
        assert (root / JOURNAL_FILE).exists()
        assert (root / ".bak-plan.json").exists()
        assert recover(store, task) == ["finished cleaning up the commit of revision 3"]
        assert not (root / JOURNAL_FILE).exists()
        assert not (root / ".bak-plan.json").exists()
        plan = store.read_snapshot(task, "plan.json", Plan)
        assert plan is not None
        assert plan.summary == "new"
        assert store.read_case(task).revision == 3

    def test_a_plain_commit_stopped_after_case_json_needs_nothing(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A commit without staged files has no journal: past case.json it is simply done."""
        task = new_task(store)
        with dies_at(monkeypatch, "commit.case_replaced"):  # noqa: SIM117 - one commit
            with store.transaction(task, actor="a", operation="evidence.add") as txn:
                txn.append("evidence", evidence("kept"))
        assert recover(store, task) == []
        assert store.read_case(task).ledgers["evidence"].count == 1


class TestLedgerTails:
    def test_uncommitted_lines_are_cut_and_noted(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A plain commit stopped after its ledger appends: each ledger is cut back to its
        committed length, with a note naming the bytes and the file."""
        task = new_task(store)
        case = store.read_case(task)
        with dies_at(monkeypatch, "ledger.synced", skip=1):  # noqa: SIM117 - one commit
            with store.transaction(task, actor="a", operation="evidence.add") as txn:
                txn.append("evidence", evidence("lost"))
        root = directory(store, task)
        extra = {
            name: os.path.getsize(root / f"{name}.jsonl") - case.ledgers[name].bytes
            for name in ("evidence", "commands")
        }
        assert all(n > 0 for n in extra.values())
        assert recover(store, task) == [
            f"removed {extra['evidence']} uncommitted bytes from evidence.jsonl",
            f"removed {extra['commands']} uncommitted bytes from commands.jsonl",
        ]
        for name in ("evidence", "commands"):
            assert os.path.getsize(root / f"{name}.jsonl") == case.ledgers[name].bytes

    def test_a_ledger_shorter_than_committed_is_refused(self, store: CaseStore) -> None:
        """Acknowledged records are gone: recovery refuses rather than write past the hole."""
        task = new_task(store)
        path = directory(store, task) / "commands.jsonl"
        data = path.read_bytes()
        path.write_bytes(data[:-10])
        with pytest.raises(IntegrityError, match="acknowledged data is gone"):
            recover(store, task)
        assert path.read_bytes() == data[:-10]

    def test_a_missing_ledger_with_committed_bytes_is_refused(self, store: CaseStore) -> None:
        """`_shorter`: a ledger with committed bytes and no file has lost them."""
        task = new_task(store)
        (directory(store, task) / "commands.jsonl").unlink()
        with pytest.raises(IntegrityError, match=r"is missing but .* bytes are committed"):
            recover(store, task)

    def test_shorter(self, tmp_path: Path) -> None:
        """`_shorter` compares the size on disk with the committed length; no file is 0 bytes."""
        path = tmp_path / "x.jsonl"
        assert txn_module._shorter(str(path), 1) is True
        assert txn_module._shorter(str(path), 0) is False
        path.write_bytes(b"abc")
        assert txn_module._shorter(str(path), 4) is True
        assert txn_module._shorter(str(path), 3) is False
        assert txn_module._shorter(str(path), 2) is False


class TestDebris:
    def test_temp_and_backup_files_are_removed_and_counted(self, store: CaseStore) -> None:
        """Files with the temp or backup prefix are a dead writer's: removed, counted in the
        note; a directory with such a name is not ours and stays (audit reports it)."""
        task = new_task(store)
        root = directory(store, task)
        (root / ".tmp-plan.json-1-abcdef01").write_bytes(b"x")
        (root / ".bak-plan.json").write_bytes(b"y")
        os.symlink("/nonexistent", root / ".tmp-link")
        (root / ".tmp-dir").mkdir()
        (root / "notes.txt").write_bytes(b"kept")
        assert recover(store, task) == ["removed 3 temporary file(s) of an interrupted write"]
        assert sorted(n for n in os.listdir(root) if n.startswith((".tmp-", ".bak-"))) == [
            ".tmp-dir"
        ]
        assert (root / "notes.txt").read_bytes() == b"kept"

    def test_no_debris_no_note(self, store: CaseStore) -> None:
        """Nothing to remove: no note, and no directory sync."""
        task = new_task(store)
        assert recover(store, task) == []


class TestUntrustedJournals:
    def test_a_journal_from_another_revision_is_refused_and_left(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Recovery checks the journal before it touches anything, and releases the lock."""
        task = new_task(store)
        with dies_at(monkeypatch, "txn.appended"):
            raw_commit(store, task, raw_name())
        journal = read_journal(store, task)
        journal.from_revision, journal.to_revision = 5, 6
        write_journal(store, task, journal)
        before = files(store, task)
        for _ in range(2):  # the lock was released: the second attempt is refused the same way
            with pytest.raises(IntegrityError, match="cannot be trusted"):
                recover(store, task)
        assert files(store, task) == before

    def test_an_unreadable_journal_is_refused(self, store: CaseStore) -> None:
        """Kills `_recover` 9: a journal that does not decode is an integrity error naming
        the file."""
        task = new_task(store)
        path = directory(store, task) / JOURNAL_FILE
        path.write_bytes(b"{not json")
        with pytest.raises(IntegrityError) as bad:
            recover(store, task)
        assert str(bad.value).startswith(f"{path}: not a commit journal (")
        assert bad.value.path == str(path)

    def test_a_journal_naming_a_file_outside_the_format_is_refused(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_check_journal` 37, 38: an entry naming a file no commit stages (case.json,
        a path outside the case) is refused by name, and nothing is touched."""
        task = new_task(store)
        with dies_at(monkeypatch, "txn.appended"):
            raw_commit(store, task, raw_name())
        for final in ("case.json", "../outside.txt"):
            problem = refused_entry(store, task, final=final)
            assert problem == f"it names an unexpected file {final!r}"

    def test_a_journal_that_would_remove_a_committed_snapshot_is_refused(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A snapshot the committed case.json records cannot be one the interrupted commit
        created (it would have a backup): a journal saying so is refused, whatever inode it
        names, and the snapshot stays."""
        task = new_task(store)
        commit_plan(store, task, "committed")
        root = directory(store, task)
        with dies_at(monkeypatch, "txn.appended"):
            raw_commit(store, task, raw_name())
        inode = os.lstat(root / "plan.json").st_ino
        problem = refused_entry(store, task, final="plan.json", inode=inode)
        assert problem == "it would remove the committed plan.json"

    def test_a_rollback_interrupted_after_its_files_were_removed_is_finished(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Kills `_resolve_journal` 74 (`final exists and staged gone` -> `or`): a rollback
        stopped after removing a staged file, before removing the journal, is finished by the
        next writer although neither of the entry's names exists any more."""
        task = new_task(store)
        before = files(store, task)
        with dies_at(monkeypatch, "txn.journaled"):
            raw_commit(store, task, raw_name())
        (entry,) = read_journal(store, task).files
        (directory(store, task) / entry.staged).unlink()
        assert recover(store, task) == ["rolled back an interrupted commit of revision 2"]
        assert files(store, task) == before

    def test_a_staged_entry_in_a_symlinked_directory_is_refused(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A rollback never unlinks through a directory swapped for a symlink."""
        task = new_task(store)
        relative = raw_name()
        with dies_at(monkeypatch, "txn.published"):
            raw_commit(store, task, relative)
        root = directory(store, task)
        elsewhere = tmp_path / "elsewhere"
        (root / "raw").rename(elsewhere)
        (root / "raw").symlink_to(elsewhere)
        with pytest.raises(IntegrityError, match="not a real directory"):
            recover(store, task)
        assert (elsewhere / os.path.basename(relative)).exists()


def case_of(store: CaseStore, task: str) -> CaseFile:
    return store.read_case(task)


def test_the_raw_directory_is_checked_before_anything_is_staged(
    store: CaseStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Kills `_stage` 4, 5 (the raw directory's check made relative to the working directory):
    a raw directory swapped for a symlink refuses the commit before a file is staged."""
    task = new_task(store)
    root = directory(store, task)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "raw").rmdir()
    (root / "raw").symlink_to(elsewhere)
    reached: list[str] = []
    monkeypatch.setattr(_crash, "armed", "txn.staged")
    monkeypatch.setattr(_crash, "action", reached.append)
    before = files(store, task)
    with pytest.raises(IntegrityError, match="not a real directory"):
        raw_commit(store, task, raw_name())
    assert reached == []
    assert files(store, task) == before
    assert list(elsewhere.iterdir()) == []
    assert case_of(store, task).revision == 1
    assert ledger.uncommitted_tail(str(root / "evidence.jsonl"), 0) == 0
