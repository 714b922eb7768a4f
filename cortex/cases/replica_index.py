"""`replicas.json`: the replicas a case imported, their committed extents, and its sync state.

An auxiliary snapshot like `plan.json` (replaced by the multi-file commit, read through the
revision case.json records). Its own module, loaded only by cases that have one, so that a case
that was never shared pays nothing for these types (docs/design/sharing.md).
"""

from __future__ import annotations

import msgspec

from cortex.cases.records import SCHEMA_VERSION, Count, LedgerState, Record, Revision


class Origin(Record, kw_only=True):
    """The change that produced a state's content: which replica made it, at which clock."""

    replica: str
    lamport: Count


class Fence(Record, kw_only=True):
    """How a state ranks against another: lease epoch, then Lamport clock, then replica key."""

    epoch: Count
    lamport: Count
    replica: str

    def rank(self) -> tuple[int, int, str]:
        """The tuple the fence compares by."""
        return (self.epoch, self.lamport, self.replica)


class LocalSync(Record, kw_only=True):
    """The local replica's clock and what its state knows, as of the last import."""

    replica: str
    """The replica id the local chain is shared under."""
    clock: Count = 0
    base_revision: Count = 0
    """The Lamport clock is `clock + (revision - base_revision)`."""
    digest: str = ""
    """The content digest the local state had right after the last import."""
    origin: Origin | None = None
    """The change behind that content (None before any)."""
    known: dict[str, Count] = msgspec.field(default_factory=dict)
    """For each replica, the clock of its latest change the local state has incorporated."""


class HeadInfo(Record, kw_only=True):
    """What an imported replica's export said about itself (the parts the case keeps)."""

    revision: Revision
    lamport: Count
    epoch: Count
    digest: str
    origin: Origin | None = None
    known: dict[str, Count] = msgspec.field(default_factory=dict)
    exported_at: str
    cortex: str
    status: str = ""
    """The replica's phase when it exported."""


class ImportedReplica(Record, kw_only=True):
    """One imported replica: where its ledgers end and where it came from."""

    key: str
    """`rep_<ULID>`, or `rep_<ULID>~<8 hex>` for a forked history of that replica."""
    replica: str
    forked: bool = False
    ledgers: dict[str, LedgerState] = msgspec.field(default_factory=dict)
    """The committed extent of `replicas/<key>/<ledger>.jsonl` (`tip` is its chain's tip)."""
    head: HeadInfo
    source: str
    """`remote:<name>`, or `bundle:<file name>`."""
    commit: str
    """The git commit it was read from."""
    fetched_at: str


class ConflictSide(Record, kw_only=True):
    """One side of a conflict: whose state, how it was fenced, and what it held."""

    replica: str
    fence: Fence
    digest: str
    origin: Origin | None = None
    phase: str = ""
    lease_actor: str | None = None
    lease_epoch: Count = 0
    pending_decision: str | None = None
    plan_revision: int | None = None
    batch: str | None = None


class Conflict(Record, kw_only=True):
    """A change that lost to a higher-fenced state: recorded, never dropped silently."""

    at: str
    winner: ConflictSide
    loser: ConflictSide


class ReplicaIndex(Record, kw_only=True):
    """`replicas.json`."""

    schema_version: int = SCHEMA_VERSION
    revision: Revision = 0
    local: LocalSync
    in_force: str = ""
    """The key of the replica whose state the local case adopted last ("" for its own)."""
    replicas: list[ImportedReplica] = msgspec.field(default_factory=list)
    conflicts: list[Conflict] = msgspec.field(default_factory=list)
    """The newest SHARE_CONFLICTS_KEPT."""
    conflicts_total: Count = 0

    def replica(self, key: str) -> ImportedReplica | None:
        """The imported replica with this key, if any."""
        return next((r for r in self.replicas if r.key == key), None)
