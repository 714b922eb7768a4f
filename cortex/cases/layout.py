"""Names and paths inside a store. Paths are only ever built from validated ids."""

from __future__ import annotations

import os

from cortex.cases.ids import check_id, is_id

CASE_FILE = "case.json"
LOCK_FILE = ".lock"
JOURNAL_FILE = ".journal.json"
RAW_DIR = "raw"
REFS_DIR = "refs"
STORE_LOCK_FILE = ".store.lock"
KEYS_DIR = ".keys"
CREATING_PREFIX = ".creating-"
BACKUP_PREFIX = ".bak-"
ACTIVITY_LOCK = "activity.lock"
"""Made by the first capture of a case's host activity (cortex.cases.activity)."""

ARCHIVE_DIR = ".archive"
"""A store's archived cases, each a case directory as it was (cortex.cases.retention)."""
REMOVING_PREFIX = ".removing-"
"""A case being removed: stray only after a crash, finished by the next removal or open."""

REPLICAS_DIR = "replicas"
"""Imported replicas' ledgers, one directory per replica key (docs/design/sharing.md)."""
REPLICAS_FILE = "replicas.json"
"""The auxiliary snapshot that records the imported replicas and their committed extents."""

AUX_SNAPSHOTS = frozenset(
    {"plan.json", "hypotheses.json", "decisions.json", "verification.json", REPLICAS_FILE}
)
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


def is_replica_key(key: str) -> bool:
    """`rep_<ULID>`, or `rep_<ULID>~<8 hex>` for a forked history of that replica."""
    replica, tilde, suffix = key.partition("~")
    if not is_id(replica, "rep"):
        return False
    return not tilde or (len(suffix) == 8 and all(c in "0123456789abcdef" for c in suffix))


def replica_ledger(key: str, name: str) -> str:
    """The path of an imported replica's ledger relative to its case directory."""
    if not is_replica_key(key) or name not in ("evidence", "commands", "phases"):
        msg = f"not a replica ledger: {key!r}/{name!r}"
        raise ValueError(msg)
    return f"{REPLICAS_DIR}/{key}/{ledger_file(name)}"


def parse_replica_ledger(relative: str) -> tuple[str, str] | None:
    """`(key, ledger)` of a `replicas/<key>/<ledger>.jsonl` path, or None for anything else."""
    parts = relative.split("/")
    if len(parts) != 3 or parts[0] != REPLICAS_DIR or not is_replica_key(parts[1]):
        return None
    name = parts[2].removesuffix(".jsonl")
    if name not in ("evidence", "commands", "phases") or parts[2] != f"{name}.jsonl":
        return None
    return parts[1], name
