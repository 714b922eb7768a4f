"""Provenance with its channel: whether a claimed origin was a person's word, and how to show it.

The face decides how a call arrived (`Kernel.via`; docs/design/trust.md); the store stamps it
on every record. A `human` or `reviewer` origin that arrived where no person was present is the
agent's claim that a person said something: it is stored as claimed, marked
`claimedByAgent`, and every surface shows it as reported ("human (reported by agent-1 via
mcp)"). This module is the one place that says so, for the records and for their views.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cortex.cases.records import Source
from cortex.kernel.kernel import PERSON_PRESENT

PEOPLE: frozenset[str] = frozenset({"human", "reviewer"})
"""Origins that say a person said it."""


def claimed_by_agent(origin: str, *, person_present: bool) -> bool:
    """Whether a record of `origin` is only the caller's claim of a person's word."""
    return origin in PEOPLE and not person_present


def source(
    *, tool: str, actor: str, origin: str, person_present: bool, uri: str | None = None
) -> Source:
    """A record's source, its claimed origin marked when no person was present."""
    return Source(
        tool=tool,
        uri=uri,
        actor=actor,
        origin=origin,  # type: ignore[arg-type]  # validated by the caller
        claimed_by_agent=claimed_by_agent(origin, person_present=person_present),
    )


def shown(record: Source | Mapping[str, Any], replica: str | None = None) -> str:
    """The origin as every surface shows it: `human`, or `human (reported by agent-1 via mcp)`.

    Takes a source or its plain form (camelCase keys, as views and the handoff carry it).
    The flag is not the only word: a person's origin on a recorded channel no person is at is
    reported whatever the flag says (a record edited by hand, or a replica that wrote it so and
    shared it, cannot make a person's word by clearing it). A person's word that came from
    another replica (`replica`, its key) is never shown as plain `human`: the channel it claims
    is that machine's word, which nothing here can check (docs/design/trust.md).
    """
    plain = _shown(record)
    if replica is None or not plain.startswith(tuple(PEOPLE)):
        return plain
    if plain in PEOPLE:
        return f"{plain} (from replica {replica}, unverified)"
    return f"{plain[:-1]}; from replica {replica})"


def _shown(record: Source | Mapping[str, Any]) -> str:
    origin: str
    if isinstance(record, Source):
        origin, actor, via = record.origin, record.actor, record.via
        claimed = record.claimed_by_agent
    else:
        origin = str(record.get("origin") or "agent")
        actor, via = record.get("actor"), record.get("via")
        claimed = bool(record.get("claimedByAgent"))
    if origin in PEOPLE and via is not None and via not in PERSON_PRESENT:
        claimed = True
    if claimed:
        return f"{origin} (reported by {actor or 'an agent'}" + (f" via {via})" if via else ")")
    if origin in PEOPLE and via is None:
        return f"{origin} (channel not recorded)"
    return origin
