"""The defaults of optional arguments, in one place for every face and for the use cases.

(With the few limits a face applies while a person types, such as the board's search box.)

The CLI's grammar shows them in `--help`, the MCP server publishes them in its input schemas,
and the use cases apply them when an in-process caller leaves an argument out, so a default
cannot differ between the faces (tests/test_parity.py walks the tables to check it). The values
themselves are bounds and live with their limits in `cortex.cases.bounds`.
"""

from __future__ import annotations

from typing import get_args

from cortex.cases.bounds import (
    INTEGER_DIGITS_MAX,
    LIST_LIMIT_DEFAULT,
    PREVIEW_DEFAULT,
    RECALL_LIMIT_DEFAULT,
    SESSIONS_LIMIT_DEFAULT,
    SESSIONS_QUERY_MAX,
    STUDIO_REFRESH_DEFAULT,
    STUDIO_REFRESH_MAX,
    STUDIO_REFRESH_MIN,
    STUDIO_ROWS_MAX,
    TIMELINE_AROUND_DEFAULT,
    TIMELINE_LIMIT_DEFAULT,
)
from cortex.cases.records import Confidence, EvidenceKind, Mode, Origin, Risk, Surface

LIST_LIMIT = LIST_LIMIT_DEFAULT
"""`case list`: cases per answer."""
TIMELINE_LIMIT = TIMELINE_LIMIT_DEFAULT
"""`case timeline`: entries per page."""
TIMELINE_AROUND = TIMELINE_AROUND_DEFAULT
"""`case timeline --anchor`: entries before and after the anchor."""
SESSIONS_LIMIT = SESSIONS_LIMIT_DEFAULT
"""`case sessions`: cases per answer."""
PREVIEW_BYTES = PREVIEW_DEFAULT
"""`case read-artifact`: bytes of a preview."""
MODE: Mode = "change"
RISK: Risk = "medium"
EVIDENCE_KIND: EvidenceKind = "observation"
EVIDENCE_SOURCE = "agent"
"""`evidence add --source`: the tool that produced the evidence."""
ORIGIN: Origin = "agent"
CONFIDENCE: Confidence = "unknown"

INTEGER_DIGITS = INTEGER_DIGITS_MAX
"""Digits an integer argument may have; checked before it is converted, on every face."""

STUDIO_REFRESH = STUDIO_REFRESH_DEFAULT
"""`cortex studio --refresh`: seconds between two refreshes of the board."""
STUDIO_REFRESH_RANGE = (STUDIO_REFRESH_MIN, STUDIO_REFRESH_MAX)
STUDIO_ROWS = STUDIO_ROWS_MAX
"""Rows the board asks `sessions` for."""
QUERY_MAX = SESSIONS_QUERY_MAX
"""Characters of a `sessions --query` (the board's search box stops there as one types)."""
RECALL_LIMIT = RECALL_LIMIT_DEFAULT
"""`recall`: cards per page."""

# Choices a face lists in its help and schemas (tests/test_help.py checks them against the
# checks that enforce them).

RESERVED_KINDS = frozenset({"plan"})
"""Evidence kinds only the kernel writes: a `plan` record always carries the plan's blob."""
EVIDENCE_KINDS: tuple[str, ...] = tuple(
    kind for kind in get_args(EvidenceKind) if kind not in RESERVED_KINDS
)
"""The kinds `evidence add` takes."""
MODES: tuple[str, ...] = get_args(Mode)
RISKS: tuple[str, ...] = get_args(Risk)
SURFACES: tuple[str, ...] = get_args(Surface)
ORIGINS: tuple[str, ...] = get_args(Origin)
CONFIDENCES: tuple[str, ...] = get_args(Confidence)
MODE_HELP = (
    "change: take the change lease (begin-change) and edit code within the plan's boundary, "
    "proven by its verifiers; investigate and review: no change step, the plan goes straight "
    "to verify"
)
"""What each mode allows later, for `case open --mode` and its MCP argument."""


def one_of(values: tuple[str, ...]) -> str:
    """`a|b|c`, as help and schema descriptions list a fixed set of values."""
    return "|".join(values)
