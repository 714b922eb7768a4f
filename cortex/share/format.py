"""The shared tree of a case: its paths and the `head.json` each replica writes (`cortex-share/1`).

docs/design/sharing.md, "The object model", describes every path; this module is the one
place that spells them.
"""

from __future__ import annotations

import msgspec

from cortex.cases.ids import is_id
from cortex.cases.layout import is_replica_key
from cortex.cases.replica_index import Origin

FORMAT = "cortex-share/1"
REF_PREFIX = "refs/cortex/cases/"
TRACKING_PREFIX = "refs/cortex-remotes/"
META = "meta.json"
BLOBS = "blobs"
REPLICAS = "replicas"
HEAD = "head.json"
CASE = "case.json"
SNAPSHOTS = ("plan.json", "hypotheses.json", "decisions.json", "verification.json")
SUMMARY = "summary.md"
LEDGERS_DIR = "ledgers"
TAIL = "tail.jsonl"
LEDGER_NAMES = ("evidence", "commands", "phases")


class _Shared(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename="camel"):
    """Strict decoding, camelCase on the wire, as the case files."""


class Meta(_Shared, kw_only=True):
    """`meta.json`: the same for every replica of the case, written once."""

    format: str = FORMAT
    task_id: str


class Segment(_Shared, kw_only=True):
    """A sealed segment: exactly SHARE_SEGMENT_LINES lines, never rewritten."""

    first: int
    last: int
    sha256: str
    """Of the segment file."""
    tip: str
    """The chain hash of its last line."""
    end: int
    """Where it ends in the exporting replica's own ledger (bytes), for its next export."""
    bytes: int


class Tail(_Shared, kw_only=True):
    """The lines after the last sealed segment."""

    lines: int
    sha256: str
    tip: str
    end: int
    bytes: int


class LedgerHead(_Shared, kw_only=True):
    """One ledger of one replica."""

    count: int
    tip: str
    ordered: bool = True
    segments: list[Segment] = msgspec.field(default_factory=list)
    tail: Tail | None = None


class Head(_Shared, kw_only=True):
    """`replicas/<key>/head.json`: what this export of a replica is."""

    format: str = FORMAT
    task_id: str
    replica: str
    revision: int
    lamport: int
    epoch: int
    digest: str
    """The content digest of the state (docs/design/sharing.md, conflicts)."""
    origin: Origin | None = None
    known: dict[str, int] = msgspec.field(default_factory=dict)
    status: str
    ledgers: dict[str, LedgerHead]
    snapshots: dict[str, str] = msgspec.field(default_factory=dict)
    """sha256 of each snapshot file of this replica (case.json included)."""
    summary: str | None = None
    blob_bytes: int = 0
    """The bytes of every blob the replica's records cite (for the case bound)."""
    blobs: int = 0
    ruleset: str
    """A keyed digest of the rules that checked this export (redaction and path mapping), so
    the next export knows what it need not check again; it reveals nothing of them."""
    cortex: str
    exported_at: str


def ref(task_id: str) -> str:
    """The ref a case lives at."""
    return REF_PREFIX + task_id


def tracking(remote: str, task_id: str) -> str:
    """Where a fetch of a case from `remote` lands (never the ref Cortex writes)."""
    return f"{TRACKING_PREFIX}{remote}/cases/{task_id}"


def replica_dir(key: str) -> str:
    """The directory of a replica in the shared tree."""
    if not is_replica_key(key):
        msg = f"not a replica key: {key!r}"
        raise ValueError(msg)
    return f"{REPLICAS}/{key}"


def segment_name(first: int, last: int) -> str:
    """The file name of a sealed segment."""
    return f"{first:09d}-{last:09d}.jsonl"


def blob_path(sha256: str, *, tree: bool = False) -> str:
    """Where a blob lives, content-addressed (a tree artifact's listing says so by its name)."""
    return f"{BLOBS}/{sha256[:2]}/{sha256}" + (".tree" if tree else "")


def valid_task(task_id: str) -> bool:
    """Whether a ref's last component is a task id."""
    return is_id(task_id, "task")


def commit_message(task_id: str, replica: str, revision: int) -> bytes:
    """The message of every case commit: ids and a number, nothing a person wrote."""
    return f"cortex case {task_id}: replica {replica} at revision {revision}\n".encode()
