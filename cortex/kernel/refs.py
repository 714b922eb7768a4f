"""Ids as people type them: a whole id, a unique prefix of one, or `@latest` for a case.

Every face passes what it was given; the kernel resolves it here, so the CLI and the MCP server
accept the same spellings and refuse the same ones. A prefix is looked up only among the ids
that exist (cases in a store, records in a case); it resolves when exactly one id begins with
it. Several is an ambiguity (exit 4) that lists them, never a guess; none is exit 3.

A prefix must keep the id's own prefix and give at least `ID_PREFIX_MIN` of its 26 characters
(`task_01JX`, `ev_01JX`): ids begin with their creation time, so shorter prefixes would match
nearly everything a store holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from cortex.cases.bounds import ID_CANDIDATES_SHOWN, ID_PREFIX_MIN
from cortex.cases.errors import ArgumentError, InvalidInputError, NotFoundError
from cortex.cases.ids import ALPHABET, ULID_LENGTH, is_id
from cortex.cases.redact import clip

if TYPE_CHECKING:
    from cortex.cases.records import CaseFile
    from cortex.cases.store import CaseStore

LATEST = "@latest"
"""The newest case opened in this workspace (wherever a task id is taken)."""

_ALPHABET = frozenset(ALPHABET)


class AmbiguousIdError(ArgumentError):
    """A prefix that begins more than one id: exit 4, the candidates in the message and data."""

    def __init__(
        self,
        argument: str,
        value: str,
        noun: str,
        candidates: list[dict[str, str | None]],
        total: int,
    ) -> None:
        shown = ", ".join(str(c["id"]) for c in candidates)
        more = f" and {total - len(candidates)} more" if total > len(candidates) else ""
        # `value` holds only id characters (checked before), so it cannot carry a `{name}`.
        template = (
            f"{{{argument}}} {value} is ambiguous: {total} {noun} begin with it ({shown}{more}); "
            "give more of the id"
        )
        super().__init__(template, argument)
        self.report = {
            "ambiguous": {"prefix": value, "total": total, "candidates": candidates},
        }


def whole(value: str, prefix: str, *, what: str, latest: bool = False) -> bool:
    """True for a whole `<prefix>_` id, False for a prefix long enough to look up; else exit 4.

    Ids are never normalised (lower case, padding, look-alikes): a prefix is a prefix of the
    id as written, so two different inputs can never name one record by accident.
    """
    if is_id(value, prefix):
        return True
    head = prefix + "_"
    rest = value[len(head) :] if value.startswith(head) else None
    if (
        rest is not None
        and ID_PREFIX_MIN <= len(rest) < ULID_LENGTH
        and rest[0] in "01234567"
        and all(c in _ALPHABET for c in rest)
    ):
        return False
    shown = clip(value, 80)
    also = f", or {LATEST}" if latest else ""
    msg = (
        f"invalid {what} {shown!r}: expected {head} followed by 26 upper-case Crockford base32 "
        f"characters, or a unique prefix of such an id (at least {ID_PREFIX_MIN} of them){also}"
    )
    raise InvalidInputError(msg)


def pick(
    value: str,
    ids: Iterable[str],
    *,
    argument: str,
    noun: str,
    where: str,
    title: Callable[[str], str | None] | None = None,
    total: int | None = None,
) -> str:
    """The one id of `ids` that begins with `value`; exit 3 for none, exit 4 for several.

    Candidates are listed newest first (ids sort by creation time), at most
    `ID_CANDIDATES_SHOWN` of them, each with its title (a goal, a statement) when given.
    `total`, when the caller could list only some of the matches, is how many there are.
    """
    matches = sorted({i for i in ids if i.startswith(value)}, reverse=True)
    count = len(matches) if total is None else max(total, len(matches))
    if count == 0:
        raise NotFoundError(f"none of the {noun} in {where} begins with {value}")
    if count == 1:
        return matches[0]
    shown = [
        {"id": i, "title": None if title is None else title(i)}
        for i in matches[:ID_CANDIDATES_SHOWN]
    ]
    raise AmbiguousIdError(argument, value, noun, shown, count)


def check(value: str, prefix: str, *, what: str) -> str:
    """`value` if it is a whole id or a prefix of one that may be looked up (else exit 4)."""
    whole(value, prefix, what=what)
    return value


def evidence(store: CaseStore, case: CaseFile, values: list[str], *, argument: str) -> list[str]:
    """Evidence ids as given (whole, or unique prefixes of records in the case), made whole.

    Whole ids are returned as they are: whether each exists is the caller's check, as before.
    A prefix is looked up in the committed evidence ledger without decoding it.
    """
    ids: list[str] = []
    for value in values:
        if is_id(value, "ev"):
            ids.append(value)
            continue
        found, total = store.ids_beginning(case, "evidence", value, ID_CANDIDATES_SHOWN)
        ids.append(
            pick(
                value,
                found,
                argument=argument,
                noun="evidence records",
                where=f"case {case.id}",
                total=total,
            )
        )
    return list(dict.fromkeys(ids))


def among(
    value: str,
    prefix: str,
    ids: Iterable[str],
    *,
    argument: str,
    noun: str,
    where: str,
    title: Callable[[str], str | None] | None = None,
) -> str:
    """A whole id as it is; a prefix made whole from `ids` (the records a snapshot holds)."""
    if is_id(value, prefix):
        return value
    return pick(value, ids, argument=argument, noun=noun, where=where, title=title)


def short(text: str | None, limit: int = 80) -> str | None:
    """A title as a candidate shows it: one line, at most `limit` characters."""
    if text is None:
        return None
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "\u2026"
