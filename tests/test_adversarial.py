"""Adversarial review: attacks on Cortex's storage, path, redaction, audit and CLI promises.

Each class groups attacks on one promise. Tests that demonstrate an unfixed bug fail on
purpose; the others pin down defences that held and were not yet covered elsewhere. Real
processes and real files throughout; mocks only inject faults (a failing syscall, a pause).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path, run_cortex, tree_state
from crash_kit import Run, check_after_kill, run_child, view, watch

from cortex.cases import bounds, ids
from cortex.cases.digest import sha256_hex
from cortex.cases.records import CaseFile, Evidence, Source, Workspace, encode
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore

CALL_CHILD = str(CHILDREN / "call_crash_child.py")
PAUSED_READER = (sys.executable, str(CHILDREN / "paused_reader.py"))
CRASH_CHILD = (sys.executable, str(CHILDREN / "crash_child.py"))
CORTEX = (sys.executable, "-m", "cortex")
GITHUB_TOKEN = "ghp_" + "Zq8" * 12
READ_TIMEOUT = 20.0


def task_dir(cli: Cli, task: str) -> Path:
    """The directory of `task` in the test's state root."""
    return case_path(cli.env, task)


def snapshot(cli: Cli, task: str) -> dict[str, Any]:
    """The committed case.json of `task`, as JSON."""
    parsed: dict[str, Any] = json.loads((task_dir(cli, task) / "case.json").read_bytes())
    return parsed


def envelope_of(proc: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The one JSON envelope a real cortex process printed (fails the test otherwise)."""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, (proc.stdout, proc.stderr[-2000:])
    assert b"Traceback" not in proc.stderr, proc.stderr[-2000:]
    parsed: dict[str, Any] = json.loads(lines[0])
    return parsed


def run_call_child(cli: Cli, target: str, when: str, skip: int, commands: list[list[str]]) -> Run:
    """Run call_crash_child.py and SIGKILL it when it reports reaching its target call."""
    argv = [sys.executable, CALL_CHILD, target, when, str(skip), str(cli.cwd), json.dumps(commands)]
    return watch(argv, cli.env)


def write_journal(directory: Path, journal: dict[str, Any]) -> None:
    """Plant a hand-made commit journal."""
    (directory / ".journal.json").write_text(json.dumps(journal))


def committed_lengths(case: dict[str, Any]) -> dict[str, int]:
    """The committed byte length of each ledger named by a case.json."""
    return {name: state["bytes"] for name, state in case["ledgers"].items()}


def raw_file(tmp_path: Path, content: bytes = b"collected 3 items\n3 passed\n") -> Path:
    """A small regular file for --raw-file."""
    path = tmp_path / "raw-input.txt"
    path.write_bytes(content)
    return path


# (1) Durability and atomicity under compound failures -------------------------------------


class TestCompoundCrashes:
    """SIGKILL between crash points and in the middle of recovery itself."""

    @pytest.mark.process
    def test_kill_between_link_and_unlink_of_a_new_blob(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """A writer killed after linking a raw blob but before unlinking its temp is rolled back."""
        source = raw_file(tmp_path)
        before = view(cli, task)
        command = ["case", "evidence", "add", task, "--claim", "linked", "--raw-file", str(source)]
        run = run_call_child(cli, "os:link", "after", 0, [command])
        assert run.killed
        directory = task_dir(cli, task)
        assert list((directory / "raw").iterdir()), "the blob was linked before the kill"
        check_after_kill(cli, task, before, run, raw=True)
        assert list((directory / "raw").iterdir()) == []

    @pytest.mark.process
    @pytest.mark.parametrize(
        ("target", "skip"),
        [
            ("cortex.cases.ledger:truncate", 0),  # rolled back the first ledger, then died
            ("cortex.cases.ledger:truncate", 1),  # rolled back two ledgers, then died
            ("os:unlink", 0),  # removed the published blob, then died before the journal went
            ("cortex.cases.recovery:fsync_dir", 0),  # died before the directory was synced
        ],
    )
    def test_kill_during_journal_rollback(
        self, cli: Cli, task: str, tmp_path: Path, target: str, skip: int
    ) -> None:
        """A writer killed while rolling back a dead writer's commit leaves recoverable debris."""
        source = raw_file(tmp_path)
        before = view(cli, task)
        add = ["case", "evidence", "add", task, "--claim", "doomed", "--raw-file", str(source)]
        first = run_child(cli.env, cli.cwd, "txn.published", 0, [add])
        assert first.killed
        assert (task_dir(cli, task) / ".journal.json").exists()
        note = ["case", "note", task, "recovering writer"]
        second = run_call_child(cli, target, "after", skip, [note])
        assert second.killed
        check_after_kill(cli, task, before, Run(), raw=True)
        assert list((task_dir(cli, task) / "raw").iterdir()) == []

    @pytest.mark.process
    def test_kill_during_torn_tail_truncation_then_again_mid_append(
        self, cli: Cli, task: str
    ) -> None:
        """A torn tail, a recovery killed after truncating, then a torn append: all recovered."""
        before = view(cli, task)
        torn = run_child(cli.env, cli.cwd, "ledger.torn_write", 0, [["case", "note", task, "a"]])
        assert torn.killed
        mid = run_call_child(
            cli,
            "cortex.cases.ledger:truncate",
            "after",
            0,
            [["case", "note", task, "b"]],
        )
        assert mid.killed
        again = run_child(cli.env, cli.cwd, "ledger.torn_write", 1, [["case", "note", task, "c"]])
        assert again.killed
        check_after_kill(cli, task, before, Run(), raw=False)

    @pytest.mark.process
    @pytest.mark.parametrize("point", ["open.key_written", "open.staged", "snapshot.replaced"])
    def test_keyed_open_killed_then_retried_by_two_processes_at_once(
        self, cli: Cli, point: str
    ) -> None:
        """After a kill mid-open, two concurrent retries with the key get one and the same case."""
        command = ["case", "open", "keyed goal", "--idempotency-key", f"adv-{point}"]
        killed = run_child(cli.env, cli.cwd, point, 0, [command])
        assert killed.killed
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "cortex", *command, "--json"],
                cwd=cli.cwd,
                env=cli.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        answers = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, (out, err)
            answers.append(json.loads(out))
        assert answers[0]["data"]["taskId"] == answers[1]["data"]["taskId"]
        assert sorted(a["data"]["created"] for a in answers) == [False, True]
        listing = cli("case", "list").data
        assert listing["total"] == 1
        assert cli("case", "audit", answers[0]["data"]["taskId"]).code == 0
        store = Path(listing["store"]["root"])
        assert not list(store.glob(".creating-*"))


