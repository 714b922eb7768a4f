"""The case store below the CLI: ids, ledger format and chain, commits, CAS, recovery."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_kit import Plan, evidence, make_store, new_case, now
from ulid import ULID

from cortex.cases import fsio, ids, ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import (
    IntegrityError,
    InvalidInputError,
    RevisionConflictError,
    UnsupportedSchemaError,
)
from cortex.cases.records import (
    Command,
    Criterion,
    Evidence,
    Location,
    Source,
    decode,
    encode,
)
from cortex.cases.store import CaseStore

DETERMINISTIC = settings(derandomize=True, max_examples=200, deadline=None)


class TestIds:
    def test_minted_ids_parse_with_python_ulid(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Our stdlib ULIDs are canonical for an independent parser, with the same time."""
        # Ids never go back in time within a process; start this one from a clean slate.
        monkeypatch.setattr(ids, "_last_ms", -1)
        for prefix in ids.PREFIXES:
            value = ids.new_id(prefix, now_ms=1_700_000_000_123)
            body = value.split("_", 1)[1]
            parsed = ULID.from_str(body)
            assert str(parsed) == body
            assert parsed.milliseconds == 1_700_000_000_123
            assert ids.ulid_ms(body) == 1_700_000_000_123

    def test_ids_from_one_process_strictly_increase(self) -> None:
        """Within a millisecond the random part is incremented, so order is creation order."""
        minted = [ids.new_id("ev", now_ms=1_700_000_000_000) for _ in range(1000)]
        assert minted == sorted(minted)
        assert len(set(minted)) == 1000

    @DETERMINISTIC
    @given(st.text(max_size=40))
    def test_check_id_accepts_only_canonical_ids(self, text: str) -> None:
        """Anything that is not prefix_ + canonical ULID is refused, never normalised."""
        candidate = "task_" + text
        if ids.is_id(candidate, "task"):
            assert ids.check_id(candidate, "task") == candidate
        else:
            with pytest.raises(InvalidInputError):
                ids.check_id(candidate, "task")

    def test_overflowing_and_lowercase_ulids_are_refused(self) -> None:
        """A first character above 7 overflows 128 bits; lower case is not canonical."""
        assert not ids.is_id("ev_81ARZ3NDEKTSV4RRFFQ69G5FAV", "ev")
        assert not ids.is_id("ev_01arz3ndektsv4rrffq69g5fav", "ev")
        assert ids.is_id("ev_71ARZ3NDEKTSV4RRFFQ69G5FAV", "ev")

    def test_builtin_sha256_matches_hashlib(self) -> None:
        """The OpenSSL-free digest we use equals hashlib's."""
        import hashlib

        for data in (b"", b"abc", os.urandom(1000)):
            assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


