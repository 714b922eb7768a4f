"""cortex/cases/txn.py's checks on what a caller stages, and cortex/cases/recovery.py's on a
journal before it trusts it, each on its own.

The store, crash and adversarial tests commit whole cases (and kill writers); here the guards a
commit runs before it writes anything are pinned one by one, with their messages, so that a
mutation run of txn.py or recovery.py (docs/testing.md) sees them. A test written for a mutant
that survived names it in its docstring (`function` number: the change; for `_check_journal`
and `_replica_lengths_ok`, the number of the run before issue 31 moved them to recovery.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Cli

from cortex.cases import recovery
from cortex.cases.bounds import RAW_BLOB_MAX, SNAPSHOT_MAX
from cortex.cases.errors import IntegrityError, InvalidInputError
from cortex.cases.ids import new_id
from cortex.cases.records import Journal, LedgerState
from cortex.kernel.kernel import Kernel

REPLICA = f"replicas/{new_id('rep')}/evidence.jsonl"


@pytest.fixture
def kernel(env: dict[str, str], repo: Path) -> Kernel:
    return Kernel(str(repo), env, default_actor="cli")


def journal(task: str, **fields: object) -> Journal:
    data: dict[str, object] = {
        "task_id": task,
        "from_revision": 1,
        "to_revision": 2,
        "ledgers": {},
    }
    data.update(fields)
    return Journal(**data)  # type: ignore[arg-type]


class TestStaging:
    def test_stage_blob(self, cli: Cli, kernel: Kernel) -> None:
        """Kills `stage_blob` 19 (`if redact or True`) and 22 (`clean != data` -> `==`): the
        bytes come back redacted, with whether redaction changed them, and `redact=False`
        keeps them as given."""
        task = cli.open()
        relative = f"raw/{new_id('raw')}.txt"
        secret = b"password=hunter2hunter2\n"
        with kernel.store.transaction(task, actor="a", operation="test") as txn:
            clean, changed = txn.stage_blob(relative, secret)
            assert changed is True
            assert b"hunter2" not in clean
            same, unchanged = txn.stage_blob(f"raw/{new_id('raw')}.txt", b"plain\n")
            assert (same, unchanged) == (b"plain\n", False)
            kept, flag = txn.stage_blob(f"raw/{new_id('raw')}.txt", secret, redact=False)
            assert (kept, flag) == (secret, False)
            txn.skip = True

    def test_stage_blob_refusals(self, cli: Cli, kernel: Kernel) -> None:
        """Kills `stage_blob` 2 (`len > MAX` -> `>=`), 3, 4, 15, 16 (the messages dropped), and
        11, 12 are equivalent (the probe's staged name only has to start with the prefix)."""
        task = cli.open()
        with kernel.store.transaction(task, actor="a", operation="test") as txn:
            txn.stage_blob(f"raw/{new_id('raw')}.txt", b"x" * RAW_BLOB_MAX, redact=False)
            with pytest.raises(InvalidInputError) as big:
                txn.stage_blob(f"raw/{new_id('raw')}.txt", b"x" * (RAW_BLOB_MAX + 1))
            assert str(big.value) == (
                f"blob is {RAW_BLOB_MAX + 1} bytes, over the {RAW_BLOB_MAX}-byte limit"
            )
            with pytest.raises(ValueError, match=r"^'case.json' is not a blob or write-once file"):
                txn.stage_blob("case.json", b"x")
            txn.skip = True

    def test_snapshot_refusals(self, cli: Cli, kernel: Kernel) -> None:
        """Kills `stage_snapshot` 2, 3 and `stage_snapshot_bytes`' checks and messages, and
        `append_replica`'s path check."""
        task = cli.open()
        with kernel.store.transaction(task, actor="a", operation="test") as txn:
            with pytest.raises(ValueError, match=r"^'case.json' is not an auxiliary snapshot$"):
                txn.stage_snapshot(
                    "case.json", Journal(task_id=task, from_revision=0, to_revision=1, ledgers={})
                )
            with pytest.raises(ValueError, match=r"^'x.json' is not an auxiliary snapshot$"):
                txn.stage_snapshot_bytes("x.json", b"{}", 1)
            txn.stage_snapshot_bytes("plan.json", b"x" * SNAPSHOT_MAX, 1)
            with pytest.raises(InvalidInputError) as big:
                txn.stage_snapshot_bytes("plan.json", b"x" * (SNAPSHOT_MAX + 1), 1)
            assert str(big.value) == f"plan.json is {SNAPSHOT_MAX + 1} bytes, over {SNAPSHOT_MAX}"
            with pytest.raises(ValueError, match=r"^'evidence.jsonl' is not an imported replica"):
                txn.append_replica("evidence.jsonl", b"{}\n", 0)
            txn.append_replica(REPLICA, b"{}\n", 0)
            txn.skip = True


class TestJournalChecks:
    def test_replica_lengths(self) -> None:
        """Kills `_replica_lengths_ok` 2-10: a rollback may truncate only an imported
        replica's ledger, and only to the length the committed state records (0 when none)."""
        ok = recovery._replica_lengths_ok
        assert ok(journal("t", replica_ledgers={REPLICA: 5}), {REPLICA: 5})
        assert ok(journal("t", replica_ledgers={REPLICA: 0}), {})
        assert ok(journal("t"), {})
        assert not ok(journal("t", replica_ledgers={REPLICA: 4}), {REPLICA: 5})
        assert not ok(journal("t", replica_ledgers={REPLICA: 1}), {})
        assert not ok(journal("t", replica_ledgers={"evidence.jsonl": 0}), {"evidence.jsonl": 0})

    def test_a_journal_is_checked_against_the_committed_state(
        self, cli: Cli, kernel: Kernel
    ) -> None:
        """Kills `_check_journal`'s conditions and its message: each kind of forged journal is
        refused before recovery touches anything."""
        task = cli.open()
        case = kernel.store.read_case(task)
        rev = case.revision
        lengths = {name: (case.ledgers.get(name) or LedgerState()).bytes for name in case.ledgers}

        def check(
            j: Journal, *, committed: bool = False, replicas: dict[str, int] | None = None
        ) -> str | None:
            try:
                recovery._check_journal(
                    j, task, case, committed=committed, replica_lengths=replicas or {}
                )
            except IntegrityError as exc:
                prefix = f"the commit journal of {task} cannot be trusted ("
                text = str(exc)
                assert text.startswith(prefix)
                assert text.endswith("); left untouched")
                return text[len(prefix) : -len("); left untouched")]
            return None

        good = journal(task, from_revision=rev, to_revision=rev + 1, ledgers=lengths)
        assert check(good) is None
        span = "it belongs to another case or spans more than one revision"
        assert check(journal("task_other", from_revision=rev, to_revision=rev + 1)) == span
        assert check(journal(task, from_revision=rev, to_revision=rev + 2)) == span
        assert check(journal(task, from_revision=rev - 1, to_revision=rev)) == (
            f"it starts from revision {rev - 1}, not the current {rev}"
        )
        assert check(journal(task, from_revision=rev - 1, to_revision=rev), committed=True) is None
        wrong = {**lengths, "evidence": lengths.get("evidence", 0) + 1}
        assert check(journal(task, from_revision=rev, to_revision=rev + 1, ledgers=wrong)) == (
            "its ledger lengths are not the committed ones"
        )
        unknown = {**lengths, "other": 0}
        assert check(journal(task, from_revision=rev, to_revision=rev + 1, ledgers=unknown)) == (
            "its ledger lengths are not the committed ones"
        )
        assert (
            check(
                journal(task, from_revision=rev, to_revision=rev + 1, ledgers=wrong), committed=True
            )
            is None
        )
        replica = journal(
            task,
            from_revision=rev,
            to_revision=rev + 1,
            ledgers=lengths,
            replica_ledgers={REPLICA: 3},
        )
        assert check(replica, replicas={REPLICA: 3}) is None
        assert check(replica) == (
            "its imported replicas' ledger lengths are not the committed ones"
        )
        assert check(replica, committed=True) is None
