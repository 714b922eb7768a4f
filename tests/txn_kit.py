"""In-process crash points for cortex/cases/txn.py: stop a commit where a SIGKILL would.

Shared by tests/test_txn_recovery.py and tests/test_txn_commit.py (docs/testing.md says why the
stops happen in the test process).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cortex.cases import _crash
from cortex.cases import txn as txn_module
from cortex.cases.layout import JOURNAL_FILE
from cortex.cases.records import Journal, decode
from cortex.cases.store import CaseStore


class Died(BaseException):
    """The writer stopped at a crash point (a SIGKILL in the crash tests)."""


@contextmanager
def dies_at(monkeypatch: pytest.MonkeyPatch, point: str, *, skip: int = 0) -> Iterator[None]:
    """Stop the commit in the block at `point` (after `skip` passes), as a killed writer would."""

    def stop(name: str) -> None:
        raise Died(name)

    with monkeypatch.context() as patch:
        patch.setattr(_crash, "armed", point)
        patch.setattr(_crash, "skip", skip)
        patch.setattr(_crash, "action", stop)
        # A killed process undoes nothing: its lock goes with it, its files stay.
        patch.setattr(txn_module.Transaction, "_undo_quietly", lambda _self: None)
        with pytest.raises(Died) as stopped:
            yield
        assert stopped.value.args == (point,)


def directory(store: CaseStore, task: str) -> Path:
    return Path(store.case_path(task))


def files(store: CaseStore, task: str) -> dict[str, bytes]:
    """Every file of the case (relative name -> bytes), the lock file aside."""
    root = directory(store, task)
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def recover(store: CaseStore, task: str) -> list[str]:
    """Open (and skip) a transaction: recovery runs on entry; return its notes."""
    with store.transaction(task, actor="b", operation="case.status") as txn:
        txn.skip = True
    return txn.notes


def read_journal(store: CaseStore, task: str) -> Journal:
    return decode((directory(store, task) / JOURNAL_FILE).read_bytes(), Journal)