class TestLedgerFormat:
    @DETERMINISTIC
    @given(
        claim=st.text(min_size=1, max_size=200),
        symbol=st.none() | st.text(max_size=50),
        line=st.none() | st.integers(min_value=1, max_value=10**6),
    )
    def test_records_round_trip(self, claim: str, symbol: str | None, line: int | None) -> None:
        """Any evidence record encodes to one physical line and decodes back equal."""
        record = Evidence(
            id=ids.new_id("ev"),
            timestamp=now(),
            source=Source(tool="t", uri="u"),
            claim=claim,
            location=Location(file="a.py", start_line=line, end_line=line, symbol=symbol),
            derived_from=[ids.new_id("ev")],
            revision=3,
            prev="0" * 64,
        )
        line_bytes = ledger.format_line(record)
        assert line_bytes.endswith(b"\n")
        assert line_bytes.count(b"\n") == 1
        assert decode(line_bytes[:-1], Evidence) == record

    def test_newlines_in_values_cannot_forge_lines(self) -> None:
        """A claim full of newlines and fake JSON still makes exactly one line."""
        forged = 'x"}\n{"id":"ev_01ARZ3NDEKTSV4RRFFQ69G5FAV","claim":"forged"}\n'
        record = msgspec.structs.replace(evidence(forged), revision=1, prev="0" * 64)
        assert ledger.format_line(record).count(b"\n") == 1

    def test_unknown_fields_are_rejected(self) -> None:
        """Records are strict: an extra field is corruption, not silently dropped."""
        record = msgspec.structs.replace(evidence(), revision=1, prev="0" * 64)
        data = json.loads(encode(record))
        data["extra"] = 1
        with pytest.raises(IntegrityError):
            ledger.parse_line(json.dumps(data).encode(), Evidence, where="test")

    def test_oversize_records_are_refused(self) -> None:
        """A record over LEDGER_RECORD_MAX cannot be formatted."""
        record = evidence("x" * 300_000)
        with pytest.raises(InvalidInputError):
            ledger.format_line(record)

    def test_genesis_ties_a_chain_to_its_case_and_ledger(self) -> None:
        """Different cases or ledgers start their chains differently."""
        task_a, task_b = ids.new_id("task"), ids.new_id("task")
        assert ledger.genesis(task_a, "evidence") != ledger.genesis(task_b, "evidence")
        assert ledger.genesis(task_a, "evidence") != ledger.genesis(task_a, "commands")


class TestTails:
    def write(self, path: Path, committed: bytes, extra: bytes) -> int:
        path.write_bytes(committed + extra)
        return len(committed)

    def line(self, revision: int) -> bytes:
        record = msgspec.structs.replace(evidence(), revision=revision, prev="0" * 64)
        return ledger.format_line(record)

    def test_a_torn_line_may_be_truncated(self, tmp_path: Path) -> None:
        """Half a line after the committed end is an interrupted append."""
        path = tmp_path / "l.jsonl"
        committed = self.write(path, self.line(1), self.line(2)[:40])
        assert ledger.check_tail(str(path), committed, 1) == 40

    def test_uncommitted_whole_lines_may_be_truncated(self, tmp_path: Path) -> None:
        """Whole lines tagged above the committed revision never reached their commit point."""
        path = tmp_path / "l.jsonl"
        extra = self.line(2) + self.line(2)[:10]
        committed = self.write(path, self.line(1), extra)
        assert ledger.check_tail(str(path), committed, 1) == len(extra)

    def test_lines_claiming_a_committed_revision_are_foreign(self, tmp_path: Path) -> None:
        """A complete line tagged at or below the committed revision was not written by us."""
        path = tmp_path / "l.jsonl"
        committed = self.write(path, self.line(1), self.line(1))
        with pytest.raises(IntegrityError):
            ledger.check_tail(str(path), committed, 1)

    def test_garbage_lines_are_foreign(self, tmp_path: Path) -> None:
        """A complete undecodable line after the committed end is refused, not truncated."""
        path = tmp_path / "l.jsonl"
        committed = self.write(path, self.line(1), b"not json\n")
        with pytest.raises(IntegrityError):
            ledger.check_tail(str(path), committed, 1)

    def test_a_short_ledger_has_lost_acknowledged_data(self, tmp_path: Path) -> None:
        """A ledger shorter than its committed length is an integrity error."""
        path = tmp_path / "l.jsonl"
        line = self.line(1)
        path.write_bytes(line[:-5])
        with pytest.raises(IntegrityError):
            ledger.check_tail(str(path), len(line), 1)
        with pytest.raises(IntegrityError):
            list(ledger.iter_lines(str(path), len(line)))


