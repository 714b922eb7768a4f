"""Run the redaction pipeline over every string of a record before the store writes it.

This is the single choke point of docs/design/redaction.md: the store calls `scrub` on every
ledger record and snapshot, so no write path can skip redaction.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from cortex.cases.errors import InvalidInputError
from cortex.cases.redact import Redactor

_S = TypeVar("_S", bound=msgspec.Struct)

IDENTIFIER_KEYS = frozenset(
    {
        "id",
        "actor",
        "tool",
        "file",
        "rawRef",
        "derivedFrom",
        "parentTaskId",
        "childTaskIds",
        "idempotencyKey",
        "taskId",
        "operation",
        "target",
    }
)
"""Fields that are identifiers: refused, never rewritten, when they look like a secret."""


def _walk(
    value: Any, redact: Redactor, key: str | None, changed: list[bool], *, strict: bool = True
) -> Any:
    if isinstance(value, str):
        clean = redact(value)
        if clean != value:
            if strict and key in IDENTIFIER_KEYS:
                msg = f"{key} looks like a secret; identifiers are refused, never rewritten"
                raise InvalidInputError(msg)
            changed[0] = True
        return clean
    if isinstance(value, dict):
        return {k: _walk(v, redact, k, changed, strict=strict) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, redact, key, changed, strict=strict) for v in value]
    return value


def strings(value: object) -> list[str]:
    """Every string in a plain value (dict values, list items, depth first).

    For the checks that ask whether any stored text still looks like a secret.
    """
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def scrub_value(value: Any, redact: Redactor) -> Any:
    """Any data (structs included) as plain values with every string redacted.

    For answers: a command echoes input only as the store would keep it.
    """
    changed = [False]
    walked = _walk(msgspec.to_builtins(value), redact, None, changed, strict=False)
    return walked if changed[0] else value


def scrub(record: _S, redact: Redactor) -> tuple[_S, bool]:
    """Return the record with every string redacted, and whether anything changed.

    A record with a `sensitivity` field is marked `sensitive` when anything changed.
    """
    changed = [False]
    data = _walk(msgspec.to_builtins(record), redact, None, changed)
    if not changed[0]:
        return record, False
    if "sensitivity" in data:
        data["sensitivity"] = "sensitive"
    return msgspec.convert(data, type(record)), True