class TestFailuresAfterTheCommitPoint:
    """A command that reports failure must not have committed (retrying would duplicate it)."""

    @pytest.mark.parametrize("fault", ["case_dir_fsync", "journal_cleanup"])
    def test_an_error_reported_to_the_caller_means_nothing_was_committed(
        self, cli: Cli, task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
    ) -> None:
        """An I/O fault after case.json is renamed into place is reported as if nothing happened.

        The transaction's contract is "an exception writes nothing that readers can see". A
        failing directory fsync after the rename (EIO), or a failing clean-up of the journal
        after the commit point, makes the command fail with exit 1 while readers already see
        the new revision: an agent that retries records the evidence twice.
        """
        from cortex.cases import fsio, txn

        before = cli("case", "status", task).data
        if fault == "case_dir_fsync":
            real = fsio.fsync_dir

            def failing_fsync(path: str) -> None:
                if any(name.startswith(".tmp-case.json") for name in os.listdir(path)):
                    real(path)
                    return
                raise OSError(errno.EIO, "Input/output error")

            monkeypatch.setattr(fsio, "fsync_dir", failing_fsync)
            out = cli("case", "note", task, "after the rename")
        else:

            def failing_finish(*_args: object) -> None:
                raise OSError(errno.EIO, "Input/output error")

            monkeypatch.setattr(txn.Transaction, "_finish", failing_finish)
            source = str(raw_file(tmp_path))
            out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", source)
        monkeypatch.undo()
        after = cli("case", "status", task).data
        if out.code != 0:
            assert after["revision"] == before["revision"], (
                f"the command failed ({out.error_code}) but revision {after['revision']} "
                "was committed"
            )