class TestCommits:
    def test_create_then_commit_bumps_revision_and_chains(self, tmp_path: Path) -> None:
        """Each commit is one revision; lines carry it and chain from the committed tip."""
        store = make_store(tmp_path)
        case, created = store.create(new_case(), operation="case.open")
        assert created
        assert case.revision == 1
        for index in range(3):
            with store.transaction(case.id, actor="a", operation="op") as txn:
                txn.append("evidence", evidence(f"claim {index}"))
            assert txn.committed is not None
            assert txn.committed.revision == index + 2
        current = store.read_case(case.id)
        records = list(store.read_ledger(current, "evidence"))
        assert [r.revision for r in records] == [2, 3, 4]
        expected_prev = ledger.genesis(case.id, "evidence")
        lines = (Path(store.case_path(case.id)) / "evidence.jsonl").read_bytes().splitlines()
        for record, raw in zip(records, lines, strict=True):
            assert record.prev == expected_prev
            expected_prev = ledger.line_hash(raw)
        assert current.ledgers["evidence"].tip == expected_prev
        assert current.ledgers["evidence"].count == 3
        commands = [c for c in store.read_ledger(current, "commands") if isinstance(c, Command)]
        assert [c.operation for c in commands] == ["case.open", "op", "op", "op"]

    def test_every_commit_writes_exactly_one_audit_line(self, tmp_path: Path) -> None:
        """The transaction appends the command line itself: no commit without an audit line."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        with store.transaction(case.id, actor="agent-7", operation="case.note") as txn:
            record = txn.append("evidence", evidence())
            txn.target = record.id
        commands = list(store.read_ledger(store.read_case(case.id), "commands"))
        last = commands[-1]
        assert isinstance(last, Command)
        assert (last.actor, last.operation, last.target, last.status) == (
            "agent-7",
            "case.note",
            record.id,
            "ok",
        )
        assert last.duration_ms >= 0

    def test_expected_revision_is_compare_and_swap(self, tmp_path: Path) -> None:
        """A writer holding an old revision gets a typed conflict and writes nothing."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        with store.transaction(case.id, actor="a", operation="op", expected_revision=1) as txn:
            txn.append("evidence", evidence())
        before = (Path(store.case_path(case.id)) / "evidence.jsonl").read_bytes()
        with pytest.raises(RevisionConflictError) as caught:  # noqa: SIM117
            with store.transaction(case.id, actor="a", operation="op", expected_revision=1) as txn:
                txn.append("evidence", evidence())
        assert (caught.value.expected, caught.value.actual) == (1, 2)
        assert (Path(store.case_path(case.id)) / "evidence.jsonl").read_bytes() == before

    def test_an_exception_inside_the_block_writes_nothing(self, tmp_path: Path) -> None:
        """Leaving the block with an error leaves the case exactly as it was."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        directory = Path(store.case_path(case.id))
        before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
        msg = "caller changed its mind"
        with (  # noqa: PT012 - the point is an error raised mid-transaction
            pytest.raises(RuntimeError),
            store.transaction(case.id, actor="a", operation="op") as txn,
        ):
            txn.append("evidence", evidence())
            raise RuntimeError(msg)
        after = {
            p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and p.name != ".lock"
        }
        before.pop(".lock", None)
        assert after == before

    def test_acceptance_criteria_are_immutable(self, tmp_path: Path) -> None:
        """No commit may change the criteria fixed at open."""
        store = make_store(tmp_path)
        case, _ = store.create(
            new_case(criteria=[Criterion(id="c1", statement="it works")]), operation="case.open"
        )
        with (
            pytest.raises(InvalidInputError),
            store.transaction(case.id, actor="a", operation="op") as txn,
        ):
            txn.case.acceptance_criteria[0].statement = "it sort of works"
        assert store.read_case(case.id).acceptance_criteria[0].statement == "it works"
        assert store.read_case(case.id).revision == 1

    def test_redaction_runs_inside_the_store(self, tmp_path: Path) -> None:
        """Even a caller that skips validation cannot write a secret through the store."""
        store = make_store(tmp_path, literals=("corp-internal-passphrase",))
        case, _ = store.create(new_case("deploy with corp-internal-passphrase"), operation="o")
        with store.transaction(case.id, actor="a", operation="op") as txn:
            txn.append("evidence", evidence("key AKIAABCDEFGHIJKLMNOP leaked"))
            txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"token=corp-internal-passphrase\n")
        everything = b"".join(p.read_bytes() for p in Path(store.root).rglob("*") if p.is_file())
        assert b"AKIAABCDEFGHIJKLMNOP" not in everything
        assert b"corp-internal-passphrase" not in everything
        stored = next(iter(store.read_ledger(store.read_case(case.id), "evidence")))
        assert isinstance(stored, Evidence)
        assert stored.sensitivity == "sensitive"

    def test_secret_looking_identifiers_are_refused_by_the_store(self, tmp_path: Path) -> None:
        """The store refuses, rather than rewrites, an identifier that redaction would change."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        bad = Evidence(
            id=ids.new_id("ev"),
            timestamp=now(),
            source=Source(tool="ghp_" + "a1" * 18),
            claim="x",
        )
        with (
            pytest.raises(InvalidInputError),
            store.transaction(case.id, actor="a", operation="o") as txn,
        ):
            txn.append("evidence", bad)
        assert store.read_case(case.id).revision == 1

    def test_newer_schema_is_refused_and_left_untouched(self, tmp_path: Path) -> None:
        """A case written by a newer format is refused for reads and writes, bytes unchanged."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        path = Path(store.case_path(case.id)) / "case.json"
        data = json.loads(path.read_bytes())
        data["schemaVersion"] = 2
        data["futureField"] = True
        path.write_text(json.dumps(data))
        before = path.read_bytes()
        with pytest.raises(UnsupportedSchemaError):
            store.read_case(case.id)
        with (
            pytest.raises(UnsupportedSchemaError),
            store.transaction(case.id, actor="a", operation="o"),
        ):
            pass
        assert path.read_bytes() == before

    def test_files_are_private(self, tmp_path: Path) -> None:
        """Directories are 0700 and files 0600."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        with store.transaction(case.id, actor="a", operation="op") as txn:
            txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"output")
            txn.append("evidence", evidence())
        for path in Path(store.root).rglob("*"):
            mode = path.stat().st_mode & 0o777
            assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


