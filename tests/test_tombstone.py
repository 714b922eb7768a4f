"""Tombstones below the CLI: the chain rule, the forget commit, its recovery, and what audit says.

docs/design/storage.md, "Forgetting a record". The crash tests with real processes are in
tests/test_forget.py; here the same stops happen in the test process (as tests/
test_txn_recovery.py does), so each step's files can be pinned exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from store_kit import evidence, make_store, new_case
from txn_kit import dies_at

from cortex.cases import ids, ledger
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.integrity import audit_case
from cortex.cases.layout import JOURNAL_FILE, raw_ref
from cortex.cases.records import Evidence, Forgetting, Source, decode
from cortex.cases.redact import Redactor
from cortex.cases.store import CaseStore
from cortex.cases.tombstone import FORGOTTEN_CLAIM, build, recorded

SECRET = "the quokka password is zanzibar-7731"  # noqa: S105 - made up


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CaseStore:
    monkeypatch.chdir(tmp_path)
    return make_store(tmp_path)


def case_with(store: CaseStore, *claims: str, raw: bytes | None = None) -> tuple[str, list[str]]:
    """A case holding one evidence record per claim (the first with a raw blob when given)."""
    case, _ = store.create(new_case(), operation="case.open")
    made: list[str] = []
    for index, claim in enumerate(claims):
        with store.transaction(case.id, actor="a", operation="case.evidence.add") as txn:
            record = evidence(claim)
            if raw is not None and index == 0:
                raw_id = ids.new_id("raw")
                stored, _ = txn.stage_blob(f"raw/{raw_id}.txt", raw)
                record = msgspec.structs.replace(
                    record, raw_ref=raw_ref(case.id, raw_id), raw_sha256=sha256_hex(stored)
                )
            made.append(txn.append("evidence", record).id)
    return case.id, made


def forget(store: CaseStore, task: str, record_id: str, what: str = "record") -> Forgetting:
    with store.transaction(task, actor="alice", operation="case.forget") as txn:
        (forgotten,) = txn.forget(record_id, what=what)  # type: ignore[arg-type]
        txn.append(
            "evidence",
            Evidence(
                id=evidence().id,
                timestamp="2026-11-30T12:00:00.000Z",
                kind="note",
                source=Source(tool="cortex-forget", actor="alice", origin="human"),
                claim=f"forgot {record_id}: pasted by mistake",
                forgets=forgotten,
            ),
        )
    return forgotten


def everything(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def lines(store: CaseStore, task: str) -> list[bytes]:
    return (Path(store.case_path(task)) / "evidence.jsonl").read_bytes().splitlines()


def report(store: CaseStore, task: str) -> dict[str, Any]:
    found: dict[str, Any] = msgspec.to_builtins(
        audit_case(store.case_path(task), task, Redactor(()))
    )
    return found


def codes(found: dict[str, Any], kind: str = "errors") -> list[str]:
    return [item["code"] for item in found[kind]]


class TestTheFormat:
    def test_a_tombstone_is_as_long_as_the_line_and_records_its_chain_hash(
        self, store: CaseStore
    ) -> None:
        task, (first, _) = case_with(store, SECRET, "later")
        line = lines(store, task)[0]
        record = ledger.parse_line(line, Evidence, where="test")
        tomb = build(record, len(line), ledger.line_hash(line), keep=False)
        assert len(tomb) == len(line)
        assert recorded(tomb) == sha256_hex(line) == ledger.line_hash(tomb)
        assert tomb.startswith(b'{"id":"' + first.encode() + b'"')
        parsed = ledger.parse_line(tomb, Evidence, where="test")
        assert (parsed.id, parsed.timestamp, parsed.prev) == (
            record.id,
            record.timestamp,
            record.prev,
        )
        assert parsed.claim == FORGOTTEN_CLAIM
        assert SECRET.encode() not in tomb

    def test_a_line_that_is_not_a_tombstone_hashes_as_it_always_did(self) -> None:
        line = b'{"id":"ev_x","claim":"ends like \\",\\"forgotten\\":\\"","prev":"00"}'
        assert recorded(line) is None
        assert ledger.line_hash(line) == sha256_hex(line)

    def test_a_line_too_short_for_a_tombstone_is_refused(self) -> None:
        record = Evidence(id="ev_1", timestamp="t", source=Source(tool="x"), claim="y")
        with pytest.raises(InvalidInputError, match="too short"):
            build(record, 40, "0" * 64, keep=False)


class TestForget:
    def test_the_line_and_the_blob_are_gone_and_the_chain_still_verifies(
        self, store: CaseStore, tmp_path: Path
    ) -> None:
        task, (first, second) = case_with(store, SECRET, "later", raw=SECRET.encode() * 3)
        before = lines(store, task)
        case_before = store.read_case(task)
        forgotten = forget(store, task, first)
        after = lines(store, task)
        assert len(after[0]) == len(before[0])
        assert after[1] == before[1]
        assert forgotten.line == sha256_hex(before[0])
        assert forgotten.tombstone == sha256_hex(after[0])
        assert [blob.sha256 for blob in forgotten.raw] == [sha256_hex(SECRET.encode() * 3)]
        assert SECRET.encode() not in everything(tmp_path / "store")
        assert not (Path(store.case_path(task)) / JOURNAL_FILE).exists()
        case = store.read_case(task)
        assert case.ledgers["evidence"].count == case_before.ledgers["evidence"].count + 1
        found = report(store, task)
        assert found["ok"] is True, found
        assert found["warnings"] == []
        (tombstone,) = found["tombstones"]
        assert tombstone["record"] == first
        assert tombstone["removedLine"] == forgotten.line
        assert tombstone["by"] == "alice"
        assert "pasted by mistake" in tombstone["reason"]
        assert [r.id for r in store.read_ledger(case, "evidence")][:2] == [first, second]

    def test_forgetting_only_the_raw_output_keeps_the_claim(
        self, store: CaseStore, tmp_path: Path
    ) -> None:
        task, (first,) = case_with(store, "a claim worth keeping", raw=SECRET.encode())
        forget(store, task, first, what="raw")
        record = store.find_records(store.read_case(task), "evidence", [first])[first]
        assert isinstance(record, Evidence)
        assert record.claim == "a claim worth keeping"
        assert record.raw_ref is None
        assert SECRET.encode() not in everything(tmp_path / "store")
        assert report(store, task)["ok"] is True

    def test_a_record_cannot_be_forgotten_twice_nor_a_forget_record(self, store: CaseStore) -> None:
        task, (first,) = case_with(store, SECRET)
        forget(store, task, first)
        with pytest.raises(InvalidInputError, match="already forgotten"):
            forget(store, task, first)
        marker = list(store.read_ledger(store.read_case(task), "evidence"))[-1]
        with pytest.raises(InvalidInputError, match="record of a forget"):
            forget(store, task, marker.id)

    def test_an_unknown_record_is_not_found_and_nothing_is_written(self, store: CaseStore) -> None:
        task, _ = case_with(store, SECRET)
        revision = store.read_case(task).revision
        from cortex.cases.errors import NotFoundError

        with pytest.raises(NotFoundError):
            forget(store, task, "ev_01J00000000000000000000000")
        assert store.read_case(task).revision == revision


class TestRecovery:
    @pytest.mark.parametrize("point", ["txn.journaled", "txn.appended", "txn.published"])
    def test_a_forget_stopped_before_its_commit_point_is_rolled_back(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch, point: str
    ) -> None:
        task, (first,) = case_with(store, SECRET, raw=b"blob " + SECRET.encode())
        before = lines(store, task)
        with dies_at(monkeypatch, point):
            forget(store, task, first)
        assert lines(store, task)[0] == before[0]
        assert report(store, task)["ok"] is True
        with store.transaction(task, actor="a", operation="case.note") as txn:
            txn.append("evidence", evidence("next"))
        assert lines(store, task)[0] == before[0]  # rolled back: nothing was forgotten
        found = report(store, task)
        assert found["ok"] is True
        assert found["warnings"] == []

    @pytest.mark.parametrize("point", ["txn.case_replaced", "forget.rewritten", "forget.removed"])
    def test_a_committed_forget_is_finished_by_the_next_writer(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, point: str
    ) -> None:
        task, (first,) = case_with(store, SECRET, raw=b"blob " + SECRET.encode())
        with dies_at(monkeypatch, point):
            forget(store, task, first)
        found = report(store, task)
        assert found["ok"] is True, found
        assert "pending_journal" in codes(found, "warnings")
        with store.transaction(task, actor="a", operation="case.note") as txn:
            txn.append("evidence", evidence("next"))
        assert SECRET.encode() not in everything(tmp_path / "store")
        found = report(store, task)
        assert found["ok"] is True
        assert found["warnings"] == []
        assert len(found["tombstones"]) == 1

    def test_recovery_refuses_a_line_that_is_neither_the_original_nor_the_tombstone(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        task, (first,) = case_with(store, SECRET)
        with dies_at(monkeypatch, "txn.case_replaced"):
            forget(store, task, first)
        path = Path(store.case_path(task)) / "evidence.jsonl"
        data = path.read_bytes()
        path.write_bytes(data.replace(b"zanzibar", b"ZANZIBAR", 1))
        with (
            pytest.raises(IntegrityError, match="neither"),
            store.transaction(task, actor="a", operation="case.note") as txn,
        ):
            txn.append("evidence", evidence("next"))

    def test_a_journal_naming_a_range_past_the_committed_end_is_refused(
        self, store: CaseStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        task, (first,) = case_with(store, SECRET)
        with dies_at(monkeypatch, "txn.case_replaced"):
            forget(store, task, first)
        journal_path = Path(store.case_path(task)) / JOURNAL_FILE
        journal = msgspec.json.decode(journal_path.read_bytes())
        journal["forget"][0]["offset"] = 10**9
        journal_path.write_bytes(msgspec.json.encode(journal))
        with (
            pytest.raises(IntegrityError, match="cannot be trusted"),
            store.transaction(task, actor="a", operation="case.note") as txn,
        ):
            txn.append("evidence", evidence("next"))


class TestAudit:
    def test_an_edited_line_breaks_the_chain(self, store: CaseStore) -> None:
        task, _ = case_with(store, SECRET, "later")
        path = Path(store.case_path(task)) / "evidence.jsonl"
        path.write_bytes(path.read_bytes().replace(b"zanzibar", b"xanzibar", 1))
        assert "chain" in codes(report(store, task))

    def test_a_tombstone_written_by_hand_is_told_from_a_forget(self, store: CaseStore) -> None:
        task, _ = case_with(store, SECRET, "later")
        path = Path(store.case_path(task)) / "evidence.jsonl"
        first, rest = path.read_bytes().split(b"\n", 1)
        record = ledger.parse_line(first, Evidence, where="test")
        forged = build(record, len(first), ledger.line_hash(first), keep=False)
        path.write_bytes(forged + b"\n" + rest)
        found = report(store, task)
        assert codes(found) == ["tombstone"], found  # the chain verifies; the warrant is missing
        assert found["tombstones"] == []

    def test_an_edited_tombstone_and_a_restored_line_are_errors(self, store: CaseStore) -> None:
        task, (first, _) = case_with(store, SECRET, "later")
        original = lines(store, task)[0]
        forget(store, task, first)
        path = Path(store.case_path(task)) / "evidence.jsonl"
        data = path.read_bytes()
        tomb = data.split(b"\n", 1)[0]
        edited = tomb.replace(b'"kind":"observation"', b'"kind":"note"       ', 1)
        assert len(edited) == len(tomb)
        assert edited != tomb
        path.write_bytes(data.replace(tomb, edited, 1))
        assert codes(report(store, task)) == ["tombstone"]
        path.write_bytes(data.replace(tomb, original, 1))
        assert codes(report(store, task)) == ["forgotten_present"]

    def test_a_forget_record_decodes_with_its_fields(self, store: CaseStore) -> None:
        task, (first,) = case_with(store, SECRET)
        forget(store, task, first)
        last = lines(store, task)[-1]
        record = decode(last, Evidence)
        assert record.forgets is not None
        assert record.forgets.record == first
        assert record.forgets.ledger == "evidence.jsonl"
        assert record.forgets.what == "record"


def test_the_tombstone_needs_no_migration_of_cases_written_before(store: CaseStore) -> None:
    """A case with no tombstone audits exactly as it did: nothing was rewritten."""
    task, _ = case_with(store, "one", "two")
    path = Path(store.case_path(task)) / "evidence.jsonl"
    before = path.read_bytes()
    found = report(store, task)
    assert found["ok"] is True
    assert found["tombstones"] == []
    assert path.read_bytes() == before
    assert os.path.getsize(path) == len(before)