class TestAuxSnapshotRollback:
    """Rolling back a commit that created an auxiliary snapshot for the first time."""

    def test_a_rolled_back_first_snapshot_is_removed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A plan.json published by a commit that was rolled back must not stay in place."""
        from store_kit import Plan

        from cortex.cases import fsio

        store = CaseStore(
            str(tmp_path / "store"),
            redactor=Redactor(),
            lock_timeout=2.0,
            now=lambda: "2026-11-30T12:00:00.000Z",
        )
        case, _ = store.create(
            CaseFile(
                revision=1,
                id=ids.new_id("task"),
                created_at="2026-11-30T12:00:00.000Z",
                updated_at="2026-11-30T12:00:00.000Z",
                goal="goal",
                actor="tester",
                workspace=Workspace(kind="directory", root="/srv/w", repository="w"),
            ),
            operation="case.open",
        )
        real = fsio.write_atomic

        def full_disk_at_commit(path: str, data: bytes) -> None:
            if path.endswith("case.json"):
                raise OSError(errno.ENOSPC, "No space left on device")
            real(path, data)

        monkeypatch.setattr("cortex.cases.txn.write_atomic", full_disk_at_commit)

        def commit_first_plan() -> None:
            with store.transaction(case.id, actor="a", operation="case.plan") as txn:
                txn.stage_snapshot("plan.json", Plan(summary="never committed"))
                txn.append(
                    "evidence",
                    Evidence(
                        id=ids.new_id("ev"),
                        timestamp="2026-11-30T12:00:00.000Z",
                        source=Source(tool="t"),
                        claim="lost",
                    ),
                )

        with pytest.raises(OSError, match="No space"):
            commit_first_plan()
        monkeypatch.undo()
        directory = Path(store.case_path(case.id))
        assert store.read_case(case.id).revision == 1
        leftovers = sorted(p.name for p in directory.iterdir() if p.name == "plan.json")
        assert leftovers == [], "the rolled-back commit left its snapshot published"


# (2)/(3) Concurrency: readers racing writers --------------------------------------------------


class TestReadersDuringWrites:
    """Readers in a tight loop while writer processes commit."""

    @pytest.mark.process
    def test_every_read_is_one_consistent_revision(self, cli: Cli, task: str) -> None:
        """status and audit never see counts, revision and ledgers out of step."""
        env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "120"}
        source = cli.cwd / "blob.txt"
        source.write_text("12 passed\n")
        commands = [
            ["case", "evidence", "add", task, "--claim", f"w{n}"]
            + (["--raw-file", str(source)] if n % 2 else [])
            for n in range(60)
        ]
        writers = [
            subprocess.Popen(
                [*CRASH_CHILD, "never", "0", str(cli.cwd), json.dumps(commands)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        reads = 0
        try:
            while any(w.poll() is None for w in writers):
                status = cli("case", "status", task).data
                counts, revision = status["counts"], status["revision"]
                assert counts["commands"] == revision, status
                assert counts["evidence"] == revision - 1, status
                # new -> orienting at open, -> investigating with the first evidence
                assert counts["phases"] == (3 if counts["evidence"] else 2), status
                report = cli("case", "audit", task)
                assert report.code == 0, report.stdout
                records = report.data["records"]
                assert records["commands"] == report.data["revision"]
                assert records["evidence"] == report.data["revision"] - 1
                reads += 1
        finally:
            for writer in writers:
                writer.communicate(timeout=300)
        assert all(w.returncode == 0 for w in writers)
        assert reads > 0
        assert cli("case", "status", task).data["revision"] == 121

    @pytest.mark.process
    def test_audit_survives_a_journal_removed_under_it(self, cli: Cli, task: str) -> None:
        """An audit that listed a pending journal must not crash when a writer resolves it.

        The audit lists the case directory, sees `.journal.json`, and reads it; a writer that
        finishes or rolls back the commit in between removes the file, and the audit fails
        with `internal_error: FileNotFoundError` (exit 1) on a perfectly healthy case. The
        child pauses between the listing and the read to make the window deterministic.
        """
        source = raw_file(cli.cwd)
        add = ["case", "evidence", "add", task, "--claim", "x", "--raw-file", str(source)]
        assert run_child(cli.env, cli.cwd, "txn.case_replaced", 0, [add]).killed
        reader = subprocess.Popen(
            [*PAUSED_READER, ".journal.json", str(cli.cwd), json.dumps(["case", "audit", task])],
            env=cli.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert reader.stdout is not None
        assert reader.stdin is not None
        paused = False
        for raw in reader.stdout:
            if raw.startswith(b"PAUSED"):
                paused = True
                break
        assert paused
        # The journal still names revision R+1 (committed): the next writer cleans it up.
        assert cli("case", "note", task, "cleans up").code == 0
        assert not (task_dir(cli, task) / ".journal.json").exists()
        reader.stdin.write(b"go\n")
        reader.stdin.close()
        rest = reader.stdout.read().decode()
        reader.wait(timeout=60)
        reader.stdout.close()
        if reader.stderr is not None:
            reader.stderr.close()
        assert rest.startswith("EXIT 0"), rest


# (4) Paths: nothing outside the case directory, no symlink followed --------------------------


class TestPlantedSymlinks:
    """Symlinks planted inside the store and case directory are refused, never written through."""

    def test_a_symlinked_raw_dir_is_not_written_through(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """`raw/` replaced by a symlink: the blob must not land in the symlink's target.

        Today `_publish` hard-links the staged blob to `raw/<id>.txt` through the symlink, so
        the redacted tool output is written to an arbitrary directory outside the store.
        """
        directory = task_dir(cli, task)
        outside = tmp_path / "outside"
        outside.mkdir()
        (directory / "raw").rmdir()
        (directory / "raw").symlink_to(outside, target_is_directory=True)
        source = str(raw_file(tmp_path))
        out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", source)
        assert list(outside.iterdir()) == [], "a raw blob was written outside the case directory"
        assert out.code == 4
        assert out.error_code == "integrity_error"

    def test_a_symlinked_keys_dir_is_not_written_through(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """`.keys` replaced by a symlink: a keyed open must not write its key file elsewhere."""
        store = task_dir(cli, task).parent
        outside = tmp_path / "keys-outside"
        outside.mkdir()
        keys = store / ".keys"
        if keys.exists():
            keys.rmdir()
        keys.symlink_to(outside, target_is_directory=True)
        out = cli("case", "open", "keyed", "--idempotency-key", "adv-key")
        assert list(outside.iterdir()) == [], "an idempotency record was written outside the store"
        assert out.code == 4

    @pytest.mark.parametrize("lock", ["case", "store"])
    def test_a_symlinked_lock_file_is_not_written_through(
        self, cli: Cli, task: str, tmp_path: Path, lock: str
    ) -> None:
        """A lock file replaced by a symlink: acquiring never creates or writes its target."""
        directory = task_dir(cli, task)
        path = directory / ".lock" if lock == "case" else directory.parent / ".store.lock"
        target = tmp_path / "lock-target"
        existing = tmp_path / "existing-file"
        existing.write_bytes(b"precious\n")
        path.unlink()
        path.symlink_to(target)
        args = ["case", "note", task, "x"] if lock == "case" else ["case", "open", "y"]
        cli(*args)
        assert not target.exists()
        path.unlink()
        path.symlink_to(existing)
        cli(*args)
        assert existing.read_bytes() == b"precious\n"

    @pytest.mark.parametrize("lock", ["case", "store"])
    def test_a_symlinked_lock_file_is_an_integrity_error(
        self, cli: Cli, task: str, tmp_path: Path, lock: str
    ) -> None:
        """A planted symlink is hostile input: exit 4 integrity_error, not exit 1 internal_error."""
        directory = task_dir(cli, task)
        path = directory / ".lock" if lock == "case" else directory.parent / ".store.lock"
        path.unlink()
        path.symlink_to(tmp_path / "lock-target")
        args = ["case", "note", task, "x"] if lock == "case" else ["case", "open", "y"]
        out = cli(*args)
        assert (out.code, out.error_code) == (4, "integrity_error"), out.stdout

    def test_journal_paths_outside_the_case_are_refused(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """Journals naming absolute, `..`, deep or non-temp paths are refused, nothing touched."""
        directory = task_dir(cli, task)
        case = snapshot(cli, task)
        outside = tmp_path / "outside.txt"
        outside.write_bytes(b"keep me\n")
        relative_out = os.path.relpath(outside, directory)
        revision = case["revision"]
        evil_files = [
            {"staged": ".tmp-x", "final": str(outside)},
            {"staged": ".tmp-x", "final": relative_out},
            {"staged": ".tmp-x", "final": "raw/../../x"},
            {"staged": ".tmp-x", "final": "a/b/c"},
            {"staged": relative_out, "final": "raw/x.txt"},
            {"staged": ".tmp-x", "final": "plan.json", "backup": relative_out},
        ]
        journal: dict[str, Any] = {}
        for files in evil_files:
            journal = {
                "taskId": task,
                "fromRevision": revision,
                "toRevision": revision + 1,
                "ledgers": committed_lengths(case),
                "files": [files],
            }
            write_journal(directory, journal)
            before = tree_state(directory)
            out = cli("case", "note", task, "x")
            assert out.code == 4, (files, out.stdout)
            assert out.error_code == "integrity_error"
            assert outside.read_bytes() == b"keep me\n"
            after = tree_state(directory)
            # The lock holder rewrites its diagnostics in `.lock`; nothing else may change.
            after.pop(".lock")
            before.pop(".lock")
            assert after == before, "a refused journal must leave everything"
        other = {**journal, "taskId": ids.new_id("task"), "files": []}
        write_journal(directory, other)
        assert cli("case", "note", task, "x").code == 4


class TestCraftedJournals:
    """Journals that pass the path checks but could never have been written by the protocol."""

    @pytest.mark.parametrize(
        "shape", ["lengths_below_committed", "final_is_a_ledger", "lock_as_backup"]
    )
    def test_recovery_never_destroys_committed_data(self, cli: Cli, task: str, shape: str) -> None:
        """Rolling back a journal must not truncate, delete or move committed files or the lock.

        A journal written by the protocol records exactly the committed ledger lengths of its
        from-revision, and names only `raw/<raw id>.txt` or auxiliary snapshots with a `.bak-`
        backup. Recovery trusts whatever the journal says: lengths below the committed ones
        truncate acknowledged records, `final: evidence.jsonl` unlinks the ledger, and
        `backup: .lock` moves the held lock file away (breaking mutual exclusion).
        """
        assert cli("case", "evidence", "add", task, "--claim", "acknowledged").code == 0
        directory = task_dir(cli, task)
        case = snapshot(cli, task)
        revision = case["revision"]
        lengths = committed_lengths(case)
        journal: dict[str, Any] = {
            "taskId": task,
            "fromRevision": revision,
            "toRevision": revision + 1,
            "ledgers": lengths,
            "files": [],
        }
        if shape == "lengths_below_committed":
            journal["ledgers"] = dict.fromkeys(lengths, 0)
        elif shape == "final_is_a_ledger":
            journal["files"] = [{"staged": ".tmp-gone", "final": "evidence.jsonl"}]
        else:
            journal["files"] = [{"staged": ".tmp-gone", "final": "plan.json", "backup": ".lock"}]
        write_journal(directory, journal)
        ledgers = {n: (directory / f"{n}.jsonl").read_bytes() for n in lengths}
        lock_inode = (directory / ".lock").stat().st_ino
        out = cli("case", "note", task, "next writer")
        assert out.code in {0, 4}, out.stdout
        for name, data in ledgers.items():
            path = directory / f"{name}.jsonl"
            assert path.exists(), f"recovery deleted {name}.jsonl"
            assert path.read_bytes().startswith(data), f"recovery truncated {name}.jsonl"
        assert (directory / ".lock").exists(), "recovery moved the lock file away"
        assert (directory / ".lock").stat().st_ino == lock_inode


class TestPlantedDebris:
    """Files planted where recovery and readers look."""

    def test_a_stray_temp_directory_does_not_block_writers(self, cli: Cli, task: str) -> None:
        """A directory named `.tmp-*` makes every write fail with internal_error (exit 1)."""
        (task_dir(cli, task) / ".tmp-planted").mkdir()
        out = cli("case", "note", task, "x")
        assert out.code in {0, 4}, out.stdout

    def test_a_planted_backup_of_case_json_is_ignored_and_removed(
        self, cli: Cli, task: str
    ) -> None:
        """A planted `.bak-case.json` with a newer revision is ignored; the next write drops it."""
        directory = task_dir(cli, task)
        fake = snapshot(cli, task)
        fake["revision"] = 99
        fake["goal"] = "forged"
        (directory / ".bak-case.json").write_text(json.dumps(fake))
        status = cli("case", "status", task).data
        assert status["revision"] == 1
        assert status["goal"] != "forged"
        assert cli("case", "note", task, "x").code == 0
        assert not (directory / ".bak-case.json").exists()

    def test_a_sparse_2gb_case_json_is_refused_without_reading(self, cli: Cli, task: str) -> None:
        """A 2 GB sparse snapshot is refused by size, quickly, by readers and writers."""
        path = task_dir(cli, task) / "case.json"
        path.unlink()
        with path.open("wb") as handle:
            handle.truncate(2 * 1024**3)
        started = time.monotonic()
        for args in (
            ["case", "status", task],
            ["case", "note", task, "x"],
            ["case", "audit", task],
        ):
            out = cli(*args)
            assert out.code == 4, out.stdout
        assert time.monotonic() - started < 10
        assert path.stat().st_size == 2 * 1024**3

    @pytest.mark.process
    @pytest.mark.parametrize(
        ("fifo", "args"),
        [
            ("case.json", ["case", "status", "TASK"]),
            ("case.json", ["case", "list"]),
            ("case.json", ["case", "audit", "TASK"]),
            ("evidence.jsonl", ["case", "audit", "TASK"]),
            ("evidence.jsonl", ["case", "read-evidence", "TASK", "EV"]),
            ("repo:cortex.toml", ["case", "list"]),
        ],
    )
    def test_a_fifo_never_hangs_a_command(
        self, cli: Cli, task: str, fifo: str, args: list[str]
    ) -> None:
        """A FIFO in place of a case file (or a cloned repo's cortex.toml) must not block forever.

        `open_for_read` opens with O_RDONLY but without O_NONBLOCK, so opening a FIFO waits for
        a writer that never comes: status, list, audit and read-evidence hang, and a hostile
        repository shipping `cortex.toml` as a FIFO hangs every command run inside it.
        """
        evidence = cli("case", "evidence", "add", task, "--claim", "x").data["evidence"]["id"]
        if fifo.startswith("repo:"):
            path = cli.cwd / fifo.removeprefix("repo:")
        else:
            path = task_dir(cli, task) / fifo
            path.unlink()
        os.mkfifo(path)
        argv = [{"TASK": task, "EV": evidence}.get(a, a) for a in args]
        try:
            proc = run_cortex([*argv, "--json"], cli.env, cli.cwd, timeout=READ_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`cortex {' '.join(args)}` hung on a FIFO {fifo}")
        envelope = envelope_of(proc)
        if args[1] == "list":
            assert proc.returncode in {0, 4}
        else:
            assert proc.returncode == 4, envelope


# (5) Secrets ------------------------------------------------------------------------------


class TestSecrets:
    """Secrets must not reach disk (or, per redaction.md, error messages)."""

    def test_the_idempotency_fingerprint_is_not_a_hash_of_the_secret(self, cli: Cli) -> None:
        """The key record stores sha256 of the *unredacted* goal: a guessable secret leaks.

        case.json holds the goal with `password=[REDACTED]`; the key file holds the sha256 of
        the same request with the real password, so a dictionary attack recovers it offline.
        """
        goal = "rotate the db creds, currently password=hunter2"
        task = cli.open(goal, "--idempotency-key", "adv-fingerprint")
        assert "hunter2" not in (task_dir(cli, task) / "case.json").read_text()
        keys = task_dir(cli, task).parent / ".keys"
        (record_path,) = keys.iterdir()
        fingerprint = json.loads(record_path.read_bytes())["fingerprint"]
        for guess in ("123456", "letmein", "hunter2", "password"):
            candidate = goal.replace("hunter2", guess)
            digest = sha256_hex(encode([candidate, "change", "medium", ["code"], []]))
            assert digest != fingerprint, f"the fingerprint confirms the password guess {guess!r}"

    @pytest.mark.parametrize(
        "args",
        [
            ["case", "open", "goal", "--mode", GITHUB_TOKEN],
            ["case", "open", "goal", "--actor", f"deploy {GITHUB_TOKEN}"],
            ["case", "status", GITHUB_TOKEN],
            ["case", "list", "--limit", GITHUB_TOKEN],
            ["case", GITHUB_TOKEN],
        ],
    )
    def test_error_messages_do_not_echo_secrets(self, cli: Cli, args: list[str]) -> None:
        """redaction.md: error messages that quote input pass through the pipeline first."""
        out = cli(*args)
        assert out.code == 4
        assert GITHUB_TOKEN not in out.stdout + out.stderr

    @pytest.mark.parametrize(
        ("secret", "text"),
        [
            ("Xy/9+abcQ", "db is postgres://admin:Xy/9+abcQ@db:5432/app"),
            ("glcbt-64_Zk3mQ8vT2xLp9RwYb7Nd", "job ran with glcbt-64_Zk3mQ8vT2xLp9RwYb7Nd"),
            (
                "gloas-5f2c9d1e8b7a6f5e4d3c2b1a0f9e8d7c",
                "app gloas-5f2c9d1e8b7a6f5e4d3c2b1a0f9e8d7c",
            ),
        ],
        ids=["url-password-with-slash", "gitlab-ci-job-token", "gitlab-oauth-secret"],
    )
    def test_promised_token_shapes_never_reach_disk(
        self, cli: Cli, task: str, tmp_path: Path, secret: str, text: str
    ) -> None:
        """Shapes redaction.md lists (URL passwords, GitLab tokens) leak in some common variants."""
        source = str(raw_file(tmp_path, text.encode() + b"\n"))
        out = cli("case", "evidence", "add", task, "--claim", text, "--raw-file", source)
        assert out.code == 0
        state = Path(cli.env["CORTEX_STATE_DIR"])
        leaked = [p for p in state.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert leaked == [], f"the secret reached disk in {[p.name for p in leaked]}"

    @pytest.mark.process
    def test_redaction_time_is_not_quadratic_under_the_lock(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        """A 128 KiB raw blob of `-token` repeated takes minutes to redact, holding the case lock.

        The secret-named-key regexes backtrack quadratically over a long run of key characters
        containing a key word (16 KiB already takes ~3 s; 16 MiB, the raw limit, would take
        days), and `stage_blob` runs the redactor while the case lock is held.
        """
        blob = tmp_path / "minified.txt"
        blob.write_bytes(b"-token" * (128 * 1024 // 6))
        args = ["case", "evidence", "add", task, "--claim", "x", "--raw-file", str(blob), "--json"]
        try:
            proc = run_cortex(args, cli.env, cli.cwd, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("redacting a 128 KiB raw blob took over 20 s (holding the case lock)")
        assert proc.returncode == 0


# (6) Audit ----------------------------------------------------------------------------------


class TestAuditDetection:
    """Edits of committed data that the audit must catch."""

    def test_an_edited_raw_blob_is_detected(self, cli: Cli, task: str, tmp_path: Path) -> None:
        """Raw blobs are committed data, but no digest of them is kept: an edit passes audit."""
        source = str(raw_file(tmp_path, b"FAILED test_login - AssertionError\n"))
        cli("case", "evidence", "add", task, "--claim", "login test fails", "--raw-file", source)
        (blob,) = (task_dir(cli, task) / "raw").iterdir()
        blob.write_bytes(b"PASSED test_login\n")
        out = cli("case", "audit", task)
        assert out.code == 4, "an edited raw blob passed the audit"

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("goal", "a different goal"),
            ("status", "complete"),
            ("actor", "someone-else"),
            ("acceptanceCriteria", [{"id": "c1", "statement": "nothing at all"}]),
        ],
    )
    def test_an_edited_snapshot_field_is_detected(
        self, cli: Cli, field: str, value: object
    ) -> None:
        """case.json fields outside the ledgers (goal, status, criteria) are not protected."""
        task = cli.open("the real goal", "--criterion", "c1=login redirects to /home")
        cli("case", "note", task, "some work")
        path = task_dir(cli, task) / "case.json"
        case = json.loads(path.read_bytes())
        case[field] = value
        path.write_text(json.dumps(case, indent=2) + "\n")
        out = cli("case", "audit", task)
        assert out.code == 4, f"editing case.json {field} passed the audit"

    def test_a_crlf_conversion_is_detected(self, cli: Cli, task: str) -> None:
        """Converting a ledger to CRLF line endings breaks the committed region: exit 4."""
        cli("case", "note", task, "one")
        cli("case", "note", task, "two")
        path = task_dir(cli, task) / "evidence.jsonl"
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        assert cli("case", "audit", task).code == 4

    @pytest.mark.parametrize("size", [bounds.LEDGER_RECORD_MAX - 1, bounds.LEDGER_RECORD_MAX + 1])
    def test_a_huge_committed_line_is_a_finding_not_a_crash(
        self, cli: Cli, task: str, size: int
    ) -> None:
        """A committed line just under or over 256 KiB: typed findings, exit 4, no crash."""
        directory = task_dir(cli, task)
        path = directory / "evidence.jsonl"
        line = b'{"id":"' + b"x" * (size - 9) + b'"}\n'
        path.write_bytes(line)
        case = snapshot(cli, task)
        case["ledgers"]["evidence"] = {"count": 1, "bytes": len(line), "tip": "0" * 64}
        (directory / "case.json").write_text(json.dumps(case))
        out = cli("case", "audit", task)
        assert out.code == 4
        assert out.error_code == "integrity_error"


class TestAuditRobustness:
    """Arbitrary bytes (and shapes) in a case directory never crash the audit."""

    def test_raw_as_a_regular_file(self, cli: Cli, task: str) -> None:
        """`raw` replaced by a file: audit crashes with NotADirectoryError (exit 1)."""
        directory = task_dir(cli, task)
        (directory / "raw").rmdir()
        (directory / "raw").write_bytes(b"not a directory")
        out = cli("case", "audit", task)
        assert (out.code, out.error_code) == (4, "integrity_error"), out.stdout

    def test_negative_committed_lengths(self, cli: Cli, task: str) -> None:
        """A negative committed length is corruption: audit and writers report it, never crash.

        `bytes: -5` makes `check_tail` call `pread` at offset -5 (EINVAL): audit and every
        writer fail with internal_error instead of a finding.
        """
        directory = task_dir(cli, task)
        case = snapshot(cli, task)
        case["ledgers"]["phases"]["bytes"] = -5
        (directory / "case.json").write_text(json.dumps(case))
        audit = cli("case", "audit", task)
        assert (audit.code, audit.error_code) == (4, "integrity_error"), audit.stdout
        write = cli("case", "note", task, "x")
        assert (write.code, write.error_code) == (4, "integrity_error"), write.stdout


# (7) Hostile command lines -------------------------------------------------------------------


class TestHostileCommandLines:
    """Bad input: one envelope, a semantic exit code, no traceback, nothing written."""

    def test_proc_self_mem_as_raw_file(self, cli: Cli, task: str, state_root: Path) -> None:
        """`--raw-file /proc/self/mem` is a "regular file" that fails to read: exit 4, not 1."""
        before = tree_state(state_root)
        out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", "/proc/self/mem")
        assert tree_state(state_root) == before
        assert (out.code, out.error_code) == (4, "invalid_input"), out.stdout

    @pytest.mark.parametrize("path", ["/dev/zero", "/proc/self/fd/0"])
    def test_devices_as_raw_file(self, cli: Cli, task: str, state_root: Path, path: str) -> None:
        """Character devices are refused without reading them."""
        before = tree_state(state_root)
        out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", path)
        assert out.code == 4
        assert tree_state(state_root) == before

    def test_a_17_mib_raw_file_is_refused(self, cli: Cli, task: str, tmp_path: Path) -> None:
        """A file over the raw limit is refused by size, and nothing is written."""
        big = tmp_path / "big.log"
        with big.open("wb") as handle:
            handle.truncate(17 * 1024 * 1024)
        before = tree_state(task_dir(cli, task))
        out = cli("case", "evidence", "add", task, "--claim", "x", "--raw-file", str(big))
        assert out.code == 4
        assert tree_state(task_dir(cli, task)) == before

    @pytest.mark.process
    def test_endless_stdin_stops_at_the_bound(self, env: dict[str, str], repo: Path) -> None:
        """A raw stdin that never ends is refused after RAW_BLOB_MAX + 1 bytes, not read forever."""
        task = json.loads(
            run_cortex(["case", "open", "g", "--json"], env, repo).stdout.splitlines()[0]
        )["data"]["taskId"]
        with subprocess.Popen(["yes"], stdout=subprocess.PIPE) as endless:
            assert endless.stdout is not None
            proc = subprocess.run(
                [
                    *CORTEX,
                    "case",
                    "evidence",
                    "add",
                    task,
                    "--claim",
                    "x",
                    "--raw-file",
                    "-",
                    "--json",
                ],
                cwd=repo,
                env=env,
                stdin=endless.stdout,
                capture_output=True,
                timeout=60,
                check=False,
            )
            endless.kill()
        assert proc.returncode == 4
        assert envelope_of(proc)["error"]["code"] == "invalid_input"

    @pytest.mark.process
    @pytest.mark.parametrize("arg", [b"a\xffb", b"\xed\xa0\x80", b"\xc0\xaf"])
    def test_invalid_utf8_argv(self, env: dict[str, str], repo: Path, arg: bytes) -> None:
        """Undecodable bytes in a claim, a goal or an id: exit 4, one envelope, nothing written."""
        task = json.loads(
            run_cortex(["case", "open", "g", "--json"], env, repo).stdout.splitlines()[0]
        )["data"]["taskId"]
        state = Path(env["CORTEX_STATE_DIR"])
        before = tree_state(state)
        for argv in (
            [b"case", b"evidence", b"add", task.encode(), b"--claim", arg],
            [b"case", b"open", arg],
            [b"case", b"status", b"task_" + arg],
            [b"case", b"note", task.encode(), b"ok", b"--actor", arg],
        ):
            proc = subprocess.run(
                [sys.executable.encode(), b"-m", b"cortex", *argv, b"--json"],
                cwd=repo,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            assert proc.returncode == 4, (argv, proc.stdout, proc.stderr)
            envelope_of(proc)
        assert tree_state(state) == before

    @pytest.mark.process
    def test_a_non_utf8_state_directory_gives_an_envelope(self, env: dict[str, str]) -> None:
        """A state root whose path is not UTF-8 (legal on Linux) must not end in a traceback.

        The store root is echoed in envelopes (`list` data, `not_found` messages), and msgspec
        refuses to encode the surrogate-escaped path; `_emit` does not catch that, so Python
        prints a traceback and no envelope at all.
        """
        environ = {k.encode(): v.encode() for k, v in env.items()}
        environ[b"CORTEX_STATE_DIR"] = env["CORTEX_STATE_DIR"].encode() + b"-\xff"
        work = Path(env["HOME"]) / "plain"
        work.mkdir()
        for argv in (
            [b"case", b"list"],
            [b"case", b"status", b"task_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
        ):
            proc = subprocess.run(
                [sys.executable.encode(), b"-m", b"cortex", *argv, b"--json"],
                cwd=work,
                env=environ,
                capture_output=True,
                timeout=60,
                check=False,
            )
            envelope = envelope_of(proc)
            assert proc.returncode in {0, 3, 4}, envelope

    @pytest.mark.process
    def test_a_non_utf8_workspace_leaves_no_partial_state(self, env: dict[str, str]) -> None:
        """Opening a case in a directory named with non-UTF-8 bytes writes all or nothing.

        Today the key file and a `.creating-*` directory are written, then encoding the
        workspace root fails with internal_error: the key is now bound to a case that can
        never be created.
        """
        base = Path(env["HOME"])
        workspace = os.path.join(os.fsencode(base), b"ws-\xfe")
        os.mkdir(workspace)
        proc = subprocess.run(
            [*CORTEX, "case", "open", "g", "--idempotency-key", "adv-nonutf8", "--json"],
            cwd=workspace,
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        envelope = envelope_of(proc)
        if proc.returncode != 0:
            assert proc.returncode == 4, envelope
            state = Path(env["CORTEX_STATE_DIR"])
            leftovers = [
                p.name for p in state.rglob("*") if p.name.startswith(".creating-") or p.is_file()
            ]
            assert [n for n in leftovers if n != ".store.lock"] == [], leftovers

    @pytest.mark.parametrize(
        ("option", "value"),
        [("--expect-revision", "\uff11"), ("--expect-revision", "1_0"), ("--limit", "\u0665")],
    )
    def test_integers_are_ascii_digits_only(
        self, cli: Cli, task: str, option: str, value: str
    ) -> None:
        """The strict parser reads fullwidth and Arabic-Indic digits and `1_0` as numbers."""
        if option == "--limit":
            out = cli("case", "list", option, value)
        else:
            out = cli("case", "note", task, "x", option, value)
        assert out.code == 4
        assert out.error_code == "invalid_input"

    @pytest.mark.parametrize(
        "task_id",
        [
            "task_\uff10" + "1ARZ3NDEKTSV4RRFFQ69G5FAV",  # fullwidth zero
            "task_01ARZ3NDEKTSV4RRFFQ69G5F\u0410V",  # Cyrillic A
            "task\u200b_01ARZ3NDEKTSV4RRFFQ69G5FAV",  # zero-width space
            "ta\u0455k_01ARZ3NDEKTSV4RRFFQ69G5FAV",  # Cyrillic dze for s
        ],
    )
    def test_confusable_ids_are_refused(self, cli: Cli, state_root: Path, task_id: str) -> None:
        """Look-alike task ids never resolve to (or create) a case."""
        before = tree_state(state_root)
        for args in (["case", "status", task_id], ["case", "note", task_id, "x"]):
            out = cli(*args)
            assert out.code == 4
            assert out.error_code == "invalid_input"
        assert tree_state(state_root) == before

    def test_inline_values_that_look_like_options(self, cli: Cli, task: str) -> None:
        """`--claim=--json` is a claim, not a flag; `--json=x` is a usage error."""
        out = cli("case", "evidence", "add", task, "--claim=--json")
        assert out.data["evidence"]["claim"] == "--json"
        assert cli("case", "list", "--json=yes").code == 4
        symbol = cli("case", "evidence", "add", task, "--claim", "x", "--symbol=--help")
        assert symbol.data["evidence"]["location"]["symbol"] == "--help"

    @pytest.mark.parametrize("kind", ["file", "dangling", "loop"])
    def test_workspace_that_is_not_a_directory(
        self, cli: Cli, tmp_path: Path, state_root: Path, kind: str
    ) -> None:
        """-C naming a file, a dangling symlink or a symlink loop: exit 4, nothing written."""
        target = tmp_path / f"ws-{kind}"
        if kind == "file":
            target.write_text("x")
        elif kind == "dangling":
            target.symlink_to(tmp_path / "nowhere")
        else:
            target.symlink_to(target)
        before = tree_state(state_root)
        for args in (["case", "list"], ["case", "open", "g"]):
            out = cli("-C", str(target), *args)
            assert out.code == 4, out.stdout
        assert tree_state(state_root) == before

    def test_huge_argv_values_are_bounded(self, cli: Cli, task: str, state_root: Path) -> None:
        """Megabyte-scale argv values are refused by the text bounds before anything is written."""
        before = tree_state(state_root)
        huge = "x" * (bounds.CLAIM_MAX * 8)
        for args in (
            ["case", "evidence", "add", task, "--claim", huge],
            ["case", "open", huge],
            ["case", "note", task, huge],
            ["case", "evidence", "add", task, "--claim", "x", "--symbol", huge],
            ["case", "evidence", "add", task, "--claim", "x", "--source", huge],
        ):
            assert cli(*args).code == 4
        assert tree_state(state_root) == before


class TestLockTimeout:
    """A writer that cannot get the lock in time writes nothing."""

    @pytest.mark.process
    def test_a_timed_out_writer_with_pending_debris_writes_nothing(
        self, cli: Cli, task: str
    ) -> None:
        """Busy (exit 6) comes before recovery: a writer that times out touches no debris."""
        torn = run_child(cli.env, cli.cwd, "ledger.torn_write", 0, [["case", "note", task, "a"]])
        assert torn.killed
        directory = task_dir(cli, task)
        holder = subprocess.Popen(
            [sys.executable, str(CHILDREN / "hold_lock.py"), str(directory / ".lock"), "fcntl"],
            env=cli.env,
            stdout=subprocess.PIPE,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == b"held\n"
            before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
            env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "0.3"}
            proc = run_cortex(["case", "note", task, "late", "--json"], env, cli.cwd)
            assert proc.returncode == 6
            assert envelope_of(proc)["error"]["code"] == "busy"
            after = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
            after.pop(".lock")
            before.pop(".lock")
            assert after == before
        finally:
            holder.kill()
            holder.wait(timeout=30)
            if holder.stdout is not None:
                holder.stdout.close()
