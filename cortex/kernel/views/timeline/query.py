"""The timeline's input: filters, dates, anchors and cursors, validated before anything is read.

Every refusal here is `invalid_input` (exit 4). Times are compared as the canonical strings
Cortex writes (`2024-05-01T12:30:00.000Z`: UTC, milliseconds, fixed width), so a bound given
in any ISO form is first turned into that form.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

import msgspec

from cortex.cases.bounds import TIMELINE_CURSOR_MAX, TIMELINE_DATE_MAX
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import ArgumentError, InvalidInputError
from cortex.cases.ids import is_id
from cortex.cases.records import encode
from cortex.cases.redact import clip
from cortex.kernel import validate
from cortex.kernel.views.timeline.cards import ANSWER_SUFFIX, KINDS, Entry, Key, sort_key

ENTRY_PREFIXES = {
    "ph": "phases",
    "ev": "evidence",
    "cmd": "commands",
    "dec": "",
    "vr": "",
    "vb": "",
}
"""Id prefixes of timeline entries, and the ledger each lives in (if any)."""

_CURSOR_TAG = b"cortex-timeline-cursor/v1"
_CURSOR_MAC = 24
_CURSOR_BODY = re.compile(r"[A-Za-z0-9_-]+")


class Query(NamedTuple):
    """Validated filters. `lower` is inclusive and `upper` exclusive; None is unbounded."""

    kinds: tuple[str, ...]
    """The kinds asked for, in KINDS order; empty means every kind."""
    actor: str | None
    lower: str | None
    upper: str | None

    @property
    def effective_kinds(self) -> frozenset[str]:
        """The kinds to read."""
        return frozenset(self.kinds or KINDS)

    def matches(self, entry: Entry) -> bool:
        """Whether an entry passes the filters (its kind is checked when streaming)."""
        if self.actor is not None and entry.actor != self.actor:
            return False
        at = entry.key[0]
        if self.lower is not None and at < self.lower:
            return False
        return self.upper is None or at < self.upper

    def scope(self, task_id: str) -> bytes:
        """What a cursor is bound to: the case and the filters, so a page means one thing."""
        kinds = ",".join(sorted(self.effective_kinds))
        parts = (task_id, kinds, self.actor or "", self.lower or "", self.upper or "")
        return "\0".join(parts).encode()


def kinds(values: list[str]) -> tuple[str, ...]:
    """`--kind` values: each one known; repeats collapse; returned in KINDS order."""
    for value in values:
        if value not in KINDS:
            shown = clip(value, 40)
            raise ArgumentError(
                f"{{kind}} must be one of {', '.join(KINDS)}, not {shown!r}", "kind"
            )
    return tuple(kind for kind in KINDS if kind in values)


def canonical(moment: datetime) -> str:
    """A UTC datetime in the form records carry (milliseconds, fixed width)."""
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}."
        f"{moment.microsecond // 1000:03d}Z"
    )


def when(text: str, option: str) -> tuple[datetime, bool]:
    """An ISO date or date-time as a UTC datetime (whole milliseconds), and whether it was a date.

    A date-time without an offset is taken as UTC, the zone every record is written in.
    """
    shown = clip(text, 40)
    rest = (
        f" must be an ISO date (2024-05-01) or date and time (2024-05-01T12:30:00Z), not {shown!r}"
    )
    if len(text) > TIMELINE_DATE_MAX or not text.isascii():
        raise validate.bad(option, rest)
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        return datetime(day.year, day.month, day.day, tzinfo=UTC), True
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise validate.bad(option, rest) from None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000), False


def window(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """`--since` (inclusive) and `--until` (inclusive; a date covers its whole day) as bounds."""
    lower = upper = None
    if since is not None:
        lower = canonical(when(since, "--since")[0])
    if until is not None:
        moment, whole_day = when(until, "--until")
        try:
            # Exclusive from here on: the next day, or the next millisecond.
            step = timedelta(days=1) if whole_day else timedelta(milliseconds=1)
            upper = canonical(moment + step)
        except OverflowError:
            upper = None  # the end of year 9999: nothing can come after it
    if lower is not None and upper is not None and lower >= upper:
        raise ArgumentError("{since} is after {until}: no entry can match", "since", "until")
    return lower, upper


def entry_id(text: str) -> str | None:
    """`text` if it is the id of a timeline entry; None if it is not id-shaped at all.

    Something id-shaped with a prefix that names no entry (`task_`, `hyp_`, `raw_`) is refused
    rather than taken for a date.
    """
    prefix, sep, _ = text.partition("_")
    if not sep or not prefix.isalpha() or not prefix.islower():
        return None
    base = text.removesuffix(ANSWER_SUFFIX) if prefix == "dec" else text
    if prefix not in ENTRY_PREFIXES or not is_id(base, prefix):
        shown = clip(text, 80)
        msg = (
            f"{{anchor}} {shown!r} is not a timeline entry id "
            "(ph_, ev_, cmd_, dec_[...:answer], vb_ or vr_ followed by a ULID)"
        )
        raise ArgumentError(msg, "anchor")
    return text


def _mac(scope: bytes, payload: bytes) -> str:
    return sha256_hex(_CURSOR_TAG + b"\0" + scope + b"\0" + payload)[:_CURSOR_MAC]


def make_cursor(scope: bytes, entry: Entry) -> str:
    """The token that resumes after `entry`: its position, bound to the case and filters.

    The check digest is not a secret (a reader may compute it): it catches a truncated, edited
    or foreign token, and a token reused with other filters, which would silently skip entries.
    """
    payload = encode([entry.at, entry.id])
    body = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
    return f"{body}.{_mac(scope, payload)}"


def read_cursor(token: str, scope: bytes) -> Key:
    """The position a cursor names, or `invalid_input` for anything this timeline did not issue."""
    refusal = ArgumentError(
        "{cursor} is not a token this timeline issued for this case and these filters; "
        "repeat the filters of the page that printed it, or start again without {cursor}",
        "cursor",
    )
    if len(token) > TIMELINE_CURSOR_MAX or not token.isascii():
        raise refusal
    body, sep, check = token.partition(".")
    if not sep or not _CURSOR_BODY.fullmatch(body):
        raise refusal
    try:
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        raise refusal from None
    if check != _mac(scope, payload):
        raise refusal
    try:
        at, position = msgspec.json.decode(payload, type=tuple[str, str])
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise refusal from None
    try:
        if entry_id(position) is None:
            raise refusal
    except InvalidInputError:
        raise refusal from None
    return sort_key(at, position)
