"""Which state is in force, and which changes lost: fencing and version vectors, no I/O.

A state is a replica's snapshot set, described by its fence (lease epoch, Lamport clock,
replica key), its content digest, the origin of that content (the change that made it) and the
version vector of changes it knows. docs/design/sharing.md, "Snapshots" and "Conflicts".
"""

from __future__ import annotations

import msgspec

from cortex.cases.replica_index import ConflictSide, Fence, Origin


class State(msgspec.Struct, kw_only=True):
    """One replica's state, as fencing and conflict detection see it."""

    key: str
    """The replica key ("" for the local replica)."""
    fence: Fence
    digest: str
    origin: Origin | None
    known: dict[str, int] = msgspec.field(default_factory=dict)
    side: ConflictSide | None = None


class Outcome(msgspec.Struct, kw_only=True):
    """The state in force after folding every fetched state into the local one."""

    winner: State
    conflicts: list[tuple[State, State]]
    """(winner, loser) of every change that lost without the winner knowing it."""
    known: dict[str, int]


def _lost(origin: Origin | None, known: dict[str, int]) -> bool:
    return origin is not None and known.get(origin.replica, 0) < origin.lamport


def _note(known: dict[str, int], origin: Origin | None) -> None:
    if origin is not None:
        known[origin.replica] = max(known.get(origin.replica, 0), origin.lamport)


def merge_known(*vectors: dict[str, int]) -> dict[str, int]:
    """The element-wise maximum of version vectors."""
    merged: dict[str, int] = {}
    for vector in vectors:
        for replica, clock in vector.items():
            merged[replica] = max(merged.get(replica, 0), clock)
    return merged


def fold(local: State | None, fetched: list[State]) -> Outcome | None:
    """Fold fetched states into the local one, in key order (the same on every machine)."""
    state = local
    known = dict(local.known) if local is not None else {}
    if local is not None:
        _note(known, local.origin)
    conflicts: list[tuple[State, State]] = []
    for candidate in sorted(fetched, key=lambda s: s.key):
        if state is None:
            state = candidate
            known = merge_known(known, candidate.known)
            _note(known, candidate.origin)
            continue
        if candidate.digest == state.digest:
            known = merge_known(known, candidate.known)
            _note(known, candidate.origin)
            continue
        if candidate.fence.rank() > state.fence.rank():
            if _lost(state.origin, candidate.known):
                conflicts.append((candidate, state))
            known = merge_known(known, candidate.known)
            _note(known, state.origin)
            _note(known, candidate.origin)
            state = candidate
        else:
            if _lost(candidate.origin, known):
                conflicts.append((state, candidate))
            known = merge_known(known, candidate.known)
            _note(known, candidate.origin)
    if state is None:
        return None
    return Outcome(winner=state, conflicts=conflicts, known=known)
