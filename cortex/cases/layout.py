"""Names and paths inside a store. Paths are only ever built from validated ids."""

from __future__ import annotations

import os

from cortex.cases.ids import check_id

CASE_FILE = "case.json"
LOCK_FILE = ".lock"
JOURNAL_FILE = ".journal.json"
RAW_DIR = "raw"
REFS_DIR = "refs"
STORE_LOCK_FILE = ".store.lock"
KEYS_DIR = ".keys"
CREATING_PREFIX = ".creating-"
BACKUP_PREFIX = ".bak-"

AUX_SNAPSHOTS = frozenset({"plan.json", "hypotheses.json", "decisions.json", "verification.json"})
"""Snapshots besides case.json that a multi-file commit may replace."""
WRITE_ONCE_FILES = frozenset({"summary.md"})
"""Files at the case root a multi-file commit may create, once, like a raw blob."""


def ledger_file(name: str) -> str:
    """The file name of a ledger."""
    return f"{name}.jsonl"


def case_dir(root: str, task_id: str) -> str:
    """The directory of a case; the id is validated before any path is built from it."""
    return os.path.join(root, check_id(task_id, "task", what="task id"))


def raw_name(raw_id: str) -> str:
    """The path of a raw blob relative to its case directory."""
    return f"{RAW_DIR}/{check_id(raw_id, 'raw', what='raw id')}.txt"


def tree_name(raw_id: str) -> str:
    """The path of a tree artifact's manifest relative to its case directory."""
    return f"{RAW_DIR}/{check_id(raw_id, 'raw', what='raw id')}.tree"


def raw_ref(task_id: str, raw_id: str) -> str:
    """The `case://` reference evidence uses to point at a raw blob."""
    return f"case://{task_id}/{RAW_DIR}/{raw_id}"


def parse_raw_ref(ref: str) -> tuple[str, str] | None:
    """Split `case://<task>/raw/<raw id>` into its ids, or None when it is not that shape."""
    prefix = "case://"
    if not ref.startswith(prefix):
        return None
    parts = ref[len(prefix) :].split("/")
    if len(parts) != 3 or parts[1] != RAW_DIR:
        return None
    return parts[0], parts[2]