class TestMultiFileCommit:
    def commit_plan(self, store: CaseStore, task: str, summary: str) -> None:
        with store.transaction(task, actor="a", operation="case.plan") as txn:
            txn.stage_snapshot("plan.json", Plan(summary=summary))
            txn.append("evidence", evidence(f"plan {summary}"))

    def test_snapshot_ledger_and_case_commit_together(self, tmp_path: Path) -> None:
        """A plan snapshot, its evidence and the case revision publish as one commit."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        self.commit_plan(store, case.id, "first")
        self.commit_plan(store, case.id, "second")
        current = store.read_case(case.id)
        plan = store.read_snapshot(case.id, "plan.json", Plan)
        assert plan is not None
        assert plan.summary == "second"
        assert plan.revision == current.revision == 3
        directory = Path(store.case_path(case.id))
        assert not (directory / ".journal.json").exists()
        assert not list(directory.glob(".bak-*"))
        assert not list(directory.glob(".tmp-*"))

    def test_readers_fall_back_to_the_backup_mid_commit(self, tmp_path: Path) -> None:
        """Between publishing a snapshot and the commit point, readers still see the old one."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        self.commit_plan(store, case.id, "old")
        directory = Path(store.case_path(case.id))
        # Recreate the state of a writer stopped between publish and commit: the new plan is in
        # place, the old one is kept as the backup, case.json still names the old revision.
        (directory / ".bak-plan.json").write_bytes((directory / "plan.json").read_bytes())
        newer = json.loads((directory / "plan.json").read_bytes())
        newer["revision"] = 3
        newer["summary"] = "uncommitted"
        (directory / "plan.json").write_text(json.dumps(newer))
        plan = store.read_snapshot(case.id, "plan.json", Plan)
        assert plan is not None
        assert plan.summary == "old"

    def test_no_snapshot_yet_reads_as_none(self, tmp_path: Path) -> None:
        """A case without a plan has no plan, rather than an error."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        assert store.read_snapshot(case.id, "plan.json", Plan) is None

    def test_a_failed_publish_is_rolled_back_at_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A fault during publish undoes the attempt while still holding the lock."""
        store = make_store(tmp_path)
        case, _ = store.create(new_case(), operation="case.open")
        self.commit_plan(store, case.id, "kept")
        directory = Path(store.case_path(case.id))
        ledger_before = (directory / "evidence.jsonl").read_bytes()

        def failing_link(*_args: object) -> None:
            raise OSError(28, "No space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(os, "link", failing_link)
            with pytest.raises(OSError, match="No space"):  # noqa: SIM117, PT012 - one commit
                with store.transaction(case.id, actor="a", operation="case.plan") as txn:
                    txn.stage_blob(f"raw/{ids.new_id('raw')}.txt", b"blob")
                    txn.append("evidence", evidence("lost"))
        assert (directory / "evidence.jsonl").read_bytes() == ledger_before
        assert not (directory / ".journal.json").exists()
        assert not list(directory.glob(".tmp-*"))
        assert list((directory / "raw").iterdir()) == []
        plan = store.read_snapshot(case.id, "plan.json", Plan)
        assert plan is not None
        assert plan.summary == "kept"


class TestDurableWriter:
    """fsio's writers: what the store, setup, init and the handoff file rely on."""

    def test_a_given_mode_is_the_files_from_its_first_appearance(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = tmp_path / "config.toml"
        seen: list[int] = []
        real = os.replace

        def replace(src: str, dst: str) -> None:
            seen.append(os.stat(src).st_mode & 0o777)
            real(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        old = os.umask(0o077)
        try:
            assert fsio.write_atomic(str(path), b"x = 1\n", mode=0o644) is True
        finally:
            os.umask(old)
        assert seen == [0o644]  # already, under the temp name: never visible otherwise
        assert path.stat().st_mode & 0o777 == 0o644

    def test_a_target_changed_since_it_was_read_is_not_replaced(self, tmp_path: Path) -> None:
        path = tmp_path / "config.toml"
        path.write_bytes(b"theirs\n")
        written = fsio.write_atomic(str(path), b"ours\n", unchanged=lambda: False)
        assert written is False
        assert path.read_bytes() == b"theirs\n"
        assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]

    def test_write_once_keeps_the_first_file(self, tmp_path: Path) -> None:
        path = tmp_path / "config.toml.cortex-backup"
        assert fsio.write_once(str(path), b"first\n", mode=0o600) is True
        assert fsio.write_once(str(path), b"second\n", mode=0o600) is False
        assert path.read_bytes() == b"first\n"
        assert path.stat().st_mode & 0o777 == 0o600
        assert [p.name for p in tmp_path.iterdir()] == [path.name]

    def test_a_writers_temp_is_locked_until_renamed_and_only_abandoned_ones_go(
        self, tmp_path: Path
    ) -> None:
        """remove_stale_temps keeps a temp whose writer holds it, whatever its pid says."""
        path = tmp_path / "config.toml"
        abandoned = tmp_path / f".tmp-config.toml-{os.getpid()}-0123abcd"
        abandoned.write_bytes(b"a dead writer's copy\n")
        during: list[tuple[int, list[str]]] = []

        def unchanged() -> bool:  # called with the temp written, just before the rename
            removed = fsio.remove_stale_temps(str(tmp_path), {"config.toml"})
            during.append((removed, sorted(p.name for p in tmp_path.iterdir())))
            return True

        assert fsio.write_atomic(str(path), b"x = 1\n", unchanged=unchanged) is True
        [(removed, names)] = during
        assert removed == 1
        assert len(names) == 1
        assert names[0].startswith(".tmp-config.toml-")
        assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]
