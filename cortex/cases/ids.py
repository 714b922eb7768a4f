"""Record identifiers: `<prefix>_<ULID>`, minted here and validated everywhere else.

A ULID is a 48-bit millisecond timestamp followed by 80 random bits, written as 26 characters
of Crockford base32, so ids sort by creation time. We mint them with the standard library
instead of python-ulid because importing that package costs more than an entire `evidence add`
(see docs/benchmarks.md); `cortex case audit` still checks every id with python-ulid as an
independent parser.
"""

from __future__ import annotations

import os
import time

from cortex.cases.errors import ArgumentError, InvalidInputError
from cortex.cases.redact import clip

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ALPHABET_SET = frozenset(ALPHABET)
_DECODE = {c: i for i, c in enumerate(ALPHABET)}
ULID_LENGTH = 26

PREFIXES = frozenset({"task", "ev", "hyp", "vr", "vb", "dec", "raw", "cmd", "ph", "rep", "act"})
"""Every id prefix in format v1; an id with any other prefix is refused."""

_RANDOM_BITS = 80
_RANDOM_MAX = (1 << _RANDOM_BITS) - 1
_last_ms = -1
_last_random = 0


def encode_ulid(value: int) -> str:
    """Write a 128-bit integer as 26 Crockford base32 characters."""
    chars = []
    for _ in range(ULID_LENGTH):
        chars.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """Mint a ULID; ids minted by one process are strictly increasing.

    Within one millisecond the random part is incremented instead of redrawn, so the order in
    which one process creates records is also the order of their ids.
    """
    global _last_ms, _last_random
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if ms <= _last_ms:
        ms = _last_ms
        random_part = _last_random + 1
        if random_part > _RANDOM_MAX:
            ms += 1
            random_part = int.from_bytes(os.urandom(10), "big") >> 1
    else:
        # One bit of headroom keeps the increment above from overflowing within a millisecond.
        random_part = int.from_bytes(os.urandom(10), "big") >> 1
    _last_ms, _last_random = ms, random_part
    return encode_ulid((ms << _RANDOM_BITS) | random_part)


def new_id(prefix: str, now_ms: int | None = None) -> str:
    """Mint `<prefix>_<ULID>` for one of the known prefixes."""
    if prefix not in PREFIXES:
        msg = f"unknown id prefix {prefix!r}"
        raise ValueError(msg)
    return f"{prefix}_{new_ulid(now_ms)}"


def is_ulid(text: str) -> bool:
    """Whether `text` is a canonical (upper-case, 128-bit) ULID."""
    return (
        len(text) == ULID_LENGTH and text[0] in "01234567" and all(c in _ALPHABET_SET for c in text)
    )


def is_id(value: object, prefix: str) -> bool:
    """Whether `value` is a well-formed id with this prefix."""
    return (
        isinstance(value, str)
        and value.startswith(prefix + "_")
        and is_ulid(value[len(prefix) + 1 :])
    )


def check_id(value: str, prefix: str, *, what: str | None = None) -> str:
    """Return `value` unchanged if it is a valid `<prefix>_` id, else refuse it.

    Ids are never normalised: lower case, padding or any other variation is refused, because
    rewriting would let two different inputs name one case.
    """
    if not is_id(value, prefix):
        label = what or f"{prefix} id"
        shown = clip(value, 80)
        rest = (
            f" {shown!r}: expected {prefix}_ followed by 26 upper-case Crockford base32 characters"
        )
        if label.startswith("--"):
            # An argument (`--derived-from id`): named the way the caller's face spells it.
            option, _, tail = label.partition(" ")
            name = option[2:].replace("-", "_")
            template = "invalid {" + name + "}" + (f" {tail}" if tail else "") + rest
            raise ArgumentError(template, name)
        raise InvalidInputError(f"invalid {label}{rest}")
    return value


def ulid_ms(ulid: str) -> int:
    """The millisecond timestamp inside a canonical ULID."""
    value = 0
    for c in ulid[:10]:
        value = (value << 5) | _DECODE[c]
    return value
