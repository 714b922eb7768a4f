"""Tombstones: the line a forget leaves in place of a record (docs/design/storage.md).

A tombstone keeps the record's id, time, kind, revision and `prev`, ends with a `"forgotten"`
member recording the chain hash of the line it replaced, and is padded with spaces to that
line's exact length, so no offset of the ledger moves. `ledger.line_hash` and
`ledger.parse_line` read it; this module only builds one.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cortex.cases.errors import InvalidInputError
from cortex.cases.ledger import FORGOTTEN_MEMBER, recorded_hash
from cortex.cases.records import Evidence, Source

FORGOTTEN_TOOL = "cortex-forget"
"""The source tool of a tombstone and of the forget record that vouches for it."""
FORGOTTEN_CLAIM = "(forgotten)"

__all__ = ["FORGOTTEN_CLAIM", "FORGOTTEN_TOOL", "build", "recorded"]

recorded = recorded_hash


def _compact(value: Any) -> Any:
    """Members at their default (null, an empty list, false) left out: decoding restores them."""
    if isinstance(value, dict):
        return {
            key: _compact(item)
            for key, item in value.items()
            if item is not None and item is not False and item != []
        }
    return value


def build(record: Evidence, length: int, chain_hash: str, *, keep: bool) -> bytes:
    """The tombstone of `record`, whose line is `length` bytes (newline aside).

    `keep`: forget only the raw output (the record stays, without `rawRef` and `rawSha256`).
    Encoded in field order, `id` first, so lookups by id find it as they found the record.
    """
    if keep:
        kept = msgspec.structs.replace(record, raw_ref=None, raw_sha256=None)
    else:
        kept = Evidence(
            id=record.id,
            timestamp=record.timestamp,
            kind=record.kind,
            source=Source(tool=FORGOTTEN_TOOL),
            claim=FORGOTTEN_CLAIM,
            revision=record.revision,
            prev=record.prev,
        )
    body = msgspec.json.encode(_compact(msgspec.to_builtins(kept)))
    line = body[:-1] + FORGOTTEN_MEMBER + chain_hash.encode("ascii") + b'"}'
    if len(line) > length:
        msg = f"the line of {record.id} is too short ({length} bytes) to hold its tombstone"
        raise InvalidInputError(msg)
    return line + b" " * (length - len(line))
